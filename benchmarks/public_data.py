"""Where the public benchmark suites live, and a clear message when they are missing."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

# Beside a checkout of this repository, as in the development workspace; `--data` overrides.
DEFAULT_ROOT = Path(__file__).resolve().parent.parent.parent / "shared" / "data"

WHERE = {
    "openshop": "the open-shop suites (Taillard 1993, Gueret-Prins 1999, Brucker et al. 1997), one "
                "'n m' + n rows file per instance, with an INDEX.tsv of name, set, jobs, machines, "
                "endpoint_lb, best_known, proven",
    "minimalloc": "MiniMalloc's benchmarks/challenging CSVs (github.com/google/minimalloc), with an "
                  "INDEX.tsv of file, buffers, capacity, peak_live_bytes",
}


def index_rows(data: Path, suite: str) -> list[dict[str, str]]:
    """The rows of DATA/INDEX.tsv, or exit 2 saying what the folder must hold and where to get it."""
    index = data / "INDEX.tsv"
    if not index.is_file():
        print(f"error: {index}: not found. --data must name a folder holding {WHERE[suite]}. "
              f"A few small instances ship in tests/data/{suite}/ (without an index).", file=sys.stderr)
        sys.exit(2)
    with open(index) as handle:
        return list(csv.DictReader(handle, delimiter="\t"))
