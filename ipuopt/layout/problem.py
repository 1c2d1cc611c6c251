"""A layout-selection problem: operators in program order, their candidates, the
redistribution table; loaded from the problem file with every problem reported at once.

Plain data with the semantics every solver shares: a choice's cycles, its memory at each
step, and which choices are allowed."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from ipuopt.data_files import bundled_hint, bundled_path
from ipuopt.errors import InputError, Problem, unknown_keys
from ipuopt.io import parse_int, read_document
from ipuopt.limits import MAX_BYTES

_KEYS = ("name", "capacity", "order", "tensors", "operators", "redistribution", "workload", "spec",
         "kept", "description", "workload_file")
_OP_KEYS = ("inputs", "output", "candidates", "why")
_CAND_KEYS = ("id", "compute", "exchange", "memory", "needs", "output", "holds", "why")
_CYCLES = 1 << 50  # more cycles than any program runs: a typo, not a cost


@dataclass(frozen=True)
class Option:
    id: str
    compute: int
    exchange: int
    memory: dict[str, int]
    needs: dict[str, str]
    output: str
    holds: dict[str, int]
    why: Any = None

    @property
    def cycles(self) -> int:
        return self.compute + self.exchange


@dataclass(frozen=True)
class Operator:
    name: str
    inputs: tuple[str, ...]
    output: str
    candidates: tuple[Option, ...]


@dataclass
class LayoutProblem:
    name: str
    capacity: dict[str, int]
    order: list[str]
    inputs: dict[str, str]  # graph input -> its layout
    producer: dict[str, str]  # tensor -> the operator producing it
    operators: dict[str, Operator]
    redistribution: dict[tuple[str, str, str], int]  # (tensor, from, to) -> cycles
    source: str = ""
    extra: dict[str, Any] = field(default_factory=dict)  # workload, spec, kept: carried into plans
    # the candidates a workload's problem was built from, in memory only: the program bound
    # over the same workload, spec and grain needs them too (minutes at fragment level)
    catalogue: Any = field(default=None, repr=False, compare=False)

    def step(self, op: str) -> int:
        return self.order.index(op)

    def live_steps(self, op: str) -> range:
        """Steps (after its own) at which the output of `op` is held: until its last consumer."""
        return self._held[op]

    @cached_property
    def _held(self) -> dict[str, range]:
        out = {}
        for name, op in self.operators.items():
            consumers = [self.step(o.name) for o in self.operators.values() if op.output in o.inputs]
            out[name] = range(self.step(name) + 1, max(consumers, default=self.step(name)) + 1)
        return out

    def move(self, tensor: str, have: str, need: str) -> int | None:
        """Cycles to bring `tensor` from layout `have` to `need`; None when not allowed."""
        return 0 if have == need else self.redistribution.get((tensor, have, need))

    def layout_of(self, tensor: str, choice: dict[str, Option]) -> str:
        return self.inputs[tensor] if tensor in self.inputs else choice[self.producer[tensor]].output

    def cycles(self, choice: dict[str, Option]) -> int | None:
        """Total cycles of a full choice; None when some input cannot be moved to its layout."""
        total = 0
        for name, op in self.operators.items():
            cand = choice[name]
            total += cand.cycles
            for t in op.inputs:
                moved = self.move(t, self.layout_of(t, choice), cand.needs[t])
                if moved is None:
                    return None
                total += moved
        return total

    def memory_at(self, k: int, choice: dict[str, Option]) -> dict[str, int]:
        """Bytes per tile by region at step k: the running operator's memory plus the outputs
        held there (a partial choice counts what it has)."""
        used = dict.fromkeys(self.capacity, 0)
        running = self.order[k]
        if running in choice:
            for r, b in choice[running].memory.items():
                used[r] += b
        for name in self.order[:k]:
            if name in choice and k in self.live_steps(name):
                for r, b in choice[name].holds.items():
                    used[r] += b
        return used

    def overflow(self, choice: dict[str, Option]) -> tuple[int, str, int] | None:
        """(step, region, bytes) of the first step where `choice` does not fit."""
        for k in range(len(self.order)):
            for r, b in self.memory_at(k, choice).items():
                if b > self.capacity[r]:
                    return k, r, b
        return None

    def least_memory_overflow(self) -> tuple[int, str, int] | None:
        """A step and region that cannot fit even with each operator's smallest candidate
        there: a proof that no choice fits."""
        for k, running in enumerate(self.order):
            for r, cap in self.capacity.items():
                need = min(c.memory.get(r, 0) for c in self.operators[running].candidates)
                need += sum(min(c.holds.get(r, 0) for c in self.operators[n].candidates)
                            for n in self.order[:k] if k in self.live_steps(n))
                if need > cap:
                    return k, r, need
        return None


def load_layout_problem(path: str | Path) -> LayoutProblem:
    """A layout problem by path or by bundled name (models/layouts/)."""
    p = bundled_path(path, "models/layouts")
    return layout_problem_from_dict(read_document(p, bundled_hint("models/layouts", "problems")), str(p))


def _bytes(value: Any, regions: dict[str, int], file: str, where: str,
           problems: list[Problem]) -> dict[str, int]:
    if not isinstance(value, dict):
        problems.append(Problem(file, where, "must map memory regions to bytes per tile"))
        return {}
    out = {}
    for r, b in value.items():
        n = parse_int(b)
        if r not in regions:
            problems.append(Problem(file, f"{where}.{r}",
                                    f"unknown region (capacity has {', '.join(regions)})"))
        elif n is None or not 0 <= n <= MAX_BYTES:
            problems.append(Problem(file, f"{where}.{r}", f"must be bytes in 0..{MAX_BYTES}, got {b!r}"))
        else:
            out[str(r)] = n
    return out


def _cycles(value: Any, file: str, where: str, problems: list[Problem]) -> int:
    n = parse_int(value)
    if n is None or not 0 <= n <= _CYCLES:
        problems.append(Problem(file, where, f"must be cycles in 0..{_CYCLES}, got {value!r}"))
        return 0
    return n


def _candidate(raw: Any, op: str, inputs: tuple[str, ...], regions: dict[str, int], file: str, i: int,
               problems: list[Problem]) -> Option | None:
    where = f"operators.{op}.candidates[{i}]"
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str | int):
        problems.append(Problem(file, where, "needs an id"))
        return None
    where = f"operators.{op}.candidate {raw['id']}"
    before = len(problems)
    problems.extend(unknown_keys(raw, _CAND_KEYS, file, f"{where}."))
    needs = raw.get("needs") or {}
    if not isinstance(needs, dict) or set(needs) != set(inputs) or not all(
            isinstance(v, str | int) for v in needs.values()):
        problems.append(Problem(file, f"{where}.needs",
                                f"must give a layout for each input ({', '.join(inputs)})"))
        needs = {}
    output = raw.get("output")
    if not isinstance(output, str | int):
        problems.append(Problem(file, f"{where}.output", "must be the layout label of its output"))
    cand = Option(str(raw["id"]), _cycles(raw.get("compute", 0), file, f"{where}.compute", problems),
                     _cycles(raw.get("exchange", 0), file, f"{where}.exchange", problems),
                     _bytes(raw.get("memory", {}), regions, file, f"{where}.memory", problems),
                     {str(k): str(v) for k, v in needs.items()}, str(output),
                     _bytes(raw.get("holds", {}), regions, file, f"{where}.holds", problems), raw.get("why"))
    return cand if len(problems) == before else None


def layout_problem_from_dict(doc: Any, file: str = "") -> LayoutProblem:
    """The problem of a problem-file document; every problem (file, field, reason) at once."""
    if not isinstance(doc, dict):
        raise InputError.one(file, "", "a layout problem must be a mapping with capacity, order, tensors, "
                                       "operators, redistribution")
    problems = unknown_keys(doc, _KEYS, file)
    capacity = _bytes(doc.get("capacity"), {r: 0 for r in (doc.get("capacity") or {})}
                      if isinstance(doc.get("capacity"), dict) else {}, file, "capacity", problems)
    if not capacity:
        problems.append(Problem(file, "capacity", "name at least one region and its bytes per tile"))
    ops_doc = doc.get("operators")
    if not isinstance(ops_doc, dict) or not ops_doc:
        problems.append(Problem(file, "operators", "must map operator names to inputs, output, candidates"))
        ops_doc = {}
    ops_doc = {str(k): v for k, v in ops_doc.items()}
    listed = doc.get("order")
    if not isinstance(listed, list):
        problems.append(Problem(file, "order", "must list every operator exactly once"))
        listed = list(ops_doc)
    listed = [str(o) for o in listed]
    for o in sorted({o for o in listed if listed.count(o) > 1}):
        problems.append(Problem(file, "order", f"{o} is listed {listed.count(o)} times"))
    for o in sorted(set(listed) - set(ops_doc)):
        problems.append(Problem(file, "order", f"{o} is not among the operators"))
    for o in sorted(set(ops_doc) - set(listed)):
        problems.append(Problem(file, "order", f"operator {o} is missing"))
    order = [o for i, o in enumerate(listed) if o in ops_doc and o not in listed[:i]]
    tensors = doc.get("tensors")
    if not isinstance(tensors, dict):
        problems.append(Problem(file, "tensors", "must map tensors to {layout} or {producer}"))
        tensors = {}
    inputs: dict[str, str] = {}
    producer: dict[str, str] = {}
    for t, spec in tensors.items():
        if isinstance(spec, dict) and "layout" in spec and "producer" not in spec:
            inputs[str(t)] = str(spec["layout"])
        elif isinstance(spec, dict) and str(spec.get("producer")) in ops_doc and "layout" not in spec:
            producer[str(t)] = str(spec["producer"])
        else:
            problems.append(Problem(file, f"tensors.{t}", "must be {layout: L} (a graph input) or "
                                                           "{producer: OPERATOR}"))
    operators: dict[str, Operator] = {}
    for name in order:
        raw = ops_doc[name]
        where = f"operators.{name}"
        if not isinstance(raw, dict):
            problems.append(Problem(file, where, "must be a mapping with inputs, output, candidates"))
            continue
        problems.extend(unknown_keys(raw, _OP_KEYS, file, f"{where}."))
        ins = raw.get("inputs") or []
        if not isinstance(ins, list) or any(str(t) not in tensors for t in ins) or len(set(ins)) != len(ins):
            problems.append(Problem(file, f"{where}.inputs", "must list known tensors, each once"))
            ins = []
        ins = tuple(str(t) for t in ins)
        for t in ins:
            if producer.get(t) in order and order.index(producer[t]) >= order.index(name):
                problems.append(Problem(file, f"{where}.inputs",
                                        f"{t} is produced by {producer[t]}, which runs later in `order`"))
        out = str(raw.get("output"))
        if producer.get(out) != name:
            problems.append(Problem(file, f"{where}.output", f"must be a tensor whose producer is {name}"))
        raw_cands = raw.get("candidates")
        if not isinstance(raw_cands, list) or not raw_cands:
            problems.append(Problem(file, f"{where}.candidates", "must list at least one candidate"))
            continue
        cands = [c for i, r in enumerate(raw_cands)
                 if (c := _candidate(r, name, ins, capacity, file, i, problems))]
        ids = [c.id for c in cands]
        for dup in sorted({i for i in ids if ids.count(i) > 1}):
            problems.append(Problem(file, f"{where}.candidate {dup}", "duplicate id"))
        operators[name] = Operator(name, ins, out, tuple(cands))
    redistribution: dict[tuple[str, str, str], int] = {}
    rows = doc.get("redistribution") or []
    if not isinstance(rows, list):
        problems.append(Problem(file, "redistribution", "must be a list of {tensor, from, to, cycles}"))
        rows = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or set(row) - {"tensor", "from", "to", "cycles", "why"} or \
                not {"tensor", "from", "to", "cycles"} <= set(row):
            problems.append(Problem(file, f"redistribution[{i}]", "needs tensor, from, to, cycles"))
            continue
        if str(row["tensor"]) not in tensors:
            problems.append(Problem(file, f"redistribution[{i}].tensor", f"unknown tensor {row['tensor']!r}"))
        redistribution[(str(row["tensor"]), str(row["from"]), str(row["to"]))] = _cycles(
            row["cycles"], file, f"redistribution[{i}].cycles", problems)
    if problems:
        raise InputError(problems)
    extra = {k: doc[k] for k in ("workload", "workload_file", "spec", "kept") if k in doc}
    return LayoutProblem(str(doc.get("name") or Path(file).stem), capacity, order, inputs, producer,
                         operators, redistribution, file, extra)
