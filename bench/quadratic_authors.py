#!/usr/bin/env python3
"""The authors' GAMP-RIE for the extensive-width quadratic network, timed.

Maillard et al., arXiv 2408.03733, ship their AMP in AMP.ipynb of
github.com/SPOC-group/ExtensiveWidthQuadraticSamples (GPL-3). None of that code is in this
repository: this script reads the notebook at run time from a path you give (a clone, or a bare
git mirror, read with `git -C PATH show HEAD:AMP.ipynb`), keeps only the imports and the
definitions of solve_poly, edges_rho, rho, integral_rho, f_RIE, F_RIE, data_generation and AMP
(the first code cell and the "Functions for AMP" cells, without their plotting, their LaTeX
rcParams or their experiment calls), executes them, draws one data set with their
data_generation and runs their AMP for a fixed number of iterations (tol 0, so it never stops
early). It prints one JSON line:

  seconds_per_iter      mean wall time of iterations 2..iters (iteration 1 also carries
                        AMP's setup, uX = X / sqrt(D), and is reported on its own)
  first_iter_seconds    iteration 1 with AMP's setup
  rie_seconds_per_iter  of which f_RIE + F_RIE (eig, the per-eigenvalue cubic roots, the
                        quad integral); the rest is the N x D x D contractions
  eig_seconds_per_iter  of which np.linalg.eig (general, not symmetric: LAPACK dgeev), with
                        eig_complex_calls (calls that returned complex eigenvalues) and
                        max_rel_asymmetry_of_R (||R - R^T||_F / ||R||_F, the largest seen)
  datagen_seconds       data_generation alone
  peak_rss_gib          the peak RSS of the whole process (ru_maxrss; data generation included)
  datagen_peak_rss_gib  the peak up to the end of data_generation
  amp_peak_rss_gib      the peak during AMP alone (the peak is reset before it through
                        /proc/self/clear_refs; null where that is not possible)
  error                 what AMP returns: ||hatS sqrt(D) - S||^2 / D^2 of its last-but-one iterate
  error_final           the same of the iterate it returns

Both data_generation and AMP materialise N x D x D float64 arrays (N = alpha D^2): about three
at once, 3 * 8 N D^2 bytes. The script refuses to start when that estimate is over --max-gib.

  /usr/bin/python3 bench/quadratic_authors.py --authors /path/to/ExtensiveWidthQuadraticSamples \\
      --D 100 --alpha 0.25 --kappa 0.5 --noise 0 --iters 5 --seed 1

Needs numpy and scipy (the notebook's matplotlib, pandas and tqdm imports are skipped). Set
OPENBLAS_NUM_THREADS (or the BLAS's own variable) before running to fix NumPy's thread count.
"""

import argparse
import ast
import json
import os
import resource
import subprocess
import sys
import time

WANTED = ("solve_poly", "edges_rho", "rho", "integral_rho", "f_RIE", "F_RIE", "data_generation", "AMP")
SKIPPED_IMPORTS = ("matplotlib", "tqdm", "pandas")  # plotting, progress bars, tables: unused by WANTED


def load_notebook(path):
    """The notebook's JSON, from PATH/AMP.ipynb or from HEAD of a (bare) git repository."""
    nb = os.path.join(path, "AMP.ipynb")
    if os.path.isfile(nb):
        with open(nb, encoding="utf-8") as f:
            return json.load(f), nb
    try:
        out = subprocess.run(["git", "-C", path, "show", "HEAD:AMP.ipynb"], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as e:
        err = getattr(e, "stderr", b"") or b""
        sys.exit(f"quadratic_authors: no AMP.ipynb in {path}, and `git -C {path} show HEAD:AMP.ipynb` failed: "
                 f"{err.decode(errors='replace').strip() or e}")
    return json.loads(out.stdout), f"{path} (git HEAD:AMP.ipynb)"


def authors_namespace(notebook):
    """Executes the imports and the wanted definitions of the notebook's code cells; returns
    the namespace they were defined in. Top-level statements (plots, rcParams, experiment
    runs) are left out, so are definitions not in WANTED."""
    kept = []
    found = set()
    for cell in notebook["cells"]:
        if cell.get("cell_type") != "code":
            continue
        src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        # Notebook magics and shell lines are not Python.
        src = "\n".join("" if l.lstrip().startswith(("%", "!")) else l for l in src.splitlines())
        try:
            tree = ast.parse(src)
        except SyntaxError:
            continue
        defs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in WANTED]
        if not defs:
            continue
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                if any(m.split(".")[0] in SKIPPED_IMPORTS for m in mods):
                    continue
                kept.append(node)
        for d in defs:
            if d.name not in found:  # the first definition, as the notebook runs top to bottom
                found.add(d.name)
                kept.append(d)
    missing = [n for n in WANTED if n not in found]
    if missing:
        sys.exit(f"quadratic_authors: the notebook defines no {', '.join(missing)}")
    ns = {"__name__": "authors_amp"}
    exec(compile(ast.Module(body=kept, type_ignores=[]), "AMP.ipynb", "exec"), ns)
    return ns


