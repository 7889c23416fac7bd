"""The package installs into a virtual environment offline and imports from there."""
from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from conftest import PYTHON_DIR


def test_install_into_venv(tmp_path):
    try:
        import ensurepip  # noqa: F401
        import venv  # noqa: F401
    except ImportError as e:
        pytest.skip(f"no venv/ensurepip: {e}")
    try:
        import setuptools  # noqa: F401
    except ImportError:
        pytest.skip("setuptools is not installed (python3-setuptools), needed with --no-build-isolation")
    # a copy of python/, so that the build's egg-info and build/ stay out of the source tree
    src = tmp_path / "python"
    shutil.copytree(PYTHON_DIR, src, ignore=shutil.ignore_patterns("tests", "__pycache__", "*.egg-info", "build",
                                                                   ".pytest_cache"))
    env_dir = tmp_path / "V"
    made = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(env_dir)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"python -m venv failed: {made.stderr.strip()[-300:]}")
    py = env_dir / "bin" / "python"
    done = subprocess.run([str(py), "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
                           str(src)], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    check = subprocess.run([str(py), "-c", "import aimtheory, sys; print(aimtheory.__version__); "
                            "print(aimtheory.__file__); print(aimtheory._engine.source_root())"],
                           capture_output=True, text=True, cwd=tmp_path)
    assert check.returncode == 0, check.stderr
    version, where, root = check.stdout.split("\n")[:3]
    assert version == "0.1.0"
    assert where.startswith(str(env_dir))
    assert root == "None"  # installed: not the source tree
