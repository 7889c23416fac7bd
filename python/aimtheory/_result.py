"""Result (a table the engine wrote, with its manifest) and Figure (a figure file it drew)."""
from __future__ import annotations

import html
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Sequence

_IMAGE_SUFFIXES = (".png", ".svg", ".pdf")


class Figure:
    """A figure file the engine drew (PNG, SVG or PDF); notebooks show PNG and SVG inline."""

    def __init__(self, path: str | os.PathLike, stdout: str = "", stderr: str = ""):
        self.path = Path(path)
        self.stdout = stdout
        self.stderr = stderr

    def __fspath__(self) -> str:
        return str(self.path)

    def __repr__(self) -> str:
        return f"Figure({str(self.path)!r})"

    def _repr_png_(self) -> bytes | None:
        if self.path.suffix.lower() == ".png" and self.path.is_file():
            return self.path.read_bytes()
        return None

    def _repr_svg_(self) -> str | None:
        if self.path.suffix.lower() == ".svg" and self.path.is_file():
            return self.path.read_text(encoding="utf-8")
        return None


class Result:
    """A table the engine wrote: the CSV at .path and the JSON manifest beside it.

    .df is the table as pandas reads the CSV (loaded once, on first use), .manifest the manifest
    as a dict ({} when there is none), .files the files the run wrote that exist. A Result of an
    interrupted or timed-out run holds the rows that finished (.complete is False, .missing
    lists the others); one whose points did not all converge has the engine's message in .failed.
    """

    def __init__(self, path: str | os.PathLike, *, cwd: str | os.PathLike | None = None,
                 command: str | None = None, stdout: str = "", stderr: str = "",
                 failed: str | None = None, plot_path: str | os.PathLike | None = None):
        self.path = Path(path) if cwd is None else Path(cwd, path)
        self.cwd = Path(cwd) if cwd is not None else None
        self._command = command
        self.stdout = stdout
        self.stderr = stderr
        self.failed = failed
        self._plot_path = Path(self.cwd or ".", plot_path) if plot_path else None
        self._df = None
        self._manifest: dict | None = None

    def __fspath__(self) -> str:
        """The CSV's path, so that a Result can be passed where a file is expected (e.g. amp(se=...))."""
        return str(self.path)

    # The table and its manifest.

    @property
    def df(self):
        """The table as a pandas DataFrame, exactly as pandas.read_csv(self.path) reads it."""
        if self._df is None:
            import pandas as pd
            self._df = pd.read_csv(self.path)
        return self._df

    @property
    def manifest_path(self) -> Path:
        """The manifest's path: the CSV's with .json."""
        return self.path.with_suffix(".json")

    @property
    def manifest(self) -> dict:
        """The JSON manifest beside the CSV as a dict; {} when there is none."""
        if self._manifest is None:
            try:
                with open(self.manifest_path, encoding="utf-8") as f:
                    self._manifest = json.load(f)
            except FileNotFoundError:
                self._manifest = {}
        return self._manifest

    def _resolve(self, name: str) -> Path | None:
        """A path of the manifest as a file that exists: absolute, or relative to the run's folder."""
        p = Path(name)
        if p.is_absolute():
            return p if p.exists() else None
        bases = [self.cwd] if self.cwd is not None else [Path.cwd()]
        bases.append(self.path.parent)
        for base in bases:
            if (base / p).exists():
                return (base / p).resolve()
        if (self.path.parent / p.name).exists():
            return (self.path.parent / p.name).resolve()
        return None

    @property
    def files(self) -> list[Path]:
        """The files the run wrote (the manifest's outputs) that exist."""
        found = []
        for name in self.manifest.get("outputs", []) or []:
            p = self._resolve(str(name))
            if p is not None:
                found.append(p)
        return found

    @property
    def command(self) -> str | None:
        """The engine command that wrote the table, e.g. 'amp' or 'smi se'."""
        return self.manifest.get("command") or self._command

    @property
    def args(self) -> list[str]:
        """The engine's command line (its manifest's args)."""
        return list(self.manifest.get("args", []) or [])

    @property
    def parameters(self) -> dict:
        """The run's parameters as the manifest records them."""
        return dict(self.manifest.get("parameters", {}) or {})

    @property
    def complete(self) -> bool:
        """Whether every row of the run was written (False after an interruption or a timeout)."""
        return bool(self.manifest.get("complete", True))

    @property
    def missing(self) -> list:
        """The rows an interrupted run did not finish, as the manifest names them."""
        return list(self.manifest.get("missing", []) or [])

    # Figures.

    def _engine_figure(self) -> Path | None:
        if self._plot_path is not None:
            return self._plot_path if self._plot_path.is_file() else None
        images = [p for p in self.files if p.suffix.lower() in _IMAGE_SUFFIXES]
        for p in images:
            if p.stem == self.path.stem:
                return p
        return images[0] if images else None

    def plot(self, **kwargs: Any) -> Figure:
        """The figure of this table: the one the engine drew, or with keyword arguments
        (those of aimtheory.plot: x, axes, size, title, out) a new one drawn by `aim plot`."""
        if not kwargs:
            drawn = self._engine_figure()
            if drawn is not None:
                return Figure(drawn)
        from . import _jobs
        if kwargs.get("out") is None:
            kwargs["out"] = os.path.join(tempfile.mkdtemp(prefix="aimtheory-"), self.path.stem + ".png")
        return _jobs.plot(self.path, **kwargs)

    # Arrays.

    def _list_columns(self) -> list[str]:
        """The numeric columns named after the command's list-typed (grid) flags (not --device,
        which is list-typed too but names where the run ran), but a column without a value (aim
        se's and aim erm's D, empty for the MP teacher, whose theory has no D)."""
        from . import _jobs
        command = self.manifest.get("job") or self.command or ""
        name = "_" + command.upper().replace(" ", "_").replace("-", "_") + "_FLAGS"
        flags = getattr(_jobs, name, None) or {}
        cols = []
        for py, (flag, typ) in flags.items():
            if typ != "list":
                continue
            for col in (py, flag.replace("-", "_"), flag):
                if col in self.df.columns and col not in cols and self.df[col].dtype.kind in "iuf" and self.df[col].notna().any():
                    cols.append(col)
                    break
        order = list(self.df.columns)
        return sorted(cols, key=order.index)  # the table's order, which is the grid's nesting

    def default_dims(self) -> list[str]:
        """The dimensions to_xarray uses by default: the numeric columns of the command's grid
        (list-typed) flags, then seed and the record's counter (iteration, step or update) where they vary."""
        dims = self._list_columns()
        for col in ("seed", "iteration", "step", "update"):
            if col in self.df.columns and col not in dims and self.df[col].nunique(dropna=False) > 1:
                dims.append(col)
        return dims

    def to_xarray(self, dims: Sequence[str] | None = None):
        """The table as an xarray Dataset indexed by dims (default: default_dims(), e.g. rho, alpha
        and seed for aim amp).

        Raises ValueError naming the duplicated keys when dims do not identify the rows.
        """
        try:
            import xarray  # noqa: F401
        except ImportError as e:
            raise ImportError("Result.to_xarray needs xarray: pip install 'aimtheory[xarray]' "
                              "(or pip install xarray)") from e
        df = self.df
        dims = list(self.default_dims() if dims is None else dims)
        absent = [d for d in dims if d not in df.columns]
        if absent:
            raise ValueError(f"to_xarray: no column {absent} in the table (columns: {list(df.columns)})")
        if not dims:
            raise ValueError("to_xarray: no dimensions found; pass dims=[...] naming the columns that index the rows")
        dup = df.duplicated(dims, keep=False)
        if dup.any():
            keys = df.loc[dup, dims].drop_duplicates().head(5).to_dict("records")
            raise ValueError(f"to_xarray: the columns {dims} do not identify the rows; "
                             f"{int(dup.sum())} rows share keys, e.g. {keys}; pass dims=[...] with more columns")
        return df.set_index(dims).to_xarray()

    # Display.

    def __repr__(self) -> str:
        parts = [f"Result({str(self.path)!r}"]
        if self.command:
            parts.append(f"command={self.command!r}")
        try:
            parts.append(f"rows={len(self.df)}")
        except Exception:  # a repr must not raise
            pass
        if not self.complete:
            parts.append("complete=False")
        if self.failed:
            parts.append("failed=True")
        return ", ".join(parts) + ")"

    def _repr_html_(self) -> str:
        head = f"<b>aim {html.escape(self.command or '')}</b>: {html.escape(str(self.path))}"
        df = self.df
        notes = [f"{len(df)} rows x {len(df.columns)} columns"]
        if not self.complete:
            notes.append(f"incomplete: {len(self.missing)} missing")
        if self.failed:
            notes.append("some points did not converge")
        return f"<div><p>{head} ({html.escape('; '.join(notes))})</p>{df.head(10).to_html()}</div>"


def load(path: str | os.PathLike) -> Result:
    """A Result rebuilt from a CSV the engine wrote and its manifest (the path of the .csv or the .json)."""
    p = Path(path)
    if p.suffix.lower() == ".json":
        p = p.with_suffix(".csv")
    if not p.is_file():
        raise FileNotFoundError(f"no CSV at {p}")
    return Result(p.resolve())
