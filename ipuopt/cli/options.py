"""Checks of the command line's own options before any work: outputs, method parameters,
exports, options the chosen mode would not read."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from ipuopt.cli.terminal import err
from ipuopt.errors import InputError
from ipuopt.export import FORMS
from ipuopt.io import FORMATS, check_output
from ipuopt.params import SolveParams
from ipuopt.registry import resolve


def check_out(out: Path | None, *inputs: Path | str | None, option: str = "--out",
              suffixes: tuple[str, ...] | None = tuple(FORMATS)) -> None:
    """Before any work: an output path that can be written, in a format its suffix names, and
    none of the command's inputs (spec, plan, profile, ... files; symlinks followed)."""
    if out is not None:
        check_output(out, option, suffixes, tuple(Path(i) for i in inputs if i is not None))


def check_out_dir(out_dir: Path | None, option: str = "--out-dir") -> None:
    """The folder is made if missing, but as with --out, the folder that holds it must exist: a
    mistyped parent is refused rather than created."""
    if out_dir is None:
        return
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError.one(str(out_dir), option, "exists and is not a folder")
    if out_dir.is_dir():
        check_output(out_dir / "probe", option, None)  # can a file be made in it?
        return
    parent = out_dir.absolute().parent
    if not parent.is_dir():
        raise InputError.one(str(out_dir), option, f"folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise InputError.one(str(out_dir), option, f"cannot create a folder in {parent}")


def exchange_params(profile: str | None, solver: str | None, time_limit: float | None,
                    workers: int | None, seed: int | None, param: list[str],
                    verbose: bool = False) -> tuple[str, SolveParams]:
    """The exchange method and parameters the options mean (`methods.resolve`)."""
    options: dict[str, Any] = {}
    for item in param:
        if "=" not in item:
            raise InputError.one("", "--param", f"{item!r} is not KEY=VALUE")
        key, value = item.split("=", 1)
        options[key.strip()] = yaml.safe_load(value)
    if verbose:
        options["verbose"] = True
    chosen, built = resolve("exchange", solver, profile=profile, time_limit=time_limit, workers=workers,
                            seed=seed, options=options)
    unused = [name for name, value in (("--workers", workers), ("--seed", seed)) if value is not None]
    if chosen.name == "greedy" and unused:
        err(f"warning: {' and '.join(unused)} {'does' if len(unused) == 1 else 'do'} nothing for the greedy "
            "(deterministic, one thread)")
    return chosen.name, built


def check_export(export: Path | None, out: Path | None, solver: str | None) -> None:
    """`--export` writes a model instead of solving: `--out` would get nothing, and a solver
    named must be the one whose model the suffix says."""
    if export is None:
        return
    if out is not None:
        raise InputError.one("", "--export", "writes the model instead of solving: nothing would reach --out "
                                             "(give one of them)")
    form = FORMS.get(export.suffix.lower())
    if solver in ("cpsat", "milp") and form is not None and form != solver:
        wants = ", ".join(k for k, v in FORMS.items() if v == solver)
        raise InputError.one(str(export), "--export", f"{export.suffix} holds a {form} model; --solver "
                                                      f"{solver} writes {wants}")


def write_export(model: Callable[[str], Any], export: Path, json_out: bool, *inputs: Path | str | None,
                 ) -> None:
    """Write the model `model(form)` builds to `export` and say what was written."""
    from ipuopt.export import form_of, write_model

    done = write_model(model(form_of(export)), export, tuple(Path(p) for p in inputs if p))
    if json_out:
        print(json.dumps(done, indent=1))
    else:
        print(f"model      {done['form']}: {done['variables']} variables, {done['constraints']} constraints "
              f"-> {done['file']}")


def refuse_unread(reason: str, given: dict[str, bool]) -> None:
    """Refuse options the chosen mode would ignore: a user who gave them expects them to act."""
    unread = [name for name, set_ in given.items() if set_]
    if unread:
        raise InputError.one("", ", ".join(unread), reason)


def one_source(layout: list[str], plan: Path | None) -> None:
    """The layouts come from `--layout` items or from `--plan`, not both."""
    if layout and plan is not None:
        raise InputError.one("", "--layout", "give --layout or --plan, not both (which would win?)")
