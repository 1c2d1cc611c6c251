"""The beam baseline a compiler's planner uses: screen each operator's candidates to a
fixed width by local cost (with a diversity rule), then a beam over the program.

It is the warm start of the exact models, and the thing they are measured against: the
trace says at which screen, or at which beam step, a given plan was thrown away."""

from __future__ import annotations

from dataclasses import dataclass, field

from ipuopt.budget import Budget
from ipuopt.layout.model import Instance, Structure
from ipuopt.layout.problem import LayoutProblem
from ipuopt.params import Progress, SolveParams
from ipuopt.registry import declare
from ipuopt.result import Result, Status


@dataclass
class BeamRun:
    choice: dict[str, int] | None  # operator -> candidate index, None when no plan survived
    cycles: int | None
    kept: dict[str, list[int]]  # operator -> screened candidates, best first
    order: dict[str, list[int]]  # operator -> every candidate in local order
    pruned: dict[str, tuple[int, int]] = field(default_factory=dict)  # see `trace`


def screen(problem: LayoutProblem, st: Structure, width: int,
           ) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    """Per operator: every usable candidate in local order (own cycles, then memory), and the
    `width` kept: the best of each distinct (output, needed inputs) first, so that the beam
    sees different layouts, then the cheapest of the rest."""
    kept, order = {}, {}
    for name, op in problem.operators.items():
        ranked = sorted((i for i in range(len(op.candidates)) if st.allowed[name][i]),
                        key=lambda i: (st.cost[name][i], sum(op.candidates[i].memory.values()), i))
        seen, first, rest = set(), [], []
        for i in ranked:
            c = op.candidates[i]
            sig = (c.output, tuple(sorted(c.needs.items())))
            (rest if sig in seen else first).append(i)
            seen.add(sig)
        kept[name] = sorted((first + rest)[:width], key=ranked.index)
        order[name] = ranked
    return kept, order


def beam_search(problem: LayoutProblem, st: Structure, width: int = 64, beam: int = 64,
                follow: dict[str, int] | None = None) -> BeamRun:
    """The beam over program order; with `follow` (a full plan), also where its prefix was
    dropped: `pruned[op] = (rank among the expanded states, states kept)`."""
    kept, order = screen(problem, st, width)
    run = BeamRun(None, None, kept, order)
    states: list[tuple[int, dict[str, int]]] = [(0, {})]
    for k, name in enumerate(problem.order):
        op = problem.operators[name]
        grown = []
        for cost, ch in states:
            for i in kept[name]:
                c = op.candidates[i]
                add = st.cost[name][i]
                for t in op.inputs:
                    if t in problem.producer:
                        src = problem.producer[t]
                        have = problem.operators[src].candidates[ch[src]].output
                        moved = problem.move(t, have, c.needs[t])
                        if moved is None:
                            break
                        add += moved
                else:
                    nxt = {**ch, name: i}
                    chosen = {o: problem.operators[o].candidates[j] for o, j in nxt.items()}
                    if all(b <= problem.capacity[r] for r, b in problem.memory_at(k, chosen).items()):
                        grown.append((cost + add, nxt))
        grown.sort(key=lambda s: (s[0], [s[1][o] for o in problem.order[:k + 1]]))
        if follow is not None and not run.pruned:  # the first step that drops the plan's prefix
            pos = next((n for n, s in enumerate(grown) if all(s[1][o] == follow[o] for o in s[1])), None)
            if pos is not None and pos >= beam:
                run.pruned[name] = (pos + 1, beam)
        states = grown[:beam]
        if not states:
            return run
    run.cycles, run.choice = states[0]
    return run


def trace(problem: LayoutProblem, run: BeamRun, plan: dict[str, int], width: int) -> list[dict]:
    """Which picks of `plan` the beam discarded, where, and at which rank."""
    out = []
    for name in problem.order:
        i = plan[name]
        cand = problem.operators[name].candidates[i]
        if i not in run.kept[name]:
            rank = run.order[name].index(i) + 1 if i in run.order[name] else None
            out.append({"operator": name, "candidate": cand.id, "where": "screen", "rank": rank,
                        "of": len(run.order[name]), "width": width})
    for name, (rank, kept) in run.pruned.items():
        if not out:  # a pick screened out already explains why the plan was lost
            out.append({"operator": name, "candidate": problem.operators[name].candidates[plan[name]].id,
                        "where": "beam", "step": problem.order.index(name), "rank": rank, "beam": kept})
    return out


@declare("layout", "beam", "heuristic", "the compiler's beam over operators", baseline=True)
def solve_beam(inst: Instance, hint: None, params: SolveParams, budget: Budget,
               progress: Progress | None = None, width: int = 64, beam: int = 64) -> Result:
    """The baseline of every layout method: the beam's plan (none when no plan survived it)."""
    run = beam_search(inst.problem, inst.structure, width, beam)
    return Result(Status.FEASIBLE if run.choice is not None else Status.UNKNOWN, run.choice, run.cycles,
                  solver="beam")
