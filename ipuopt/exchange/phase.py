"""An exchange phase: the transfers to schedule, loaded from YAML/JSON and checked against a spec."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ipuopt.data_files import bundled_hint, bundled_path
from ipuopt.errors import InputError, Problem, unknown_keys
from ipuopt.io import parse_int, read_document
from ipuopt.spec import Spec, load_spec

PAIRED_MODES = ("allowed", "never", "required")
_TRANSFER_KEYS = ("id", "src", "dst", "words", "src_addr", "dst_addr", "paired", "after")
_PHASE_KEYS = ("spec", "name", "description", "transfers")


@dataclass(frozen=True)
class Transfer:
    id: str
    src: int
    dst: tuple[int, ...]
    words: int
    src_addr: int | None = None
    dst_addr: int | None = None
    paired: str = "allowed"
    after: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "src": self.src, "dst": list(self.dst),
                               "words": self.words}
        if self.src_addr is not None:
            out["src_addr"] = self.src_addr
        if self.dst_addr is not None:
            out["dst_addr"] = self.dst_addr
        if self.paired != "allowed":
            out["paired"] = self.paired
        if self.after:
            out["after"] = list(self.after)
        return out


@dataclass
class Phase:
    spec_ref: str
    transfers: list[Transfer]
    name: str = ""
    source: str = ""
    index: dict[str, int] = field(default_factory=dict, repr=False)
    malformed_ids: set[str] = field(default_factory=set, repr=False)  # ids seen while parsing
    # transfers with a malformed field, as far as they parse: checked for the rest, never solved
    malformed: list[Transfer] = field(default_factory=list, repr=False)
    checked: Spec | None = field(default=None, repr=False, compare=False)  # the spec it was checked on

    def __post_init__(self) -> None:
        self.index = {t.id: i for i, t in enumerate(self.transfers)}

    def to_dict(self) -> dict[str, Any]:
        return {"spec": self.spec_ref, "name": self.name,
                "transfers": [t.to_dict() for t in self.transfers]}


def _transfer(raw: Any, i: int, file: str, problems: list[Problem]) -> tuple[Transfer, bool] | None:
    """The transfer, and whether every field was well formed (if not, the fields that were not
    are None or left out, so that the others can still be checked)."""
    where = f"transfers[{i}]"
    if not isinstance(raw, dict):
        problems.append(Problem(file, where, "must be a mapping"))
        return None
    tid = raw.get("id")
    if isinstance(tid, int) and not isinstance(tid, bool):
        tid = str(tid)
    if not isinstance(tid, str) or not tid:
        problems.append(Problem(file, f"{where}.id", "missing or not a string"))
        return None
    where = f"transfer {tid}"
    before = len(problems)
    problems.extend(unknown_keys(raw, _TRANSFER_KEYS, file, f"{where}.", "unknown field"))
    src = parse_int(raw.get("src"))
    if src is None:
        problems.append(Problem(file, f"{where}.src", "missing or not an integer tile id"))
    dst_raw = raw.get("dst")
    if isinstance(dst_raw, int) and not isinstance(dst_raw, bool):
        dst_raw = [dst_raw]
    dst: list[int] = []
    if not isinstance(dst_raw, list) or not dst_raw:
        problems.append(Problem(file, f"{where}.dst", "missing or not a non-empty list of tiles"))
    else:
        for d in dst_raw:
            v = parse_int(d)
            if v is None:
                problems.append(Problem(file, f"{where}.dst", f"{d!r} is not a tile id"))
            else:
                dst.append(v)
    words = raw.get("words")
    if not isinstance(words, int) or isinstance(words, bool) or words <= 0:
        problems.append(Problem(file, f"{where}.words", f"must be an integer > 0, got {words!r}"))
        words = None
    addrs = {}
    for key in ("src_addr", "dst_addr"):
        if raw.get(key) is None:
            addrs[key] = None
            continue
        v = parse_int(raw[key])
        if v is None or v < 0:
            problems.append(Problem(file, f"{where}.{key}", f"not a byte address: {raw[key]!r}"))
        addrs[key] = v
    paired = raw.get("paired", "allowed")
    if paired not in PAIRED_MODES:
        problems.append(Problem(file, f"{where}.paired",
                                f"must be one of {', '.join(PAIRED_MODES)}, got {paired!r}"))
        paired = "allowed"
    after = raw.get("after", [])
    if isinstance(after, str | int):
        after = [after]
    if not isinstance(after, list):
        problems.append(Problem(file, f"{where}.after", "must be a list of transfer ids"))
        after = []
    return Transfer(id=tid, src=src, dst=tuple(dst), words=words, src_addr=addrs["src_addr"],  # type: ignore[arg-type]
                    dst_addr=addrs["dst_addr"], paired=paired,
                    after=tuple(str(a) for a in after)), len(problems) == before


def _parse(doc: Any, file: str) -> tuple[Phase, list[Problem]]:
    """The phase made of the well-formed transfers, and the problems of the others."""
    if not isinstance(doc, dict):
        raise InputError.one(file, "", "a phase must be a mapping with spec and transfers")
    problems = unknown_keys(doc, _PHASE_KEYS, file)
    spec_ref = doc.get("spec")
    if not isinstance(spec_ref, str):
        problems.append(Problem(file, "spec", "missing: name a spec under specs/ or a spec file"))
    raw = doc.get("transfers")
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        problems.append(Problem(file, "transfers", "must be a list"))
        raw = []
    parsed = [p for i, r in enumerate(raw) if (p := _transfer(r, i, file, problems))]
    phase = Phase(spec_ref=spec_ref if isinstance(spec_ref, str) else "",
                  transfers=[t for t, ok in parsed if ok], name=str(doc.get("name") or ""), source=file,
                  malformed=[t for t, ok in parsed if not ok])
    phase.malformed_ids = {str(r["id"]) for r in raw if isinstance(r, dict) and "id" in r}
    return phase, problems


def paired_possible(t: Transfer, spec: Spec) -> bool:
    """Paired width needs a partner tile, `paired` not `never`, and aligned addresses."""
    if t.paired == "never" or spec.partner(t.src) is None:
        return False
    align = spec.exchange.paired_alignment
    return all(a is None or a % align == 0 for a in (t.src_addr, t.dst_addr))


def check_phase(phase: Phase, spec: Spec | None) -> list[Problem]:
    """Every problem of the phase against the spec, each naming the transfer and field (with
    no spec, the ones that need none); malformed transfers too, for the fields they have."""
    file = phase.source
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    for t in [*phase.transfers, *phase.malformed]:
        w = f"transfer {t.id}"
        if t.id in seen:
            problems.append(Problem(file, f"{w}.id", "duplicate id"))
        seen[t.id] = 1
        if t.src is not None and t.src in t.dst:
            problems.append(Problem(file, f"{w}.dst", f"source tile {t.src} is among the destinations"))
        if len(set(t.dst)) != len(t.dst):
            rep = sorted({d for d in t.dst if t.dst.count(d) > 1})
            problems.append(Problem(file, f"{w}.dst", f"repeated destination {rep}"))
        for a in t.after:
            if a not in phase.index and a not in phase.malformed_ids:
                problems.append(Problem(file, f"{w}.after", f"unknown transfer id {a!r}"))
            elif a == t.id:
                problems.append(Problem(file, f"{w}.after", "a transfer cannot follow itself"))
        if spec is not None:
            problems += _against_spec(t, spec, file)
    edges = [(a, t.id) for t in phase.transfers for a in t.after if a in phase.index and a != t.id]
    if not edges:
        return problems
    import networkx as nx  # here: its import is half of the command line's start-up

    graph = nx.DiGraph(edges)
    if not nx.is_directed_acyclic_graph(graph):
        cycle = nx.find_cycle(graph)
        ids = " -> ".join([u for u, _ in cycle] + [cycle[0][0]])
        problems.append(Problem(file, f"transfer {cycle[0][1]}.after", f"dependency cycle: {ids}"))
    return problems


def _against_spec(t: Transfer, spec: Spec, file: str) -> list[Problem]:
    """The problems of one transfer that its spec decides: tiles, fanout, memory, pairing."""
    problems: list[Problem] = []
    w = f"transfer {t.id}"
    nbytes = spec.exchange.word_bytes
    if t.src is not None and not 0 <= t.src < spec.tiles:
        problems.append(Problem(file, f"{w}.src", f"unknown tile {t.src} (spec {spec.name} "
                                                  f"has tiles 0..{spec.tiles - 1})"))
    for d in t.dst:
        if not 0 <= d < spec.tiles:
            problems.append(Problem(file, f"{w}.dst", f"unknown tile {d} (spec {spec.name} "
                                                      f"has tiles 0..{spec.tiles - 1})"))
    if len(t.dst) > spec.exchange.max_fanout:
        problems.append(Problem(file, f"{w}.dst", f"fanout {len(t.dst)} above max_fanout "
                                                  f"{spec.exchange.max_fanout} of {spec.name}"))
    size = None if t.words is None else t.words * nbytes  # None: malformed, said already
    if size is not None and size > spec.memory_size:
        problems.append(Problem(file, f"{w}.words", f"{t.words} words ({t.words * nbytes} bytes) do not "
                                                    f"fit in a tile's memory ({spec.memory_size} bytes)"))
    for key, addr in (("src_addr", t.src_addr), ("dst_addr", t.dst_addr)):
        if addr is None or size is None or size > spec.memory_size:  # said once, above
            continue
        end = addr + size
        if addr < spec.memory_base or end > spec.memory_end:
            problems.append(Problem(file, f"{w}.{key}",
                                    f"[{addr:#x}, {end:#x}) outside tile memory "
                                    f"[{spec.memory_base:#x}, {spec.memory_end:#x})"))
    if t.paired == "required" and t.src is not None and not paired_possible(t, spec):
        why = ("tile has no pair partner" if spec.partner(t.src) is None
               else f"addresses not multiples of {spec.exchange.paired_alignment}")
        problems.append(Problem(file, f"{w}.paired", f"required but cannot be paired: {why}"))
    return problems


def load_phase(path: str | Path, spec_override: str | Spec | None = None) -> tuple[Phase, Spec]:
    """Load a phase and its spec (`spec_override` replaces the phase's), all problems at once."""
    p = bundled_path(path, "models/examples")
    hint = bundled_hint("models/examples", "examples")
    return phase_from_dict(read_document(p, hint), spec_override, str(p), p.parent)


def phase_from_dict(doc: Any, spec: str | Spec | None = None, file: str = "",
                    relative_to: Path | None = None) -> tuple[Phase, Spec]:
    """A phase from its document (as in a phase file) and its spec (`spec` replaces the
    phase's own), checked as a file is: every problem at once."""
    phase, problems = _parse(doc, file)
    return phase, _checked(phase, spec, problems, relative_to)


def checked_phase(phase: Phase, spec: str | Spec | None = None) -> tuple[Phase, Spec]:
    """A phase built in code, checked as a file is (`spec` replaces the phase's own): it is
    read back from its document, so every field meets the same rules and messages."""
    if phase.checked is not None and spec in (None, phase.checked, phase.checked.name):
        return phase, phase.checked  # loaded from a file or checked before
    if not isinstance(phase.transfers, list) or not all(isinstance(t, Transfer) for t in phase.transfers):
        raise InputError.one(phase.source, "transfers", "must be a list of Transfer")
    doc = {**phase.to_dict(), "spec": phase.spec_ref if isinstance(phase.spec_ref, str) else None}
    return phase_from_dict(doc, spec, phase.source or "(phase built in code)")


def _checked(phase: Phase, spec: str | Spec | None, problems: list[Problem],
             relative_to: Path | None) -> Spec:
    found = spec if isinstance(spec, Spec) else None
    if found is None and (phase.spec_ref or spec):
        try:
            found = (load_spec(spec, field="--spec") if spec
                     else load_spec(phase.spec_ref, relative_to=relative_to, referrer=phase.source))
        except InputError as exc:
            problems += exc.problems
    problems += check_phase(phase, found)
    if problems:
        raise InputError(problems)
    phase.checked = found
    return found  # type: ignore[return-value]
