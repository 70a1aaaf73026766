"""collective: measure the collective intelligence of agent groups."""
from collective.numba_cache import use_source_keyed_cache

use_source_keyed_cache()
