"""`python -m collective` runs the command line."""
import sys

from collective.cli import main

sys.exit(main())
