"""The accuracy of GAMP-RIE and gradient descent at reduced precision, against fp64 from the
same seed (docs/validation/precision.md).

For each case (a channel, rho and alpha below, at or above its transition) and each precision,
it runs the same teachers and data as fp64 (the seed fixes them) and reports, over the seeds:

- the final error's mean, and the seed-to-seed spread of fp64's (the standard deviation);
- the largest |final error - fp64's| over the seeds, and that over the spread: a precision may
  be a default only where this is below 0.1;
- the largest |error - fp64's| along the whole trajectory (GAMP-RIE: every iteration).

    python3 bench/precision_study.py                 # D = 200 (GD: 100), 4 seeds, every case (CPU)
    python3 bench/precision_study.py --D 400 --seeds 8 --device cuda

It drives the engine through the Python package (PYTHONPATH=python, or pip install ./python) and
writes <out>/study.csv (one row per case, precision and seed) and <out>/study.md (the table).

Each case at each precision is a sweep (`aim sweep`, with trace = true) whose runs are the seeds:
its file is <out>/<case>/<precision>.toml and its folder <out>/<case>/<precision>/. Run the same
command again (after an interruption, with more precisions or cases, or with more seeds: the
sweeps grow) and only the runs the sweeps' journals lack are computed. A case swept at other
settings (D, steps, or seeds the new command leaves out) is refused; --fresh runs everything
again.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

import pandas as pd  # noqa: E402

import aimtheory as aim  # noqa: E402

PRECISIONS = ["fp32", "tf32", "bf16x9"]

# (name, job, keyword arguments): each below, at and above its transition. Softmax: alpha_PR
# (rho = 0.5: 0.1875 at T = 2, 0.075 at T = 3); hardmax T = 2: its weak-recovery region and
# beyond (no finite alpha_PR).
CASES = [
    ("softmax T=2 below", "amp", dict(channel="softmax", T=2, rho=0.5, alpha=0.1)),
    ("softmax T=2 at", "amp", dict(channel="softmax", T=2, rho=0.5, alpha=0.1875)),
    ("softmax T=2 above", "amp", dict(channel="softmax", T=2, rho=0.5, alpha=0.22)),
    ("softmax T=3 below", "amp", dict(channel="softmax", T=3, rho=0.5, alpha=0.04)),
    ("softmax T=3 at", "amp", dict(channel="softmax", T=3, rho=0.5, alpha=0.075)),
    ("softmax T=3 above", "amp", dict(channel="softmax", T=3, rho=0.5, alpha=0.09)),
    ("hardmax T=2 low", "amp", dict(channel="hardmax", T=2, rho=0.5, alpha=0.2)),
    ("hardmax T=2 high", "amp", dict(channel="hardmax", T=2, rho=0.5, alpha=1.0)),
    ("gd single", "gd", dict(T=2, rho=0.5, alpha=0.15, restarts=1)),
    ("gd averaged", "gd", dict(T=2, rho=0.5, alpha=0.15, restarts=8)),
]


def toml(value) -> str:
    """A grid value as a sweep file writes it: strings quoted, booleans and numbers bare."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def sweep_file(out: Path, job: str, kwargs: dict, precision: str, args) -> str:
    """The sweep of one case at one precision: its runs are the seeds, each keeping its trace."""
    grid = {**kwargs, "D": args.D, "precision": precision}
    if job == "gd":
        grid.update(D=args.gd_D, max_iter=args.gd_steps, trace_every=max(1, args.gd_steps // 50))
    lines = [f"job = {toml(job)}", f"out = {toml(str(out))}", f"seeds = {args.seeds}", f"seed = {args.seed}",
             f"device = {toml(args.device)}", "trace = true", "", "[grid]"]
    lines += [f"{k.replace('_', '-')} = {toml(v)}" for k, v in grid.items()]
    return "\n".join(lines) + "\n"


def run(job: str, kwargs: dict, precision: str, args, folder: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One case at one precision, as a sweep in folder/<precision> (resumed where it stopped):
    its rows (one per seed) and its trace."""
    out = folder / precision
    if args.fresh:
        shutil.rmtree(out, ignore_errors=True)
    spec = folder / f"{precision}.toml"
    before = spec.read_text() if spec.exists() else None
    spec.write_text(sweep_file(out, job, kwargs, precision, args))
    try:
        result = aim.sweep.run(spec=str(spec), progress=sys.stderr.isatty())
    except aim.BadInput as e:
        other = re.search(r"holds the results of another sweep \(.*?\): (.*); use another out", str(e))
        if not other:
            raise
        if before is not None:  # the file that describes the folder
            spec.write_text(before)
        sys.exit(f"{out} holds this case at other settings ({other.group(1)}): add --fresh to replace "
                 f"it, or use another --out")
    sessions = json.loads((out / "results.json").read_text())["sessions"]
    builds = sorted({s["version"] for s in sessions if s["runs"] > 0})
    print(f"{folder.name} {precision}: {len(result.df)} runs in {out}, {sessions[-1]['runs']} computed now", flush=True)
    if len(builds) > 1:
        print(f"warning: the runs of {out} come from the builds {', '.join(builds)}", flush=True)
    return result.df, pd.read_csv(out / "trace.csv")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--D", type=int, default=200)
    p.add_argument("--seeds", type=int, default=4)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--device", default="cpu")
    p.add_argument("--gd-D", type=int, default=100, help="the dimension of the gradient-descent cases")
    p.add_argument("--gd-steps", type=int, default=300)
    p.add_argument("--cases", default="", help="comma list of case names to run (default: all)")
    p.add_argument("--precisions", default=",".join(PRECISIONS),
                   help="comma list of the reduced precisions to compare with fp64, in the order they run")
    p.add_argument("--out", default="", help="the study's folder (default: results/precision/D<D>)")
    p.add_argument("--fresh", action="store_true", help="run every run again, even one finished in --out")
    args = p.parse_args()
    out = Path(args.out or f"results/precision/D{args.D}")
    out.mkdir(parents=True, exist_ok=True)
    wanted = [c.strip() for c in args.cases.split(",") if c.strip()]
    precisions = [q.strip() for q in args.precisions.split(",") if q.strip()]
    if unknown := [q for q in precisions if q not in PRECISIONS]:
        p.error(f"--precisions: {', '.join(unknown)}: want some of {', '.join(PRECISIONS)}")
    rows, table = [], []
    for case, job, kwargs in CASES:
        if wanted and case not in wanted:
            continue
        folder = out / case.replace(" ", "_").replace("=", "")
        folder.mkdir(parents=True, exist_ok=True)
        ref, ref_trace = run(job, kwargs, "fp64", args, folder)
        err = "error" if "error" in ref.columns else "test_error"
        spread = ref[err].std(ddof=1) if len(ref) > 1 else math.nan
        step = "iter" if "iter" in ref_trace.columns else "step"
        for precision in precisions:
            df, trace = run(job, kwargs, precision, args, folder)
            diff = (df[err] - ref[err]).abs()
            merged = trace.merge(ref_trace, on=["seed", step] + [c for c in ("rho", "alpha") if c in trace.columns],
                                 suffixes=("", "_ref"))
            terr = "error" if "error" in trace.columns else err
            traj = (merged[terr] - merged[terr + "_ref"]).abs().max()
            for s, e, e64 in zip(df["seed"], df[err], ref[err]):
                rows.append(dict(case=case, precision=precision, D=args.D, seed=s, error=e, error_fp64=e64))
            table.append(dict(case=case, precision=precision, error=df[err].mean(), error_fp64=ref[err].mean(),
                              spread_fp64=spread, max_final_diff=diff.max(), diff_over_spread=diff.max() / spread,
                              max_trajectory_diff=traj))
            print(f"{case:20s} {precision:7s} error {df[err].mean():.6f} fp64 {ref[err].mean():.6f} "
                  f"spread {spread:.2e} |diff| {diff.max():.2e} ({diff.max() / spread:.3f} of the spread) "
                  f"trajectory {traj:.2e}", flush=True)
    pd.DataFrame(rows).to_csv(out / "study.csv", index=False)
    t = pd.DataFrame(table)
    lines = [f"D = {args.D}, {args.seeds} seeds from {args.seed}, device {args.device}", "",
             "| case | precision | mean error | fp64 | fp64 spread | max |diff| | / spread | trajectory |",
             "|---|---|---|---|---|---|---|---|"]
    for r in t.itertuples():
        lines.append(f"| {r.case} | {r.precision} | {r.error:.6f} | {r.error_fp64:.6f} | {r.spread_fp64:.2e} | "
                     f"{r.max_final_diff:.2e} | {r.diff_over_spread:.3f} | {r.max_trajectory_diff:.2e} |")
    (out / "study.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
