"""The console script. Ctrl-C while the command line is still loading exits like any other
interrupt (130, one line, no traceback). A finished command ends the process without the
interpreter's teardown: every file is written and closed by then, and freeing a
fragment-level program's millions of objects one by one took 14 s past a 900 s time limit."""

from __future__ import annotations

import contextlib
import logging
import os
import sys


def main() -> None:
    # numpy's BLAS threads spin on the other core after a matrix operation, where the solvers
    # race (the arena search beside CP-SAT) or a Dask worker runs: ipuopt's parallelism is its own
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        from ipuopt.cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("interrupted: no file written\n")
        os._exit(130)
    code = 0
    try:
        cli_main()
    except SystemExit as exc:
        if isinstance(exc.code, int) or exc.code is None:
            code = exc.code or 0
        else:  # a message: printed and exit 1, as the interpreter would
            sys.stderr.write(f"{exc.code}\n")
            code = 1
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe (`| head`)
            stream.flush()
    os._exit(code)
