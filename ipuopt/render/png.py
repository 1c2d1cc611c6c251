"""PNG pictures for reports, through matplotlib (no screen needed)."""

from __future__ import annotations

import io
from collections import defaultdict
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from ipuopt.render.views import View  # noqa: E402


def timeline_png(view: View) -> bytes:
    """Rows of intervals; beyond 120 rows (a full chip has 2,944 lanes) the rows become a
    dense picture with every n-th row labelled."""
    rows = view.rows
    dense = len(rows) > 120
    bars: dict[tuple[int, str], list[tuple[int, int]]] = defaultdict(list)
    for r, begin, end, kind, _ in view.items:
        if r < len(rows):
            bars[(r, kind)].append((begin, end - begin))
    fig, ax = plt.subplots(figsize=(12, 11 if dense else 1.5 + 0.22 * len(rows)))
    for (r, kind), spans in bars.items():
        ax.broken_barh(spans, (r - 0.5, 1.0) if dense else (r - 0.4, 0.8), facecolors=view.kinds[kind][0],
                       linewidth=0)
    for r, begin, end, colour in view.marks:
        if r < len(rows):
            ax.add_patch(Rectangle((begin, r - 0.5), end - begin, 1.0, fill=False, edgecolor=colour,
                                   linewidth=1.5))
    step = max(1, len(rows) // 40) * (2 if dense else 1)
    ax.set_yticks(range(0, len(rows), step), rows[::step], fontsize=7 if len(rows) > 40 else 9)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    for i, (at, _, colour) in enumerate(view.lines):  # the first is the horizon: solid
        ax.axvline(at, color=colour, linewidth=1.2, linestyle="--" if i else "-")
    ax.set_title(f"{view.title}; {len(rows)} rows; time in {view.unit}", fontsize=11)
    handles: list[Any] = [Rectangle((0, 0), 1, 1, color=c) for c, _ in view.kinds.values()]
    names = [n for _, n in view.kinds.values()]
    handles += [Rectangle((0, 0), 1, 1, fill=False, edgecolor=c, linewidth=1.5) for c in view.outlines]
    names += [f"outlined: {n}" for n in view.outlines.values()]
    handles += [Line2D([0], [0], color=c, linestyle="--" if i else "-")
                for i, (_, _, c) in enumerate(view.lines)]
    names += [label for _, label, _ in view.lines]
    ax.legend(handles, names, fontsize=7, loc="upper center",
              bbox_to_anchor=(0.5, -0.06 if len(rows) > 20 else -0.15), ncol=3, frameon=False)
    return _save(fig)


BUFFER, ALIAS, PAYS = "#4c78a8", "#72b7b2", "#e45756"


def arena_png(data: dict[str, Any]) -> bytes:
    """Buffers as boxes (step x address) up to the used addresses, with their ids where they
    fit, memory element boundaries, the capacity, and a legend for every colour."""
    fig, ax = plt.subplots(figsize=(12, 7))
    paying = {c[0] for c in data["conflicts"]} | {c[1] for c in data["conflicts"]}
    top, element = data["top"], data["element"]
    if top / element <= 64:
        for k in range(1, int(top // element) + 1):
            ax.axhline(k * element, color="#999", linewidth=0.6, linestyle=":")
    label = len(data["boxes"]) <= 80
    for bid, first, end, lo, hi, alias in data["boxes"]:
        ax.add_patch(Rectangle((first, lo), end - first, hi - lo, facecolor=ALIAS if alias else BUFFER,
                               alpha=0.8, edgecolor=PAYS if bid in paying else "white",
                               linewidth=2 if bid in paying else 0.5))
        if label and (hi - lo) > top / 40 and lo < top:
            ax.text(first + (end - first) / 2, (lo + min(hi, top)) / 2, bid, ha="center", va="center",
                    fontsize=6, color="white", clip_on=True)
    ax.axhline(data["capacity"], color="#333", linewidth=1.2)
    ax.set_xlim(0, data["steps"])
    ax.set_ylim(0, top)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("program step")
    ax.set_ylabel("address (bytes from the region start)")
    ax.set_title(data["title"] + "\n" + data["subtitle"], fontsize=9)
    handles = [Rectangle((0, 0), 1, 1, color=BUFFER), Rectangle((0, 0), 1, 1, color=ALIAS),
               Rectangle((0, 0), 1, 1, fill=False, edgecolor=PAYS, linewidth=2),
               Line2D([0], [0], color="#333"), Line2D([0], [0], color="#999", linestyle=":")]
    names = ["buffer", "alias (shares its owner's storage)", "outlined: pays a conflict weight",
             f"capacity {data['capacity']} bytes" + ("" if data["capacity"] <= top else " (above the view)"),
             f"memory element boundary ({element} bytes" + (")" if element <= top else ", above the view)")]
    ax.legend(handles, names, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=3,
              frameon=False)
    return _save(fig)


def _save(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()
