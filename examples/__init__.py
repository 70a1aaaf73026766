"""Example plug-ins: NumPy twins of built-ins (`numpy_local_search`, `numpy_broadcast`) and the
tutorial's worked study (`byo_agent`). Run from the project root, they are named by import path,
e.g. `--behaviour examples.numpy_local_search:LocalSearch`."""
