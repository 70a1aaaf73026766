"""The installed distribution's name and version, recorded in every result row and record.

The distribution is `collective-intelligence` (the name `collective` on the public package index
belongs to another project); the import name and the command stay `collective`."""
from importlib.metadata import version

DISTRIBUTION = "collective-intelligence"
VERSION = version(DISTRIBUTION)
