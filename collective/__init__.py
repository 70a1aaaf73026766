"""collective: measure the collective intelligence of agent groups."""
