"""Every command output the docs show is the command's real output: a block marked
`<!-- output of: ipuopt ARGS -->` is compared with what `ipuopt ARGS` prints now, so an
example cannot go stale. Text is compared line by line (seconds aside); JSON as an excerpt:
each key shown has the value shown (seconds aside), and a list shows some of its items."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, run_cli

MARKED = re.compile(r"<!-- output of: ipuopt (.*?) -->\n```(\w*)\n(.*?)```", re.S)
SECONDS = re.compile(r"\d+\.\d+s( of \d+s)?")  # "time 0.29s of 60s": the machine's, not the answer's
TIMED = {"runtime_s", "seconds", "solve_s", "build_s", "generate_s", "replay_s"}


def _examples() -> list[tuple[str, str, str, str]]:
    found = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        for args, lang, text in MARKED.findall(page.read_text()):
            found.append((page.name, args, lang, text))
    return found


EXAMPLES = _examples()


def _excerpt(shown: Any, real: Any, at: str) -> list[str]:
    """Where `shown` is not an excerpt of `real` (empty: it is)."""
    if isinstance(shown, dict):
        if not isinstance(real, dict):
            return [f"{at}: not a mapping"]
        return [m for k, v in shown.items() for m in (
            [f"{at}.{k}: missing"] if k not in real
            else [] if k in TIMED else _excerpt(v, real[k], f"{at}.{k}"))]
    if isinstance(shown, list):
        if not isinstance(real, list):
            return [f"{at}: not a list"]
        return [f"{at}[{i}]: no such item" for i, item in enumerate(shown)
                if not any(not _excerpt(item, r, at) for r in real)]
    return [] if shown == real else [f"{at}: shown {shown!r}, real {real!r}"]


def test_the_docs_show_outputs() -> None:
    assert len(EXAMPLES) >= 4, [e[:2] for e in EXAMPLES]


@pytest.mark.parametrize(("page", "args", "lang", "shown"), EXAMPLES,
                         ids=[f"{e[0]}:{e[1]}" for e in EXAMPLES])
def test_a_shown_output_is_the_commands_output(page: str, args: str, lang: str, shown: str) -> None:
    r = run_cli(*shlex.split(args))
    assert r.returncode == 0, r.stderr[-500:]
    if lang == "json":
        mismatches = _excerpt(json.loads(shown), json.loads(r.stdout), "")
        assert not mismatches, f"{page}: `ipuopt {args}`: {mismatches}"
    else:
        real = [SECONDS.sub("<s>", line).rstrip() for line in r.stdout.strip().splitlines()]
        said = [SECONDS.sub("<s>", line).rstrip() for line in shown.strip().splitlines()]
        assert said == real, f"{page}: `ipuopt {args}` now prints:\n{r.stdout}"


def test_an_excerpt_that_differs_is_found() -> None:
    real = {"a": 1, "b": [{"x": 1, "y": 2}, {"x": 3}], "runtime_s": 0.5}
    assert not _excerpt({"b": [{"x": 3}], "runtime_s": 9}, real, "")
    assert _excerpt({"a": 2}, real, "") and _excerpt({"c": 1}, real, "")
    assert _excerpt({"b": [{"x": 2}]}, real, "")


def test_each_marked_block_is_found_whole(tmp_path: Path) -> None:
    page = "<!-- output of: ipuopt solve tiny -->\n```\nphase x\n```\n"
    assert MARKED.findall(page) == [("solve tiny", "", "phase x\n")]
