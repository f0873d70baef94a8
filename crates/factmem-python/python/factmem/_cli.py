"""The ``facts`` command of the wheel: the ``facts`` console script and ``python -m factmem``.

Both run the native binary's command line in-process (``_factmem.cli_main``, the ``facts``
library crate): every subcommand, flag, output and exit code, with named models
(``--embedder minilm``, ``FACTMEM_EMBEDDER=minilm``) resolved from the packages of the
``factmem[embed]`` extra (:mod:`factmem._models`).

This module is imported only by the console script and ``python -m factmem``, never by
``import factmem``.
"""

import signal
import sys
import threading
from typing import List, Optional

__all__ = ["main", "run"]

#: The program name the command reports (usage lines, ``--version``).
PROGRAM = "facts"


def run(args: Optional[List[str]] = None) -> int:
    """Runs ``facts ARGS...`` (default: ``sys.argv[1:]``) in this process and returns its
    exit code. The GIL is released while the command runs."""
    from . import _factmem, _models

    argv = [PROGRAM, *(sys.argv[1:] if args is None else args)]
    # What Python buffered goes out before the command writes to the same descriptors.
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()
    return _factmem.cli_main(argv, _models.resolve)


def main() -> None:
    """The console script: ``facts ARGS...`` to its exit code.

    SIGINT gets its default action back, so Ctrl-C ends the command as it ends the native
    binary (no ``KeyboardInterrupt`` traceback, the shell sees the signal); the command
    installs its own handlers where it has them (SIGHUP: ``--tokens`` reload)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.exit(run())
