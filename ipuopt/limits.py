"""What the solvers can hold. Every size, address, count and step in an input is checked
against these before any work, so a typo like 10^20 words is an input error, not a crash
deep inside CP-SAT (64-bit domains) or HiGHS."""

MAX_TILES = 1 << 16  # 65,536 tiles: 44 GC200s
MAX_BYTES = 1 << 40  # memory sizes, addresses, buffer sizes: 1 TiB
MAX_STEPS = 1 << 31  # program steps of a live range
MAX_CYCLES = 1 << 48  # a schedule's starts: cycles of a phase (two days at 1.85 GHz), with room for sums


def too_big(value: int, limit: int) -> str | None:
    """The reason `value` exceeds `limit`, or None."""
    return None if value <= limit else f"{value} is above the largest supported value {limit}"
