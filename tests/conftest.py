import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # tests import their shared checks by module name


import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    """Close the figures a test left open through pyplot (matplotlib keeps them until closed and warns past 20):
    a closed figure's content stays readable by the module fixtures that hold it."""
    yield
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")
