"""A schedule: start and width per transfer, in the JSON format of the model doc."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ipuopt.errors import InputError, Problem
from ipuopt.io import read_document
from ipuopt.result import Status

STATUSES = (Status.OPTIMAL, Status.FEASIBLE, Status.FALLBACK, Status.INFEASIBLE)

WIDTH_NAMES = ("ordinary", "paired")


@dataclass
class Schedule:
    starts: dict[str, int]
    widths: dict[str, str]
    horizon: int | None = None
    phase: str = ""
    spec: str = ""
    solver: str = ""
    status: str = "feasible"
    lower_bound: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self, order: list[str] | None = None) -> dict[str, Any]:
        ids = order if order is not None else list(self.starts)
        out: dict[str, Any] = {
            "phase": self.phase, "spec": self.spec, "solver": self.solver,
            "status": self.status, "horizon": self.horizon, "lower_bound": self.lower_bound,
        }
        out.update(self.extra)
        out["transfers"] = [{"id": i, "start": self.starts[i], "width": self.widths[i]}
                            for i in ids]
        return out


def schedule_from_dict(doc: Any, file: str = "") -> Schedule:
    """Parse a schedule; only id/start/width are needed, the rest is informative."""
    if not isinstance(doc, dict) or not isinstance(doc.get("transfers"), list):
        raise InputError.one(file, "transfers", "a schedule needs a list of transfers")
    problems: list[Problem] = []
    starts: dict[str, int] = {}
    widths: dict[str, str] = {}
    for i, entry in enumerate(doc["transfers"]):
        if not isinstance(entry, dict) or "id" not in entry:
            problems.append(Problem(file, f"transfers[{i}]", "needs id, start and width"))
            continue
        tid = str(entry["id"])
        start, width = entry.get("start"), entry.get("width", "ordinary")
        if not isinstance(start, int) or isinstance(start, bool):
            problems.append(Problem(file, f"transfer {tid}.start", f"not an integer: {start!r}"))
            continue
        if width not in WIDTH_NAMES:
            problems.append(Problem(file, f"transfer {tid}.width",
                                    f"must be ordinary or paired, got {width!r}"))
            continue
        if tid in starts:
            problems.append(Problem(file, f"transfer {tid}.id", "appears twice"))
        starts[tid] = start
        widths[tid] = width
    status = doc.get("status", "feasible")
    if status not in STATUSES:
        problems.append(Problem(file, "status", f"must be one of {', '.join(STATUSES)}"))
    if problems:
        raise InputError(problems)
    horizon = doc.get("horizon")
    return Schedule(starts=starts, widths=widths,
                    horizon=horizon if isinstance(horizon, int) else None,
                    phase=str(doc.get("phase") or ""), spec=str(doc.get("spec") or ""),
                    solver=str(doc.get("solver") or ""), status=status,
                    lower_bound=doc.get("lower_bound"))


def schedule_for(schedule: Schedule, phase: Any, file: str = "") -> Schedule:
    """`schedule`, checked to be made for `phase`: one made for another is reported as that,
    in one line, not as every transfer unknown and missing."""
    if schedule.phase and phase.name and schedule.phase != phase.name:
        raise InputError.one(file, "phase", f"a schedule for phase {schedule.phase!r}, not {phase.name!r}")
    if phase.transfers and schedule.starts and not any(t.id in schedule.starts for t in phase.transfers):
        raise InputError.one(file, "transfers", f"none of its {len(schedule.starts)} transfers is in phase "
                                                f"{phase.name or phase.source!r}")
    return schedule


def load_schedule(path: str | Path) -> Schedule:
    return schedule_from_dict(read_document(path), str(path))
