"""Random but valid phases: for property tests, examples and scaling benchmarks."""

from __future__ import annotations

import random

from ipuopt.exchange.phase import Phase, Transfer
from ipuopt.spec import Spec


def random_phase(spec: Spec, n: int, seed: int = 0, tiles: int | None = None,
                 max_fanout: int = 4, max_words: int = 64, p_addr: float = 0.7,
                 p_dep: float = 0.1, p_never: float = 0.1, name: str = "") -> Phase:
    """`n` transfers among the first `tiles` tiles (all of them by default).

    Addresses meet the paired alignment three times in four, so paired and unpaired
    transfers mix; dependencies point only backwards, so there is no cycle.
    """
    rng = random.Random(seed)
    tiles = min(tiles or spec.tiles, spec.tiles)
    fanout = max(1, min(max_fanout, spec.exchange.max_fanout, tiles - 1))
    nbytes = spec.exchange.word_bytes
    out: list[Transfer] = []
    for i in range(n):
        src = rng.randrange(tiles)
        k = rng.randint(1, fanout)
        dst = [x if x < src else x + 1 for x in rng.sample(range(tiles - 1), k)]
        words = rng.randint(1, max_words)
        addrs = []
        for _ in range(2):
            if rng.random() < p_addr:
                span = spec.memory_size - words * nbytes
                a = spec.memory_base + rng.randrange(max(1, span // nbytes)) * nbytes  # word aligned
                if rng.random() < 0.75:
                    a -= a % spec.exchange.paired_alignment
                addrs.append(a)
            else:
                addrs.append(None)
        after = tuple(f"t{j}" for j in range(max(0, i - 8), i) if rng.random() < p_dep)
        paired = "never" if rng.random() < p_never else "allowed"
        out.append(Transfer(id=f"t{i}", src=src, dst=tuple(dst), words=words, src_addr=addrs[0],
                            dst_addr=addrs[1], paired=paired, after=after))
    return Phase(spec_ref=spec.name, transfers=out, name=name or f"random-{n}-{seed}")
