"""ipuopt: exact models, honest lower bounds and fast fallbacks for IPU compiler problems.

    import ipuopt
    result = ipuopt.solve("tiny", solver="cpsat", time_limit=5)   # a bundled name, a path,
    print(result.status, result.value, result.bound, result.gap)  # a dict or a Phase
    placement = ipuopt.place("mini-mlp", "peak")                   # a Result[Placement]
    plan = ipuopt.select_layouts("toy")                            # a Result[Plan]

Build inputs in code: `Phase`/`Transfer`, `Arena`/`Buffer`, or documents (dicts) for any
of them and `LayoutProblem`; each is checked as a file is. `methods()` lists every method.
The API's names (see `ipuopt.api`, docs/python.md) load on first use, so the command line
starts fast.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_API = ("Arena", "Bound", "Buffer", "Conflict", "Generation", "InputError", "LayoutProblem", "Method",
        "Phase", "Placement", "Plan", "Report", "Result", "Schedule", "Simulation", "Spec", "Status",
        "Transfer", "Workload", "bounds", "export_model", "generate", "load_arena", "load_layout_problem",
        "load_phase", "load_schedule", "load_spec", "load_workload", "methods", "optimize", "place",
        "render_arena", "render_program", "render_schedule", "run", "schema", "select_layouts", "simulate",
        "solve", "sweep", "sweep_report", "validate", "validate_placement")
__all__ = ["__version__", *_API]


def __dir__() -> list[str]:
    return sorted(__all__)


def __getattr__(name: str) -> Any:
    if name in _API:
        from ipuopt import api

        return getattr(api, name)
    raise AttributeError(f"module 'ipuopt' has no attribute {name!r}")
