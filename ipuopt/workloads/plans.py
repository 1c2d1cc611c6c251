"""Layouts named outside a workload: a plan file's (or a run file's) choice per operator, and
OP=LAYOUT items; read the same by the command line and the API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ipuopt.errors import InputError, Problem
from ipuopt.io import read_document
from ipuopt.spec import Spec
from ipuopt.workloads.gemm import GemmLayout
from ipuopt.workloads.workload import Workload


def plan_layouts(plan: Path | str | dict[str, Any] | Any | None, wl: Workload, spec: Spec,
                 ) -> dict[str, GemmLayout]:
    """A layout plan's `choice` of GEMM layouts (operator -> candidate id, which is the layout
    label), or a run's `layouts` (`ipuopt run` and `optimize` write them); elementwise
    operators run on their input's layout. A plan made for another workload (by its name) is
    reported as that. `plan` is a file, its document, or a plan the API returned."""
    if plan is None:
        return {}
    if hasattr(plan, "to_dict"):  # a Result[Plan] or a Plan
        plan = plan.to_dict()
    doc, plan = (plan, "plan") if isinstance(plan, dict) else (read_document(plan), plan)
    key = "layouts" if isinstance(doc, dict) and "choice" not in doc and "layouts" in doc else "choice"
    choice = doc.get(key) if isinstance(doc, dict) else None
    if not isinstance(choice, dict) or not all(isinstance(v, str) for v in choice.values()):
        raise InputError.one(str(plan), key, "a plan needs a mapping operator -> candidate id")
    named = doc.get("workload")
    if isinstance(named, str) and named != wl.name:
        raise InputError.one(str(plan), "workload", f"a plan for workload {named!r}, not {wl.name!r}")
    ops = {o.name: o for o in wl.operators}
    if unknown := sorted(set(choice) - set(ops)):
        raise InputError.one(str(plan), key, f"operators not in {wl.name}: {', '.join(unknown)}")
    return parse_layouts([f"{op}={label}" for op, label in choice.items() if ops[op].kind == "gemm"],
                         spec, f"{plan}: {key}")


def parse_layouts(items: list[str], spec: Spec, where: str = "--layout") -> dict[str, GemmLayout]:
    """OP=LAYOUT items, every bad one reported (an operator given twice too)."""
    out, problems = {}, []
    for item in items:
        if "=" not in item:
            problems.append(Problem("", where, f"{item!r} is not OP=RxCxP/AxB[/REGION]"))
            continue
        op, text = item.split("=", 1)
        if op.strip() in out:
            problems.append(Problem("", where, f"{op.strip()} is given twice"))
            continue
        try:
            out[op.strip()] = GemmLayout.parse(text, spec, f"{where} {op.strip()}")
        except InputError as exc:
            problems += exc.problems
    if problems:
        raise InputError(problems)
    return out
