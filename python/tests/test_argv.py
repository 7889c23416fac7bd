"""Keyword arguments to engine flags, without the engine."""
from __future__ import annotations

from pathlib import Path

import pytest

from aimtheory._runner import to_argv

FLAGS = {
    "rho": ("rho", "list"),
    "alpha": ("alpha", "list"),
    "D": ("D", "int"),
    "seed": ("seed", "uint"),
    "beta": ("beta", "float"),
    "damping": ("damping", "float|auto"),
    "paper_compat": ("paper-compat", "bool"),
    "channel": ("channel", "string"),
    "out": ("out", "string"),
    "gen_samples": ("gen-samples", "int"),
}

CASES = [
    ({"rho": 0.5}, ["--rho", "0.5"]),
    ({"rho": 1}, ["--rho", "1"]),
    ({"rho": [0.1, 0.2, 1]}, ["--rho", "0.1,0.2,1"]),
    ({"rho": (0.1, 2.0)}, ["--rho", "0.1,2.0"]),
    ({"alpha": "0.001:0.25:128"}, ["--alpha", "0.001:0.25:128"]),
    ({"alpha": "0.01:10:64:log"}, ["--alpha", "0.01:10:64:log"]),
    ({"alpha": range(1, 4)}, ["--alpha", "1,2,3"]),
    ({"alpha": [0.1 + 0.2]}, ["--alpha", "0.30000000000000004"]),
    ({"alpha": [1e-7, 2.5e10]}, ["--alpha", "1e-07,25000000000.0"]),
    ({"alpha": ["0.1", 0.2]}, ["--alpha", "0.1,0.2"]),
    ({"D": 100}, ["--D", "100"]),
    ({"seed": 3}, ["--seed", "3"]),
    ({"beta": 2}, ["--beta", "2"]),
    ({"beta": 0.1}, ["--beta", "0.1"]),
    ({"damping": "auto"}, ["--damping", "auto"]),
    ({"damping": 0.25}, ["--damping", "0.25"]),
    ({"paper_compat": True}, ["--paper-compat"]),
    ({"paper_compat": False}, ["--paper-compat=false"]),
    ({"channel": "hardmax"}, ["--channel", "hardmax"]),
    ({"out": Path("a/b.csv")}, ["--out", "a/b.csv"]),
    ({"out": ""}, ["--out", ""]),
    ({"gen_samples": 0}, ["--gen-samples", "0"]),
    ({"rho": None, "D": None, "paper_compat": None}, []),
    ({"D": 50, "rho": [0.5], "paper_compat": True},  # in the order of the flags
     ["--rho", "0.5", "--D", "50", "--paper-compat"]),
]


@pytest.mark.parametrize("values,argv", CASES, ids=[str(c[0]) for c in CASES])
def test_to_argv(values, argv):
    assert to_argv(FLAGS, values) == argv


WRONG = [
    {"D": [100, 200]},          # a list for an int
    {"D": 100.0},               # a float for an int
    {"D": "100"},               # a string for an int
    {"D": True},                # a bool for an int
    {"beta": "1"},              # a string for a float
    {"beta": [1.0]},
    {"damping": "half"},        # a word other than auto
    {"paper_compat": 1},        # an int for a bool
    {"paper_compat": "true"},
    {"channel": 3},             # a number for a string
    {"channel": ["softmax"]},
    {"rho": {0.1, 0.2}},        # a set has no order
    {"rho": {"a": 1}},
    {"rho": [[0.1, 0.2]]},      # nested
    {"rho": [True, 0.5]},
    {"rho": True},
]


@pytest.mark.parametrize("values", WRONG, ids=[str(v) for v in WRONG])
def test_wrong_types_raise(values):
    with pytest.raises(TypeError) as e:
        to_argv(FLAGS, values)
    name = next(iter(values))
    assert name in str(e.value)


def test_empty_grid():
    with pytest.raises(ValueError):
        to_argv(FLAGS, {"rho": []})


def test_numpy_values():
    np = pytest.importorskip("numpy")
    assert to_argv(FLAGS, {"rho": np.array([0.1, 0.5, 1.0])}) == ["--rho", "0.1,0.5,1.0"]
    assert to_argv(FLAGS, {"alpha": np.linspace(0, 1, 3)}) == ["--alpha", "0.0,0.5,1.0"]
    assert to_argv(FLAGS, {"alpha": np.arange(3)}) == ["--alpha", "0,1,2"]
    assert to_argv(FLAGS, {"D": np.int64(40)}) == ["--D", "40"]
    assert to_argv(FLAGS, {"beta": np.float32(0.5)}) == ["--beta", "0.5"]
    assert to_argv(FLAGS, {"beta": np.float64(0.1)}) == ["--beta", "0.1"]
    assert to_argv(FLAGS, {"rho": np.float64(0.2)}) == ["--rho", "0.2"]
    assert to_argv(FLAGS, {"paper_compat": np.bool_(True)}) == ["--paper-compat"]
    with pytest.raises(TypeError):
        to_argv(FLAGS, {"D": np.float64(40.0)})
    with pytest.raises(TypeError):
        to_argv(FLAGS, {"D": np.array([1, 2])})


def test_unknown_keyword_is_refused_by_python():
    import aimtheory
    with pytest.raises(TypeError):
        aimtheory.se(no_such_flag=1)
