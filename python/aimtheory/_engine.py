"""Finding, checking and building the `aim` engine binary that the jobs run."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from ._errors import EngineError, EngineNotFound

#: The Go module of the engine; a go.mod naming it marks the repository root.
MODULE = "github.com/aimtheory/aim"



# The resolved binary for one value of $AIM_BIN: (AIM_BIN or None, path).
_found: tuple[str | None, str] | None = None


def cache_dir() -> Path:
    """The folder build() installs the engine into outside the source tree: <cache>/aimtheory/bin."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "aimtheory" / "bin"


def source_root() -> Path | None:
    """The engine's repository root when this package runs from its source tree (python/aimtheory), else None."""
    root = Path(__file__).resolve().parent.parent.parent
    try:
        gomod = (root / "go.mod").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in gomod.splitlines():
        if line.split() == ["module", MODULE]:
            return root
    return None


def _version_line(path: str) -> str | None:
    """The first line `path version` prints when it is the aim engine (it starts "aim v"), else None."""
    try:
        done = subprocess.run([path, "version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    line = done.stdout.strip().splitlines()[0] if done.stdout.strip() else ""
    return line if done.returncode == 0 and line.startswith("aim v") else None


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def binary() -> str:
    """The path of the engine binary the jobs run.

    Searched in order: $AIM_BIN; `aim` on PATH when `aim version` says it is the engine (the
    experiment tracker of the same name also installs an `aim` command, which is skipped); the
    repository's bin/aim when the package runs from the source tree; the cache folder that
    build() installs into. The answer is kept for the process and looked up again when $AIM_BIN
    changes or the binary disappears.
    """
    global _found
    env = os.environ.get("AIM_BIN") or None
    if _found is not None and _found[0] == env and os.path.isfile(_found[1]):
        return _found[1]
    searched = []
    if env is not None:
        if not _executable(Path(env)):
            raise EngineNotFound(f"$AIM_BIN is {env!r}, which is not an executable file")
        _found = (env, str(Path(env).resolve()))
        return _found[1]
    searched.append("$AIM_BIN (not set)")
    on_path = shutil.which("aim")
    if on_path is not None:
        if _version_line(on_path) is not None:
            _found = (env, on_path)
            return on_path
        searched.append(f"{on_path} on PATH (skipped: `aim version` does not print 'aim v...'; "
                        "probably the Python experiment tracker's `aim`)")
    else:
        searched.append("`aim` on PATH (none)")
    root = source_root()
    if root is not None:
        candidate = root / "bin" / "aim"
        if _executable(candidate):
            _found = (env, str(candidate))
            return _found[1]
        searched.append(f"{candidate} (the source tree's build, absent)")
    candidate = cache_dir() / "aim"
    if _executable(candidate):
        _found = (env, str(candidate))
        return _found[1]
    searched.append(f"{candidate} (the cache, absent)")
    raise EngineNotFound("the aim engine was not found; searched: " + "; ".join(searched)
                         + ". Call aimtheory.build() to build it (needs Go), or set $AIM_BIN.")


def version() -> str:
    """The engine's version line, e.g. 'aim v0.1.0 (commit abc, go1.26.8)'."""
    path = binary()
    done = subprocess.run([path, "version"], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise EngineError(f"{path} version exited {done.returncode}: {done.stderr.strip()}",
                          status=done.returncode)
    return done.stdout.strip()


def build() -> str:
    """Build the engine with Go and return the binary's path.

    In the source tree: `go build -ldflags "-X main.version=<git describe>" -o bin/aim ./cmd/aim`
    with CGO_ENABLED=0, as `make build` does. Elsewhere: `go install MODULE/cmd/aim@<the release the jobs were generated from>`
    into the cache folder (GOBIN). A failure raises EngineError with go's message.
    """
    global _found
    go = shutil.which("go")
    if go is None:
        raise EngineNotFound("building the aim engine needs the Go toolchain (`go` on PATH): https://go.dev/dl/")
    env = dict(os.environ, CGO_ENABLED="0")
    root = source_root()
    if root is not None:
        try:
            described = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=root,
                                       capture_output=True, text=True, timeout=60)
            tag = described.stdout.strip() if described.returncode == 0 and described.stdout.strip() else "devel"
        except (OSError, subprocess.SubprocessError):
            tag = "devel"
        target = root / "bin" / "aim"
        argv = [go, "build", "-ldflags", f"-X main.version={tag}", "-o", str(target), "./cmd/aim"]
        cwd = str(root)
    else:
        from ._jobs import ENGINE_VERSION  # the release the job functions were generated from
        target = cache_dir() / "aim"
        target.parent.mkdir(parents=True, exist_ok=True)
        env["GOBIN"] = str(target.parent)
        argv = [go, "install", f"{MODULE}/cmd/aim@v{ENGINE_VERSION.lstrip('v')}"]
        cwd = None
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise EngineError(f"{' '.join(argv)} failed (exit {done.returncode}):\n{done.stderr.strip()}",
                          status=done.returncode, stderr=done.stderr)
    _found = None
    return str(target)
