"""What a notebook shows: docs/notebook.ipynb runs cell by cell as Jupyter runs it, each answer
displays a summary and the very page `ipuopt render` writes, and prints as one short line."""

from __future__ import annotations

import ast
import html
import json
import re
from pathlib import Path
from typing import Any

from conftest import ROOT, run_cli

import ipuopt

NOTEBOOK = ROOT / "docs" / "notebook.ipynb"


def _run_notebook(path: Path) -> tuple[dict[str, Any], list[Any], str]:
    """Execute the code cells in one namespace; what each cell's last expression shows (as
    IPython would display it) and everything printed."""
    import contextlib
    import io

    space: dict[str, Any] = {}
    shown: list[Any] = []
    printed = io.StringIO()
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] != "code":
            continue
        tree = ast.parse("".join(cell["source"]))
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        with contextlib.redirect_stdout(printed):
            exec(compile(tree, str(path), "exec"), space)
            value = eval(compile(ast.Expression(last.value), str(path), "eval"), space) if last else None
            if value is not None:  # IPython shows no None
                shown.append(value)
    return space, shown, printed.getvalue()


def _framed_page(rich: str) -> str:
    found = re.search(r'<iframe srcdoc="([^"]*)"', rich)
    assert found, rich[:500]
    return html.unescape(found.group(1))


def test_the_example_notebook_runs_and_every_answer_shows_its_page(tmp_path: Path) -> None:
    space, shown, printed = _run_notebook(NOTEBOOK)
    result, schedule, placement, run = shown
    assert isinstance(result, ipuopt.Result) and schedule is result.solution
    assert ipuopt.validate("medium", None, result).ok

    # the framed page is the one `ipuopt render` writes for the same answer
    result.solution.drawn_on = None
    (tmp_path / "s.json").write_text(json.dumps(result.to_dict()))
    result.solution.drawn_on = ipuopt.load_phase("medium")
    r = run_cli("render", "medium", str(tmp_path / "s.json"), "--out", str(tmp_path / "s.html"))
    assert r.returncode == 0, r.stderr
    assert _framed_page(result._repr_html_()) == (tmp_path / "s.html").read_text()
    assert _framed_page(schedule._repr_html_()) != ""  # without the result, no bound marked

    (tmp_path / "p.json").write_text(json.dumps(placement.to_dict()))
    assert run_cli("render-arena", "mini-mlp", str(tmp_path / "p.json"), "--out",
                   str(tmp_path / "p.html")).returncode == 0
    assert _framed_page(placement._repr_html_()) == (tmp_path / "p.html").read_text()

    (tmp_path / "r.json").write_text(json.dumps(run))
    assert run_cli("render", "--program", str(tmp_path / "r.json"), "--out",
                   str(tmp_path / "r.html")).returncode == 0
    assert _framed_page(run._repr_html_()) == (tmp_path / "r.html").read_text()

    # the summary above each page, and one short line of text for each
    rich = result._repr_html_()
    for figure in (str(result.status), f"{result.value:,}", f"{result.bound:,}", "lower bound"):
        assert figure in rich
    lines = printed.splitlines()
    assert lines[0] == repr(result) and lines[1] == repr(placement.solution) and lines[2] == repr(run)
    assert lines[0].startswith(f"Result(cpsat {result.status}: value {result.value}, bound {result.bound}")
    assert f"Schedule(phase 'medium': {len(schedule.starts)} transfers, horizon {schedule.horizon})" \
        in lines[0]
    assert lines[2] == (f"ProgramRun('mini-mlp' on test64: {run['total_cycles']} cycles, "
                        f"{len(run['boundaries'])} exchange phases, bound {run['lower_bound']})")
    assert all(len(line) < 250 for line in lines)


def test_a_schedule_read_from_a_file_shows_its_summary_and_says_why_no_picture(tmp_path: Path) -> None:
    assert run_cli("solve", "tiny", "--out", str(tmp_path / "s.json")).returncode == 0
    schedule = ipuopt.load_schedule(tmp_path / "s.json")
    rich = schedule._repr_html_()
    assert "<iframe" not in rich and "does not know its phase" in rich and "130" in rich
    assert repr(schedule) == "Schedule(phase 'tiny': 6 transfers, horizon 130)"


def test_a_result_without_a_solution_and_a_plan_show_their_figures() -> None:
    empty = ipuopt.solve("tiny", solver="cpsat", time_limit=0)
    assert "Result(" in repr(empty)
    plan = ipuopt.select_layouts("toy")
    rich = plan._repr_html_()
    assert "<iframe" not in rich and "8x46x4/2x2/interleaved" in rich and "236,200" in rich
    assert repr(plan.solution) == ("Plan(workload 'toy': 236200 cycles; gemm1 8x46x4/2x2/interleaved, "
                                   "gelu in-place-8x46, gemm2 7x10x21/21x1/interleaved)")
