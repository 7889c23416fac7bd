"""Every job function gives the table the CLI gives for the same arguments."""
from __future__ import annotations

import warnings

import pandas as pd
import pytest
from pandas.testing import assert_frame_equal

import aimtheory
from conftest import drop_timings

# (name, function, keyword arguments, the same run's CLI arguments)
JOBS = [
    ("se", lambda: aimtheory.se,
     dict(channel="softmax", T=2, rho=[0.5, 1], alpha=[0.05, 0.1, 0.2], gen_samples=200),
     ["se", "--channel", "softmax", "--T", "2", "--rho", "0.5,1", "--alpha", "0.05,0.1,0.2", "--gen-samples", "200"]),
    ("se hardmax", lambda: aimtheory.se,
     dict(channel="hardmax", rho=0.5, alpha="0.1:10:4:log", gen_samples=100, paper_compat=False),
     ["se", "--channel", "hardmax", "--rho", "0.5", "--alpha", "0.1:10:4:log", "--gen-samples", "100"]),
    ("thresholds", lambda: aimtheory.thresholds,
     dict(channel="softmax", T=[2, 3, 4]),
     ["thresholds", "--channel", "softmax", "--T", "2,3,4"]),
    ("amp", lambda: aimtheory.amp,
     dict(channel="softmax", rho=[0.5], D=32, alpha=[0.05, 0.1], seeds=2, device="cpu"),
     ["amp", "--channel", "softmax", "--rho", "0.5", "--D", "32", "--alpha", "0.05,0.1", "--seeds", "2",
      "--device", "cpu"]),
    ("gd", lambda: aimtheory.gd,
     dict(D=20, alpha=[0.05, 0.1], seeds=1, max_iter=20, device="cpu"),
     ["gd", "--D", "20", "--alpha", "0.05,0.1", "--seeds", "1", "--max-iter", "20", "--device", "cpu"]),
    ("erm", lambda: aimtheory.erm,
     dict(rho=0.5, alpha=[0.1, 0.3], noise=0.25, weight_decay=[0, 0.1]),
     ["erm", "--rho", "0.5", "--alpha", "0.1,0.3", "--noise", "0.25", "--weight-decay", "0,0.1"]),
    ("smi se", lambda: aimtheory.smi.se,
     dict(L=2, alpha=[0.3, 0.5], samples=100, replicates=2, gen_samples=100),
     ["smi", "se", "--L", "2", "--alpha", "0.3,0.5", "--samples", "100", "--replicates", "2",
      "--gen-samples", "100"]),
    ("smi thresholds", lambda: aimtheory.smi.thresholds,
     dict(c=[1], samples=50, tol=1e-3),
     ["smi", "thresholds", "--c", "1", "--samples", "50", "--tol", "0.001"]),
    ("smi amp", lambda: aimtheory.smi.amp,
     dict(D=50, alpha=[0.5, 1], seeds=1, gen_samples=100, max_iter=10),
     ["smi", "amp", "--D", "50", "--alpha", "0.5,1", "--seeds", "1", "--gen-samples", "100", "--max-iter", "10",
      "--trace", ""]),
    ("smi sgd", lambda: aimtheory.smi.sgd,
     dict(D=20, alpha=2.0, epochs=2, batch=10, gen_samples=100, seeds=2),
     ["smi", "sgd", "--D", "20", "--alpha", "2", "--epochs", "2", "--batch", "10", "--gen-samples", "100",
      "--seeds", "2"]),
]


