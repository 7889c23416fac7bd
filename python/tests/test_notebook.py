"""The example notebook, examples/aimtheory.ipynb, runs: executed in a Jupyter kernel at small
sizes (its parameters cell replaced), its results checked by a cell the test adds."""

from __future__ import annotations

import os
import pathlib

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "examples" / "aimtheory.ipynb"

# The parameters at the test's sizes: the same names as the notebook's parameters cell.
SMALL = """SE_ALPHAS = "0.01:0.25:8"
RHOS = [0.5, 1]
AMP_D = 30
AMP_RHO = 0.5
AMP_ALPHAS = [0.1, 0.2]
AMP_SEEDS = 2
SMI_ALPHAS = "0.2:1.5:3"
SMI_SAMPLES = 100
SMI_GEN_SAMPLES = 500
"""

# What the notebook's results must be at those sizes.
CHECK = """
assert list(se.df["rho"].unique()) == RHOS and len(se.df) == 8 * len(RHOS)
assert list(points.index) == AMP_ALPHAS and set(points["count"]) == {AMP_SEEDS}
assert (points["mean"] > 0).all() and (points["mean"] < 1.5).all()
assert len(smi.df) == 3 and smi.df["converged"].all()
assert 0 <= smi.df["Q22"].min() and smi.df["Q22"].max() <= 1
print("checked")
"""


def _names(source: str) -> list[str]:
    return sorted(line.split("=")[0].strip() for line in source.splitlines()
                  if "=" in line and not line.lstrip().startswith("#"))


def test_notebook_committed_clean():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, "commit the notebook with its outputs cleared"
    params = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(params) == 1, "the notebook has one cell tagged parameters"
    assert _names(params[0].source) == _names(SMALL), "the test's parameters are the notebook's"


def test_notebook_runs(tmp_path, monkeypatch):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    params.source = SMALL
    nb.cells.append(nbformat.v4.new_code_cell(CHECK))
    # The kernel imports the package from the source tree and finds the engine as a user's would
    # ($AIM_BIN where the test run sets it, else the repository's bin/aim).
    path = os.environ.get("PYTHONPATH", "")
    monkeypatch.setenv("PYTHONPATH", str(ROOT / "python") + (os.pathsep + path if path else ""))
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert any(o.get("output_type") == "stream" and "checked" in o.get("text", "") for o in outputs)
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    # The two matplotlib figures and the engine's figure (aim.plot).
    assert len(images) >= 3, f"{len(images)} figures drawn, want 3"
