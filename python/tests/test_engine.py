"""Finding the engine binary."""
from __future__ import annotations

import os
import stat

import pytest

import aimtheory
from aimtheory import _engine
from conftest import REPO


def _script(path, line):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho '{line}'\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture()
def clean(monkeypatch, tmp_path):
    """No AIM_BIN, an empty cache, PATH without aim, and no source tree."""
    monkeypatch.setattr(_engine, "_found", None)
    monkeypatch.delenv("AIM_BIN", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "path") + os.pathsep + "/usr/bin:/bin")
    monkeypatch.setattr(_engine, "source_root", lambda: None)
    return tmp_path


@pytest.mark.skipif(os.name != "posix", reason="shell-script stand-ins")
def test_search_order(clean):
    tmp = clean
    tracker = _script(tmp / "path" / "aim", "Aim v3.17.5 is the experiment tracker")
    with pytest.raises(aimtheory.EngineNotFound) as e:
        aimtheory.binary()
    msg = str(e.value)
    assert str(tracker) in msg and "skipped" in msg and "aimtheory.build()" in msg
    assert "cache" in msg and isinstance(e.value, FileNotFoundError)

    cached = _script(tmp / "cache" / "aimtheory" / "bin" / "aim", "aim v0.1.0 (commit x, go)")
    assert aimtheory.binary() == str(cached)

    _script(tmp / "path" / "aim", "aim v0.1.0 (commit y, go)")  # now the engine on PATH comes first
    _engine._found = None
    assert aimtheory.binary() == str(tracker)
    assert aimtheory.version() == "aim v0.1.0 (commit y, go)"


@pytest.mark.skipif(os.name != "posix", reason="shell-script stand-ins")
def test_aim_bin_wins_and_is_followed(clean, monkeypatch):
    a = _script(clean / "a" / "aim", "aim v0.1.0 (a)")
    b = _script(clean / "b" / "aim", "aim v0.1.0 (b)")
    monkeypatch.setenv("AIM_BIN", str(a))
    assert aimtheory.binary() == str(a) and aimtheory.version() == "aim v0.1.0 (a)"
    monkeypatch.setenv("AIM_BIN", str(b))
    assert aimtheory.binary() == str(b)
    monkeypatch.setenv("AIM_BIN", str(clean / "missing"))
    with pytest.raises(aimtheory.EngineNotFound) as e:
        aimtheory.binary()
    assert "AIM_BIN" in str(e.value)


def test_source_tree_is_recognised():
    assert _engine.source_root() == REPO
