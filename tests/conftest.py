"""Shared fixtures: a small spec with round numbers so optimal horizons can be worked by hand."""

from __future__ import annotations

import copy
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from ipuopt.exchange.phase import Phase, Transfer, check_phase
from ipuopt.spec import Spec, spec_from_dict

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"  # public instances copied with their source named (README there)


HAND_SPEC = {
    "name": "hand",
    "clock_hz": 1_000_000_000,
    "tiles": 8,
    "pairs": "adjacent",
    "memory": {"base": 0, "size": 0x10000,
               "regions": [{"name": "r", "start": 0, "size": 0x10000, "element_bytes": 0x1000}]},
    "exchange": {
        "word_bytes": 4, "ordinary_words_per_cycle": 1, "paired_words_per_cycle": 2,
        "paired_alignment": 8, "tx_overhead": 1, "route_latency": {"base": 2, "per_tile": 0},
        "rx_lead": 1, "format_switch": 3, "write_hazard": 2, "max_fanout": 4, "sync_cycles": 0,
    },
}


def make_spec(**exchange_overrides) -> Spec:
    doc = copy.deepcopy(HAND_SPEC)
    doc["exchange"].update(exchange_overrides)
    return spec_from_dict(doc, "hand")


def make_phase(spec: Spec, *transfers: dict) -> Phase:
    ts = [Transfer(**{**t, "dst": tuple(t["dst"]), "after": tuple(t.get("after", ()))})
          for t in transfers]
    phase = Phase(spec_ref=spec.name, transfers=ts, name="hand")
    assert check_phase(phase, spec) == []
    return phase


def row_and_columns() -> Phase:
    """Two multicasts into tiles 20 and 21 (ordinary only) and two columns crossing them, 20-30
    fed by tile 0 and 21-31 by its partner 1 (gc200): a phase whose group bound is above
    every other bound and is its optimum."""
    row = [Transfer(f"r{k}", 40 + 2 * k, (20, 21), 30, paired="never") for k in range(2)]
    cols = [Transfer(f"c{j}.{k}", j, (20 + j, 30 + j), 40) for j in range(2) for k in range(2)]
    return Phase("gc200", row + cols, name="row-and-columns")


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess:
    """The CLI as a user runs it: a separate process, exit code and both streams."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-c", "from ipuopt.entry import main; main()", *args],
                          capture_output=True, text=True, cwd=cwd or ROOT, env=env, timeout=300)


def start_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
              group: bool = False) -> subprocess.Popen:
    """The CLI started and left running, to be interrupted: it hears Ctrl-C as at a terminal
    even when the suite was started in the background (a script's `cmd &` ignores SIGINT,
    the child inherits that, and Python then installs no handler). With `group`, it leads a
    process group of its own, so that `os.killpg` reaches it and every process it started, as
    a terminal's Ctrl-C does."""
    def hears_ctrl_c() -> None:
        if group:
            os.setpgrp()
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    return subprocess.Popen([sys.executable, "-c", "from ipuopt.entry import main; main()", *args],
                            cwd=cwd or ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=hears_ctrl_c)


@pytest.fixture
def write_yaml(tmp_path: Path):
    def write(name: str, doc: object) -> Path:
        p = tmp_path / name
        p.write_text(yaml.safe_dump(doc, sort_keys=False))
        return p
    return write


class HandClock:
    """`time` as `ipuopt.budget` reads it (monotonic and wall clock alike), moved by hand:
    tests of the clock that do not depend on the machine's speed."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def hand_clock(monkeypatch: pytest.MonkeyPatch) -> HandClock:
    import ipuopt.budget as budget_module

    clock = HandClock()
    monkeypatch.setattr(budget_module, "time", clock)
    return clock


@pytest.fixture
def swap_method(monkeypatch: pytest.MonkeyPatch) -> Callable[[str, str, Callable[..., Any]], None]:
    """Replace a declared method's function for one test: the registry holds the function
    itself, so patching its module's name would not reach the methods that call it by name."""
    from dataclasses import replace

    from ipuopt import registry

    def swap(problem: str, name: str, function: Callable[..., Any]) -> None:
        monkeypatch.setitem(registry._DECLARED, (problem, name),
                            replace(registry.method(problem, name), function=function))

    return swap
