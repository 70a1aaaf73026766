"""Sweeps: the TOML spec (`spec`), its plan into blocks and work units (`plan`), the Ray and serial
executors (`runtime`), the resumable Parquet store (`store`) and the `collective sweep` command."""