def vmhwm_reset():
    """Resets the process's peak RSS (Linux >= 4.0); False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False



def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--authors", required=True, help="clone of ExtensiveWidthQuadraticSamples, or its bare git mirror")
    ap.add_argument("--D", type=int, default=100)
    ap.add_argument("--alpha", type=float, default=0.25, help="N = int(alpha D^2)")
    ap.add_argument("--kappa", type=float, default=0.5, help="width ratio R/D (the notebook's beta)")
    ap.add_argument("--noise", type=float, default=0.0, help="label noise variance Delta")
    ap.add_argument("--iters", type=int, default=5, help="iterations to time (tol 0: no early stop)")
    ap.add_argument("--damping", type=float, default=0.5, help="AMP's damping (0.5, as the notebook's AMP_experiment)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-gib", type=float, default=12.0, help="refuse when the estimated peak memory is above this")
    a = ap.parse_args()

    D, N = a.D, int(a.alpha * a.D**2)
    est_gib = (3 * 8 * N * D * D + 64 * 2**20) / 2**30
    if est_gib > a.max_gib:
        sys.exit(f"quadratic_authors: D = {D}, N = {N}: the authors' code holds about three N x D x D float64 "
                 f"arrays at once, an estimated {est_gib:.1f} GiB, over --max-gib {a.max_gib:g}; "
                 f"raise --max-gib if the machine has the memory")
    if a.iters < 1:
        sys.exit("quadratic_authors: --iters must be at least 1")

    nb, source = load_notebook(a.authors)
    ns = authors_namespace(nb)
    np = ns.get("np")
    if np is None:
        import numpy as np
    ns["noise"] = a.noise  # AMP's gOut reads the global `noise`

    # Iteration boundaries: F_RIE is called once per iteration, after f_RIE; wrap both.
    marks, rie = [], []
    f_rie, F_rie = ns["f_RIE"], ns["F_RIE"]

    def f_RIE(*args, **kw):
        t = time.perf_counter()
        r = f_rie(*args, **kw)
        rie.append(time.perf_counter() - t)
        return r

    def F_RIE(*args, **kw):
        t = time.perf_counter()
        r = F_rie(*args, **kw)
        now = time.perf_counter()
        rie[-1] += now - t
        marks.append(now)
        return r

    ns["f_RIE"], ns["F_RIE"] = f_RIE, F_RIE

    # f_RIE decomposes R with the general eig (LAPACK dgeev), though R is symmetric but for
    # rounding: time it, and count the calls that came back complex and R's asymmetry.
    eig_stats = {"seconds": [], "complex": 0, "asym": 0.0}
    eig = np.linalg.eig

    def eig_timed(a):
        t = time.perf_counter()
        w, v = eig(a)
        eig_stats["seconds"].append(time.perf_counter() - t)
        eig_stats["complex"] += int(np.iscomplexobj(w))
        eig_stats["asym"] = max(eig_stats["asym"], float(np.linalg.norm(a - a.T) / np.linalg.norm(a)))
        return w, v

    np.linalg.eig = eig_timed

    np.random.seed(a.seed)
    t = time.perf_counter()
    X, y, S = ns["data_generation"](D, a.kappa, a.alpha, a.noise)
    datagen = time.perf_counter() - t

    datagen_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    reset = vmhwm_reset()  # resets ru_maxrss too: the process's peak is the larger of the two
    t0 = time.perf_counter()
    hatS, err = ns["AMP"](X, y, S, a.kappa, iterations=a.iters, damping=a.damping, tol=0)
    total = time.perf_counter() - t0
    amp_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20 if reset else None
    err_final = float(np.linalg.norm(hatS * np.sqrt(D) - S) ** 2 / D**2)

    iters = len(marks)
    first = marks[0] - t0 if iters else total
    later = [marks[k] - marks[k - 1] for k in range(1, iters)]
    per_iter = sum(later) / len(later) if later else first
    rie_per = sum(rie[1:]) / len(rie[1:]) if len(rie) > 1 else (rie[0] if rie else 0.0)
    print(json.dumps({
        "impl": "authors",
        "source": source,
        "D": D, "N": N, "R": int(a.kappa * D), "alpha": a.alpha, "kappa": a.kappa, "noise": a.noise,
        "damping": a.damping, "seed": a.seed, "iterations": iters,
        "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
        "seconds_per_iter": per_iter,
        "first_iter_seconds": first,
        "first_rie_seconds": rie[0] if rie else None,
        "rie_seconds_per_iter": rie_per,
        "eig_seconds_per_iter": sum(eig_stats["seconds"]) / max(1, len(eig_stats["seconds"])),
        "eig_complex_calls": eig_stats["complex"],
        "max_rel_asymmetry_of_R": eig_stats["asym"],
        "amp_seconds": total,
        "datagen_seconds": datagen,
        "est_peak_gib": est_gib,
        "peak_rss_gib": max(datagen_peak, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20),
        "datagen_peak_rss_gib": datagen_peak,
        "amp_peak_rss_gib": amp_peak,
        "error": float(err),
        "error_final": err_final,
    }))


if __name__ == "__main__":
    main()
