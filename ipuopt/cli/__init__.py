"""The ipuopt command line: a thin layer that parses, calls the library and prints.

`app` holds the app and the options commands share, `terminal` what is printed, `options` the
checks of the command line's own options; one module per problem holds its commands
(`exchange`, `program`, `layout`, `arena`, `pictures`, `tools`). Importing them registers
their commands on `app`; a command imports its own module alone (`loaded`), so that `ipuopt
place` does not wait for the exchange bounds' imports (half the command line's start-up)."""

from __future__ import annotations

import importlib
import os
import sys

import typer

from ipuopt.budget import Interrupted
from ipuopt.cli.app import START, app
from ipuopt.cli.terminal import STDOUT, err, exit_now
from ipuopt.errors import InputError

__all__ = ["START", "app", "loaded", "main"]

MODULES = ("exchange", "program", "layout", "arena", "pictures", "tools")  # in the order --help lists them
HOME = {"solve": "exchange", "bounds": "exchange", "validate": "exchange", "simulate": "exchange",
        "gen": "program", "run": "program", "optimize": "program",
        "layouts": "layout", "layout-problem": "layout", "layout": "layout", "place": "arena",
        "render": "pictures", "render-arena": "pictures", "compare": "tools", "sweep": "tools",
        "sweep-report": "tools", "schema": "tools", "specs": "tools", "import": "tools"}  # command -> module


def loaded(argv: list[str] | None = None) -> typer.Typer:
    """`app` with the commands of `argv` registered: the module of the command it names, or
    every module when it names none or one not known (--help lists them all; a typo's message
    says what there is)."""
    name = next((a for a in argv if not a.startswith("-")), None) if argv is not None else None
    for module in [HOME[name]] if name in HOME else MODULES:
        importlib.import_module(f"ipuopt.cli.{module}")
    return app


def main() -> None:
    """Bad input exits 2 with one line per problem; nothing a user does prints a traceback
    (IPUOPT_DEBUG=1 shows one for an internal error)."""
    STDOUT.append(os.dup(1))
    try:
        loaded(sys.argv[1:])()
    except SystemExit as exc:
        if exc.code == 130:  # typer's word for a Ctrl-C no command caught (loading, a second one)
            err("interrupted: no file written")
            exit_now(130)
        raise
    except Interrupted as exc:  # Ctrl-C before any answer: nothing written
        err(f"interrupted: {exc}; no file written")
        exit_now(130)
    except InputError as exc:
        for p in exc.problems:
            err(f"error: {p}")
        sys.exit(2)
    except OSError as exc:  # a file that vanished or cannot be written mid-run
        err(f"error: {exc.filename or ''}: {exc.strerror or exc}")
        sys.exit(2)
    except KeyboardInterrupt:
        err("interrupted: no file written")
        exit_now(130)  # a solver thread may still run in C++: no interpreter shutdown
    except Exception as exc:
        if os.environ.get("IPUOPT_DEBUG"):
            raise
        err(f"internal error: {type(exc).__name__}: {exc} (IPUOPT_DEBUG=1 shows the traceback; "
            "please report it)")
        sys.exit(3)
