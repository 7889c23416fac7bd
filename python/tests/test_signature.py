"""The job functions' keyword arguments are the CLI's flags, as `aim help --json` lists them."""
from __future__ import annotations

import inspect
import json
import subprocess

import pytest

import aimtheory
from aimtheory import _jobs

RUNNER_OWNED = {"progress", "quiet"}


@pytest.fixture(scope="module")
def reference(aim_bin):
    done = subprocess.run([aim_bin, "help", "--json"], capture_output=True, text=True)
    if done.returncode != 0 or not done.stdout.lstrip().startswith("{"):
        pytest.skip(f"this engine has no `aim help --json`: {done.stderr.strip()[:200]}")
    return json.loads(done.stdout)


def _function(name):
    obj = aimtheory
    for part in name.split():
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _commands(reference):
    """The commands with a flag list (the groups smi and sweep, and version, have none)."""
    return [c for c in reference["commands"] if c.get("flags") is not None]


def test_every_command_has_its_function(reference):
    for c in _commands(reference):
        f = _function(c["name"])
        assert callable(f), f"no function for aim {c['name']}"
        params = inspect.signature(f).parameters
        keywords = {n for n, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
        want = {fl["name"].replace("-", "_") for fl in c["flags"] if fl["name"] not in RUNNER_OWNED}
        assert keywords == want | {"progress", "timeout"}, f"aim {c['name']}"
        for n in want:
            assert params[n].default is None, f"aim {c['name']}: {n} defaults to {params[n].default!r}"
        assert params["progress"].default is True and params["timeout"].default is None
        # the flags table the runner reads agrees with the reference: flag names and types
        table = getattr(_jobs, "_" + c["name"].upper().replace(" ", "_").replace("-", "_") + "_FLAGS")
        # (the table keeps --progress, which tells the runner the command takes it)
        assert table == {fl["name"].replace("-", "_"): (fl["name"], fl["type"])
                         for fl in c["flags"] if fl["name"] != "quiet"}, f"aim {c['name']}"


def test_every_function_is_a_command(reference):
    names = {c["name"] for c in _commands(reference)}
    found = set()
    for attr in ("se", "thresholds", "amp", "gd", "erm", "plot", "bench", "device"):
        found.add(attr)
    for group in ("smi", "sweep"):
        ns = getattr(aimtheory, group)
        for attr in dir(ns):
            if not attr.startswith("_") and callable(getattr(ns, attr)):
                found.add(f"{group} {attr}")
    assert found <= names, f"functions without a command: {found - names}"
    assert names <= found, f"commands without a function: {names - found}"


def test_flag_types_are_known(reference):
    """Every flag type is one the runner converts (a type it does not know is passed as text)."""
    known = {"bool", "int", "uint", "float", "string", "list", "float|auto"}
    odd = {(c["name"], fl["name"], fl["type"]) for c in _commands(reference) for fl in c["flags"]
           if fl["name"] not in RUNNER_OWNED and fl["type"] not in known}
    assert not odd


def test_positional_arguments(reference):
    for c in _commands(reference):
        params = inspect.signature(_function(c["name"])).parameters
        positional = [n for n, p in params.items()
                      if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                    inspect.Parameter.VAR_POSITIONAL)]
        if c["args"] == "":
            assert positional == [], c["name"]
        elif c["args"] == "spec.toml":
            assert positional == ["spec"], c["name"]
        else:
            assert positional == ["files"] and params["files"].kind is inspect.Parameter.VAR_POSITIONAL
