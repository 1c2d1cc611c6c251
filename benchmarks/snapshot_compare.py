"""Compare two snapshot folders of benchmarks/snapshot.sh: answers, not timings.

    .venv/bin/python benchmarks/snapshot_compare.py OLD_DIR NEW_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

KEYS = ("horizon", "status", "lower_bound", "transfers", "offsets", "value", "peak", "objective", "choice",
        "plans")


def producer(doc: dict) -> str | None:
    """Who made the answer: `method` in the one result shape; before it, a schedule's
    `produced_by` and a placement's `solver`."""
    return doc.get("method", doc.get("produced_by", doc.get("solver")))


def main() -> None:
    old, new = Path(sys.argv[1]), Path(sys.argv[2])
    differ = 0
    files = sorted(old.iterdir())
    for f in files:
        g = new / f.name
        if f.suffix == ".csv":
            same = g.exists() and f.read_text() == g.read_text()
        else:
            a, b = json.loads(f.read_text()), json.loads(g.read_text()) if g.exists() else {}
            same = all(a.get(k) == b.get(k) for k in KEYS if k in a) and producer(a) == producer(b)
        if not same:
            print(f"differs: {f.name}")
        differ += not same
    print(f"{len(files)} answers compared, {differ} differ")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
