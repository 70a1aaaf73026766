"""The commands' output files (figures, the dashboard's report): each written to a temporary beside it and renamed
over it only when complete, so a failed write (a full disk, a file size limit, Ctrl-C) leaves the user's
previous file as it was; a failure is an OSError naming the path the user gave, which the command prints as
one line."""
from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import BinaryIO, Iterator

STANDARD_OUTPUT = "standard output"  # the name a failed write of stdout is reported under


@contextlib.contextmanager
def replacing(path: str | Path) -> Iterator[BinaryIO]:
    """A binary file whose content, once the block ends without an error, replaces `path` (through a link, its
    target); a device or pipe there (/dev/stdout) is written straight, having no previous content to keep."""
    path = Path(path)
    temporary = None
    try:
        if path.exists() and not path.is_file():
            with open(path, "wb") as handle:
                yield handle
            return
        target = Path(os.path.realpath(path))
        temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
        with open(descriptor, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())  # a full disk may refuse the data only here
        os.replace(temporary, target)
        temporary = None
    except OSError as error:
        raise OSError(error.errno, error.strerror or str(error), str(path)) from None
    finally:
        if temporary is not None:
            temporary.unlink(missing_ok=True)


def write_stdout(text: str) -> None:
    """Print `text` and flush, so a failed write (a full disk behind a redirection) is an OSError naming standard
    output here, not an error at exit; a closed pipe stays a BrokenPipeError (`collective.cli.main` ends quietly)."""
    try:
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as error:
        raise OSError(error.errno, error.strerror or str(error), STANDARD_OUTPUT) from None
