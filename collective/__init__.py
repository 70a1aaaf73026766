"""collective: measure the collective intelligence of agent groups.

The plug-in interface (see `collective.simulation.plugins` and docs/reference/plugins.md):
`Observation`, `Messages`, `Batch`, `Parameter`, the typing Protocols `BehaviourPlugin`
and `ProtocolPlugin`, and `PluginError`; the conformance suite is `collective.testing`.
"""
import os
import sys

# `python -m collective` puts the working directory first on sys.path and imports this package before
# `__main__` (sys.argv[0] is "-m" meanwhile): removed first, so that no file there runs in place of a module
# something imports (a `json.py`, a `cffi.py`); `plugins.import_class` finds plug-in modules there.
if sys.argv[:1] == ["-m"] and sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from collective.numba_cache import use_source_keyed_cache  # noqa: E402

use_source_keyed_cache()  # before any module with compiled functions is imported

from collective.parameters import Parameter  # noqa: E402
from collective.version import VERSION as __version__  # noqa: E402
from collective.simulation.plugins import (Batch, BehaviourPlugin, Messages, Observation, PluginError,  # noqa: E402
                                           ProtocolPlugin)

__all__ = ["__version__", "Batch", "BehaviourPlugin", "Messages", "Observation", "Parameter", "PluginError", "ProtocolPlugin"]
