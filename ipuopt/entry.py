"""The console script. Ctrl-C while the command line is still loading exits like any other
interrupt (130, one line, no traceback)."""

from __future__ import annotations

import os
import sys


def main() -> None:
    try:
        from ipuopt.cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("interrupted: no file written\n")
        os._exit(130)
    cli_main()
