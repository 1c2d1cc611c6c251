"""Every method of every problem, and the policy that turns what a user asks for (a method's
name, a profile, a time limit) into a method and its parameters.

A method is declared where it is defined, by `declare` (its kind, summary and the options it
reads, each with its type); `HOMES` says only in which module each name is, so that naming a
method imports that module alone (OR-Tools, 0.45 s, only when a method that uses it is asked
for) and listing the names imports nothing.

The command line, the Python API and sweeps all resolve through `resolve`, so `cpsat`
means the same thing (the `cpsat` profile: 60 s, both cores) wherever it is named, and a
time limit without a method asks for `auto` everywhere.

Every method of every problem is called the same way, by the one solve kernel
(`kernel.solve`): `(instance, hint, SolveParams, Budget, progress) -> Result`, where the
instance is the problem's (`exchange.instance`, `arena.instance`, `layout.model`) and the
hint the best answer so far (the baseline's, or an earlier stage's in a pipeline).
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


FLAG = Option(bool, "true or false")
COUNT = Option(int, "a whole number >= 0", lambda v: v >= 0)
SECONDS = Option(float, "a number of seconds > 0", lambda v: v > 0)
_MILP = Option(str, "highs or cbc", lambda v: v in ("highs", "cbc"))
SHARE = Option(float, "a number in (0, 1]", lambda v: 0 < v <= 1)
MILP_OPTIONS = {"milp_solver": _MILP, "solver": _MILP, "msg": FLAG}  # solver: milp_solver's older name
# auto's stages' own options, which the pipelines (auto, coarse, split) pass on to them
PIPELINE = {"rounds": COUNT, "passes": COUNT, "free": Option(int, "a whole number >= 1", lambda v: v >= 1),
            "sub_time_limit": SECONDS, "prove_split": SHARE}


@dataclass(frozen=True)
class Method:
    problem: str
    name: str
    kind: str  # exact (proves optimality given time), heuristic, or portfolio (runs others)
    function: Callable[..., Any]  # (instance, hint, SolveParams, Budget, progress) -> Result
    summary: str
    options: dict[str, Option]  # the parameters it reads by name, besides the generic ones
    runs_cpsat: bool = False  # also takes any CP-SAT parameter by its own name
    profile: str | None = None  # the profile whose settings the bare name implies
    baseline: bool = False  # the problem's baseline: it always ends, and every other method starts from it

    @property
    def default_limit(self) -> float | None:
        """Its wall-clock limit when none is given: every method has one but the exchange
        greedy, which always ends and is the answer of last resort."""
        return None if (self.problem, self.name) == ("exchange", "greedy") else DEFAULT_TIME_LIMIT

    def load(self) -> Callable[..., Any]:
        return self.function


# Which module declares each method: naming one imports that module alone.
_EX, _AR, _LA = "ipuopt.exchange.", "ipuopt.arena.", "ipuopt.layout."
HOMES: dict[str, dict[str, str]] = {
    "exchange": {"greedy": _EX + "greedy", "cpsat": _EX + "cpsat", "milp": _EX + "milp", "lns": _EX + "lns",
                 "iterated": _EX + "iterated", "justify": _EX + "justify", "colour": _EX + "colour",
                 "periodic": _EX + "periodic", "nondelay": _EX + "auto", "coarse": _EX + "coarse",
                 "split": _EX + "split", "auto": _EX + "auto"},
    "arena": {"auto": _AR + "methods", "greedy": _AR + "methods", "baseline": _AR + "methods",
              "search": _AR + "methods", "cpsat": _AR + "methods", "milp": _AR + "milp"},
    "layout": {"milp": _LA + "milp", "cpsat": _LA + "cpsat", "beam": _LA + "beam"},
}
_DECLARED: dict[tuple[str, str], Method] = {}


def declare(problem: str, name: str, kind: str, summary: str, *, options: dict[str, Option] | None = None,
            runs_cpsat: bool = False, profile: str | None = None,
            baseline: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declares the function below as method `name` of `problem`, with the options it reads."""

    def mark(function: Callable[..., Any]) -> Callable[..., Any]:
        _DECLARED[(problem, name)] = Method(problem, name, kind, function, summary, dict(options or {}),
                                            runs_cpsat, profile, baseline)
        return function

    return mark


def names(problem: str) -> tuple[str, ...]:
    return tuple(HOMES[problem])


def method(problem: str, name: str, field: str = "--solver") -> Method:
    """The method `name` of `problem`, or an input error naming the known ones."""
    if name not in HOMES.get(problem, {}):
        raise InputError.one("", field, f"unknown solver {name!r} (one of {', '.join(names(problem))})")
    if (problem, name) not in _DECLARED:
        importlib.import_module(HOMES[problem][name])
    return _DECLARED[(problem, name)]


def methods(problem: str | None = None) -> list[Method]:
    """Every method of `problem` (all without), each module declaring them imported."""
    return [method(p, name) for p in HOMES if problem in (None, p) for name in HOMES[p]]


def check_options(m: Method, options: dict[str, Any], field: str = "--param") -> None:
    """Every option names something `m` reads, with a value it takes: refused before any work
    otherwise."""
    problems = []
    for key, value in options.items():
        if key in m.options:
            if why := m.options[key].reason(value):
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
