"""aimtheory: run the `aim` engine (Bayes-optimal learning of attention models) from Python.

Each engine command is a function with the command's flags as keyword arguments (dashes as
underscores; None keeps the engine's default), e.g.

    import aimtheory as aim
    r = aim.amp(channel="softmax", rho=[0.5], D=100, alpha=[0.05, 0.1], seeds=2, device="cpu")
    r.df             # the table, a pandas DataFrame
    r.plot()         # the figure the engine drew
    r.to_xarray()    # the table indexed by (rho, alpha, seed)

Subcommands live on namespaces: aim.smi.se(...), aim.sweep.run("spec.toml").
"""
from __future__ import annotations

from ._engine import binary, build, version
from ._errors import BadInput, EngineError, EngineNotFound, Interrupted, RunWarning, Timeout
from ._jobs import amp, bench, device, erm, gd, plot, se, smi, sweep, thresholds
from ._result import Figure, Result, load

__version__ = "0.1.0"

__all__ = [
    "binary", "version", "build", "load", "Result", "Figure",
    "BadInput", "EngineError", "EngineNotFound", "Interrupted", "Timeout", "RunWarning",
    "se", "thresholds", "amp", "gd", "erm", "smi", "sweep", "plot", "bench", "device",
]
