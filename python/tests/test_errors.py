"""Bad input, unconverged points, timeouts and interrupts."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

import aimtheory
from conftest import PYTHON_DIR

# A run long enough to stop in its middle: 32 GAMP runs at D = 100, about 0.2 s each on two
# cores (6 s in all), stopped after 1.5 s: some have finished, most have not, at a third or three
# times that speed.
RUNS = 32
LONG = dict(rho=0.5, D=100, alpha="0.05:0.2:16", seeds=2, device="cpu", plot="")


def test_bad_input_raises_with_engine_message(aim_bin, tmp_path):
    out = tmp_path / "se.csv"
    with pytest.raises(aimtheory.BadInput) as e:
        aimtheory.se(rho=-1, out=out, progress=False)
    assert str(e.value).startswith("aim se: ")
    assert "rho" in str(e.value) and "need rho > 0" in str(e.value)
    assert isinstance(e.value, ValueError)
    assert list(tmp_path.iterdir()) == []

    with pytest.raises(aimtheory.BadInput) as e:
        aimtheory.amp(channel="sigmoid", D=20, out=out, progress=False)
    assert "sigmoid" in str(e.value) and str(e.value).startswith("aim amp: ")
    assert "progress" not in str(e.value)
    assert list(tmp_path.iterdir()) == []


def test_unconverged_points_warn_and_return(aim_bin, tmp_path):
    with pytest.warns(aimtheory.RunWarning) as record:
        r = aimtheory.se(rho=0.5, alpha=[0.05, 0.1], gen_samples=0, max_iter=1, plot="", progress=False)
    messages = [str(w.message) for w in record]
    failed = [m for m in messages if "did not converge" in m]
    assert len(failed) == 1
    assert "2 of 2 points did not converge" in failed[0]
    assert "alpha = 0.05" in failed[0] and "alpha = 0.1" in failed[0]
    assert r.failed == failed[0]
    assert list(r.df["converged"]) == [False, False]
    # the warning points at the caller
    assert all(Path(w.filename).name == "test_errors.py" for w in record)


def test_timeout_keeps_finished_rows(aim_bin):
    with pytest.raises(aimtheory.Timeout) as e:
        aimtheory.amp(**LONG, progress=False, timeout=1.5)
    assert isinstance(e.value, TimeoutError)
    r = e.value.result
    assert r is not None
    assert 1 <= len(r.df) < RUNS
    assert r.complete is False and r.manifest["complete"] is False
    assert len(r.missing) == RUNS - len(r.df)
    done = {(round(a, 12), s) for a, s in zip(r.df["alpha"], r.df["seed"])}
    missing = {(round(m["alpha"], 12), m["seed"]) for m in r.missing}
    assert not done & missing and len(done | missing) == RUNS


SCRIPT = """
import json, os, signal, sys, threading, time
import aimtheory
kwargs = json.loads(sys.argv[1])
delays = json.loads(sys.argv[2])
# A shell's background job starts with SIGINT ignored; a user's Ctrl-C is what is tested here.
signal.signal(signal.SIGINT, signal.default_int_handler)
def fire():
    t0 = time.monotonic()
    for d in delays:
        time.sleep(max(0.0, t0 + d - time.monotonic()))
        os.kill(os.getpid(), signal.SIGINT)
threading.Thread(target=fire, daemon=True).start()
try:
    aimtheory.amp(**kwargs, progress=False)
    print(json.dumps({"interrupted": False}))
except aimtheory.Interrupted as e:
    r = e.result
    print(json.dumps({"interrupted": True, "keyboard": isinstance(e, KeyboardInterrupt),
                      "rows": None if r is None else len(r.df),
                      "complete": None if r is None else r.complete,
                      "missing": None if r is None else len(r.missing),
                      "out_exists": os.path.exists(kwargs["out"])}))
"""


def _interrupt(tmp_path, delays, **job):
    kwargs = dict(job or LONG, out=str(tmp_path / "amp.csv"))
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR))
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(SCRIPT), json.dumps(kwargs), json.dumps(delays)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_ctrl_c_keeps_finished_rows(aim_bin, tmp_path):
    got = _interrupt(tmp_path, [1.5])
    assert got["interrupted"] and got["keyboard"]
    assert 1 <= got["rows"] < RUNS
    assert got["complete"] is False and got["missing"] == RUNS - got["rows"]


FAKE_ENGINE = """#!/usr/bin/env python3
# A stand-in engine: at the first SIGINT it starts writing its finished rows, which takes it 10 s;
# a second SIGINT makes it quit at once without them (status 130), as aim does.
import os, signal, sys, time
if sys.argv[1:2] == ["version"]:
    print("aim v0.1.0 (stand-in)")
    sys.exit(0)
out = sys.argv[sys.argv.index("--out") + 1]
first = []
def on_sigint(sig, frame):
    if first:
        sys.exit(130)
    first.append(time.monotonic())
signal.signal(signal.SIGINT, on_sigint)
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    time.sleep(0.05)
    if first and time.monotonic() > first[0] + 10:
        open(out, "w").write("alpha,seed,error\\n0.1,1,0.5\\n")
        sys.exit(130)
sys.exit(0)
"""


def test_second_ctrl_c_writes_nothing(tmp_path, monkeypatch):
    """A second Ctrl-C while the engine writes its finished rows reaches it: it quits without
    them, and Interrupted carries no result (a stand-in engine, so that the timing is the test's)."""
    fake = tmp_path / "aim"
    fake.write_text(FAKE_ENGINE)
    fake.chmod(0o755)
    monkeypatch.setenv("AIM_BIN", str(fake))
    got = _interrupt(tmp_path, [0.5, 1.5], rho=0.5, alpha=[0.1], plot="")
    assert got["interrupted"] and got["keyboard"]
    assert got["rows"] is None and got["out_exists"] is False


def test_smi_thresholds_unconverged_writes_table(aim_bin):
    """A conditional threshold that did not converge: the table is written (that threshold
    empty), .failed names it, and a RunWarning says so."""
    with pytest.warns(aimtheory.RunWarning, match="conditional thresholds did not converge"):
        r = aimtheory.smi.thresholds(c=[1], samples=50, max_iter=30, hi=2.0, plot="", progress=False)
    assert len(r.df) == 1 and r.df["alpha_conditional_1"].isna().all() and r.df["alpha_stability_1"].iloc[0] > 0
    assert "c = 1: SMI conditional threshold of layer 1" in r.failed


def test_engine_error_carries_status(aim_bin, tmp_path, monkeypatch):
    """An exit status other than 0, 1, 2 and 130 raises EngineError with the status."""
    fake = tmp_path / "aim"
    fake.write_text("#!/bin/sh\necho 'aim se: out of luck' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("AIM_BIN", str(fake))
    with pytest.raises(aimtheory.EngineError) as e:
        aimtheory.se(rho=0.5, progress=False)
    assert e.value.status == 3 and "out of luck" in str(e.value) and "status 3" in str(e.value)


def test_se_threshold_prints(aim_bin, tmp_path, monkeypatch):
    """se(threshold=True) returns what the command prints, alpha_PR = 3/16 at rho = 0.5, and
    writes no file."""
    monkeypatch.chdir(tmp_path)
    text = aimtheory.se(threshold=True, rho=0.5, progress=False)
    assert isinstance(text, str) and "0.1875" in text
    assert list(tmp_path.iterdir()) == []
