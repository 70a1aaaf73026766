"""`python -m collective` runs the command line."""
import sys

try:
    from collective.cli import main
except KeyboardInterrupt:  # Ctrl-C while the libraries load: one line, like Ctrl-C during the work
    print("collective: interrupted", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
