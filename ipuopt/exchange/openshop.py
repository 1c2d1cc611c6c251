"""Open shop as an exchange phase: job j is source tile j, machine k is tile n + k."""

from __future__ import annotations

from pathlib import Path

from ipuopt.errors import InputError
from ipuopt.exchange.phase import Phase, Transfer


def read_openshop(path: str | Path) -> list[list[int]]:
    """Processing times [job][machine] from the standard text format."""
    p = Path(path)
    if not p.is_file():
        raise InputError.one(str(p), "", "file not found")
    tokens = p.read_text().split()
    try:
        values = [int(x) for x in tokens]
    except ValueError:
        raise InputError.one(str(p), "", "expected integers only") from None
    if len(values) < 2 or values[0] <= 0 or values[1] <= 0:
        raise InputError.one(str(p), "line 1", "expected 'n m' with n, m > 0")
    n, m = values[0], values[1]
    if len(values) - 2 != n * m:
        raise InputError.one(str(p), "times", f"expected {n}x{m} = {n * m} times, "
                                              f"found {len(values) - 2}")
    times = [values[2 + j * m: 2 + (j + 1) * m] for j in range(n)]
    if any(v < 0 for row in times for v in row):
        raise InputError.one(str(p), "times", "processing times must be >= 0")
    return times


def openshop_phase(times: list[list[int]], name: str = "") -> Phase:
    """Zero-length operations are dropped (they take no time in the open shop either)."""
    n = len(times)
    transfers = [Transfer(id=f"j{j}m{k}", src=j, dst=(n + k,), words=p)
                 for j, row in enumerate(times) for k, p in enumerate(row) if p > 0]
    return Phase(spec_ref="openshop", transfers=transfers, name=name)
