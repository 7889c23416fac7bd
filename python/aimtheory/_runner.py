"""Running one engine command: keyword arguments to argv, the child process, its progress stream,
its exit status to a Result, a Figure, a string or an exception."""
from __future__ import annotations

import json
import logging
import numbers
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Iterable, Mapping, Set
from pathlib import Path
from typing import Any, Sequence, Union

from . import _engine
from ._errors import BadInput, EngineError, Interrupted, RunWarning, Timeout
from ._result import Figure, Result

#: A grid of a list-typed flag: a string as the engine reads it ("0.1,0.2", "a:b:n", "a:b:n:log"),
#: a number, or a sequence of numbers or strings.
Grid = Union[str, float, int, Sequence[Union[float, int, str]]]

#: Seconds a timed-out run gets after its SIGINT to write its finished rows before SIGKILL.
TIMEOUT_GRACE = 30.0

logger = logging.getLogger("aimtheory")

#: Flags the runner sets itself (--progress json for its bar); a job's table may list them.
RUNNER_FLAGS = ("progress", "quiet")



# Keyword arguments to argv.

def _is_bool(v: Any) -> bool:
    return isinstance(v, bool) or type(v).__name__ in ("bool_", "bool8")


def _number(v: Any, what: str) -> str:
    """A number as the engine reads it: ints as int, floats as the shortest repr that round-trips."""
    if hasattr(v, "ndim") and getattr(v, "ndim", None) == 0 and hasattr(v, "item"):
        v = v.item()
    if _is_bool(v):
        raise TypeError(f"{what}: expected a number, got a bool ({v!r})")
    if isinstance(v, numbers.Integral):
        return str(int(v))
    if isinstance(v, numbers.Real):
        return repr(float(v))
    raise TypeError(f"{what}: expected a number, got {type(v).__name__} ({v!r})")


def _integer(v: Any, what: str) -> str:
    if hasattr(v, "ndim") and getattr(v, "ndim", None) == 0 and hasattr(v, "item"):
        v = v.item()
    if _is_bool(v) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{what}: expected an int, got {type(v).__name__} ({v!r})")
    return str(int(v))


def _grid(v: Any, what: str) -> str:
    """A list-typed flag's value: a string as is, a number, or an iterable comma-joined."""
    if isinstance(v, str):
        return v
    if hasattr(v, "ndim") and getattr(v, "ndim", None) == 0 and hasattr(v, "item"):
        v = v.item()
    if isinstance(v, numbers.Real) and not _is_bool(v):
        return _number(v, what)
    if isinstance(v, (bytes, bytearray, Mapping, Set)) or not isinstance(v, Iterable) or _is_bool(v):
        raise TypeError(f"{what}: expected a grid (a string like '0.1,0.2' or 'a:b:n', a number, "
                        f"or a sequence of numbers), got {type(v).__name__} ({v!r})")
    items = []
    for x in v:
        if isinstance(x, str):
            items.append(x)
        else:
            try:
                items.append(_number(x, what))
            except TypeError:
                raise TypeError(f"{what}: the items of a grid must be numbers or strings, "
                                f"got {type(x).__name__} ({x!r})") from None
    if not items:
        raise ValueError(f"{what}: an empty grid")
    return ",".join(items)


def _string(v: Any, what: str) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, (os.PathLike, Result, Figure)):
        return os.fspath(v)
    raise TypeError(f"{what}: expected a str or a path, got {type(v).__name__} ({v!r})")


