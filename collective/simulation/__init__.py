"""Playing episodes: the fused compiled kernel (`kernel`), the open stepping core for plug-ins
(`stepping`), the slow reference twin (`reference`) and the random streams they share."""
