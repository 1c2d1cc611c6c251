"""The ipuopt command line: a thin layer that parses, calls the library and prints."""

from __future__ import annotations

import csv
import io
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from ipuopt import __version__
from ipuopt.errors import InputError, Problem
from ipuopt.exchange.bounds import all_bounds, best_bound
from ipuopt.exchange.instance import Instance
from ipuopt.exchange.phase import load_phase
from ipuopt.exchange.schedule import Schedule, load_schedule, schedule_for, schedule_from_dict
from ipuopt.exchange.solve import solve
from ipuopt.exchange.validate import validate
from ipuopt.export import FORMS
from ipuopt.io import FORMATS, check_output, parse_int, read_document, write_atomic, write_document
from ipuopt.params import ASKED, DEFAULT_TIME_LIMIT, Interrupted, SolveParams, Stopped, run_interruptible
from ipuopt.registry import method, resolve
from ipuopt.result import Result
from ipuopt.spec import diff_specs, load_spec, spec_names
from ipuopt.workloads.fragments import grain_name, parse_grain


def _process_start(most: float = 30.0) -> float:
    """time.monotonic() when this process started, so that a time limit also counts the
    interpreter's start-up and the imports before this module (seconds under load); now when
    /proc cannot say or the process is older than `most` seconds (a host that imported us
    late)."""
    now = time.monotonic()
    try:
        with open("/proc/self/stat") as f:
            started = int(f.read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
        with open("/proc/uptime") as f:
            age = float(f.read().split()[0]) - started  # both since boot
    except (OSError, ValueError, IndexError):
        return now
    return now - age if 0.0 <= age <= most else now


START = _process_start()  # the command's start: a time limit counts from here

# Plain help text: rich markup would read "[/REGION]" in an option's help as a closing tag. Typer
# still escapes "[default: ...]" for rich's HTML export when rich is installed, printing "\[": its
# flag is only read for that escape once markup is off.
typer.core.HAS_RICH = False
_TYPER = {"add_completion": False, "no_args_is_help": True, "pretty_exceptions_enable": False,
          "rich_markup_mode": None}
app = typer.Typer(**_TYPER,
                  help="Exact models, lower bounds and greedy fallbacks for IPU compiler problems: exchange "
                  "scheduling, arena placement, layout selection; workload phases, program replay, "
                  "pictures and sweeps. Documentation: docs/ in the repository.")
specs_app = typer.Typer(**_TYPER, help="Hardware specs: list, show, diff.")
import_app = typer.Typer(**_TYPER, help="Convert external benchmark formats to phases.")
app.add_typer(specs_app, name="specs")
app.add_typer(import_app, name="import")

SpecOpt = Annotated[str | None, typer.Option("--spec", help="Spec name or file; overrides the phase's.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]
VerboseOpt = Annotated[bool, typer.Option("--verbose", help="The solver's own log, on stderr.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", help="No progress lines on stderr (results still print).")]
WorkersOpt = Annotated[int | None, typer.Option(help="Solver threads.")]
SeedOpt = Annotated[int | None, typer.Option(help="Random seed (with --workers 1: reproducible).")]
ParamOpt = Annotated[list[str], typer.Option(help="Backend parameter KEY=VALUE, repeatable.")]
ExportOpt = Annotated[Path | None, typer.Option(
    "--export", help="Write the exact model here instead of solving: .pb or .pbtxt (CP-SAT), .mps or .lp "
                     "(MILP).")]
LimitHelp = (f"Seconds, wall-clock, for the whole command: loading, bounds, search, validation, writing "
             f"(default {DEFAULT_TIME_LIMIT:g} for every solver but greedy).")


def _version(value: bool) -> None:
    if value:
        print(f"ipuopt {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print the version and exit.")] = False) -> None:
    """Exact models, lower bounds and greedy fallbacks for IPU compiler problems."""


def _err(msg: str) -> None:
    print(msg, file=sys.stderr)


def _pct(g: float | None) -> str:
    return "n/a" if g is None else f"{100 * g:.2f}%"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _num(v: int | None) -> str:
    return "n/a" if v is None else str(v)


HOLD_FOR = 120.0  # seconds a held stage waits for Ctrl-C at most


class _Progress:
    """Progress on stderr for long commands: a line every `every` seconds after the first 2 s
    (what runs, elapsed, the best figures so far), and at once when the stage changes or (at
    most one a second) a solver reports a better incumbent. Solvers call it with what they
    know. IPUOPT_PROGRESS_AFTER sets the quiet start (seconds; tests use 0); a stage whose
    name holds IPUOPT_HOLD_STAGE waits at its start for Ctrl-C (tests interrupt it there
    whatever the machine's speed)."""

    def __init__(self, quiet: bool, task: str, every: float = 3.0) -> None:
        self.quiet, self.every = quiet, every
        self.after = float(os.environ.get("IPUOPT_PROGRESS_AFTER", 2.0))
        self.hold = os.environ.get("IPUOPT_HOLD_STAGE", "")
        self.info: dict[str, Any] = {"task": task}
        self.t0 = time.perf_counter()
        self.last = 0.0
        self.done = threading.Event()
        self.lock = threading.Lock()

    def start(self, task: str) -> None:
        """A new task: forget the figures of the last one."""
        with self.lock:
            self.info = {"task": task}

    def __call__(self, info: dict[str, Any]) -> None:
        with self.lock:
            if info.get("task") not in (None, self.info.get("task")):  # another task: its own figures
                self.info = {}
            better = info.get("incumbent") not in (None, self.info.get("incumbent"))
            moved = info.get("stage") not in (None, self.info.get("stage"))
            self.info.update({k: v for k, v in info.items() if v is not None})
        if moved or (better and time.perf_counter() - self.t0 - self.last >= 1.0):
            self._line()
        if moved and self.hold and self.hold in str(info["stage"]) \
                and threading.current_thread() is not threading.main_thread():
            ASKED.wait(HOLD_FOR)  # tests: Ctrl-C comes while this stage is surely running

    def _line(self) -> None:
        now = time.perf_counter() - self.t0
        if self.quiet or now < self.after:
            return
        self.last = now
        with self.lock:
            info = dict(self.info)
        parts = [f"[{now:7.1f}s] {info.pop('task')}"]
        inc, bnd = info.pop("incumbent", None), info.pop("bound", None)
        if inc is not None and bnd is not None:
            parts.append(f"incumbent {inc}  bound {bnd}  gap {_pct((inc - bnd) / inc if inc else 0.0)}")
        elif inc is not None:
            parts.append(f"incumbent {inc}")
        info.pop("elapsed", None)  # the line starts with it
        if (done_at := info.pop("done_at", None)) is not None:  # an estimate that counts down
            parts.append(f"eta {max(0.0, done_at - time.time()):.0f}s")
        parts += [f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in info.items()]
        _err("  ".join(parts))

    def __enter__(self) -> _Progress:
        def tick() -> None:
            while not self.done.wait(0.25):
                if time.perf_counter() - self.t0 - self.last >= self.every:
                    self._line()

        threading.Thread(target=tick, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()


@contextmanager
def _solver_log(verbose: bool) -> Iterator[None]:
    """With --verbose, the solvers' own logs (written by C++ to file descriptor 1) go to stderr,
    so stdout keeps only ipuopt's output (and --json stays parseable)."""
    if not verbose:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _interrupted(what: str | None, status: str, out: Path | None) -> None:
    """After Ctrl-C: say that the answer is the best so far and where it went, then exit 130
    at once: a solver that did not stop in time (HiGHS) may still be running in C++, and
    the interpreter's shutdown would abort on it. Every output is already written whole."""
    where = f", written to {out}" if out else ""
    if what is None:
        _err(f"interrupted: nothing found before the interrupt (status {status}); no file written")
    else:
        _err(f"interrupted: {what} is the best found so far (status {status}){where}")
    _exit_now(130)


_STDOUT: list[int] = []  # a copy of file descriptor 1 made at start (main)


def _reclaim_stdout() -> None:
    """A solver still running after Ctrl-C (HiGHS) may hold fd 1 silenced: take it back, so
    the answer printed now reaches the user."""
    if _STDOUT:
        sys.stdout.flush()
        os.dup2(_STDOUT[0], 1)


def _exit_now(code: int) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _check_out(out: Path | None, *inputs: Path | str | None, option: str = "--out",
               suffixes: tuple[str, ...] | None = tuple(FORMATS)) -> None:
    """Before any work: an output path that can be written, in a format its suffix names, and
    none of the command's inputs (spec, plan, profile, ... files; symlinks followed)."""
    if out is not None:
        check_output(out, option, suffixes, tuple(Path(i) for i in inputs if i is not None))


def _check_out_dir(out_dir: Path | None, option: str = "--out-dir") -> None:
    if out_dir is None:
        return
    """The folder is made if missing, but as with --out, the folder that holds it must exist: a
    mistyped parent is refused rather than created."""
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError.one(str(out_dir), option, "exists and is not a folder")
    if out_dir.is_dir():
        check_output(out_dir / "probe", option, None)  # can a file be made in it?
        return
    parent = out_dir.absolute().parent
    if not parent.is_dir():
        raise InputError.one(str(out_dir), option, f"folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise InputError.one(str(out_dir), option, f"cannot create a folder in {parent}")


def _params(profile: str | None, solver: str | None, time_limit: float | None,
            workers: int | None, seed: int | None, param: list[str],
            verbose: bool = False) -> tuple[str, SolveParams]:
    """The exchange method and parameters the options mean (`methods.resolve`)."""
    options: dict[str, Any] = {}
    for item in param:
        if "=" not in item:
            raise InputError.one("", "--param", f"{item!r} is not KEY=VALUE")
        key, value = item.split("=", 1)
        options[key.strip()] = yaml.safe_load(value)
    if verbose:
        options["verbose"] = True
    chosen, built = resolve("exchange", solver, profile=profile, time_limit=time_limit, workers=workers,
                            seed=seed, options=options)
    unused = [name for name, value in (("--workers", workers), ("--seed", seed)) if value is not None]
    if chosen.name == "greedy" and unused:
        _err(f"warning: {' and '.join(unused)} {'does' if len(unused) == 1 else 'do'} nothing for the greedy "
             "(deterministic, one thread)")
    return chosen.name, built


def _check_export(export: Path | None, out: Path | None, solver: str | None) -> None:
    """`--export` writes a model instead of solving: `--out` would get nothing, and a solver
    named must be the one whose model the suffix says."""
    if export is None:
        return
    if out is not None:
        raise InputError.one("", "--export", "writes the model instead of solving: nothing would reach --out "
                                             "(give one of them)")
    form = FORMS.get(export.suffix.lower())
    if solver in ("cpsat", "milp") and form is not None and form != solver:
        wants = ", ".join(k for k, v in FORMS.items() if v == solver)
        raise InputError.one(str(export), "--export", f"{export.suffix} holds a {form} model; --solver "
                                                      f"{solver} writes {wants}")


def _export(model: Callable[[str], Any], export: Path, json_out: bool, *inputs: Path | str | None) -> None:
    """Write the model `model(form)` builds to `export` and say what was written."""
    from ipuopt.export import form_of, write_model

    done = write_model(model(form_of(export)), export, tuple(Path(p) for p in inputs if p))
    if json_out:
        print(json.dumps(done, indent=1))
    else:
        print(f"model      {done['form']}: {done['variables']} variables, {done['constraints']} constraints "
              f"-> {done['file']}")


def _json_doc(res: Result, out: Path | None) -> dict[str, Any]:
    """What `--json` prints: the result's document; with `--out`, the solution's per-item list
    (a schedule's transfers, a placement's offsets) is in that file only."""
    doc = res.to_dict()
    if out is not None:
        for key in ("transfers", "offsets"):
            if key in doc:
                doc[key] = f"{len(doc[key])} in {out}"
    return doc


def _print_result(res: Result, spec_clock: float, sync: int) -> None:
    s, x = res.solution, res.extras
    us = s.horizon / spec_clock * 1e6 if s.horizon is not None else 0
    print(f"phase      {s.phase or '(unnamed)'}: {_count(len(s.starts), 'transfer')} on {s.spec}")
    limit = f" of {x['time_limit_s']:g}s" if "time_limit_s" in x else ""
    print(f"solver     {res.solver}  status {res.status}  time {res.runtime:.2f}s{limit}"
          + (f"  (schedule from {res.method})" if res.method.split("/")[0] != res.solver else ""))
    print(f"horizon    {s.horizon} cycles ({us:.2f} us) + sync {sync}")
    if "greedy_horizon" in x and res.solver != "greedy":
        print(f"greedy     {x['greedy_horizon']}")
    for b in res.bounds:
        print(f"bound      {b.name:<11} {b.value:>10}  {b.where}")
    print(f"best bound {res.bound}  gap {_pct(res.gap)}")
    if res.reason:
        print(f"reason     {res.reason}")
    if note := x.get("not_reproducible"):
        print(f"note       not reproducible: {note}")


@app.command("solve")
def solve_cmd(
    phase: Annotated[Path, typer.Argument(help="Phase file (YAML or JSON) or bundled example name.")],
    spec: SpecOpt = None,
    profile: Annotated[str | None, typer.Option(help="Solver profile name or file.")] = None,
    solver: Annotated[str | None, typer.Option(
        help="greedy | cpsat | milp | lns | justify | iterated | colour | periodic | auto "
             "(default greedy; auto with --time-limit)",
    )] = None,
    time_limit: Annotated[float | None, typer.Option(help=LimitHelp)] = None,
    workers: WorkersOpt = None,
    seed: SeedOpt = None,
    param: ParamOpt = [],  # noqa: B006
    out: Annotated[Path | None, typer.Option(help="Write the schedule here (.json, or .yaml).")] = None,
    export: ExportOpt = None,
    json_out: JsonOpt = False,
    chain: Annotated[bool, typer.Option("--chain", help="Also the schedule's critical chain (what "
                                                        "holds each step of the last transfer).")] = False,
    verbose: VerboseOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Schedule one exchange phase; print horizon, bounds and gap."""
    backend, params = _params(profile, solver, time_limit, workers, seed, param, verbose)
    _check_out(out, phase, spec, profile)
    _check_out(export, phase, spec, profile, option="--export", suffixes=tuple(FORMS))
    _check_export(export, out, solver)
    params.start_clock(method("exchange", backend).default_limit, since=START)
    ph, sp = load_phase(phase, spec)
    if export is not None:
        from ipuopt.export import exchange_model

        return _export(lambda form: exchange_model(ph, sp, form), export, json_out, phase)
    with _Progress(quiet, f"solve {backend}") as progress, _solver_log(verbose):
        res = solve(ph, sp, backend, params, progress)
    if out:
        write_document(out, res.to_dict(), protect=(phase,))
    if res.interrupted:
        _reclaim_stdout()
    steps = None
    if chain:
        from ipuopt.exchange.simulate import simulate

        steps = simulate(ph, sp, res.solution).chain
    if json_out:
        print(json.dumps({**_json_doc(res, out), **({"critical_chain": steps} if chain else {})}, indent=1))
    else:
        _print_result(res, sp.clock_hz, sp.exchange.sync_cycles)
        if steps is not None:
            _print_chain(steps)
    if res.interrupted:
        _interrupted("the schedule", res.status, out)


@app.command("bounds")
def bounds_cmd(phase: Annotated[Path, typer.Argument(help="Phase file or bundled example name.")],
               spec: SpecOpt = None,
               json_out: JsonOpt = False) -> None:
    """Lower bounds on the phase's optimal horizon, each by name."""
    ph, sp = load_phase(phase, spec)
    bounds = all_bounds(Instance(ph, sp))
    best = best_bound(bounds)
    if json_out:
        print(json.dumps({"phase": ph.name, "spec": sp.name, "transfers": len(ph.transfers),
                          "bounds": [b.to_dict() for b in bounds], "best": best.value}, indent=1))
        return
    w = max(len(b.name) for b in [*bounds, best])
    for b in bounds:
        print(f"{b.name:<{w}} {b.value:>10}  {b.where}")
    print(f"{'best':<{w}} {best.value:>10}  ({best.name})")


@app.command("validate")
def validate_cmd(phase: Annotated[Path, typer.Argument(help="Phase (file or bundled name), or an arena "
                                                            "(file, bundled name, or allocator CSV).")],
                 schedule: Annotated[Path, typer.Argument(help="Its schedule, or the arena's placement "
                                                               "(ipuopt place --out; CSV with an offset "
                                                               "column for a CSV arena).")],
                 spec: SpecOpt = None,
                 capacity: Annotated[int | None, typer.Option(help="Bytes available (a CSV arena).")] = None,
                 json_out: JsonOpt = False) -> None:
    """Check a schedule, or a placement, against every rule; exit 1 and list the violations
    (rule, transfers or buffers, tile, cycles or bytes) when it fails."""
    is_csv = schedule.suffix.lower() == ".csv"
    doc = None if is_csv else read_document(schedule)
    if is_csv or (isinstance(doc, dict) and "offsets" in doc):
        _validate_placement(phase, schedule, capacity, json_out)
        return
    if capacity is not None:
        raise InputError.one("", "--capacity", "is for a CSV arena's placement, not a schedule")
    ph, sp, sched = _with_schedule(phase, schedule, spec, doc)
    report = validate(ph, sp, sched)
    _print_report(report.violations, {"horizon": report.horizon,
                                       "violations": [v.to_dict() for v in report.violations]},
                  f"ok: {_count(len(ph.transfers), 'transfer')}, horizon {report.horizon}",
                  f"recomputed horizon {report.horizon}", json_out)


def _print_report(violations: list, doc: dict[str, Any], ok_line: str, summary: str, json_out: bool) -> None:
    """A validator's verdict: JSON, the ok line, or every violation; exit 1 when it fails."""
    if json_out:
        print(json.dumps({"ok": not violations, **doc}, indent=1))
    elif not violations:
        print(ok_line)
    else:
        for v in violations:
            print(v)
        print(f"{len(violations)} violations; {summary}")
    if violations:
        raise typer.Exit(1)


def _validate_placement(arena: Path, placement: Path, capacity: int | None, json_out: bool) -> None:
    from ipuopt.arena.problem import load_arena, load_csv, load_offsets
    from ipuopt.arena.validate import validate_placement

    if arena.suffix.lower() == ".csv":
        if capacity is None or capacity <= 0:
            raise InputError.one(str(arena), "--capacity", "required for a CSV arena, in bytes > 0")
        problem = load_csv(arena, capacity)
    else:
        problem = load_arena(arena)
    report = validate_placement(problem, load_offsets(placement, problem))
    peak = f"peak {report.peak} of {problem.capacity} bytes"
    doc = {"peak": report.peak, "conflicts": report.conflicts,
           "violations": [v.to_dict() for v in report.violations]}
    _print_report(report.violations, doc,
                  f"ok: {len(problem.buffers)} buffers, {peak}, conflict weight {report.conflicts}", peak,
                  json_out)


def _with_schedule(phase: Path, schedule: Path, spec: str | None, doc: Any = None
                   ) -> tuple[Any, Any, Schedule]:
    """A phase, its spec and a schedule made for it (one made for another phase says so);
    `doc` is the schedule file's content when it was read already."""
    ph, sp = load_phase(phase, spec)
    sched = load_schedule(schedule) if doc is None else schedule_from_dict(doc, str(schedule))
    return ph, sp, schedule_for(sched, ph, str(schedule))


def _print_chain(chain: list[dict[str, Any]]) -> None:
    print("critical chain (last-ending transfer first):")
    for step in chain:
        held = step["held_by"] + (f" of tile {step['tile']}" if "tile" in step else "")
        after = f" after {step['after']}" if "after" in step else ""
        print(f"  {step['transfer']:<12} {step['src']:>5} -> {','.join(map(str, step['dst']))[:24]:<24} "
              f"[{step['start']}, {step['end']})  {step['width']:<8} held by {held}{after}")


def _load_arrivals(path: Path | None, tiles: int) -> dict[int, int]:
    """--arrivals: JSON mapping tile id (as a string) to the cycle it reaches the barrier."""
    if path is None:
        return {}
    doc = read_document(path)
    if not isinstance(doc, dict):
        raise InputError.one(str(path), "", "must map tile ids (strings) to arrival cycles")
    out, problems = {}, []
    for key, value in doc.items():
        tile, cycle = parse_int(key), parse_int(value)
        if tile is None or not 0 <= tile < tiles:
            problems.append(Problem(str(path), str(key), f"not a tile id (0..{tiles - 1})"))
        if cycle is None or cycle < 0:
            problems.append(Problem(str(path), str(key), f"arrival must be a cycle >= 0, got {value!r}"))
        elif tile is not None:
            out[tile] = cycle
    if problems:
        raise InputError(problems)
    return out


@app.command("simulate")
def simulate_cmd(
    phase: Annotated[Path, typer.Argument(help="Phase file or bundled example name.")],
    schedule: Annotated[Path, typer.Argument(help="Schedule JSON.")],
    spec: SpecOpt = None,
    arrivals: Annotated[Path | None, typer.Option(help="JSON: tile id -> cycle it reaches the barrier "
                                                       "(others at 0).")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Replay a schedule event by event: barrier metrics, lane use, critical chain; exit 1 at
    the first rule it breaks."""
    from ipuopt.exchange.simulate import simulate

    ph, sp, sched = _with_schedule(phase, schedule, spec)
    sim = simulate(ph, sp, sched, _load_arrivals(arrivals, sp.tiles))
    doc = sim.to_dict()
    if json_out:
        print(json.dumps(doc, indent=1))
    elif sim.breach is not None:
        print(f"breach     {sim.breach}")
    else:
        print(f"horizon    {doc['horizon']} cycles from the exchange start")
        print(f"barrier    first arrival {doc['first_arrival']}  last {doc['last_arrival']} (tile "
              f"{doc['last_tile']})  spread {doc['spread']}  + sync {doc['sync']}")
        print(f"exchange   starts {doc['exchange_start']}  ends {doc['end']}  "
              f"({doc['after_last_arrival']} after the last arrival)")
        lanes = sorted(doc["lanes"].items(), key=lambda kv: -kv[1]["busy"])[:5]
        print("busiest    " + "  ".join(f"{k} {100 * v['busy']:.0f}%" for k, v in lanes))
        _print_chain(doc["critical_chain"])
    if not sim.ok:
        raise typer.Exit(1)


def _is_phase(path: Path) -> bool:
    doc = read_document(path)
    return isinstance(doc, dict) and "transfers" in doc


def _phase_files(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            # `gen --out-dir` writes the arena (and other files) beside the phases: read only phases.
            documents = sorted(f for f in p.iterdir() if f.suffix in (".yaml", ".yml", ".json"))
            found = [f for f in documents if _is_phase(f)]
            if not found:
                raise InputError.one(str(p), "", "folder holds no phase file (.yaml, .yml, .json with "
                                     "transfers)")
            for f in documents:
                if f not in found:
                    _err(f"note: {f}: not a phase (no transfers), skipped")
            files += found
        else:
            files.append(p)
    return files


@app.command("compare")
def compare_cmd(
    phases: Annotated[list[Path], typer.Argument(help="Phase files, folders of them, or bundled names.")],
    solvers: Annotated[str, typer.Option(help="Comma-separated backends.")] = "greedy,cpsat",
    spec: SpecOpt = None,
    time_limit: Annotated[float, typer.Option(help="Seconds, wall-clock, for each row (phase and solver): "
                                                   "bounds, search and validation.")] = 10.0,
    workers: WorkersOpt = None,
    seed: SeedOpt = None,
    json_out: JsonOpt = False,
    csv_out: Annotated[bool, typer.Option("--csv", help="CSV output.")] = False,
    verbose: VerboseOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """One row per phase and solver: transfers, best bound, horizon, status, gap, time."""
    if json_out and csv_out:
        raise InputError.one("", "--json/--csv", "give one output format")
    solver_names = [s.strip() for s in solvers.split(",") if s.strip()]
    if not solver_names:
        raise InputError.one("", "--solvers", "name at least one solver")
    for n in solver_names:
        resolve("exchange", n, time_limit=time_limit, workers=workers, seed=seed, field="--solvers")
    rows = []
    loaded = [(f, *load_phase(f, spec)) for f in _phase_files(phases)]
    cells = [(f, ph, sp, name) for f, ph, sp in loaded for name in solver_names]
    with _Progress(quiet, "compare") as progress, _solver_log(verbose):
        for i, (f, ph, sp, name) in enumerate(cells):
            progress.start(f"compare {i + 1}/{len(cells)}: {f.name} {name}")
            res = solve(ph, sp, *_params(None, name, time_limit, workers, seed, [], verbose), progress)
            if res.interrupted:
                raise KeyboardInterrupt  # a table of partly interrupted rows would mislead
            rows.append({"phase": f.name, "spec": sp.name, "solver": name,
                         "transfers": len(ph.transfers), "bound": res.bound,
                         "greedy": res.extras["greedy_horizon"], "horizon": res.value, "status": res.status,
                         "gap": None if res.gap is None else round(res.gap, 4),
                         "time_s": round(res.runtime, 2)})
    if json_out:
        print(json.dumps(rows, indent=1))
    elif csv_out:
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]) if rows else ["phase"])
        writer.writeheader()
        writer.writerows(rows)
        print(buf.getvalue(), end="")
    else:
        wp = max([len("phase")] + [len(r["phase"]) for r in rows])
        ws = max([len("solver")] + [len(r["solver"]) for r in rows])
        print(f"{'phase':<{wp}} {'solver':<{ws}} {'transfers':>9} {'bound':>8} {'greedy':>8} {'horizon':>8} "
              f"{'status':<9} {'gap':>7} {'time':>7}")
        for r in rows:
            print(f"{r['phase']:<{wp}} {r['solver']:<{ws}} {r['transfers']:>9} {_num(r['bound']):>8} "
                  f"{_num(r['greedy']):>8} {_num(r['horizon']):>8} {r['status']:<9} {_pct(r['gap']):>7} "
                  f"{r['time_s']:>6.2f}s")


def _plan_layouts(plan: Path | None, wl, spec) -> dict:
    """A layout plan's `choice` of GEMM layouts (operator -> candidate id, which is the layout
    label), or a run's `layouts` (`ipuopt run` and `optimize` write them); elementwise
    operators run on their input's layout. A plan made for another workload (by its name) is
    reported as that."""
    if plan is None:
        return {}
    doc = read_document(plan)
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
    return _parse_layouts([f"{op}={label}" for op, label in choice.items() if ops[op].kind == "gemm"],
                          spec, f"{plan}: {key}")


PlanOpt = Annotated[Path | None, typer.Option(help="A layout plan JSON; its `choice` gives the layouts.")]
GrainOpt = Annotated[str | None, typer.Option(
    metavar="BYTES", help="How boxes become transfers: contiguous runs (default), runs cut every BYTES "
                          "bytes (a multiple of the word; 256: the reference's cost estimate), or 'box' (one "
                          "transfer per box, at its first element).")]


def _one_source(layout: list[str], plan: Path | None) -> None:
    """The layouts come from `--layout` items or from `--plan`, not both."""
    if layout and plan is not None:
        raise InputError.one("", "--layout", "give --layout or --plan, not both (which would win?)")


def _parse_layouts(items: list[str], spec, where: str = "--layout") -> dict:
    """OP=LAYOUT items, every bad one reported (an operator given twice too)."""
    from ipuopt.workloads.gemm import GemmLayout

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


@app.command("gen")
def gen_cmd(
    workload: Annotated[str, typer.Argument(help="Workload name under models/ or a file.")],
    spec: Annotated[str, typer.Option(help="Spec name or file.")] = "gc200",
    layout: Annotated[list[str], typer.Option(help="OP=RxCxP/AxB[/REGION], repeatable.")] = [],  # noqa: B006
    out_dir: Annotated[Path | None, typer.Option(help="Write one phase file per phase here.")] = None,
    arena: Annotated[bool, typer.Option("--arena", help="Also write the workload's arena file.")] = False,
    plan: PlanOpt = None,
    grain: GrainOpt = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Generate every exchange phase a workload needs with the chosen GEMM layouts."""
    from ipuopt.workloads.phases import generate, phase_stats
    from ipuopt.workloads.workload import load_workload

    _check_out_dir(out_dir)
    _one_source(layout, plan)
    if arena and out_dir is None:
        raise InputError.one("", "--arena", "needs --out-dir to write the arena file into")
    wl = load_workload(workload)
    sp = load_spec(spec, field="--spec")
    cut = parse_grain(grain, sp)
    with _Progress(quiet, f"gen {wl.name}"):
        gen = generate(wl, sp, {**_plan_layouts(plan, wl, sp), **_parse_layouts(layout, sp)}, cut)
        stats = [phase_stats(gp, sp) for gp in gen.phases]
    rows = []
    for gp, st in zip(gen.phases, stats, strict=True):
        if out_dir is not None:
            out_dir.mkdir(exist_ok=True)
            path = out_dir / f"{wl.name}-{gp.phase.name}.json"
            doc = gp.phase.to_dict()
            doc["spec"] = sp.name
            write_document(path, doc)
            st["file"] = str(path)
        rows.append(st)
    if arena and out_dir is not None:
        from ipuopt.workloads.arena_export import arena_document

        doc = arena_document(gen)
        path = out_dir / f"{wl.name}-arena.yaml"
        write_atomic(path, yaml.safe_dump(doc, sort_keys=False, width=200))
    layouts = {op: c.to_dict() for op, c in gen.layouts.items()}
    if json_out:
        print(json.dumps({"workload": wl.name, "spec": sp.name, "grain": grain_name(cut),
                          "layouts": layouts, "phases": rows}, indent=1))
        return
    for op, c in layouts.items():
        print(f"{op:<10} {c['layout']:<28} tiles {c['tiles']:>5}  compute {c['compute']:>8}  "
              f"memory {c['memory']}")
    print(f"transfers at grain {grain_name(cut)}; 'box': the same phase with every box moved whole")
    print(f"{'phase':<26} {'transfers':>9} {'receives':>9} {'median d':>8} {'src words':>10} "
          f"{'bound':>7} {'box':>6} {'box rcv':>8}  fanout")
    for r in rows:
        fan = " ".join(f"{k}:{v}" for k, v in r["fanout"].items())
        print(f"{r['phase']:<26} {r['transfers']:>9} {r['receives']:>9} {r['median_payload_cycles']:>8g} "
              f"{r['source_words']:>10} {r['endpoint_bound']:>7} {r['box']['transfers']:>6} "
              f"{r['box']['receives']:>8}  {fan}")


@app.command("run")
def run_cmd(
    workload: Annotated[str, typer.Argument(help="Workload name under models/ or a file.")],
    spec: Annotated[str, typer.Option(help="Spec name or file.")] = "gc200",
    layout: Annotated[list[str], typer.Option(help="OP=RxCxP/AxB[/REGION], repeatable.")] = [],  # noqa: B006
    plan: PlanOpt = None,
    profile: Annotated[str | None, typer.Option(help="Solver profile for every phase.")] = None,
    solver: Annotated[str | None, typer.Option(help="greedy (default) | cpsat | milp | lns | justify "
                                                    "| iterated | colour | periodic | auto")] = None,
    time_limit: Annotated[float | None, typer.Option(help=LimitHelp + " Shared by the phases in "
                                                     "proportion to their transfers.")] = None,
    workers: WorkersOpt = None,
    seed: SeedOpt = None,
    param: ParamOpt = [],  # noqa: B006
    out: Annotated[Path | None, typer.Option(help="Write the run here (.json or .yaml; for render "
                                                  "--program).")] = None,
    grain: GrainOpt = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """The whole program on the chip: per-tile compute, barriers, scheduled exchanges."""
    from ipuopt.workloads.phases import generate
    from ipuopt.workloads.program import run_program
    from ipuopt.workloads.workload import load_workload

    backend, params = _params(profile, solver, time_limit, workers, seed, param)
    _check_out(out, workload, spec, plan, profile)
    _one_source(layout, plan)
    params.start_clock(method("exchange", backend).default_limit, since=START)
    wl = load_workload(workload)
    sp = load_spec(spec, field="--spec")
    cut = parse_grain(grain, sp)
    with _Progress(quiet, f"run {wl.name}") as progress:
        gen = generate(wl, sp, {**_plan_layouts(plan, wl, sp), **_parse_layouts(layout, sp)}, cut)
        run = run_program(gen, backend, params, progress)
    doc = run.to_dict()
    if out:
        write_document(out, doc)
    if run.interrupted:
        _reclaim_stdout()
    if json_out:
        print(json.dumps(doc, indent=1))
    else:
        _print_run(doc)
    if run.interrupted:
        _interrupted(f"the program up to phase {len(doc['boundaries'])}", "feasible", out)


@app.command("optimize")
def optimize_cmd(
    workload: Annotated[str, typer.Argument(help="Workload name under models/ or a file.")],
    spec: Annotated[str, typer.Option(help="Spec name or file.")] = "gc200",
    grain: GrainOpt = None,
    k: Annotated[int, typer.Option("--k", help="Layout plans to finish (the model's k best), beside the "
                                               "beam's plan.")] = 3,
    time_limit: Annotated[float, typer.Option(help="Seconds, wall-clock, for the whole command.")
                          ] = DEFAULT_TIME_LIMIT,
    out: Annotated[Path | None, typer.Option(help="Write the run here (.json or .yaml; for render "
                                                  "--program). Finished cells are kept beside it "
                                                  "(OUT.cells/) until the run completes: the same "
                                                  "command resumes.")] = None,
    workers: Annotated[int | None, typer.Option(help="Cells at once on a local Dask cluster (default: "
                                                     "one per core; 1: in this process).")] = None,
    cluster: Annotated[str | None, typer.Option(help="Run the cells on the Dask scheduler at this "
                                                     "address (tcp://HOST:PORT).")] = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """The whole program: layout plans finished with real schedules, the placement kept only
    if it shortens them, auto schedules; beside the compiler's way, with the program's bound.
    Finalists, placement candidates and phases run as cells on Dask."""
    import shutil

    from ipuopt.cells import Cells
    from ipuopt.sweeps.run import check_cluster
    from ipuopt.whole_program import optimize
    from ipuopt.workloads.workload import load_workload

    if k < 1:
        raise InputError.one("", "--k", f"must be >= 1, got {k}")
    if workers is not None and workers < 1:
        raise InputError.one("", "--workers", f"must be >= 1, got {workers}")
    if workers is not None and cluster:
        raise InputError.one("", "--workers", "give --workers or --cluster, not both")
    check_cluster(cluster)
    params = SolveParams(time_limit)
    _check_out(out, workload, spec)
    params.start_clock(since=START)
    wl = load_workload(workload)
    sp = load_spec(spec, field="--spec")
    cut = parse_grain(grain, sp)
    folder = None if out is None else out.with_name(out.name + ".cells")
    try:
        with _Progress(quiet, f"optimize {wl.name}") as progress, \
                Cells(folder, cluster, workers or os.cpu_count() or 1, params.stop, progress) as cells:
            # in a thread: Ctrl-C in any stage (the bound runs here, not in a cell) asks every
            # stage to stop, and the best program so far is kept
            doc, _ = run_interruptible(lambda: optimize(wl, sp, cut, k, params, progress, cells), params.stop)
    except Stopped:  # only Ctrl-C gets here: a short time limit returns the baseline
        doc = None
    if doc is None:
        raise Interrupted("nothing finished before the interrupt")
    if out:
        write_document(out, doc)
        if folder is not None and not doc.get("interrupted"):
            shutil.rmtree(folder, ignore_errors=True)  # complete: nothing to resume
    if doc.get("interrupted"):
        _reclaim_stdout()
    if json_out:
        print(json.dumps(doc, indent=1))
    else:
        _print_optimize(doc)
    if doc.get("interrupted"):
        _interrupted("the program", "feasible", out)
    if doc["optimize"].get("fallback"):
        _err(f"error: --time-limit: {time_limit:g} s is too short to optimize {wl.name} "
             f"({doc['optimize']['fallback']}); the compiler's program is returned instead")
        raise typer.Exit(2)


def _print_optimize(doc: dict[str, Any]) -> None:
    o = doc["optimize"]
    for name, cycles in o["baselines"].items():
        print(f"baseline   {name}: {cycles} cycles")
    for f in o["finalists"]:
        print(f"finalist   {f['name']}: model {f['model_cycles']}, greedy program {f['greedy_cycles']}")
    print(f"chosen     {o['plan']}, placement {o['placement']}, schedules {o['schedules']} "
          f"({o['seconds']} s)")
    for note in o.get("notes", []):
        print(f"note       {note}")
    _print_run(doc)
    if "program_bound" in o:
        pb = o["program_bound"]
        how = "proven" if pb["proven"] else f"{pb['rounds']} pricing rounds, not converged"
        print(f"program bound {pb['value']} cycles over every plan, placement and schedule ({how}; "
              f"{pb['moves_priced']} moves priced in {pb['seconds']} s), gap {_pct(doc['program_gap'])}")


def _print_run(doc: dict[str, Any]) -> None:
    for op, label in doc["layouts"].items():
        print(f"{op:<10} {label}")
    print(f"{'phase':<26} {'transfers':>9} {'compute':>8} {'min':>8} {'spread':>7} {'last':>5} "
          f"{'horizon':>8} {'bound':>8} {'end':>9}")
    for b in doc["boundaries"]:
        print(f"{b['phase']:<26} {b['transfers']:>9} {b['compute_max']:>8} {b['compute_min']:>8} "
              f"{b['spread']:>7} {str(b['last_tile']):>5} {b['horizon']:>8} {b['lower_bound']:>8} "
              f"{b['end']:>9}")
    print(f"total {doc['total_cycles']} cycles: compute {doc['compute_cycles']}, exchange "
          f"{doc['exchange_cycles']}, sync {doc['sync_cycles']} (arrival spread "
          f"{doc['arrival_spread_cycles']} within the compute)")
    if doc.get("lower_bound") is not None:
        print(f"bound {doc['lower_bound']} cycles for these layouts and this placement (every phase at its "
              f"best bound), gap {_pct(doc['gap'])}")


@app.command("layouts")
def layouts_cmd(
    workload: Annotated[str, typer.Argument(help="Workload name under models/ or a file.")],
    spec: Annotated[str, typer.Option(help="Spec name or file.")] = "gc200",
    op: Annotated[str | None, typer.Option(help="Only this GEMM.")] = None,
    top: Annotated[int, typer.Option(help="Print the N fastest (0: all).")] = 10,
    min_utilisation: Annotated[float, typer.Option(help="Least fraction of tiles used.")] = 0.5,
    json_out: JsonOpt = False,
) -> None:
    """Every valid candidate layout per GEMM: compute, memory per region, output layout."""
    from ipuopt.workloads.gemm import enumerate_candidates
    from ipuopt.workloads.workload import load_workload

    if top < 0:
        raise InputError.one("", "--top", f"must be >= 0 (0: all), got {top}")
    if not 0 <= min_utilisation <= 1:
        raise InputError.one("", "--min-utilisation", f"must be within [0, 1], got {min_utilisation:g}")
    wl = load_workload(workload)
    sp = load_spec(spec, field="--spec")
    result = {}
    for o in wl.operators:
        if o.kind != "gemm" or (op and o.name != op):
            continue
        cands = sorted(enumerate_candidates(wl, o, sp, min_utilisation),
                       key=lambda c: (c.compute_cycles, c.layout.label))
        result[o.name] = (len(cands), cands[:top] if top else cands)
    if op and not result:
        raise InputError.one(wl.source, "--op", f"no GEMM named {op!r}")
    if json_out:
        print(json.dumps({name: {"count": n, "candidates": [c.to_dict() for c in cs]}
                          for name, (n, cs) in result.items()}, indent=1))
        return
    for name, (n, cs) in result.items():
        print(f"{name}: {n} valid layouts on {sp.name}")
        for c in cs:
            print(f"  {c.layout.label:<30} tiles {c.tiles_used:>5}  compute {c.compute_cycles:>9}  "
                  f"memory {c.memory}  -> {c.output}")


def _refuse_unread(reason: str, given: dict[str, bool]) -> None:
    """Refuse options the chosen mode would ignore: a user who gave them expects them to act."""
    unread = [name for name, set_ in given.items() if set_]
    if unread:
        raise InputError.one("", ", ".join(unread), reason)


@app.command("place")
def place_cmd(
    arena: Annotated[Path | None, typer.Argument(help="Arena file (YAML, JSON) or bundled name.")] = None,
    csv_in: Annotated[Path | None, typer.Option("--csv", help="Allocator CSV: id,lower,upper,size.")] = None,
    capacity: Annotated[int | None, typer.Option(help="Bytes available (with --csv).")] = None,
    objective: Annotated[str, typer.Option(help="fit | peak | conflicts")] = "fit",
    solver: Annotated[str, typer.Option(help="auto | greedy | baseline | search | cpsat | milp")] = "auto",
    time_limit: Annotated[float, typer.Option(help="Seconds, wall-clock, for the whole command."
                                              )] = DEFAULT_TIME_LIMIT,
    workers: Annotated[int | None, typer.Option(
        help="CP-SAT workers; with 1, auto runs the search and then CP-SAT (reproducible) "
             "instead of racing them.")] = None,
    seed: Annotated[int | None, typer.Option(help="Seeds the search's restarts and CP-SAT.")] = None,
    out: Annotated[Path | None, typer.Option(help="Placement JSON (or CSV with --csv).")] = None,
    export: ExportOpt = None,
    reschedule: Annotated[bool, typer.Option(
        "--reschedule", help="ARENA is a workload (name or file): try its activation arena's start at 4 KiB "
                             "steps within one memory element and the conflict-aware placement, and keep "
                             "one only if the phases, rescheduled, take fewer cycles in total.")] = False,
    spec: Annotated[str, typer.Option(help="With --reschedule: the spec (name or file).")] = "gc200",
    plan: PlanOpt = None,
    grain: GrainOpt = None,
    schedule_with: Annotated[str, typer.Option(help="With --reschedule: the exchange method that "
                                                    "schedules every phase (greedy, auto, ...).")] = "greedy",
    json_out: JsonOpt = False,
    verbose: VerboseOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Give buffers offsets: no overlap while live together, within capacity."""
    from ipuopt.arena.problem import OBJECTIVES, load_arena, load_csv, offsets_csv
    from ipuopt.arena.solve import place

    _refuse_unread("not read with --reschedule" if reschedule else "read only with --reschedule", {
        "--objective": objective != "fit", "--solver": solver != "auto", "--workers": workers is not None,
        "--seed": seed is not None, "--capacity": capacity is not None, "--export": export is not None,
    } if reschedule else {
        "--spec": spec != "gc200", "--plan": plan is not None, "--grain": grain is not None,
        "--schedule-with": schedule_with != "greedy"})
    if reschedule:
        if arena is None or csv_in is not None:
            raise InputError.one("", "--reschedule", "give the workload (name or file) as ARENA")
        return _reschedule(str(arena), spec, plan, grain, schedule_with, time_limit, out, json_out, quiet)
    if (arena is None) == (csv_in is None):
        raise InputError.one("", "ARENA/--csv", "give an arena file or --csv FILE --capacity BYTES")
    if objective not in OBJECTIVES:
        raise InputError.one("", "--objective",
                             f"unknown objective {objective!r} (one of {', '.join(OBJECTIVES)})")
    params = resolve("arena", solver, time_limit=time_limit, workers=workers, seed=seed,
                     options={"verbose": True} if verbose else None)[1]
    if csv_in is not None and capacity is None:
        raise InputError.one(str(csv_in), "--capacity", "required with --csv")
    if capacity is not None and capacity <= 0:
        raise InputError.one("", "--capacity", f"must be > 0 bytes, got {capacity}")
    source = csv_in or arena
    _check_out(out, source, suffixes=(".csv",) if csv_in is not None else tuple(FORMATS))
    _check_out(export, source, option="--export", suffixes=tuple(FORMS))
    _check_export(export, out, solver)
    params.start_clock(since=START)
    problem = load_csv(csv_in, capacity) if csv_in is not None else load_arena(arena)  # type: ignore[arg-type]
    if export is not None:
        from ipuopt.export import arena_model

        return _export(lambda form: arena_model(problem, objective, form), export, json_out, source)
    with _Progress(quiet, f"place {solver}") as progress, _solver_log(verbose):
        res = place(problem, objective, solver, params, progress)
    offsets = res.solution.offsets
    if out is not None and offsets is not None:
        if csv_in is not None:
            write_atomic(out, offsets_csv(problem, offsets), protect=(source,))  # type: ignore[arg-type]
        else:
            write_document(out, res.to_dict(), protect=(source,))  # type: ignore[arg-type]
    if res.interrupted:
        _reclaim_stdout()
    if json_out:
        print(json.dumps(_json_doc(res, out), indent=1))
    else:
        print(f"arena      {problem.name or source}: {len(problem.buffers)} buffers, capacity "
              f"{problem.capacity}")
        print(f"solver     {res.solver}  status {res.status}  time {res.runtime:.2f}s"
              + (f"  (placement from {res.method})" if res.method != res.solver else ""))
        if offsets is not None and objective == "fit":
            print(f"objective  fit: every buffer placed within capacity (peak {res.solution.peak} of "
                  f"{problem.capacity} bytes)")
        elif offsets is not None:
            print(f"objective  {objective} = {res.value}  peak {res.solution.peak}  "
                  f"lower bound {_num(res.bound)}")
        if res.reason:
            print(f"reason     {res.reason}")
    if res.interrupted:
        _interrupted("the placement" if offsets is not None else None, res.status, out)
    if offsets is None:
        raise typer.Exit(1)


def _reschedule(workload: str, spec: str, plan: Path | None, grain: str | None, method_name: str,
                time_limit: float, out: Path | None, json_out: bool, quiet: bool) -> None:
    from ipuopt.workloads.phases import generate
    from ipuopt.workloads.reschedule import reschedule
    from ipuopt.workloads.workload import load_workload

    chosen, params = resolve("exchange", method_name, time_limit=time_limit, field="--schedule-with")
    _check_out(out, workload, spec, plan)
    params.start_clock(since=START)
    wl = load_workload(workload)
    sp = load_spec(spec, field="--spec")
    with _Progress(quiet, f"reschedule {wl.name}") as progress:
        gen = generate(wl, sp, _plan_layouts(plan, wl, sp), parse_grain(grain, sp))
        doc = reschedule(gen, chosen.name, params, progress=progress)
    if out:
        write_document(out, doc)
    if json_out:
        print(json.dumps(doc, indent=1))
        return
    print(f"arena      {doc['arena']} on {doc['spec']}: phases scheduled by {doc['method']}")
    names = list(doc["candidates"][0]["horizons"])
    print(f"{'placement':<26} {'conflicts':>9} {'exchange':>9}  " + "  ".join(names))
    for c in doc["candidates"]:
        print(f"{c['name']:<26} {c['conflicts']:>9} {c['total']:>9}  "
              + "  ".join(f"{h:>{len(n)}}" for n, h in c["horizons"].items()))
    print(f"kept       {doc['kept']}: {doc['before']} -> {doc['after']} cycles of exchange "
          f"({doc['gain']:.1%} less)" if doc["after"] < doc["before"] else
          f"kept       {doc['kept']}: no candidate made the phases shorter ({doc['before']} cycles)")


@app.command("render")
def render_cmd(
    phase: Annotated[Path | None, typer.Argument(help="Phase file or bundled example name.")] = None,
    schedule: Annotated[Path | None, typer.Argument(help="Schedule JSON.")] = None,
    out: Annotated[Path, typer.Option(help="F.html (interactive page) or F.png.")] = Path("timeline.html"),
    program: Annotated[Path | None, typer.Option(help="A run JSON (ipuopt run --out) instead.")] = None,
    spec: SpecOpt = None,
) -> None:
    """A schedule (or a program run) as a timeline: tiles' transmit and receive lanes, multicast
    and paired sends, the critical chain; hover for details, wheel to zoom."""
    from ipuopt.render.save import PICTURES, save
    from ipuopt.render.views import phase_view, program_view

    if (program is None) == (phase is None or schedule is None):
        raise InputError.one("", "PHASE SCHEDULE/--program",
                             "give a phase and its schedule, or --program RUN.json")
    _check_out(out, phase, schedule, program, spec, suffixes=PICTURES)
    if program is not None:
        doc = read_document(program)
        if not isinstance(doc, dict) or not isinstance(doc.get("boundaries"), list):
            raise InputError.one(str(program), "boundaries", "not a run file (ipuopt run --out)")
        view = program_view(doc)
    else:
        doc = read_document(schedule)  # type: ignore[arg-type]
        ph, sp, sched = _with_schedule(phase, schedule, spec, doc)  # type: ignore[arg-type]
        report = validate(ph, sp, sched)
        if not report.ok:
            raise InputError.one(str(schedule), "", f"breaks the rules ({report.violations[0]}); "
                                 "ipuopt validate lists every violation")
        bound = doc.get("lower_bound") if isinstance(doc, dict) else None
        known = isinstance(bound, int) and not isinstance(bound, bool)
        view = phase_view(ph, sp, sched, bound if known else None)
    save(out, view)
    print(f"wrote {out}: {len(view.rows)} rows, {len(view.items)} intervals")


@app.command("render-arena")
def render_arena_cmd(
    arena: Annotated[Path | None, typer.Argument(help="Arena file or bundled arena name.")] = None,
    placement: Annotated[Path | None, typer.Argument(help="Placement JSON (ipuopt place --out).")] = None,
    csv_in: Annotated[Path | None, typer.Option("--csv", help="Placed allocator CSV (with an offset "
                                                              "column) instead.")] = None,
    capacity: Annotated[int | None, typer.Option(help="Bytes available (with --csv).")] = None,
    out: Annotated[Path, typer.Option(help="F.html (interactive page) or F.png.")] = Path("arena.html"),
) -> None:
    """A placement as boxes of address against program step; conflicts marked."""
    from ipuopt.arena.problem import load_arena, load_csv, load_offsets
    from ipuopt.render.save import PICTURES, save
    from ipuopt.render.views import arena_boxes

    if (csv_in is None) == (arena is None or placement is None):
        raise InputError.one("", "ARENA PLACEMENT/--csv", "give an arena and its placement, or --csv FILE "
                                                          "--capacity BYTES")
    _check_out(out, arena, placement, csv_in, suffixes=PICTURES)
    if csv_in is not None:
        if capacity is None or capacity <= 0:
            raise InputError.one(str(csv_in), "--capacity", "required with --csv, in bytes > 0")
        problem = load_csv(csv_in, capacity)
        offsets = load_offsets(csv_in, problem)
    else:
        problem = load_arena(arena)  # type: ignore[arg-type]
        offsets = load_offsets(placement, problem)  # type: ignore[arg-type]
    source = str(csv_in or placement)
    from ipuopt.arena.validate import validate_placement

    report = validate_placement(problem, offsets)
    if not report.ok:
        raise InputError.one(source, "offsets", f"breaks the arena's rules ({report.violations[0]}); "
                                                "ipuopt validate lists every violation")
    data = arena_boxes(problem, offsets)  # type: ignore[arg-type]
    save(out, data)
    print(f"wrote {out}: {len(data['boxes'])} buffers, {len(data['conflicts'])} paying conflicts")


@app.command("layout-problem")
def layout_problem_cmd(
    workload: Annotated[str, typer.Argument(help="Workload name under models/ or a file.")],
    out: Annotated[Path, typer.Option(help="Write the layout problem (YAML) here.")],
    spec: Annotated[str, typer.Option(help="Spec name or file.")] = "gc200",
    within: WithinOpt = 0.0,
    min_utilisation: UtilOpt = 0.5,
    exchange: ExchangeOpt = "bound",
    grain: GrainOpt = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Price every candidate layout of a workload's operators and the redistributions that can
    matter; write the layout problem that `ipuopt layout` solves."""
    from ipuopt.layout.select import BuildOptions, build

    _check_out(out, workload, spec)
    with _Progress(quiet, f"layout problem {workload} on {spec}") as progress:
        problem, doc = build(workload, spec, BuildOptions(within, min_utilisation, exchange, grain), progress)
    write_document(out, doc)
    kept = doc["kept"]
    if json_out:
        print(json.dumps({"out": str(out), **kept}, indent=1))
        return
    print(f"wrote {out}: {problem.name}, {kept['redistribution_rows']} redistribution rows "
          f"({kept['pairs_priced']} moves priced) in {kept['seconds']} s")
    for op, n in kept["enumerated"].items():
        print(f"  {op:<14} {n:>7} candidates, {kept['kept'][op]:>5} kept")
    print(f"reference plan {kept['reference_cycles']} cycles; kept: every candidate that can be in a plan "
          f"within {kept['within']:.0%} of it; exchange priced by {kept['exchange']} at grain "
          f"{kept['grain']}")
    if kept["exchange"] == "greedy":
        print(f"greedy: {kept['phases_scheduled']} phases scheduled; every plan left out costs more than "
              f"{kept['excluded_above']} cycles")


WithinOpt = Annotated[float, typer.Option(help="Keep every candidate that can be in a plan within this "
                                               "fraction of the best (0: the optimum's only).")]
UtilOpt = Annotated[float, typer.Option(help="Enumerate GEMM grids using at least this share of tiles.")]
ExchangeOpt = Annotated[str, typer.Option(help="Price exchange by load bounds (bound) or by the greedy "
                                               "schedule of each phase (greedy).")]


@app.command("layout")
def layout_cmd(
    problem: Annotated[Path, typer.Argument(help="Layout problem file (YAML or JSON) or bundled name, "
                                                 "or a workload (name or file) to build the problem from.")],
    spec: Annotated[str, typer.Option(help="Spec of a workload (name or file).")] = "gc200",
    solver: Annotated[str, typer.Option(help="milp | cpsat | beam")] = "milp",
    time_limit: Annotated[float | None, typer.Option(
        help="Seconds, wall-clock, for the whole command, building a workload's problem included. Without "
             f"it the exact solver has {DEFAULT_TIME_LIMIT:g} s and a build runs to its end.")] = None,
    k: Annotated[int, typer.Option("--k", help="The k best distinct plans.")] = 1,
    width: Annotated[int, typer.Option(help="Beam baseline: candidates kept per operator.")] = 64,
    beam: Annotated[int, typer.Option(help="Beam baseline: partial plans kept per step.")] = 64,
    rerank: Annotated[bool, typer.Option("--rerank", help="Schedule each plan's phases and rank the plans "
                                                          "by scheduled cycles.")] = False,
    profile: Annotated[str | None, typer.Option(help="Solver profile for --rerank (default greedy).")] = None,
    within: WithinOpt = 0.0,
    min_utilisation: UtilOpt = 0.5,
    exchange: ExchangeOpt = "bound",
    grain: GrainOpt = None,
    workers: WorkersOpt = None,
    seed: SeedOpt = None,
    out: Annotated[Path | None, typer.Option(help="Write the plan JSON here.")] = None,
    export: ExportOpt = None,
    json_out: JsonOpt = False,
    verbose: VerboseOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Pick one candidate per operator: least compute + exchange + redistribution cycles
    within memory; exact (MILP or CP-SAT) or the beam baseline."""
    from ipuopt.layout.select import BuildOptions, plan_of, problem_of, source_path

    params = resolve("layout", solver, time_limit=time_limit, workers=workers, seed=seed,
                     options={"verbose": True} if verbose else None)[1]
    if profile and not rerank:
        raise InputError.one("", "--profile", "schedules the plans of --rerank: give --rerank too")
    again = _params(profile, None, None, None, None, []) if rerank else None
    path = source_path(problem)
    _check_out(out, path, spec, profile)
    _check_out(export, path, spec, option="--export", suffixes=tuple(FORMS))
    _check_export(export, out, solver)
    if time_limit is not None:
        params.start_clock(since=START)
    options = BuildOptions(within, min_utilisation, exchange, grain)
    if export is not None:
        from ipuopt.export import layout_model

        try:
            with _Progress(quiet, "layout problem") as progress:
                problem_, _ = problem_of(problem, spec, k, options, progress, params.stop.check)
        except Stopped:
            _err(f"error: the time limit ({time_limit:g} s) ran out while building the layout problem of "
                 f"{problem}; give more time, or build it once with `ipuopt layout-problem`")
            raise typer.Exit(1) from None
        return _export(lambda form: layout_model(problem_, form), export, json_out, path)
    with _solver_log(verbose), _Progress(quiet, f"layout {solver}") as progress:
        res = plan_of(problem, spec, solver, params, k, options, width, beam, again, progress)
    result = res.to_dict()
    if out and result["choice"]:
        write_document(out, result, protect=(path,))
    if json_out:
        print(json.dumps(result, indent=1))
    else:
        _print_plan(result, solver)
    if res.interrupted:
        _interrupted("the plan" if result["choice"] else None, res.status, out if result["choice"] else None)
    if not result["choice"]:
        raise typer.Exit(1)


def _print_plan(result: dict[str, Any], solver: str) -> None:
    print(f"problem    {result['workload']}: solver {solver}  status {result['status']}  "
          f"time {result['runtime_s']:.2f}s")
    if kept := result.get("kept"):
        counts = ", ".join(f"{op} {n}/{kept['enumerated'][op]}" for op, n in kept["kept"].items())
        print(f"kept       {counts} candidates ({kept['seconds']} s to build)")
    if result["cycles"] is not None:
        print(f"cycles     {result['cycles']}" + ("" if result["lower_bound"] is None
                                                     else f"  lower bound {result['lower_bound']}"))
    for op, cid in result["choice"].items():
        print(f"  {op:<14} {cid}")
    if "reason" in result:
        print(f"reason     {result['reason']}")
    b = result.get("beam")
    if b and solver != "beam":
        print(f"beam       {b['cycles'] if b['cycles'] is not None else 'no plan within memory,'} cycles "
              f"(width {b['width']}, beam {b['beam']})")
        for d in b.get("discarded", []):
            where = (f"screened out at rank {d['rank']} of {d['of']}" if d["where"] == "screen"
                     else f"dropped at step {d['step']}, rank {d['rank']} (beam {d['beam']})")
            print(f"  lost     {d['operator']} = {d['candidate']}: {where}")
    for p in result.get("plans", []):
        picks = "  ".join(f"{o}={c}" for o, c in p["choice"].items())
        print(f"plan {p['rank']:<5} {p['cycles']}  {picks}")
    if rr := result.get("rerank"):
        print(f"{'rank':>4} {'model':>9} {'scheduled':>10} {'sched rank':>10}")
        for r in rr:
            print(f"{r['rank']:>4} {r['cycles']:>9} {r['scheduled']:>10} {r['scheduled_rank']:>10}"
                  + ("" if r["agrees"] else "  <- the rankings disagree"))


@app.command("sweep")
def sweep_cmd(
    sweep: Annotated[Path, typer.Argument(help="Sweep file: phases, specs, solvers.")],
    out: Annotated[Path, typer.Option(help="Results folder (results.csv, schedules/); rerun to resume.")],
    cluster: Annotated[str | None, typer.Option(help="A running Dask scheduler, tcp://HOST:PORT "
                                                     "(default: a local cluster).")] = None,
    workers: Annotated[int | None, typer.Option(help="Local worker processes (default: the cores).")] = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Solve every phase x spec x solver cell on Dask; rows appear as cells finish."""
    from ipuopt.sweeps.plan import load_sweep
    from ipuopt.sweeps.run import check_cluster, run_sweep

    SolveParams(workers=workers)
    check_cluster(cluster)
    if cluster and workers:
        raise InputError.one("", "--workers",
                             "sets the local cluster's size; a --cluster has its own workers")
    _check_out_dir(out)
    plan = load_sweep(sweep)
    try:
        with _Progress(quiet, f"sweep {plan.name}: {len(plan.cells)} cells", every=5.0) as progress:
            run = run_sweep(plan, out, cluster, workers, progress)
    except KeyboardInterrupt:  # every finished cell is already in results.csv, whole
        from ipuopt.sweeps.run import finished_cells

        _err(f"interrupted: {len(finished_cells(out))} of {len(plan.cells)} cells are done in "
             f"{out / 'results.csv'}; rerun the same command to resume")
        _exit_now(130)
    doc = {"sweep": plan.name, "out": str(out), "cells": run.total, "solved": run.solved,
           "already_done": run.skipped, "failed": run.failed, "seconds": round(run.seconds, 1)}
    if json_out:
        print(json.dumps(doc, indent=1))
    elif not quiet:
        print(f"sweep {plan.name}: {run.total} cells, {run.solved} solved now, {run.skipped} already "
              f"in {out}, {len(run.failed)} failed, {run.seconds:.1f}s")
        for f in run.failed:
            print(f"failed     {f}")
    if run.failed:
        raise typer.Exit(1)


@app.command("sweep-report")
def sweep_report_cmd(
    out: Annotated[Path, typer.Argument(help="A sweep's results folder.")],
    against: Annotated[Path | None, typer.Option(help="An older sweep's folder to compare with.")] = None,
    png: Annotated[Path | None, typer.Option(help="Also plot it to this PNG file.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Per phase and spec: greedy, best and bound with the gap; per solver totals; with
    --against, what got better or worse."""
    from ipuopt.sweeps.report import compare, load_results, report_png, summarise

    _check_out(png, option="--png", suffixes=(".png",))
    rows = load_results(out)
    summary = summarise(rows)
    diff = compare(rows, load_results(against)) if against else None
    if png:
        write_atomic(png, report_png(summary, diff))
    if json_out:
        print(json.dumps({**summary, **({"against": diff} if diff else {})}, indent=1))
        return
    print(f"{'phase':<40} {'spec':<16} {'greedy':>8} {'best':>8} {'bound':>8} {'gap':>7}  best by")
    for c in summary["cases"]:
        print(f"{Path(c['phase']).stem[-40:]:<40} {c['spec']:<16} {str(c['greedy']):>8} {c['best']:>8} "
              f"{c['bound']:>8} {_pct(c['gap']):>7}  {c['best_solver']}")
    print(f"\n{'solver':<22} {'cells':>5} {'optimal':>7} {'total horizon':>13} {'mean gap':>8} "
          f"{'seconds':>8}")
    for s in summary["solvers"]:
        print(f"{s['solver']:<22} {s['cells']:>5} {s['optimal']:>7} {s['total_horizon']:>13} "
              f"{_pct(s['mean_gap']):>8} {s['seconds']:>8}")
    if diff:
        print(f"\nagainst {against}: {diff['better']} better, {diff['worse']} worse, {diff['same']} same")
        for c in diff["changes"]:
            if c["change"]:
                word = "better" if c["change"] < 0 else "worse"
                print(f"  {word:<6} {Path(c['phase']).stem[-40:]:<40} {c['spec']:<16} {c['solver']:<12} "
                      f"{c['before']:>7} -> {c['after']:>7} ({c['percent']:+.2f}%)")
        for k in diff["only_new"]:
            print(f"  new    {' '.join(k)}")
        for k in diff["only_old"]:
            print(f"  gone   {' '.join(k)}")


@app.command("schema")
def schema_cmd(
    kind: Annotated[str | None, typer.Argument(help="File kind; without it, every kind is listed.")] = None,
    out: Annotated[Path | None, typer.Option(help="Write the schema to this JSON file.")] = None,
    out_dir: Annotated[Path | None,
                       typer.Option(help="Write every kind's schema here as KIND.schema.json.")] = None,
) -> None:
    """The JSON Schema of a file kind (phase, spec, arena, ...), to check files made elsewhere."""
    from ipuopt.schemas import KINDS, schema

    doc = schema(kind) if kind is not None else None  # an unknown kind is refused first
    if out_dir is not None and (kind is not None or out is not None):
        raise InputError.one("", "--out-dir", "writes every kind: give no KIND and no --out")
    if out is not None and kind is None:
        raise InputError.one("", "--out", "name the KIND to write")
    _check_out(out, suffixes=(".json",))
    _check_out_dir(out_dir)
    if out_dir is not None:
        out_dir.mkdir(exist_ok=True)
        for k in KINDS:
            write_document(out_dir / f"{k}.schema.json", schema(k))
        print(f"wrote {len(KINDS)} schemas to {out_dir}")
    elif kind is None:
        for k in KINDS:
            print(f"{k:<15} {schema(k)['description']}")
    elif out is not None:
        write_document(out, doc)
        print(f"wrote {out}")
    else:
        print(json.dumps(doc, indent=1))


@specs_app.command("list")
def specs_list() -> None:
    """Shipped specs, with tile count and description."""
    for name in spec_names():
        s = load_spec(name)
        print(f"{name:<18} {s.tiles:>5} tiles  {s.description}")


@specs_app.command("show")
def specs_show(name: Annotated[str, typer.Argument(help="Spec name or file.")],
               json_out: JsonOpt = False) -> None:
    """The resolved spec (after extends)."""
    s = load_spec(name)
    doc = {k: v for k, v in (s.raw or {}).items() if k != "extends"}
    print(json.dumps(doc, indent=1) if json_out else yaml.safe_dump(doc, sort_keys=False), end="")
    if json_out:
        print()


@specs_app.command("diff")
def specs_diff(a: Annotated[str, typer.Argument(help="Spec name or file.")],
               b: Annotated[str, typer.Argument(help="Spec name or file.")]) -> None:
    """Fields whose resolved values differ."""
    rows = diff_specs(load_spec(a), load_spec(b))
    if not rows:
        print("no differences")
    for path, x, y in rows:
        print(f"{path}: {x!r} -> {y!r}")


@import_app.command("openshop")
def import_openshop(
    file: Annotated[Path, typer.Argument(help="Open-shop text file: 'n m' then n rows of m times.")],
    out: Annotated[Path, typer.Option(help="Phase file to write.")],
) -> None:
    """An open-shop instance as a unicast phase on the openshop spec (horizon == makespan)."""
    from ipuopt.exchange.openshop import openshop_phase, read_openshop

    _check_out(out, file)
    phase = openshop_phase(read_openshop(file), name=file.stem)
    write_document(out, phase.to_dict(), protect=(file,))
    print(f"wrote {out}: {_count(len(phase.transfers), 'transfer')}")


def main() -> None:
    """Bad input exits 2 with one line per problem; nothing a user does prints a traceback
    (IPUOPT_DEBUG=1 shows one for an internal error)."""
    _STDOUT.append(os.dup(1))
    try:
        app()
    except SystemExit as exc:
        if exc.code == 130:  # typer's word for a Ctrl-C no command caught (loading, a second one)
            _err("interrupted: no file written")
            _exit_now(130)
        raise
    except Interrupted as exc:  # Ctrl-C before any answer: nothing written
        _err(f"interrupted: {exc}; no file written")
        _exit_now(130)
    except InputError as exc:
        for p in exc.problems:
            _err(f"error: {p}")
        sys.exit(2)
    except OSError as exc:  # a file that vanished or cannot be written mid-run
        _err(f"error: {exc.filename or ''}: {exc.strerror or exc}")
        sys.exit(2)
    except KeyboardInterrupt:
        _err("interrupted: no file written")
        _exit_now(130)  # a solver thread may still run in C++: no interpreter shutdown
    except Exception as exc:
        if os.environ.get("IPUOPT_DEBUG"):
            raise
        _err(f"internal error: {type(exc).__name__}: {exc} (IPUOPT_DEBUG=1 shows the traceback; "
             "please report it)")
        sys.exit(3)
