"""The worked study's plug-ins (README: From "I wrote an agent" to a figure): a memory-based local
searcher (`agents.MemorySearcher`) and a gossip protocol (`talk.Gossip`), swept against the
built-ins by `experiments/byo_agent.toml`."""
