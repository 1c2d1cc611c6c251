"""How an answer shows itself in a notebook.

Answers are defined low in the house and their pictures high (a schedule is drawn through the
simulator), so an answer's `_repr_html_` asks here and `ipuopt.render.notebook` answers: the
API imports it, so every answer the API returns shows its picture; one made without it shows
its one-line text (IPython falls back to the repr when the rich form is None)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_DRAWN: dict[str, Callable[[Any], str]] = {}


def draws(kind: str, html: Callable[[Any], str]) -> None:
    """`html` draws every answer of `kind` ("result", "schedule", "placement")."""
    _DRAWN[kind] = html


def html(kind: str, answer: Any) -> str | None:
    draw = _DRAWN.get(kind)
    return draw(answer) if draw is not None else None


def count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")
