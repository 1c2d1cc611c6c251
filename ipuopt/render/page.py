"""Self-contained HTML pages: the data and the drawing script inline, nothing fetched."""

from __future__ import annotations

import html
import json
from importlib import resources
from typing import Any

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font: 13px sans-serif; margin: 8px 12px; color: #222; }}
h1 {{ font-size: 16px; margin: 0 0 2px; }} p {{ margin: 2px 0 6px; color: #555; }}
#legend span {{ margin-right: 14px; }} #legend i {{ display: inline-block; width: 12px; height: 10px;
  margin-right: 4px; vertical-align: middle; }}
#tip {{ position: fixed; display: none; background: #fff; border: 1px solid #888; padding: 4px 6px;
  white-space: pre; font: 12px monospace; pointer-events: none; box-shadow: 1px 1px 4px #aaa; }}
button {{ font-size: 12px; }} #view {{ color: #555; margin-left: 10px; }}
</style></head><body>
<h1>{title}</h1><p>{subtitle}</p>
<div><button id="reset">reset view</button> {extra_buttons}<span id="view"></span></div>
<div id="legend"></div>
<canvas id="plot"></canvas><div id="tip"></div>
<script>window.DATA = {data};</script>
<script>{script}</script>
</body></html>
"""


def page(data: dict[str, Any], script: str) -> str:
    """The page for `data` drawn by the package's `script` (timeline.js or arena.js)."""
    files = resources.files("ipuopt.render")
    code = files.joinpath("common.js").read_text() + "\n" + files.joinpath(script).read_text()
    buttons = ('<button id="taller">taller rows</button> <button id="shorter">shorter rows</button>'
               if script == "timeline.js" else "")
    # "</" inside the JSON would end the script element early
    blob = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    return _PAGE.format(title=html.escape(data["title"]), subtitle=html.escape(data["subtitle"]),
                        extra_buttons=buttons, data=blob, script=code)
