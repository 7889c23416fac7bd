"""bench/precision_study.py at a small D: its comparison against fp64, and its sweeps resumed."""
from __future__ import annotations

import json
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


def computed(out) -> dict[str, int]:
    """What each sweep under out computed: its journal and its runs' traces, with their
    modification times in nanoseconds."""
    return {str(p.relative_to(out)): p.stat().st_mtime_ns for p in out.rglob("*")
            if p.is_file() and (p.name == "journal.csv" or p.parent.name == "trace")}


@pytest.fixture(scope="module")
def first(aim_bin, tmp_path_factory):
    out = tmp_path_factory.mktemp("precision")
    return out, study(out), computed(out), pd.read_csv(out / "study.csv")


def test_compares_each_precision_with_fp64_from_the_same_seed(first):
    out, _, _, df = first
    assert len(df) == 2 * 2 * 2  # cases x precisions x seeds
    for case, job in (("softmax T=2 at", "amp"), ("gd single", "gd")):
        folder = out / case.replace(" ", "_").replace("=", "")
        ref = pd.read_csv(folder / "fp64" / "results.csv")
        err = "error" if "error" in ref.columns else "test_error"
        assert len(pd.read_csv(folder / "fp64" / "trace.csv")) > 2 * 5, "every run's trace"
        for precision in ("fp32", "tf32"):
            rows = df[(df.case == case) & (df.precision == precision)].sort_values("seed")
            # error_fp64 is fp64's own run, and error the precision's run, seed by seed.
            assert list(rows.error_fp64) == list(ref.sort_values("seed")[err])
            own = pd.read_csv(folder / precision / "results.csv").sort_values("seed")
            assert list(rows.error) == list(own[err])
            assert (own.precision == precision).all()
        diff32 = (df[(df.case == case) & (df.precision == "fp32")].eval("error - error_fp64")).abs().max()
        diff_tf = (df[(df.case == case) & (df.precision == "tf32")].eval("error - error_fp64")).abs().max()
        # fp32 changes the final error at the level of float32 rounding, tf32's 10-bit
        # significands far more. Measured on seeds 1 to 16 (OpenBLAS): fp32 at most 9.7e-6
        # (softmax) and 1.1e-7 (GD), 2e-8 and 8e-8 on these seeds; tf32 1e-4 to 4e-3.
        assert diff32 < 3e-5, (case, diff32)
        assert diff_tf > 10 * diff32, (case, diff_tf, diff32)


def test_the_same_command_again_computes_nothing(first):
    out, _, before, df = first
    again = study(out)
    assert again.stdout.count("0 computed now") == 2 * 3  # cases x (fp64, fp32, tf32)
    assert computed(out) == before
    pd.testing.assert_frame_equal(pd.read_csv(out / "study.csv"), df)


def test_an_interrupted_sweep_resumes_with_the_runs_it_lacks(first, tmp_path):
    out, _, _, df = first
    # The softmax case at fp32 as a crash after its first seed leaves it: one journal line,
    # one trace.
    folder = tmp_path / "softmax_T2_at"
    (folder / "fp32" / "trace").mkdir(parents=True)
    src = out / "softmax_T2_at"
    journal = (src / "fp32" / "journal.csv").read_text().splitlines(keepends=True)
    (folder / "fp32" / "journal.csv").write_text("".join(journal[:2]))
    (seed1,) = (src / "fp32" / "trace").glob("seed-1-*.csv")
    (folder / "fp32" / "trace" / seed1.name).write_bytes(seed1.read_bytes())
    (folder / "fp32" / "results.json").write_bytes((src / "fp32" / "results.json").read_bytes())
    again = subprocess.run([sys.executable, str(SCRIPT), "--D", "24", "--seeds", "2", "--cases", "softmax T=2 at",
                            "--precisions", "fp32", "--out", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "fp64: 2 runs" in again.stdout and "fp32: 2 runs" in again.stdout and "1 computed now" in again.stdout
    resumed = pd.read_csv(tmp_path / "study.csv")
    whole = df[(df.case == "softmax T=2 at") & (df.precision == "fp32")].reset_index(drop=True)
    pd.testing.assert_frame_equal(resumed, whole)
    sessions = json.loads((folder / "fp32" / "results.json").read_text())["sessions"]
    assert [s["runs"] for s in sessions][-1] == 1


def test_more_seeds_grow_the_sweeps_and_other_settings_are_refused(first):
    out, _, before, df = first
    grown = study(out, "--seeds", "3")
    specs = {p: p.read_text() for p in out.rglob("*.toml")}
    assert grown.stdout.count("1 computed now") == 2 * 3  # seed 3 alone, in every sweep
    after = computed(out)
    assert all(after[k] == t for k, t in before.items() if "trace" in k), "seeds 1 and 2 kept their traces"
    table = pd.read_csv(out / "study.csv")
    assert len(table) == 2 * 2 * 3
    pd.testing.assert_frame_equal(table[table.seed < 3].reset_index(drop=True), df)
    # Another D is refused, and the folder left as it was; --fresh runs every run again, and
    # gives what the grown sweeps gave.
    argv = [sys.executable, str(SCRIPT), "--D", "20", "--gd-D", "12", "--gd-steps", "30", "--seeds", "3",
            "--cases", CASES, "--precisions", "fp32,tf32", "--out", str(out)]
    refused = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert refused.returncode != 0 and "holds this case at other settings" in refused.stderr
    assert "it holds runs this file does not have (seed 1 at" in refused.stderr
    assert computed(out) == after
    assert {p: p.read_text() for p in out.rglob("*.toml")} == specs, "the sweep files describe the folders"
    fresh = study(out, "--seeds", "3", "--fresh")
    assert fresh.stdout.count("3 computed now") == 2 * 3
    pd.testing.assert_frame_equal(pd.read_csv(out / "study.csv"), table)