@pytest.mark.parametrize("name,function,kwargs,args", JOBS, ids=[j[0] for j in JOBS])
def test_job_matches_cli(name, function, kwargs, args, cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", aimtheory.RunWarning)
        result = function()(**kwargs, progress=False)
    expected = pd.read_csv(cli(*args))
    assert len(result.df) > 0
    assert_frame_equal(drop_timings(result.df), drop_timings(expected))
    # the outputs went to a temporary folder, never the engine's results/
    assert not (tmp_path / "results").exists()
    assert result.path.parent.name.startswith("aimtheory-")
    assert result.command == (" ".join(args[:2]) if args[0] == "smi" else args[0])
    assert result.complete
    assert result.path in result.files and result.manifest_path in result.files
    if name == "smi amp":  # its trace, which the engine writes beside --out, listed in the outputs
        assert result.path.with_name("smi-amp-trace.csv") in result.files


def test_smi_amp_manifest_lists_trace(aim_bin):
    r = aimtheory.smi.amp(D=20, alpha=[0.5], seeds=1, gen_samples=0, max_iter=2, plot="", progress=False)
    assert [p.name for p in r.files] == ["smi-amp.csv", "smi-amp.json", "smi-amp-trace.csv", "smi-amp-trace.json"]
    assert len(pd.read_csv(r.path.with_name("smi-amp-trace.csv"))) == 2


def test_job_plot_beside_out(aim_bin, tmp_path, monkeypatch):
    """An explicit out (relative to the cwd) puts the plot beside it; plot="" draws none."""
    monkeypatch.chdir(tmp_path)
    r = aimtheory.se(rho=0.5, alpha=[0.05, 0.1], gen_samples=0, out="sub/se.csv", progress=False)
    assert r.path == tmp_path / "sub" / "se.csv"
    assert (tmp_path / "sub" / "se.png").is_file()
    assert sorted(p.name for p in r.files) == ["se.csv", "se.json", "se.png"]
    fig = r.plot()
    assert fig.path == tmp_path / "sub" / "se.png" and fig._repr_png_()[:8] == b"\x89PNG\r\n\x1a\n"
    r2 = aimtheory.se(rho=0.5, alpha=[0.05, 0.1], gen_samples=0, out="sub/se2.csv", plot="", progress=False)
    assert not (tmp_path / "sub" / "se2.png").exists()
    assert_frame_equal(r.df, r2.df)


def test_bench_matches_cli(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    kwargs = dict(device="cpu", D=[32, 40], streamed_D="none", repeat=3, gemm_size=64, algorithms="amp,gd")
    args = ["bench", "--device", "cpu", "--D", "32,40", "--streamed-D", "none", "--repeat", "3",
            "--gemm-size", "64", "--algorithms", "amp,gd"]
    r = aimtheory.bench(**kwargs, progress=False)
    expected = pd.read_csv(cli(*args))
    # timings: seconds_*, *_s, and the rates computed from them
    timing = [c for c in r.df.columns
              if c.startswith("seconds") or c.endswith("_s") or "gflops" in c or c.startswith("fraction")]
    assert "seconds_median" in timing and "flops" not in timing
    assert list(r.df.columns) == list(expected.columns)
    assert_frame_equal(drop_timings(r.df, timing), drop_timings(expected, timing))
    assert len(r.df) == 4 and set(r.df["D"]) == {32, 40}


SPEC = """job = "se"
out = "{out}"
[grid]
rho = [0.5, 1]
alpha = "0.05:0.15:3"
gen-samples = 100
"""


def test_sweep_run_check_merge(aim_bin, tmp_path, monkeypatch, cli):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    for d in (ours, theirs):
        d.mkdir()
        (d / "spec.toml").write_text(SPEC.format(out="sweep-out"))
    # the CLI's run, in its own folder (the spec's out is relative to the working folder)
    done = cli("sweep", "run", "--progress", "none", "spec.toml", out=False, cwd=theirs)
    assert done.returncode == 0, done.stderr
    expected = pd.read_csv(theirs / "sweep-out" / "results.csv")

    monkeypatch.chdir(ours)
    text = aimtheory.sweep.check("spec.toml")
    assert "6 runs" in text
    # two shards, then the merge
    s0 = aimtheory.sweep.run("spec.toml", shard="0/2", progress=False)
    s1 = aimtheory.sweep.run("spec.toml", shard="1/2", progress=False)
    assert s0.path == ours / "sweep-out" / "shard-0-of-2" / "results.csv"
    assert len(s0.df) + len(s1.df) == 6
    merged = aimtheory.sweep.merge("spec.toml")
    assert merged.path == ours / "sweep-out" / "results.csv"
    assert_frame_equal(merged.df, expected)
    assert merged.manifest["complete"] is True
    # a whole run (resumed: nothing left to compute) gives the same table
    whole = aimtheory.sweep.run("spec.toml", progress=False)
    assert_frame_equal(whole.df, expected)
    assert merged.to_xarray().sizes == {"rho": 2, "alpha": 3}


def test_plot_of_results(aim_bin, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    se = aimtheory.se(rho=[0.5], alpha="0.02:0.2:6", gen_samples=0, plot="", progress=False)
    amp = aimtheory.amp(rho=[0.5], D=24, alpha=[0.05, 0.1], seeds=2, device="cpu", se=se, plot="", progress=False)
    fig = aimtheory.plot(se, amp, out="both.svg", x="alpha-bar")
    assert fig.path == tmp_path / "both.svg"
    assert fig._repr_svg_().lstrip().startswith("<")
    redrawn = amp.plot(axes="logx")
    assert redrawn.path.suffix == ".png" and redrawn.path.is_file()


def test_device_returns_text(aim_bin):
    text = aimtheory.device()
    assert "cpu" in text.lower()
    assert aimtheory.version().startswith("aim v")
