"""collective: measure the collective intelligence of agent groups.

The plug-in interface (see `collective.simulation.plugins` and docs/reference/plugins.md):
`Observation`, `Messages`, `Batch`, `Parameter`, the typing Protocols `BehaviourPlugin`
and `ProtocolPlugin`, and `PluginError`; the conformance suite is `collective.testing`.
"""
from collective.numba_cache import use_source_keyed_cache

use_source_keyed_cache()  # before any module with compiled functions is imported

from collective.parameters import Parameter  # noqa: E402
from collective.version import VERSION as __version__  # noqa: E402
from collective.simulation.plugins import (Batch, BehaviourPlugin, Messages, Observation, PluginError,  # noqa: E402
                                           ProtocolPlugin)

__all__ = ["__version__", "Batch", "BehaviourPlugin", "Messages", "Observation", "Parameter", "PluginError", "ProtocolPlugin"]