def to_argv(flags: Mapping[str, tuple[str, str]], values: Mapping[str, Any]) -> list[str]:
    """The engine flags for the keyword arguments `values` of a job whose flags are `flags`
    (python name -> (flag name, flag type)); None values are left out (the engine's default), and
    so are the runner's own flags (RUNNER_FLAGS).
    A value of the wrong Python type raises TypeError before anything runs."""
    argv: list[str] = []
    for py, (flag, typ) in flags.items():
        if flag in RUNNER_FLAGS:
            continue
        v = values.get(py)
        if v is None:
            continue
        what = f"{py} (--{flag}, {typ})"
        if typ == "bool":
            if not _is_bool(v):
                raise TypeError(f"{what}: expected a bool, got {type(v).__name__} ({v!r})")
            argv.append(f"--{flag}" if v else f"--{flag}=false")
            continue
        if typ in ("int", "uint"):
            s = _integer(v, what)
        elif typ == "float":
            s = _number(v, what)
        elif typ == "float|auto":
            if isinstance(v, str):
                if v.strip().lower() != "auto":
                    raise TypeError(f"{what}: expected a number or 'auto', got {v!r}")
                s = "auto"
            else:
                s = _number(v, what)
        elif typ == "list":
            s = _grid(v, what)
        else:  # "string" (and any type this module does not know: passed as text)
            s = _string(v, what)
        argv += [f"--{flag}", s]
    return argv


# Where a run writes.

def _takes_progress(command: str, flags: Mapping[str, tuple[str, str]]) -> bool:
    """Whether the command takes --progress: its flags table lists it."""
    return "progress" in flags


def _writes_table(command: str, flags: Mapping[str, tuple[str, str]], values: Mapping[str, Any]) -> bool:
    """Whether the run writes a table: every command with --out but plot, and se without
    --threshold (which prints the thresholds and writes no file)."""
    return "out" in flags and command != "plot" and not (command == "se" and values.get("threshold"))


def _read_toml(path: Path) -> dict:
    try:
        import tomllib  # Python >= 3.11
    except ImportError:  # pragma: no cover - Python < 3.11
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ImportError:
            return _read_toml_minimal(path)
    with open(path, "rb") as f:
        return tomllib.load(f)


def _read_toml_minimal(path: Path) -> dict:  # pragma: no cover - Python < 3.11 without tomli
    """The top-level `key = "string"` lines of a TOML file (enough for a sweep's out)."""
    import re
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip().startswith("["):
            break
        m = re.match(r'\s*([A-Za-z_][\w-]*)\s*=\s*"((?:[^"\\]|\\.)*)"', line)
        if m:
            found[m.group(1)] = m.group(2)
    return found


def sweep_folder(spec: str | os.PathLike, cwd: str | os.PathLike | None = None) -> Path:
    """The output folder of a sweep file (its `out`), relative paths taken from cwd as the engine does."""
    spec_path = Path(cwd or ".", spec)
    out = _read_toml(spec_path).get("out")
    if not out:
        raise BadInput(f"{spec}: the sweep file has no out")
    return Path(cwd or os.getcwd(), out)


def _sweep_table(spec: str, shard: str | None, cwd: str) -> Path:
    folder = sweep_folder(spec, cwd)
    if shard:
        i, n = shard.split("/")
        folder = folder / f"shard-{int(i)}-of-{int(n)}"
    return folder / "results.csv"


# The progress bar.

class _Bars:
    """tqdm bars fed by the engine's progress events: a new bar whenever the event's "what" changes."""

    def __init__(self, enabled: bool):
        self.tqdm = None
        if enabled:
            try:
                from tqdm.auto import tqdm
                self.tqdm = tqdm
            except ImportError:
                self.tqdm = None
        self.bar = None
        self.what = None

    def update(self, event: Mapping[str, Any]) -> None:
        if self.tqdm is None:
            return
        what = event.get("what")
        total = event.get("total")
        done = event.get("done", 0) or 0
        if self.bar is None or what != self.what:
            self.close()
            self.bar = self.tqdm(total=total, desc=str(what) if what else None, leave=True)
            self.what = what
        if total is not None and self.bar.total != total:
            self.bar.total = total
        step = done - self.bar.n
        if step:
            self.bar.update(step)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


# The child process.

