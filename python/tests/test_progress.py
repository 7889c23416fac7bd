"""The progress bar follows the engine's JSON progress lines."""
from __future__ import annotations

import json
import subprocess

import pytest

import aimtheory


class Recorder:
    """Stands in for tqdm: records every bar made and its last total and n."""

    bars: list = []

    def __init__(self, total=None, desc=None, **kwargs):
        self.total, self.desc, self.n, self.closed = total, desc, 0, False
        Recorder.bars.append(self)

    def update(self, k=1):
        self.n += k

    def close(self):
        self.closed = True


def _last_events(aim_bin, args, out):
    """The last (total, done) of each 'what' in the CLI's --progress json stream, in order."""
    done = subprocess.run([aim_bin, *args, "--progress", "json", "--plot", "", "--out", str(out)],
                          capture_output=True, text=True)
    events = []
    for line in done.stderr.splitlines():
        if line.startswith("{"):
            e = json.loads(line)
            if e.get("event") == "progress":
                if events and events[-1][0] == e["what"]:
                    events[-1] = (e["what"], e["total"], e["done"])
                else:
                    events.append((e["what"], e["total"], e["done"]))
    return events


def test_bar_follows_progress_lines(aim_bin, tmp_path, monkeypatch):
    pytest.importorskip("tqdm")
    import tqdm.auto
    Recorder.bars = []
    monkeypatch.setattr(tqdm.auto, "tqdm", Recorder)
    r = aimtheory.amp(rho=0.5, D=24, alpha=[0.05, 0.1], seeds=2, device="cpu", plot="",
                      out=tmp_path / "amp.csv", progress=True)
    assert len(r.df) == 4
    # the same run from the CLI
    events = _last_events(aim_bin, ["amp", "--rho", "0.5", "--D", "24", "--alpha", "0.05,0.1", "--seeds", "2",
                                    "--device", "cpu"], tmp_path / "cli.csv")
    assert events, "the engine printed no progress lines"
    assert [(b.desc, b.total, b.n) for b in Recorder.bars] == events
    assert all(b.closed for b in Recorder.bars)


def test_no_bar_without_progress(aim_bin, tmp_path, monkeypatch):
    pytest.importorskip("tqdm")
    import tqdm.auto
    Recorder.bars = []
    monkeypatch.setattr(tqdm.auto, "tqdm", Recorder)
    aimtheory.se(rho=0.5, alpha=[0.05], gen_samples=0, plot="", out=tmp_path / "se.csv", progress=False)
    assert Recorder.bars == []


def test_no_tqdm_no_error(aim_bin, tmp_path, monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # import fails
    r = aimtheory.se(rho=0.5, alpha=[0.05], gen_samples=0, plot="", out=tmp_path / "se.csv", progress=True)
    assert len(r.df) == 1


def test_notes_are_logged_not_warned(aim_bin, tmp_path, caplog):
    import logging
    import warnings
    with caplog.at_level(logging.INFO, logger="aimtheory"), warnings.catch_warnings():
        warnings.simplefilter("error", aimtheory.RunWarning)
        r = aimtheory.amp(rho=0.5, D=20, alpha=[0.05], seeds=1, device="cpu", plot="",
                          out=tmp_path / "amp.csv", progress=False)
    logged = [rec.getMessage() for rec in caplog.records if rec.name == "aimtheory"]
    assert any(m.startswith("tokens stored") for m in logged)
    assert not any(m.startswith("{") for m in logged)
    assert "tokens stored" in r.stderr


FAKE = r'''#!{python}
"""A stand-in engine: progress lines, a note and a warning on stderr, then a one-row table."""
import json, sys
args = sys.argv[1:]
out = args[args.index("--out") + 1]
assert args[args.index("--progress") + 1] == "json"
for what, total in (("first", 3), ("second", 2)):
    for done in range(1, total + 1):
        print(json.dumps({{"event": "progress", "what": what, "done": done, "total": total, "seconds": 0.1}}),
              file=sys.stderr, flush=True)
print("a plain note", file=sys.stderr)
print("aim se: warning: something to know", file=sys.stderr)
open(out, "w").write("rho,alpha\n0.5,0.1\n")
json.dump({{"command": "se", "outputs": [out], "complete": True}}, open(out[:-4] + ".json", "w"))
print("wrote it")
'''


def test_fake_engine_streams(tmp_path, monkeypatch, caplog):
    """Warnings become RunWarnings raised in the caller, notes are logged, and each new "what" of
    the progress stream opens a new bar (an engine stand-in, so that every kind of line appears)."""
    import logging
    import sys
    import tqdm.auto
    fake = tmp_path / "aim"
    fake.write_text(FAKE.format(python=sys.executable))
    fake.chmod(0o755)
    monkeypatch.setenv("AIM_BIN", str(fake))
    Recorder.bars = []
    monkeypatch.setattr(tqdm.auto, "tqdm", Recorder)
    with caplog.at_level(logging.INFO, logger="aimtheory"), pytest.warns(aimtheory.RunWarning) as record:
        r = aimtheory.se(rho=0.5, out=tmp_path / "se.csv")
    assert [str(w.message) for w in record] == ["aim se: warning: something to know"]
    assert record[0].filename == __file__
    assert [(b.desc, b.total, b.n, b.closed) for b in Recorder.bars] == [("first", 3, 3, True), ("second", 2, 2, True)]
    assert [rec.getMessage() for rec in caplog.records] == ["a plain note"]
    assert r.stdout == "wrote it\n" and "event" not in r.stderr
    assert list(r.df.columns) == ["rho", "alpha"]
