"""ipuopt: exact models, honest lower bounds and fast fallbacks for IPU compiler problems.

    import ipuopt
    phase, spec = ipuopt.load_phase("tiny")          # a file, or a bundled example by name
    result = ipuopt.solve(phase, spec, "cpsat", time_limit=5)

The API's names (see `ipuopt.api`) load on first use, so the command line starts fast.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_API = ("Arena", "Bound", "ExchangeResult", "Generation", "Phase", "Placement", "Report",
        "Schedule", "Spec", "Workload", "bounds", "generate", "load_arena", "load_phase",
        "load_schedule", "load_spec", "load_workload", "place", "render_arena", "render_schedule",
        "render_program", "run", "select_layouts", "simulate", "solve", "sweep", "sweep_report",
        "validate", "validate_placement")
__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    if name in _API:
        from ipuopt import api

        return getattr(api, name)
    raise AttributeError(f"module 'ipuopt' has no attribute {name!r}")