def _reader(stream, sink: list, events: queue.Queue | None) -> None:
    """Reads a child's stream line by line; progress events go to `events`, other lines to `sink`
    (and, for stderr, to the log: warnings are emitted later, from the calling thread)."""
    for line in stream:
        line = line.rstrip("\r\n")
        if events is not None:
            if line.startswith("{"):
                try:
                    event = json.loads(line)
                except ValueError:
                    event = None
                if isinstance(event, dict) and event.get("event") == "progress":
                    events.put(event)
                    continue
            if "warning:" not in line and line.strip():
                logger.info(line)
        sink.append(line)
    stream.close()


def _signal(proc: subprocess.Popen, sig: int) -> None:
    if proc.poll() is not None:
        return
    try:
        if os.name == "posix":
            proc.send_signal(sig)
        else:  # pragma: no cover - Windows: the child's process group gets CTRL_BREAK
            proc.send_signal(signal.CTRL_BREAK_EVENT)  # type: ignore[attr-defined]
    except ProcessLookupError:
        pass


def _wait(proc: subprocess.Popen, events: queue.Queue, bars: _Bars, deadline: float | None) -> int | None:
    """Waits for the child, feeding the bars; None when the deadline passes first."""
    while True:
        try:
            return proc.wait(timeout=0.1)
        except subprocess.TimeoutExpired:
            pass
        finally:
            while True:
                try:
                    bars.update(events.get_nowait())
                except queue.Empty:
                    break
        if deadline is not None and time.monotonic() >= deadline:
            return None


def _message(lines: list[str], command: str) -> str:
    """The engine's last message: from the last line 'aim <command>: ...' that is not a warning to the end."""
    prefixes = (f"aim {command}:", f"aim {command.split()[0]}:")
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith(prefixes) and "warning:" not in lines[i]:
            return "\n".join(lines[i:]).strip()
    return "\n".join(lines).strip()


