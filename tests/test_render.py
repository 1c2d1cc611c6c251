"""Pictures: self-contained pages checked in headless Chromium (rows, a tooltip, no console
errors), PNG files, program and arena views."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import run_cli

from ipuopt.exchange.greedy import greedy_schedule
from ipuopt.exchange.instance import horizon_of
from ipuopt.exchange.random_phase import random_phase
from ipuopt.exchange.schedule import Schedule
from ipuopt.exchange.timing import phase_timings
from ipuopt.render.page import page
from ipuopt.render.views import phase_view
from ipuopt.spec import load_spec

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_browser = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("IPUOPT_REQUIRE_BROWSER"),
    reason="Debian's chromium is not installed (.ci/run installs it and then requires it)")


def selftest(page_path: Path, tmp_path: Path) -> dict:
    """Open the page headless with #selftest: it hovers its first item and reports rows,
    items, the tooltip and every console error into the DOM."""
    assert CHROMIUM, "chromium is required here (IPUOPT_REQUIRE_BROWSER is set)"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'chromium'}", "--window-size=1400,900",
             "--virtual-time-budget=10000", "--enable-logging=stderr", "--v=0", "--dump-dom"]
    r = subprocess.run([CHROMIUM, *flags, f"file://{page_path}#selftest"], capture_output=True, text=True,
                       timeout=120)
    found = re.search(r'<pre id="selftest">(.*?)</pre>', r.stdout, re.S)
    assert found, r.stderr[-2000:]
    assert "Uncaught" not in r.stderr, r.stderr[-2000:]
    return json.loads(found.group(1).replace("&gt;", ">").replace("&lt;", "<").replace("&amp;", "&"))


def _no_network(html: str) -> None:
    assert not re.search(r'(src|href)=["\']?(https?:)?//', html), "the page must not fetch anything"


@needs_browser
def test_phase_page_in_chromium(tmp_path: Path) -> None:
    sched = tmp_path / "s.json"
    assert run_cli("solve", "small", "--out", str(sched)).returncode == 0
    out = tmp_path / "small.html"
    r = run_cli("render", "small", str(sched), "--out", str(out))
    assert r.returncode == 0, r.stderr
    _no_network(out.read_text())
    report = selftest(out, tmp_path)
    assert report["errors"] == [] and report["tooltipShown"]
    assert report["rows"] == 24  # the 12 tiles of `small`, a transmit and a receive row each
    # the tooltip names the transfer: id, source, destinations, words, width, start, end
    detail = r"t\d+: \d+ -> [\d,]+, \d+ words, (ordinary|paired), start \d+, end \d+"
    assert re.search(detail, report["tooltip"]), report["tooltip"]


@needs_browser
def test_full_size_page_in_chromium(tmp_path: Path) -> None:
    """1,472 tiles and over 100,000 intervals: the page loads, draws and answers a hover."""
    spec = load_spec("gc200")
    phase = random_phase(spec, 28000, seed=1, max_fanout=3, max_words=64, p_dep=0.0)
    timings = phase_timings(phase, spec)
    starts, widths = greedy_schedule(phase, spec, timings=timings)  # the picture needs no bounds
    view = phase_view(phase, spec, Schedule(starts, widths, horizon_of(timings, starts, widths)))
    out = tmp_path / "big.html"
    out.write_text(page(view.to_dict(), "timeline.js"))
    report = selftest(out, tmp_path)
    assert report["rows"] == 2944 and report["items"] > 100_000
    assert report["errors"] == [] and report["tooltipShown"]


@needs_browser
def test_program_and_arena_pages_in_chromium(tmp_path: Path) -> None:
    run = tmp_path / "run.json"
    assert run_cli("run", "mini-mlp", "--spec", "test64", "--grain", "box", "--out", str(run)).returncode == 0
    assert run_cli("render", "--program", str(run), "--out", str(tmp_path / "run.html")).returncode == 0
    report = selftest(tmp_path / "run.html", tmp_path)
    phases = len(json.loads(run.read_text())["boundaries"])
    assert report["rows"] == phases + 1 and report["errors"] == [] and "transfers" in report["tooltip"]
    placement = tmp_path / "p.json"
    assert run_cli("place", "mini-mlp", "--solver", "greedy", "--objective", "conflicts", "--out",
                   str(placement)).returncode == 0
    r = run_cli("render-arena", "mini-mlp", str(placement), "--out", str(tmp_path / "arena.html"))
    assert r.returncode == 0 and "paying conflicts" in r.stdout
    report = selftest(tmp_path / "arena.html", tmp_path)
    assert report["rows"] == 12 and report["errors"] == [] and "live steps" in report["tooltip"]


def test_png_pictures(tmp_path: Path) -> None:
    sched = tmp_path / "s.json"
    assert run_cli("solve", "tiny", "--out", str(sched)).returncode == 0
    run = tmp_path / "run.json"
    assert run_cli("run", "mini-mlp", "--spec", "test64", "--grain", "box", "--out", str(run)).returncode == 0
    placement = tmp_path / "p.json"
    assert run_cli("place", "mini-mlp", "--out", str(placement)).returncode == 0
    for args in (["render", "tiny", str(sched)], ["render", "--program", str(run)],
                 ["render-arena", "mini-mlp", str(placement)]):
        out = tmp_path / f"{args[0]}-{len(args)}.png"
        r = run_cli(*args, "--out", str(out))
        assert r.returncode == 0, r.stderr
        data = out.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


def test_render_refuses_bad_input(tmp_path: Path) -> None:
    sched = tmp_path / "s.json"
    assert run_cli("solve", "small", "--out", str(sched)).returncode == 0
    bad = json.loads(sched.read_text())
    bad["transfers"][1]["start"] = bad["transfers"][0]["start"]
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    html, svg = str(tmp_path / "x.html"), str(tmp_path / "x.svg")
    cases = ((["render", "small", str(tmp_path / "bad.json"), "--out", html], "breaks the rules"),
             (["render", "small", str(sched), "--out", svg], ".html or .png"),
             (["render", "--out", html], "--program"),
             (["render-arena", "mini-mlp", str(sched), "--out", html], "offsets"))
    for args, expected in cases:
        r = run_cli(*args)
        assert r.returncode == 2 and expected in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)
    assert not (tmp_path / "x.html").exists()


def test_pictures_from_python(tmp_path: Path) -> None:
    import ipuopt

    phase, spec = ipuopt.load_phase("tiny")
    schedule = ipuopt.solve(phase, spec)
    ipuopt.render_schedule(phase, spec, schedule, tmp_path / "t.html")
    assert "window.DATA" in (tmp_path / "t.html").read_text()
    ipuopt.render_program(ipuopt.run("mini-mlp", "test64", grain="box"), tmp_path / "run.png")
    arena = ipuopt.load_arena("mini-mlp")
    ipuopt.render_arena(arena, ipuopt.place(arena).solution.offsets, tmp_path / "a.png")
    assert all((tmp_path / f).read_bytes()[:4] == b"\x89PNG" for f in ("run.png", "a.png"))


def test_pictures_name_every_colour_and_mark_horizon_and_bound(tmp_path: Path) -> None:
    """The view behind both the page and the PNG: every outline colour named, the horizon and
    the best bound drawn as lines (a bound is known for a solved result and a written file)."""
    import ipuopt

    result = ipuopt.solve("medium", solver="cpsat", time_limit=2, workers=1, seed=0)
    phase, spec = ipuopt.load_phase("medium")
    view = phase_view(phase, spec, result.solution, result.bound)
    assert {c for *_, c in view.marks} <= set(view.outlines)
    assert [line[0] for line in view.lines] == [result.value, result.bound]
    assert view.to_dict()["t1"] >= result.value
    out = tmp_path / "m.json"
    out.write_text(json.dumps(result.to_dict()))
    r = run_cli("render", "medium", str(out), "--out", str(tmp_path / "m.png"))
    assert r.returncode == 0 and (tmp_path / "m.png").read_bytes()[:4] == b"\x89PNG", r.stderr
