"""The shipped gc200 as the reference compiler measured it: interleaved memory from 0x80000
(so a 32 KiB element boundary at 0x88000), a write hazard of 5 cycles, and the tile-368 case
that shows both (models/examples/tile368*.yaml).

By hand, on gc200 (tx_overhead 2, route latency 8 + distance/64): `in` (176 words, tile 100
-> 368) arrives 14 cycles after it starts and writes [14, 14 + 176 + 5); `out` (4,096 words,
tile 368 -> 700) reads from its start + 2 and completes 15 + 4,096 = 4,111 cycles after it
starts. Sharing an element they serialise, best `out` first: 4,111 + 176 = 4,274 cycles.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from ipuopt.exchange.phase import load_phase
from ipuopt.exchange.schedule import Schedule
from ipuopt.exchange.simulate import simulate
from ipuopt.exchange.solve import solve
from ipuopt.exchange.validate import validate
from ipuopt.spec import load_spec

EXACT = {"time_limit": 30, "workers": 1, "seed": 0}


def _horizon(name: str, spec_override: str | None = None) -> int:
    phase, spec = load_phase(name, spec_override)
    s = solve(phase, spec, "cpsat", EXACT)
    assert s.status == "optimal" and validate(phase, spec, s.solution).ok
    return s.value


def test_the_measured_constants() -> None:
    spec = load_spec("gc200")
    inter = next(r for r in spec.regions if r.name == "interleaved")
    assert (inter.start, inter.element_bytes) == (0x80000, 0x8000)
    assert inter.start + inter.element_bytes == 0x88000  # the measured element boundary
    assert spec.exchange.write_hazard == 5 and 237 <= spec.exchange.sync_cycles <= 260
    assert load_spec("bow").regions == spec.regions  # bow is the same die


def test_tile368_serialises_as_placed_and_overlaps_after_a_4k_shift() -> None:
    assert _horizon("tile368") == 4274
    phase, spec = load_phase("tile368-shifted")
    s = solve(phase, spec, "cpsat", EXACT)
    assert s.value == 4111 and s.solution.starts["out"] == 0
    assert s.solution.starts["in"] + 14 < 4111  # the receive lands while the send still reads


def test_the_element_cut_decides_it(tmp_path: Path) -> None:
    """On the old map (interleaved from 0x6c000: cuts at 0x84000 and 0x8c000) the case is the
    other way round: no clash as placed, a clash after the shift (the send's buffer then
    crosses 0x84000 into the receive's element)."""
    old = tmp_path / "gc200-old-map.yaml"
    old.write_text(yaml.safe_dump({"name": "gc200-old-map", "extends": "gc200", "memory": {"regions": [
        {"name": "non-interleaved", "start": 0x4C000, "size": 0x20000, "element_bytes": 0x8000},
        {"name": "interleaved", "start": 0x6C000, "size": 0x7C000, "element_bytes": 0x8000}]}}))
    assert _horizon("tile368", str(old)) == 4111
    assert _horizon("tile368-shifted", str(old)) == 4274


def test_the_five_cycle_write_hazard_is_in_the_schedule() -> None:
    """`in` first at 0: its element stays written until 14 + 176 + 5 = 195, so `out` (reading
    from its start + 2) may start at 193, not at 192; validator and simulator agree."""
    phase, spec = load_phase("tile368")
    verdicts = []
    for start in (192, 193):
        s = Schedule(starts={"in": 0, "out": start}, widths={"in": "ordinary", "out": "ordinary"})
        report = validate(phase, spec, s)
        verdicts.append((report.ok, simulate(phase, spec, s).ok))
        assert all(set(v.transfers) == {"in", "out"} and v.tile == 368 for v in report.violations)
    assert verdicts == [(False, False), (True, True)]