def run(command: str, flags: Mapping[str, tuple[str, str]], values: Mapping[str, Any],
        positional: str | None = None) -> Any:
    """Runs `aim <command>` with the job's keyword arguments `values` (its locals(): the flags,
    progress, timeout and the positional argument named by `positional`).

    Returns a Result for the commands that write a table (and sweep run and merge), a Figure for
    plot, the engine's stdout as a str for the others (and for se with threshold=True, which
    prints the thresholds and writes no file). Raises BadInput (exit 2), EngineError
    (an unexpected exit), Interrupted (Ctrl-C) and Timeout (the timeout passed), the last two
    carrying the partial Result in .result; a run whose points did not all converge (exit 1)
    returns its Result with .failed set and a RunWarning.
    """
    values = dict(values)
    progress = bool(values.pop("progress", True))
    timeout = values.pop("timeout", None)
    if timeout is not None and (_is_bool(timeout) or not isinstance(timeout, numbers.Real) or timeout <= 0):
        raise TypeError(f"timeout: expected a positive number of seconds, got {timeout!r}")
    cwd = os.getcwd()

    # Where the outputs go: never the engine's results/ default.
    table: Path | None = None
    figure: Path | None = None
    if _writes_table(command, flags, values):
        if values.get("out") is None:
            folder = tempfile.mkdtemp(prefix="aimtheory-")
            values["out"] = os.path.join(folder, command.replace(" ", "-") + ".csv")
        out = Path(cwd, _string(values["out"], "out"))
        table = out
        if "plot" in flags and values.get("plot") is None:
            values["plot"] = str(out.with_suffix(".png"))
    elif command == "plot":
        if values.get("out") is None:
            values["out"] = os.path.join(tempfile.mkdtemp(prefix="aimtheory-"), "plot.png")
        figure = Path(cwd, _string(values["out"], "out"))

    argv = [_engine.binary()] + command.split()
    if _takes_progress(command, flags):
        argv += ["--progress", "json"]
    argv += to_argv(flags, values)
    if positional is not None:
        pos = values.get(positional)
        if positional == "files":
            files = list(pos or ())
            if not files:
                raise TypeError(f"aim {command}: give at least one CSV file")
            argv += [_string(f, "files") for f in files]
        else:
            if pos is None:
                raise TypeError(f"aim {command}: {positional} is required")
            argv.append(_string(pos, positional))
    if command in ("sweep run", "sweep merge"):
        table = _sweep_table(_string(values[positional], positional), values.get("shard"), cwd)

    before = None
    if table is not None and table.exists():
        before = table.stat().st_mtime_ns

    stdout_lines: list[str] = []
    stderr_lines: list[str] = []
    events: queue.Queue = queue.Queue()
    bars = _Bars(progress)
    popen_kw: dict[str, Any] = {}
    if os.name == "posix":
        popen_kw["start_new_session"] = True
    else:  # pragma: no cover
        popen_kw["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP  # type: ignore[attr-defined]
    logger.debug("running %s", " ".join(argv))
    proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, encoding="utf-8", errors="replace",
                            **popen_kw)
    threads = [threading.Thread(target=_reader, args=(proc.stdout, stdout_lines, None), daemon=True),
               threading.Thread(target=_reader, args=(proc.stderr, stderr_lines, events), daemon=True)]
    for t in threads:
        t.start()

    interrupted = timed_out = False
    try:
        try:
            deadline = None if timeout is None else time.monotonic() + float(timeout)
            rc = _wait(proc, events, bars, deadline)
            if rc is None:
                timed_out = True
                _signal(proc, signal.SIGINT)
                rc = _wait(proc, events, bars, time.monotonic() + TIMEOUT_GRACE)
                if rc is None:
                    proc.kill()
                    rc = proc.wait()
        except KeyboardInterrupt:
            interrupted = True
            _signal(proc, signal.SIGINT)
            try:
                rc = _wait(proc, events, bars, None)
            except KeyboardInterrupt:
                _signal(proc, signal.SIGINT)  # the second: the engine quits without writing
                rc = proc.wait()
    finally:
        if proc.poll() is None:  # an exception other than these: leave no child behind
            proc.kill()
            proc.wait()
        for t in threads:
            t.join(timeout=10)
        while True:
            try:
                bars.update(events.get_nowait())
            except queue.Empty:
                break
        bars.close()

    stdout = "\n".join(stdout_lines) + ("\n" if stdout_lines else "")
    stderr = "\n".join(stderr_lines) + ("\n" if stderr_lines else "")
    for line in stderr_lines:
        if "warning:" in line:
            warnings.warn(line, RunWarning, stacklevel=3)

    def written() -> Result | None:
        if table is None or not table.is_file():
            return None
        if before is not None and table.stat().st_mtime_ns == before:
            return None
        return Result(table, cwd=cwd, command=command, stdout=stdout, stderr=stderr,
                      plot_path=values.get("plot") or None if "plot" in flags else None)

    message = _message(stderr_lines, command)
    if interrupted or (rc == 130 and not timed_out):
        raise Interrupted(f"aim {command} was interrupted" + (f": {message}" if message else ""),
                          result=written())
    if timed_out and rc != 0:
        raise Timeout(f"aim {command} passed its timeout of {timeout} s and was stopped"
                      + (f": {message}" if message else ""), result=written())
    if rc == 2:
        raise BadInput(message or f"aim {command}: bad input (exit 2)", stderr=stderr, argv=argv)
    if rc not in (0, 1):
        raise EngineError(f"aim {command} exited with status {rc}" + (f": {message}" if message else ""),
                          status=rc, stderr=stderr, argv=argv)
    failed = message if rc == 1 else None
    if rc == 1:
        warnings.warn(message or f"aim {command}: some points did not converge", RunWarning, stacklevel=3)

    if figure is not None:
        return Figure(figure, stdout=stdout, stderr=stderr)
    if table is not None:
        result = written()
        if result is None:
            raise EngineError(f"aim {command} exited {rc} but wrote no table at {table}"
                              + (f": {message}" if message else ""), status=rc, stderr=stderr, argv=argv)
        result.failed = failed
        return result
    return stdout
