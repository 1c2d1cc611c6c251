"""Write a picture to F.html (interactive page) or F.png, whole or not at all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ipuopt.errors import InputError
from ipuopt.io import write_atomic
from ipuopt.render.views import View

PICTURES = (".html", ".png")  # what `save` can write


def picture_kind(out: str | Path) -> str:
    kind = Path(out).suffix.lower().lstrip(".")
    if f".{kind}" not in PICTURES:
        raise InputError.one(str(out), "--out", "name a .html or .png file")
    return kind


def save(out: str | Path, picture: View | dict[str, Any]) -> None:
    """A timeline `View`, or the arena boxes of `views.arena_boxes`."""
    from ipuopt.render.page import page
    from ipuopt.render.png import arena_png, timeline_png

    timeline = isinstance(picture, View)
    if picture_kind(out) == "html":
        data = picture.to_dict() if timeline else picture
        write_atomic(out, page(data, "timeline.js" if timeline else "arena.js"))
    else:
        write_atomic(out, timeline_png(picture) if timeline else arena_png(picture))
