"""The worked study's plug-ins (docs/tutorial.md, "Sweep it"): a memory-based local
searcher (`agents.MemorySearcher`) and a gossip protocol (`talk.Gossip`), swept against the
built-ins by `experiments/byo_agent.toml`."""
