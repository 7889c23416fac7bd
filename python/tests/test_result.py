"""Result: load, to_xarray, display."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from pandas.testing import assert_frame_equal

import aimtheory


@pytest.fixture(scope="module")
def amp_result(aim_bin, tmp_path_factory):
    out = tmp_path_factory.mktemp("amp") / "amp.csv"
    return aimtheory.amp(rho=[0.5, 1], D=24, alpha=[0.05, 0.1, 0.15], seeds=2, device="cpu",
                         out=out, progress=False)


def test_load_gives_the_same(amp_result):
    for path in (amp_result.path, amp_result.manifest_path, str(amp_result.path)):
        r = aimtheory.load(path)
        assert r.path == amp_result.path
        assert_frame_equal(r.df, amp_result.df)
        assert_frame_equal(r.df, pd.read_csv(amp_result.path))
        assert r.manifest == amp_result.manifest == json.loads(amp_result.manifest_path.read_text())
        assert r.files == amp_result.files
        assert r.command == "amp" and r.complete
        assert r.args == amp_result.args and r.args[0] == "amp"
    with pytest.raises(FileNotFoundError):
        aimtheory.load(amp_result.path.with_name("none.csv"))


def test_files_relative_to_run_folder(aim_bin, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = aimtheory.se(rho=0.5, alpha=[0.05], gen_samples=0, out="a/se.csv", progress=False)
    monkeypatch.chdir("/")
    assert [p.name for p in r.files] == ["se.csv", "se.json", "se.png"]
    assert all(p.is_file() for p in r.files)
    assert aimtheory.load(tmp_path / "a" / "se.csv").files == r.files


def test_to_xarray_dims_and_values(amp_result):
    pytest.importorskip("xarray")
    ds = amp_result.to_xarray()
    assert tuple(ds.dims) == ("rho", "alpha", "seed")
    assert ds.sizes == {"rho": 2, "alpha": 3, "seed": 2}
    df = amp_result.df
    for _, row in df.iterrows():
        got = ds["error"].sel(rho=row["rho"], alpha=row["alpha"], seed=row["seed"]).item()
        assert got == row["error"]
    np.testing.assert_array_equal(ds["alpha"].values, [0.05, 0.1, 0.15])


def test_to_xarray_duplicate_keys(amp_result):
    pytest.importorskip("xarray")
    with pytest.raises(ValueError) as e:
        amp_result.to_xarray(dims=["rho", "alpha"])
    assert "'rho'" in str(e.value) and "'alpha'" in str(e.value) and "share keys" in str(e.value)
    with pytest.raises(ValueError):
        amp_result.to_xarray(dims=["nonesuch"])


def test_to_xarray_without_xarray(amp_result, monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "xarray", None)
    with pytest.raises(ImportError) as e:
        amp_result.to_xarray()
    assert "pip install" in str(e.value)


def test_display(amp_result):
    assert "amp" in repr(amp_result) and "rows=12" in repr(amp_result)
    html = amp_result._repr_html_()
    assert "<table" in html and "12 rows" in html
    fig = amp_result.plot()
    assert fig.path == amp_result.path.with_suffix(".png")
    assert fig._repr_png_().startswith(b"\x89PNG") and fig._repr_svg_() is None
    import os
    assert os.fspath(fig) == str(fig.path) and os.fspath(amp_result) == str(amp_result.path)
