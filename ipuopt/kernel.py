"""The one solve kernel. Every problem's front door (exchange `solve`, arena `place`, layout
`plan`) is this one sequence over its own `Door`:

1. the method's options checked before any work, the budget started (`params`' time limit);
2. the baseline (the problem's greedy: it always ends, the answer of last resort); a
   baseline that is proven optimal, or that shows no answer exists, ends the solve;
3. the bounds; a baseline that meets them is the answer, the method is not run (nor when the
   method asked for is the baseline itself);
4. the method, `(instance, hint, params, budget, progress) -> Result`, from the baseline's
   answer; Ctrl-C at any stage stops it with the best answer kept so far;
5. the door's answer: never worse than the baseline, validated, one `Result`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from ipuopt.budget import Budget, run_interruptible
from ipuopt.params import Progress, SolveParams
from ipuopt.registry import Method, check_options
from ipuopt.result import Result, Status

METHOD_LEAST = 0.05  # seconds: with less left after the baseline and the bounds, the method is not run
SETTLED = (Status.OPTIMAL, Status.INFEASIBLE)


class Door(ABC):
    """One problem's side of the kernel: its instance, baseline, bounds and answer (each
    problem's front door defines the two abstract steps)."""

    instance: Any  # what every method of the problem works on
    after: str = "the baseline"  # what ran before the method, as a fallback's reason says it

    def inner(self, budget: Budget) -> Budget:
        """The stages' budget: the command's, less what the answer needs kept back."""
        return budget

    @abstractmethod
    def baseline(self, budget: Budget, progress: Progress) -> Result:
        """The problem's baseline: it always ends, and is the answer of last resort."""

    def bound(self, baseline: Result, budget: Budget, progress: Progress) -> None:
        """Lower bounds, into the baseline's result (`bound`); by default those the baseline
        already carries (the arena's live bytes), or none (the layout's come from its method)."""
        return None

    @abstractmethod
    def answer(self, baseline: Result | None, found: Result | None, interrupted: bool) -> Result:
        """The one result: never worse than the baseline, validated."""


def solve(door: Door, chosen: Method, params: SolveParams, budget: Budget | None = None,
          progress: Progress | None = None) -> Result:
    """`chosen` on `door`'s problem: the five steps above."""
    check_options(chosen, params.options, "params")
    budget = Budget.of(params.limit(chosen.default_limit), budget)
    inner = door.inner(budget)
    tell = progress or (lambda info: None)
    kept: dict[str, Result] = {}

    def work() -> Result:
        kept["baseline"] = base = door.baseline(inner, tell)
        if base.status in SETTLED:
            return base
        door.bound(base, inner, tell)
        met = base.value is not None and base.bound is not None and base.value <= base.bound
        if chosen.baseline or budget.interrupted or met:
            return base
        if inner.limit() < METHOD_LEAST:
            return Result(Status.FALLBACK, base.solution, base.value, solver=chosen.name,
                          extras={"reason": f"no time left for {chosen.name} beside {door.after}"})
        tell({"stage": chosen.name, **({"bound": base.bound} if base.bound is not None else {})})
        return chosen.load()(door.instance, base.solution, params, inner, progress)

    found, interrupted = run_interruptible(work, budget)
    return door.answer(kept.get("baseline"), found, interrupted)
