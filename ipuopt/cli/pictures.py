"""Pictures: a schedule or a program run as a timeline, a placement as boxes."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ipuopt.cli.app import SpecOpt, app
from ipuopt.cli.exchange import with_schedule
from ipuopt.cli.options import check_out
from ipuopt.errors import InputError
from ipuopt.exchange.validate import validate
from ipuopt.io import read_document


@app.command("render")
def render_cmd(
    phase: Annotated[Path | None, typer.Argument(help="Phase file or bundled example name.")] = None,
    schedule: Annotated[Path | None, typer.Argument(help="Schedule JSON.")] = None,
    out: Annotated[Path, typer.Option(help="F.html (interactive page) or F.png.")] = Path("timeline.html"),
    program: Annotated[Path | None, typer.Option(help="A run JSON (ipuopt run --out) instead.")] = None,
    spec: SpecOpt = None,
) -> None:
    """A schedule (or a program run) as a timeline: tiles' transmit and receive lanes, multicast
    and paired sends, the critical chain; hover for details, wheel to zoom."""
    from ipuopt.render.save import PICTURES, save
    from ipuopt.render.views import phase_view, program_view

    if (program is None) == (phase is None or schedule is None):
        raise InputError.one("", "PHASE SCHEDULE/--program",
                             "give a phase and its schedule, or --program RUN.json")
    check_out(out, phase, schedule, program, spec, suffixes=PICTURES)
    if program is not None:
        doc = read_document(program)
        if not isinstance(doc, dict) or not isinstance(doc.get("boundaries"), list):
            raise InputError.one(str(program), "boundaries", "not a run file (ipuopt run --out)")
        view = program_view(doc)
    else:
        doc = read_document(schedule)  # type: ignore[arg-type]
        ph, sp, sched = with_schedule(phase, schedule, spec, doc)  # type: ignore[arg-type]
        report = validate(ph, sp, sched)
        if not report.ok:
            raise InputError.one(str(schedule), "", f"breaks the rules ({report.violations[0]}); "
                                 "ipuopt validate lists every violation")
        bound = doc.get("lower_bound") if isinstance(doc, dict) else None
        known = isinstance(bound, int) and not isinstance(bound, bool)
        view = phase_view(ph, sp, sched, bound if known else None)
    save(out, view)
    print(f"wrote {out}: {len(view.rows)} rows, {len(view.items)} intervals")


@app.command("render-arena")
def render_arena_cmd(
    arena: Annotated[Path | None, typer.Argument(help="Arena file or bundled arena name.")] = None,
    placement: Annotated[Path | None, typer.Argument(help="Placement JSON (ipuopt place --out).")] = None,
    csv_in: Annotated[Path | None, typer.Option("--csv", help="Placed allocator CSV (with an offset "
                                                              "column) instead.")] = None,
    capacity: Annotated[int | None, typer.Option(help="Bytes available (with --csv).")] = None,
    out: Annotated[Path, typer.Option(help="F.html (interactive page) or F.png.")] = Path("arena.html"),
) -> None:
    """A placement as boxes of address against program step; conflicts marked."""
    from ipuopt.arena.problem import load_arena, load_csv, load_offsets
    from ipuopt.render.save import PICTURES, save
    from ipuopt.render.views import arena_boxes

    if (csv_in is None) == (arena is None or placement is None):
        raise InputError.one("", "ARENA PLACEMENT/--csv", "give an arena and its placement, or --csv FILE "
                                                          "--capacity BYTES")
    check_out(out, arena, placement, csv_in, suffixes=PICTURES)
    if csv_in is not None:
        if capacity is None or capacity <= 0:
            raise InputError.one(str(csv_in), "--capacity", "required with --csv, in bytes > 0")
        problem = load_csv(csv_in, capacity)
        offsets = load_offsets(csv_in, problem)
    else:
        problem = load_arena(arena)  # type: ignore[arg-type]
        offsets = load_offsets(placement, problem)  # type: ignore[arg-type]
    source = str(csv_in or placement)
    from ipuopt.arena.validate import validate_placement

    report = validate_placement(problem, offsets)
    if not report.ok:
        raise InputError.one(source, "offsets", f"breaks the arena's rules ({report.violations[0]}); "
                                                "ipuopt validate lists every violation")
    data = arena_boxes(problem, offsets)  # type: ignore[arg-type]
    save(out, data)
    print(f"wrote {out}: {len(data['boxes'])} buffers, {len(data['conflicts'])} paying conflicts")
