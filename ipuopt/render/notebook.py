"""What a notebook shows for ipuopt's answers: a one-line text, and as rich output a summary
table above the very page `ipuopt render` writes, framed so its script and style stay its own."""

from __future__ import annotations

import html
from typing import Any

from ipuopt.display import count, draws
from ipuopt.render.page import page
from ipuopt.render.views import arena_boxes, phase_view, program_view

FRAME_HEIGHT = 560  # pixels: the page's default zoom shows a full view


def framed(page_html: str, height: int = FRAME_HEIGHT) -> str:
    """A page inside an iframe: Jupyter, JupyterLab and VS Code run its script without letting
    its style or globals touch the notebook."""
    return (f'<iframe srcdoc="{html.escape(page_html, quote=True)}" style="width: 100%; '
            f'height: {height}px; border: 1px solid #ddd" sandbox="allow-scripts"></iframe>')


def table(title: str, rows: list[tuple[str, Any]]) -> str:
    cells = "".join(f"<tr><th style='text-align: left; padding-right: 1em'>{html.escape(k)}</th>"
                    f"<td style='text-align: left'>{html.escape(_text(v))}</td></tr>" for k, v in rows
                    if v is not None and v != "")
    return f"<div><b>{html.escape(title)}</b><table>{cells}</table></div>"


def _text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


# ---- schedules ----------------------------------------------------------------------------------

def schedule_page(schedule: Any, bound: int | None = None) -> str | None:
    """The page `ipuopt render PHASE SCHEDULE --out F.html` writes, or None when the schedule does
    not know its phase (read from a file: `ipuopt.render_schedule` takes the phase)."""
    if schedule.drawn_on is None:
        return None
    phase, spec = schedule.drawn_on
    view = phase_view(phase, spec, schedule, bound)
    return page(view.to_dict(), "timeline.js")


def schedule_rows(schedule: Any) -> list[tuple[str, Any]]:
    return [("phase", schedule.phase), ("spec", schedule.spec), ("transfers", len(schedule.starts)),
            ("paired", sum(w == "paired" for w in schedule.widths.values())), ("horizon", schedule.horizon)]


def schedule_html(schedule: Any, bound: int | None = None, head: str = "") -> str:
    picture = schedule_page(schedule, bound)
    note = "" if picture else "<p>(no picture: read from a file, it does not know its phase; <code>" \
                              "ipuopt.render_schedule(phase, spec, schedule, 'F.html')</code> draws it)</p>"
    return head + table("Schedule", schedule_rows(schedule)) + (framed(picture) if picture else note)


# ---- placements ---------------------------------------------------------------------------------

def placement_page(placement: Any) -> str | None:
    """The page `ipuopt render-arena ARENA PLACEMENT --out F.html` writes (None: nothing placed)."""
    if not placement.offsets:
        return None
    return page(arena_boxes(placement.arena, placement.offsets), "arena.js")


def placement_html(placement: Any, head: str = "") -> str:
    a = placement.arena
    rows = [("arena", a.name), ("spec", a.spec_name), ("region", a.region), ("buffers", len(a.buffers)),
            ("placed", len(placement.offsets or {})), ("objective", placement.objective),
            ("peak (bytes)", placement.peak), ("capacity (bytes)", a.capacity)]
    picture = placement_page(placement)
    return head + table("Placement", rows) + (framed(picture) if picture else "<p>(nothing placed)</p>")


# ---- program runs -------------------------------------------------------------------------------

def run_text(run: dict[str, Any]) -> str:
    bound = f", bound {run['lower_bound']}" if run.get("lower_bound") is not None else ""
    over = f", over every plan {run['program_bound']}" if run.get("program_bound") is not None else ""
    return f"ProgramRun({run['workload']!r} on {run['spec']}: {run['total_cycles']} cycles, " \
           f"{count(len(run['boundaries']), 'exchange phase')}{bound}{over})"


def run_html(run: dict[str, Any]) -> str:
    rows = [("workload", run["workload"]), ("spec", run["spec"]), ("total cycles", run["total_cycles"]),
            ("compute", run["compute_cycles"]), ("exchange", run["exchange_cycles"]),
            ("sync", run["sync_cycles"]), ("arrival spread", run.get("arrival_spread_cycles")),
            ("bound (these layouts)", run.get("lower_bound")), ("gap", run.get("gap")),
            ("bound over every plan", run.get("program_bound")), ("gap to it", run.get("program_gap")),
            ("interrupted", run.get("interrupted")),
            ("layouts", ", ".join(f"{op} {lay}" for op, lay in run.get("layouts", {}).items()))]
    return table("Program run", rows) + framed(page(program_view(run).to_dict(), "timeline.js"))


class RunDocument(dict):
    """A program run document (as `ipuopt run --json` prints it): a plain dict to code and JSON,
    a summary and the `render --program` page to a notebook."""

    def __repr__(self) -> str:
        return run_text(self)

    def _repr_html_(self) -> str:
        return run_html(self)


# ---- results ------------------------------------------------------------------------------------

def result_rows(result: Any) -> list[tuple[str, Any]]:
    return [("status", str(result.status)), ("solver", result.solver),
            ("method", result.method if result.method != result.solver else ""), ("value", result.value),
            ("lower bound", result.bound), ("gap", f"{result.gap:.2%}" if result.gap is not None else None),
            ("bound names", ", ".join(f"{b.name} {b.value}" for b in result.bounds)),
            ("seconds", round(result.runtime, 3)), ("interrupted", result.interrupted or None),
            ("reason", result.reason)]


def result_html(result: Any) -> str:
    head = table("Result", result_rows(result))
    sol = result.solution
    if sol is None:
        return head
    if hasattr(sol, "drawn_on"):
        return schedule_html(sol, result.bound, head)
    if hasattr(sol, "arena"):
        return placement_html(sol, head)
    own = sol.to_dict()  # a plan: its figures and its choice per operator
    rows = [(k, v) for k, v in own.items() if not isinstance(v, list | dict)]
    choice = own.get("choice") or {}
    return head + table(type(sol).__name__, rows + [(op, pick) for op, pick in choice.items()])


draws("result", result_html)
draws("schedule", schedule_html)
draws("placement", placement_html)
