"""`python -m collective` runs the command line."""
import os
import sys

# `python -m` puts the working directory first on sys.path: moved last, so that a file there named
# like an installed package (a `ray.py`) cannot shadow it; plug-in modules there still import.
if sys.path and sys.path[0] in ("", os.getcwd()):
    sys.path.append(sys.path.pop(0))

try:
    from collective.cli import main
except KeyboardInterrupt:  # Ctrl-C while the libraries load: one line, like Ctrl-C during the work
    print("collective: interrupted", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
