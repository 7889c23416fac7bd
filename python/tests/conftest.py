"""Test fixtures: the engine binary (from $AIM_BIN, else built once with go), and a runner of the
CLI itself for comparisons."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

PYTHON_DIR = Path(__file__).resolve().parent.parent
REPO = PYTHON_DIR.parent
sys.path.insert(0, str(PYTHON_DIR))

#: Columns that hold wall-clock times; they differ between two runs of the same job.
TIMING_COLUMNS = {"seconds", "wall_seconds"}


def _build_engine() -> str | None:
    """The engine built with go into a temporary folder, or None (with the reason in _why)."""
    global _why
    if not (REPO / "go.mod").is_file() or not (REPO / "cmd" / "aim").is_dir():
        _why = f"no engine source at {REPO}"
        return None
    go = shutil.which("go")
    if go is None:
        _why = "AIM_BIN is not set and go is not on PATH to build the engine"
        return None
    target = Path(tempfile.mkdtemp(prefix="aimtheory-test-bin-")) / "aim"
    done = subprocess.run([go, "build", "-o", str(target), "./cmd/aim"], cwd=REPO,
                          env=dict(os.environ, CGO_ENABLED="0"), capture_output=True, text=True)
    if done.returncode != 0:
        _why = f"go build of the engine failed: {done.stderr.strip()[-500:]}"
        return None
    return str(target)


_why = ""
_engine: str | None = None
_resolved = False


def engine_path() -> str | None:
    global _engine, _resolved
    if not _resolved:
        _resolved = True
        env = os.environ.get("AIM_BIN")
        _engine = env if env else _build_engine()
        if _engine:
            os.environ["AIM_BIN"] = _engine
    return _engine


@pytest.fixture(scope="session", autouse=True)
def _temporary_folders(tmp_path_factory):
    """The runs' default output folders (tempfile.mkdtemp), and an engine the tests build, inside
    pytest's temporary folder."""
    saved = tempfile.tempdir
    tempfile.tempdir = str(tmp_path_factory.mktemp("runs"))
    yield
    tempfile.tempdir = saved


@pytest.fixture(scope="session")
def aim_bin(_temporary_folders) -> str:
    """The engine binary ($AIM_BIN, else built with go into pytest's temporary folder); the test
    is skipped when there is none."""
    path = engine_path()
    if not path:
        pytest.skip(f"no aim engine: {_why}")
    return path


@pytest.fixture()
def cli(aim_bin, tmp_path):
    """cli(*args) runs `aim args... --out <tmp>/cli/x.csv --plot ""` and returns the CSV's path;
    cli(*args, out=False) runs it as given and returns the CompletedProcess."""

    def run(*args: str, out: bool | str = True, cwd: str | os.PathLike | None = None):
        argv = [aim_bin, *args]
        if out is False:
            return subprocess.run(argv, capture_output=True, text=True, cwd=cwd)
        folder = tmp_path / "cli"
        folder.mkdir(exist_ok=True)
        csv = folder / (out if isinstance(out, str) else "x.csv")
        argv += ["--out", str(csv), "--plot", "", "--progress", "none"]
        done = subprocess.run(argv, capture_output=True, text=True, cwd=cwd)
        assert done.returncode in (0, 1), f"{argv}: exit {done.returncode}: {done.stderr[-2000:]}"
        return csv

    return run


def drop_timings(df, extra=()):
    """The frame without its wall-clock columns."""
    cols = [c for c in df.columns if c in TIMING_COLUMNS or c in extra]
    return df.drop(columns=cols).reset_index(drop=True)
