"""The README's Python quickstart runs as written and gives the SE it claims."""

from __future__ import annotations

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_readme_python(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert len(blocks) == 1, "the README has one Python block, the quickstart"
    assert len(blocks[0].strip().splitlines()) == 3, "the quickstart is three lines"
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(blocks[0], "README.md", "exec"), scope)
    df = scope["se"].df
    assert sorted(df["rho"].unique()) == [0.5, 1] and len(df) == 128
    # mmse falls from near 1 at alpha -> 0 to 0 past alpha_PR (3/16 at rho = 0.5).
    assert df["mmse"].iloc[0] > 0.9 and df[(df.rho == 0.5) & (df.alpha > 0.19)]["mmse"].max() < 1e-6
