"""The exact models, written to a file for another solver: CP-SAT as a protocol buffer
(`.pb` binary, `.pbtxt` text), the MILP as `.mps` or `.lp`.

The model written is the one ipuopt's own exact method builds: for an exchange phase with
the horizon between the best bound and the greedy's horizon (so its optimum is the phase's,
whenever the greedy is not already optimal), for an arena and a layout problem as is."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from ipuopt.errors import InputError
from ipuopt.io import write_atomic

FORMS = {".pb": "cpsat", ".pbtxt": "cpsat", ".mps": "milp", ".lp": "milp"}


def form_of(out: str | Path, option: str = "--export") -> str:
    """cpsat or milp, from the file's suffix; refused before any work otherwise."""
    suffix = Path(out).suffix.lower()
    if suffix not in FORMS:
        raise InputError.one(str(out), option, f"the suffix names the form: {', '.join(FORMS)}")
    return FORMS[suffix]


def write_model(model: Any, out: str | Path, protect: tuple[Path, ...] = ()) -> dict[str, Any]:
    """Write a CP-SAT `CpModel` or a PuLP problem whole (never half a file); its size."""
    target = Path(out)
    suffix = target.suffix.lower()
    cpsat = hasattr(model, "Proto")
    if (form_of(target) == "cpsat") != cpsat:
        raise InputError.one(str(out), "--export", "a CP-SAT model is written as .pb or .pbtxt" if cpsat
                             else "a MILP is written as .mps or .lp")
    with tempfile.TemporaryDirectory() as tmp:  # each library writes to a path: then moved whole
        path = Path(tmp) / f"model{suffix}"
        if cpsat:
            model.export_to_file(str(path))  # binary, or text for a name ending in "txt"
        elif suffix == ".mps":
            model.writeMPS(str(path))
        else:
            model.writeLP(str(path))
        write_atomic(target, path.read_bytes(), protect)
    if cpsat:
        proto = model.Proto()
        return {"file": str(target), "form": "cpsat", "variables": len(proto.variables),
                "constraints": len(proto.constraints)}
    return {"file": str(target), "form": "milp", "variables": len(model.variables()),
            "constraints": model.numConstraints()}


def exchange_model(phase: Any, spec: Any, form: str) -> Any:
    """The exchange model of `form` with the horizon in [best bound, greedy horizon]."""
    from ipuopt.exchange.bounds import all_bounds, best_bound
    from ipuopt.exchange.greedy import best_greedy
    from ipuopt.exchange.instance import Instance

    inst = Instance(phase, spec)
    upper = inst.horizon(best_greedy(inst)[:2])
    lower = best_bound(all_bounds(inst, None)).value
    if form == "cpsat":
        from ipuopt.exchange.cpsat import build_model

        return build_model(spec, inst.timings, upper, lower).model
    from ipuopt.exchange.milp import build_milp

    return build_milp(spec, inst.timings, upper, lower)[0]


def arena_model(arena: Any, objective: str, form: str) -> Any:
    if form == "cpsat":
        from ipuopt.arena.cpsat import ArenaModel

        return ArenaModel(arena, objective).model
    from ipuopt.arena.milp import build_arena_milp

    return build_arena_milp(arena, objective)[0]


def layout_model(problem: Any, form: str) -> Any:
    from ipuopt.layout.model import structure

    st = structure(problem)
    if form == "cpsat":
        from ipuopt.layout.cpsat import build_layout_cpsat

        return build_layout_cpsat(problem, st)[0]
    from ipuopt.layout.milp import build_layout_milp

    return build_layout_milp(problem, st)[0]
