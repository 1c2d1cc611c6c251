"""Every method of every problem, declared once, and the policy that turns what a user asks
for (a method's name, a profile, a time limit) into a method and its parameters.

The command line, the Python API and sweeps all resolve through `resolve`, so `cpsat`
means the same thing (the `cpsat` profile: 60 s, both cores) wherever it is named, and a
time limit without a method asks for `auto` everywhere.

Each method is called through one protocol per problem, with what the user asked
(`SolveParams`) and the time it may take (`budget.Budget`):
- exchange: `(Instance, starting solution, SolveParams, Budget, progress) -> Result` (the
  starting solution is the greedy's; the greedy itself is the stage every method starts
  from); auto's stages are such methods, looked up here by name;
- arena: `(run)`, adding candidate placements to the run that started from the greedy's (the
  run holds its params and budget);
- layout: `(problem, structure, SolveParams, Budget, hint=, exclude=) -> Result`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ipuopt.errors import InputError, Problem
from ipuopt.params import DEFAULT_TIME_LIMIT, SolveParams

# Habits of the reference compiler's scheduler, options of the exchange greedy (`--param NAME=true`)
# to measure what each costs; never on by default, and their schedules meet every rule of the model.
HABITS = {
    "release_after_receives": "a send starts only once every receive already placed at each "
                              "of its destination tiles has completed (the previous payload "
                              "has landed: a route-latency bubble on the receive lane)",
    "paired_reserves_partner": "a paired send holds its partner's receive lane as well as its "
                               "transmit lane",
    "pair_whenever_possible": "every transfer that may be paired is (no choice of width by "
                              "completion)",
}
# Options of the greedy that are true or false: the habits, and `quick` (one rule on phases
# above greedy.QUICK_UP_TO transfers even with a time limit: replays that compare plans or placements
# need each schedule fast and made the same way more than a few percent better).
FLAGS = {**HABITS, "quick": "the first rule alone on phases above 5,000 transfers, time limit or not"}


@dataclass(frozen=True)
class Option:
    """What an option a method reads by name (`--param NAME=VALUE`) takes: checked before any
    work, whichever front door it came through."""

    kind: type  # bool, int, float or str
    wants: str  # what a value must be, as an error says it
    ok: Callable[[Any], bool] = lambda value: True

    def reason(self, value: Any) -> str | None:
        """Why `value` is refused, or None."""
        number = isinstance(value, int | float) and not isinstance(value, bool)
        fits = {bool: isinstance(value, bool), int: number and isinstance(value, int), float: number,
                str: isinstance(value, str)}[self.kind]
        return None if fits and self.ok(value) else f"must be {self.wants}, got {value!r}"


_COUNT = Option(int, "a whole number >= 0", lambda v: v >= 0)
_MILP = Option(str, "highs or cbc", lambda v: v in ("highs", "cbc"))
OPTIONS = {
    **{flag: Option(bool, "true or false") for flag in FLAGS},
    "prove_split": Option(float, "a number in (0, 1]", lambda v: 0 < v <= 1),
    "milp_solver": _MILP, "solver": _MILP,  # `solver`: milp_solver's older name
    "msg": Option(bool, "true or false"),
    "free": Option(int, "a whole number >= 1", lambda v: v >= 1),
    "sub_time_limit": Option(float, "a number of seconds > 0", lambda v: v > 0),
    "steps": _COUNT, "rounds": _COUNT, "passes": _COUNT,
}
_MILP_OPTIONS = ("milp_solver", "solver", "msg")
_AUTO_OPTIONS = ("rounds", "passes", "free", "sub_time_limit", "prove_split")  # its stages' own


@dataclass(frozen=True)
class Method:
    problem: str
    name: str
    kind: str  # exact (proves optimality given time), heuristic, or portfolio (runs others)
    target: str  # "module:function", imported when first called
    summary: str
    options: tuple[str, ...] = ()  # the parameters it reads by name, besides the generic ones
    runs_cpsat: bool = False  # also takes any CP-SAT parameter by its own name
    profile: str | None = None  # the profile whose settings the bare name implies

    @property
    def default_limit(self) -> float | None:
        """Its wall-clock limit when none is given: every method has one but the exchange
        greedy, which always ends and is the answer of last resort."""
        return None if (self.problem, self.name) == ("exchange", "greedy") else DEFAULT_TIME_LIMIT

    def load(self) -> Callable[..., Any]:
        module, function = self.target.split(":")
        return getattr(importlib.import_module(module), function)


def _m(problem: str, name: str, kind: str, target: str, summary: str, **kw: Any) -> Method:
    return Method(problem, name, kind, target, summary, **kw)


_EX = "ipuopt.exchange."
_AR = "ipuopt.arena.solve:"
METHODS: tuple[Method, ...] = (
    _m("exchange", "greedy", "heuristic", _EX + "greedy:best_greedy",
       "list scheduler: the best of its priority rules and width policies", options=tuple(FLAGS)),
    _m("exchange", "cpsat", "exact", _EX + "cpsat:solve_cpsat",
       "the whole phase in CP-SAT, proof phase after",
       options=("prove_split",), runs_cpsat=True, profile="cpsat"),
    _m("exchange", "milp", "exact", _EX + "milp:solve_milp", "disjunctive MILP (CBC or HiGHS)",
       options=_MILP_OPTIONS, profile="milp"),
    _m("exchange", "lns", "heuristic", _EX + "lns:solve_lns",
       "CP-SAT re-placing a few hundred transfers at a time",
       options=("free", "sub_time_limit", "steps"), runs_cpsat=True),
    _m("exchange", "iterated", "heuristic", _EX + "iterated:solve_iterated",
       "many greedy schedules, late ones first",
       options=("rounds",)),
    _m("exchange", "justify", "heuristic", _EX + "justify:solve_justify",
       "forward-backward passes of the list greedy from a schedule", options=("passes",)),
    _m("exchange", "colour", "heuristic", _EX + "colour:solve_colour",
       "rounds of equal payloads, by colouring",
       runs_cpsat=True),
    _m("exchange", "periodic", "heuristic", _EX + "periodic:solve_periodic",
       "a reduction's rounds in one repeating pattern (CP-SAT), then the list greedy",
       runs_cpsat=True),
    _m("exchange", "nondelay", "heuristic", _EX + "auto:solve_nondelay",
       "the non-delay list greedy (rule time) with each width policy"),
    _m("exchange", "coarse", "portfolio", _EX + "coarse:solve_coarse",
       "a fragment-level phase as blocks of its boxes, auto on the blocks, unrolled",
       options=_AUTO_OPTIONS, runs_cpsat=True),
    _m("exchange", "split", "portfolio", _EX + "split:solve_split",
       "a phase that falls apart, part by part: auto on one part of each kind, copied to the rest",
       options=_AUTO_OPTIONS, runs_cpsat=True),
    _m("exchange", "auto", "portfolio", _EX + "auto:solve_auto",
       "by size: split, CP-SAT, or the non-delay greedy, coarse, colour, periodic, justify, iterated and LNS",
       options=_AUTO_OPTIONS, runs_cpsat=True),
    _m("arena", "auto", "portfolio", _AR + "run_auto",
       "the exact search racing CP-SAT, then CP-SAT", runs_cpsat=True),
    _m("arena", "greedy", "heuristic", _AR + "run_greedy", "best-fit, several orders"),
    _m("arena", "baseline", "heuristic", _AR + "run_baseline",
       "the greedy's placement shifted 4 KiB where it clashes"),
    _m("arena", "search", "exact", _AR + "run_search", "MiniMalloc-style exact search (fit, peak)"),
    _m("arena", "cpsat", "exact", _AR + "run_cpsat", "the arena in CP-SAT", runs_cpsat=True),
    _m("arena", "milp", "exact", _AR + "run_milp", "the arena as a MILP (CBC or HiGHS)",
       options=_MILP_OPTIONS),
    _m("layout", "milp", "exact", "ipuopt.layout.milp:solve_layout_milp", "the layout MILP (HiGHS)",
       options=_MILP_OPTIONS),
    _m("layout", "cpsat", "exact", "ipuopt.layout.cpsat:solve_layout_cpsat", "the layout model in CP-SAT",
       runs_cpsat=True),
    _m("layout", "beam", "heuristic", "ipuopt.layout.beam:beam_search", "the compiler's beam over operators"),
)
_BY = {(m.problem, m.name): m for m in METHODS}


def names(problem: str) -> tuple[str, ...]:
    return tuple(m.name for m in METHODS if m.problem == problem)


def method(problem: str, name: str, field: str = "--solver") -> Method:
    """The method `name` of `problem`, or an input error naming the known ones."""
    if (problem, name) not in _BY:
        raise InputError.one("", field, f"unknown solver {name!r} (one of {', '.join(names(problem))})")
    return _BY[(problem, name)]


def check_options(m: Method, options: dict[str, Any], field: str = "--param") -> None:
    """Every option names something `m` reads, with a value it takes: refused before any work
    otherwise."""
    problems = []
    for key, value in options.items():
        if key in m.options:
            if why := OPTIONS[key].reason(value):
                problems.append(Problem("", f"{field} {key}", why))
            continue
        if m.runs_cpsat:
            from ipuopt.backends.cpsat import is_parameter

            if is_parameter(key):
                continue
        own = ", ".join(m.options) or "none"
        why = (f"not a CP-SAT parameter, nor one of {m.name}'s own ({own})" if m.runs_cpsat
               else f"not a parameter of {m.name} (its own: {own})")
        problems.append(Problem("", f"{field} {key}", why))
    if problems:
        raise InputError(problems)


def resolve(problem: str, solver: str | None = None, *, profile: str | None = None,
            time_limit: float | None = None, workers: int | None = None, seed: int | None = None,
            options: dict[str, Any] | None = None, field: str = "--solver") -> tuple[Method, SolveParams]:
    """The method and parameters a request means, the same from every front door.

    A profile names a method and its settings; a bare method name brings its own profile's
    (`cpsat`: 60 s on both cores); a time limit without a method asks for `auto`, the best
    answer in that time; explicit limits, workers, seed and options override the profile's.
    Unknown names and options are refused before any work."""
    SolveParams(time_limit, workers, seed)  # option ranges, before the profile is read
    if solver is not None:
        method(problem, solver, field)
    settings: dict[str, Any] = {}
    if profile:
        from ipuopt.profiles import load_profile

        backend, settings = load_profile(profile)
        if solver and solver != backend:
            raise InputError.one("", field, f"{solver} conflicts with --profile {profile} (backend "
                                            f"{backend}): give one of them")
        solver = backend
    elif solver is None:
        solver = "auto" if time_limit is not None and problem == "exchange" else _DEFAULT[problem]
    chosen = method(problem, solver, "backend" if profile else field)
    if not profile and chosen.profile:
        from ipuopt.profiles import load_profile

        settings = load_profile(chosen.profile)[1]
    for key, value in (("time_limit", time_limit), ("workers", workers), ("seed", seed)):
        if value is not None:
            settings[key] = value
    settings.update(options or {})
    params = SolveParams.of(settings)
    check_options(chosen, params.options)
    return chosen, params


_DEFAULT = {"exchange": "greedy", "arena": "auto", "layout": "milp"}
