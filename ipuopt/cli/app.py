"""The command line's app, its sub-apps and the options several commands share; a time
limit counts from the process's start (`START`)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Annotated

import typer

from ipuopt import __version__
from ipuopt.budget import DEFAULT_TIME_LIMIT


def _process_start(most: float = 30.0) -> float:
    """time.monotonic() when this process started, so that a time limit also counts the
    interpreter's start-up and the imports before this module (seconds under load); now when
    /proc cannot say or the process is older than `most` seconds (a host that imported us
    late)."""
    now = time.monotonic()
    try:
        with open("/proc/self/stat") as f:
            started = int(f.read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
        with open("/proc/uptime") as f:
            age = float(f.read().split()[0]) - started  # both since boot
    except (OSError, ValueError, IndexError):
        return now
    return now - age if 0.0 <= age <= most else now


START = _process_start()  # the command's start: a time limit counts from here


# Plain help text: rich markup would read "[/REGION]" in an option's help as a closing tag. Typer
# still escapes "[default: ...]" for rich's HTML export when rich is installed, printing "\[": its
# flag is only read for that escape once markup is off.
typer.core.HAS_RICH = False


_TYPER = {"add_completion": False, "no_args_is_help": True, "pretty_exceptions_enable": False,
          "rich_markup_mode": None}


app = typer.Typer(**_TYPER,
                  help="Exact models, lower bounds and greedy fallbacks for IPU compiler problems: exchange "
                  "scheduling, arena placement, layout selection; workload phases, program replay, "
                  "pictures and sweeps. Documentation: docs/ in the repository.")


specs_app = typer.Typer(**_TYPER, help="Hardware specs: list, show, diff.")


import_app = typer.Typer(**_TYPER, help="Convert external benchmark formats to phases.")


app.add_typer(specs_app, name="specs")
app.add_typer(import_app, name="import")


SpecOpt = Annotated[str | None, typer.Option("--spec", help="Spec name or file; overrides the phase's.")]


JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


VerboseOpt = Annotated[bool, typer.Option("--verbose", help="The solver's own log, on stderr.")]


QuietOpt = Annotated[bool, typer.Option("--quiet", help="No progress lines on stderr (results still print).")]


WorkersOpt = Annotated[int | None, typer.Option(help="Solver threads.")]


SeedOpt = Annotated[int | None, typer.Option(help="Random seed (with --workers 1: reproducible).")]


ParamOpt = Annotated[list[str], typer.Option(help="Backend parameter KEY=VALUE, repeatable.")]


ExportOpt = Annotated[Path | None, typer.Option(
    "--export", help="Write the exact model here instead of solving: .pb or .pbtxt (CP-SAT), .mps or .lp "
                     "(MILP).")]


LimitHelp = (f"Seconds, wall-clock, for the whole command: loading, bounds, search, validation, writing "
             f"(default {DEFAULT_TIME_LIMIT:g} for every solver but greedy).")


PlanOpt = Annotated[Path | None, typer.Option(help="A layout plan JSON; its `choice` gives the layouts.")]


GrainOpt = Annotated[str | None, typer.Option(
    metavar="BYTES", help="How boxes become transfers: contiguous runs (default), runs cut every BYTES "
                          "bytes (a multiple of the word; 256: the reference's cost estimate), or 'box' (one "
                          "transfer per box, at its first element).")]


WithinOpt = Annotated[float, typer.Option(help="Keep every candidate that can be in a plan within this "
                                               "fraction of the best (0: the optimum's only).")]


UtilOpt = Annotated[float, typer.Option(help="Enumerate GEMM grids using at least this share of tiles.")]


ExchangeOpt = Annotated[str, typer.Option(help="Price exchange by load bounds (bound) or by the greedy "
                                               "schedule of each phase (greedy).")]


def _version(value: bool) -> None:
    if value:
        print(f"ipuopt {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print the version and exit.")] = False) -> None:
    """Exact models, lower bounds and greedy fallbacks for IPU compiler problems."""
