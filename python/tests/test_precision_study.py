"""bench/precision_study.py at a small D: its comparison against fp64, and its reuse of finished runs."""
from __future__ import annotations

import os
import subprocess
import sys

import pandas as pd
import pytest

from conftest import REPO

SCRIPT = REPO / "bench" / "precision_study.py"
CASES = "softmax T=2 at,gd single"


def study(out, *extra: str) -> subprocess.CompletedProcess:
    argv = [sys.executable, str(SCRIPT), "--D", "24", "--gd-D", "12", "--gd-steps", "30", "--seeds", "2",
            "--cases", CASES, "--precisions", "fp32,tf32", "--out", str(out), *extra]
    done = subprocess.run(argv, capture_output=True, text=True, env=dict(os.environ), timeout=600)
    assert done.returncode == 0, f"{argv}: exit {done.returncode}: {done.stderr[-2000:]}"
    return done


def written(out) -> dict[str, int]:
    """Each run file under out and its modification time in nanoseconds."""
    return {str(p.relative_to(out)): p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()
            and p.parent != out}


@pytest.fixture(scope="module")
def first(aim_bin, tmp_path_factory):
    out = tmp_path_factory.mktemp("precision")
    return out, study(out), written(out), pd.read_csv(out / "study.csv")


def test_compares_each_precision_with_fp64_from_the_same_seed(first):
    out, _, _, df = first
    assert len(df) == 2 * 2 * 2  # cases x precisions x seeds
    for case, job in (("softmax T=2 at", "amp"), ("gd single", "gd")):
        folder = out / case.replace(" ", "_").replace("=", "")
        ref = pd.read_csv(folder / f"{job}-fp64.csv")
        err = "error" if "error" in ref.columns else "test_error"
        for precision in ("fp32", "tf32"):
            rows = df[(df.case == case) & (df.precision == precision)].sort_values("seed")
            # error_fp64 is fp64's own run, and error the precision's run, seed by seed.
            assert list(rows.error_fp64) == list(ref.sort_values("seed")[err])
            own = pd.read_csv(folder / f"{job}-{precision}.csv").sort_values("seed")
            assert list(rows.error) == list(own[err])
            assert (own.precision == precision).all()
        diff32 = (df[(df.case == case) & (df.precision == "fp32")].eval("error - error_fp64")).abs().max()
        diff_tf = (df[(df.case == case) & (df.precision == "tf32")].eval("error - error_fp64")).abs().max()
        # fp32 changes the final error at the level of float32 rounding, tf32's 10-bit
        # significands far more. Measured on seeds 1 to 16 (OpenBLAS): fp32 at most 9.7e-6
        # (softmax) and 1.1e-7 (GD), 2e-8 and 8e-8 on these seeds; tf32 1e-4 to 4e-3.
        assert diff32 < 3e-5, (case, diff32)
        assert diff_tf > 10 * diff32, (case, diff_tf, diff32)


def test_the_same_command_again_reuses_every_finished_run(first):
    out, _, before, df = first
    again = study(out)
    assert again.stdout.count("reused") == 2 * 3  # cases x (fp64, fp32, tf32)
    assert written(out) == before
    pd.testing.assert_frame_equal(pd.read_csv(out / "study.csv"), df)


def test_a_changed_flag_or_fresh_runs_again(first):
    out, _, before, _ = first
    more = study(out, "--seeds", "3")
    assert "reused" not in more.stdout
    assert len(pd.read_csv(out / "study.csv")) == 2 * 2 * 3
    after = written(out)
    assert all(after[name] != t for name, t in before.items() if name.endswith(".csv"))
    fresh = study(out, "--seeds", "3", "--fresh")
    assert "reused" not in fresh.stdout
    assert all(written(out)[name] != t for name, t in after.items() if name.endswith(".csv"))
