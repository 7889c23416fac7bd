#!/usr/bin/env python3
"""GAMP-RIE for the attention-indexed model in NumPy (or CuPy): the comparison point of aim's
CPU backend (and, with --xp cupy, of its CUDA backend).

This is the same iteration as aim's engine/aim/amp (docs/theory/aim.md section 3, z-coordinates,
softmax channel, the state-evolution start S-hat = sqrt(rho) I, damping 0.5), written the way a careful
NumPy user would write it: no N x D x D tensor, every O(N T D^2) step one BLAS call on the
(N T) x D matrix of tokens, the per-sample T x T work vectorised, the eigendecomposition
numpy.linalg.eigh (LAPACK dsyevd) and the RIE map vectorised over the spectrum.

  forward        Y = X2 @ S-hat (dgemm into a preallocated buffer), H_mu = Y_mu X_mu^T (one
                 einsum pass), centred
  channel        g_out of the softmax in z-coordinates (the projection orthogonal to tau)
  back-project   Z_mu = C_mu X_mu (batched matmul into a preallocated buffer), B = X2^T @ Z2
                 (dgemm); with --symmetric as aim does it, two dsyrk (see back_project)
  denoiser       eigh(R), f(lambda) = lambda - 2 Delta Re g(lambda) from the cubic of
                 MP(rho) [+] SC(Delta), S-hat = (O * f) @ O^T (dgemm), c-hat = mmse(Delta)

Modes (one JSON object per line on stdout):
  --D 200 [--iters 4]           time GAMP-RIE iterations on data drawn here (numpy's generator)
  --data FILE --D 60 ...        run on aim's data (S, X, y as float64, written by the Go test
                                TestNumPyMatchesAIM) and print the error of every iteration
  --eigh 1000 [--reps 3]        time numpy.linalg.eigh of a random symmetric matrix
  --xp cupy                     the same on a GPU through CuPy (cuBLAS products, cupy.linalg.eigh,
                                the data drawn on the GPU by CuPy's generator); the RIE map of
                                the D eigenvalues stays on the host, as a careful user keeps it
Threads: OpenBLAS's default (all cores) unless OPENBLAS_NUM_THREADS says otherwise; the core
type is OpenBLAS's detection unless OPENBLAS_CORETYPE is set (bench/cpu-vs-numpy.sh sets both
to what aim uses).
"""

import argparse
import ctypes
import json
import math
import sys
import time

import numpy as np

# xp is the array module of the iteration and the data: numpy, or cupy with --xp cupy. The RIE
# denoiser's cubic (Spectrum, D eigenvalues) always runs in numpy on the host.
xp = np


def to_host(a):
    """A numpy copy of an array of xp (the array itself under numpy)."""
    return a.get() if hasattr(a, 'get') else np.asarray(a)


# ---------------------------------------------------------------------------------------------
# The RIE denoiser of MP(rho) [+] SC(Delta) (engine/rie): g solves the cubic
#   g^3 + B g^2 + C g + D0 = 0,  B = -(x/Delta + s),  C = s x/Delta + (1 - rho)/Delta,
#   D0 = -s/Delta,  s = sqrt(rho),
# on the physical branch: the root with positive imaginary part inside the support (g(x - i0)),
# and off it the real root between the critical points that bracket the branch.

def cubic_roots(x, rho, delta):
    """The three roots of the cubic at every x (shape (n, 3), complex), by companion matrices."""
    s = math.sqrt(rho)
    x = np.asarray(x, dtype=float)
    B = -(x / delta + s)
    C = s * x / delta + (1 - rho) / delta
    D0 = np.full_like(x, -s / delta)
    comp = np.zeros(x.shape + (3, 3))
    comp[..., 0, 0] = -B
    comp[..., 0, 1] = -C
    comp[..., 0, 2] = -D0
    comp[..., 1, 0] = 1
    comp[..., 2, 1] = 1
    return np.linalg.eigvals(comp)


class Spectrum:
    """MP(rho) [+] SC(delta): support edges, the physical Stieltjes transform, the mmse."""

    def __init__(self, rho, delta):
        self.rho, self.delta, self.s = rho, delta, math.sqrt(rho)
        s = self.s
        # Critical points of z(g) = delta g + ((1 - rho) g - s)/(g (g - s)): the real roots of
        # q(u) = delta u^2 (u - s)^2 - (u - s)^2 + rho u^2 (engine/rie/spectrum.go).
        big = 1 / math.sqrt(delta)
        # q(u) = delta u^4 - 2 delta s u^3 + (delta s^2 - 1 + rho) u^2 + 2 s u - s^2
        r = np.roots([delta, -2 * delta * s, delta * s * s - 1 + rho, 2 * s, -s * s])
        r = np.sort(r[np.abs(r.imag) < 1e-9 * (1 + np.abs(r.real))].real)
        pick = lambda lo, hi: self._polish(r[(r > lo) & (r < hi)][0], lo, hi)
        g1, g2 = pick(-big, 0.0), pick(0.0, s)
        self.gedge = [g1, g2]
        if rho < 1:
            ustar = s / (1 - rho ** (1 / 3))
            if ustar < big and self.q(ustar) < 0:
                g3, g4 = pick(s, ustar), pick(ustar, big)
                self.gedge = [g1, g4, g3, g2]
        self.edges = [self.z(g) for g in self.gedge]
        self._nodes()

    def q(self, u):
        v = u - self.s
        return self.delta * u * u * v * v - v * v + self.rho * u * u

    def z(self, g):
        return self.delta * g + ((1 - self.rho) * g - self.s) / (g * (g - self.s))

    def _polish(self, u, lo, hi):
        # Bisection on q's sign change, to full precision (np.roots is good to ~1e-12).
        flo = self.q(lo)
        a, b = lo, hi
        for _ in range(200):
            m = 0.5 * (a + b)
            if m <= a or m >= b:
                break
            if (self.q(m) < 0) == (flo < 0):
                a = m
            else:
                b = m
        return 0.5 * (a + b)

    def stieltjes_re(self, x):
        """Re g(x - i0) at every x (vectorised)."""
        x = np.asarray(x, dtype=float)
        roots = cubic_roots(x, self.rho, self.delta)
        e, ge = self.edges, self.gedge
        out = np.empty_like(x)
        inside = (x > e[0]) & (x < e[1])
        if len(e) == 4:
            inside |= (x > e[2]) & (x < e[3])
        # Inside the support: the complex root with the largest imaginary part.
        ri = roots[inside]
        out[inside] = ri[np.arange(len(ri)), np.argmax(ri.imag, axis=1)].real
        # Outside: the real root inside the bracket of the branch.
        lo = np.where(x <= e[0], ge[0], 0.0)
        hi = np.where(x <= e[0], 0.0, ge[-1])
        if len(e) == 4:
            gap = (x >= e[1]) & (x <= e[2])
            lo, hi = np.where(gap, ge[2], lo), np.where(gap, ge[1], hi)
        outside = ~inside
        rr = roots[outside].real
        l, h = lo[outside][:, None], hi[outside][:, None]
        # The bracketed root; where rounding puts it a hair outside, the nearest one.
        dist = np.maximum(l - rr, 0) + np.maximum(rr - h, 0) + np.abs(roots[outside].imag)
        out[outside] = rr[np.arange(len(rr)), np.argmin(dist, axis=1)]
        return out

    def denoise(self, lam):
        return lam - 2 * self.delta * self.stieltjes_re(lam)

    _gl = None  # Gauss-Legendre nodes and weights, computed once

    def _nodes(self, n=400):
        # Gauss-Legendre in theta on every bulk, x = a + (b - a)(1 - cos theta)/2: the square-root
        # edges become analytic, and the rule converges exponentially.
        if Spectrum._gl is None:
            Spectrum._gl = np.polynomial.legendre.leggauss(n)
        t, w = Spectrum._gl
        theta = 0.5 * math.pi * (t + 1)
        xs, ws = [], []
        for a, b in zip(self.edges[0::2], self.edges[1::2]):
            xs.append(a + 0.5 * (b - a) * (1 - np.cos(theta)))
            ws.append(w * 0.5 * math.pi * 0.5 * (b - a) * np.sin(theta))
        self.qx, self.qw = np.concatenate(xs), np.concatenate(ws)

    def mmse(self):
        """mmse(Delta; rho) = Delta - (4 pi^2 / 3) Delta^2 int mu^3 dx (engine/rie/quad.go)."""
        roots = cubic_roots(self.qx, self.rho, self.delta)
        mu = np.max(roots.imag, axis=1) / math.pi
        d = self.delta
        return d - (4 * math.pi ** 2 / 3) * d * d * np.sum(self.qw * mu ** 3)


# ---------------------------------------------------------------------------------------------
# The softmax channel in z-coordinates: z_ab = tau_ab h_ab (tau_aa = 1, tau_ab = sqrt 2), packed
# over a <= b. phi_ab = log(y_ab / y_aT)/beta; the particular solution (h_TT = 0) is
# h^p_ab = phi_Ta + phi_ab, and g_out = [(z^p - omega) - tau (tau . (z^p - omega))/T^2]/V.

class Softmax:
    def __init__(self, y, T, beta):
        self.T = T
        iu = tuple(xp.asarray(i) for i in np.triu_indices(T))
        self.iu = iu
        self.tau = xp.asarray(np.where(np.triu_indices(T)[0] == np.triu_indices(T)[1], 1.0, math.sqrt(2.0)))
        logy = xp.log(xp.maximum(y, 2.0 ** -1022))
        phi = (logy - logy[:, :, T - 1:T]) / beta          # phi_ab = log(y_ab/y_aT)/beta
        hp = phi[:, T - 1, :][:, iu[0]] + phi[:, iu[0], iu[1]]  # h^p_ab, a <= b
        self.zp = self.tau * hp                            # packed z^p, (N, M): fixed by y

    def gout(self, omega_packed, V):
        d = self.zp - omega_packed
        c = (d @ self.tau) / (self.T * self.T)
        return (d - c[:, None] * self.tau) / V


# ---------------------------------------------------------------------------------------------
# GAMP-RIE.

def token_dots(Y, X, T, out=None):
    """H_mu,ab = sum_i Y_mu,a,i X_mu,b,i, packed over a <= b (H is symmetric when Y = X S).
    One einsum pass over Y and X (measured faster than T^2 dot passes or a batched matmul)."""
    iu = tuple(xp.asarray(i) for i in np.triu_indices(T))
    if xp is np:
        return np.einsum('nai,nbi->nab', Y, X, out=out)[:, iu[0], iu[1]]
    return xp.einsum('nai,nbi->nab', Y, X)[:, iu[0], iu[1]]  # CuPy's einsum takes no out


def back_project(C, X, Z, symmetric):
    """sum_mu X_mu^T C_mu X_mu for symmetric C_mu, (D, D).

    Default: Z_mu = C_mu X_mu (one batched matmul into the preallocated Z, measured faster than
    einsum or T^2 broadcast passes), then X2^T Z2 (dgemm). symmetric=True does what aim does:
    C_mu = U diag(s) U^T (batched eigh), rows sqrt|s_k| u_k^T X_mu, and P^T P - Q^T Q over the
    rows of positive and negative s_k, which NumPy computes with dsyrk (matmul of a matrix with
    its own transpose), half the multiply-adds of the dgemm.
    """
    N, T, D = X.shape
    if not symmetric:
        xp.matmul(C, X, out=Z)
        return X.reshape(N * T, D).T @ Z.reshape(N * T, D)
    s, U = xp.linalg.eigh(C)
    xp.matmul((xp.sqrt(xp.abs(s))[:, :, None] * U.transpose(0, 2, 1)), X, out=Z)
    rows, sign = Z.reshape(N * T, D), s.reshape(N * T)
    P, Q = rows[sign > 0], rows[sign < 0]
    return P.T @ P - Q.T @ Q


def unpack_sym(p, T, scale_off):
    """Full symmetric (N, T, T) from packed a <= b values, off-diagonal entries times scale_off."""
    iu = np.triu_indices(T)
    off = xp.asarray(iu[0] != iu[1])
    iu = tuple(xp.asarray(i) for i in iu)
    full = xp.empty((p.shape[0], T, T))
    full[:, iu[0], iu[1]] = xp.where(off, p * scale_off, p)
    full[:, iu[1], iu[0]] = xp.where(off, p * scale_off, p)
    return full


def gamp_rie(X, y, S, rho, alpha, beta, iters, damping=0.5, tol=0.0, symmetric=False):
    """Runs GAMP-RIE from the state-evolution start; returns the per-iteration records."""
    N, T, D = X.shape
    X2 = X.reshape(N * T, D)
    sqrtD = math.sqrt(D)
    ch = Softmax(y, T, beta)
    iu = np.triu_indices(T)
    diag = xp.asarray(np.nonzero(iu[0] == iu[1])[0])        # the packed diagonal entries
    eye = xp.arange(D)
    # The N x T x D buffers are allocated once (fresh 100 MB temporaries per iteration would
    # cost page faults), and the products write into them.
    Y, Z, Hfull = xp.empty_like(X), xp.empty_like(X), xp.empty((N, T, T))
    Y2 = Y.reshape(N * T, D)
    S_hat = math.sqrt(rho) * xp.eye(D)
    c_hat, V = 1.0, 2.0
    g = xp.zeros((N, len(iu[0])))                            # packed z-coordinates
    omega = None
    recs = []
    t0 = time.perf_counter()
    for it in range(1, iters + 1):
        v_new = 2 * c_hat
        # Forward: Omega = tau o (X S-hat X^T - Tr S-hat I)/sqrt(D) - V_new g.
        xp.matmul(X2, S_hat, out=Y2)
        H = token_dots(Y, X, T, out=Hfull)
        H[:, diag] -= xp.trace(S_hat)
        Omega = ch.tau * (H / sqrtD) - v_new * g
        if omega is None:
            omega, V = Omega, v_new
        else:
            omega = (1 - damping) * Omega + damping * omega
            V = (1 - damping) * v_new + damping * V
        g = ch.gout(omega, V)
        A = 2 * alpha / N * float(xp.sum(g * g))
        delta = 1 / (2 * A)
        # Back-projection: C_aa = g_aa, C_ab = g_ab / sqrt 2; B = (sum X^T C X - Tr C I)/sqrt(D).
        C = unpack_sym(g, T, 1 / math.sqrt(2))
        trC = xp.sum(g[:, diag])
        B = back_project(C, X, Z, symmetric)
        B[eye, eye] -= trC
        R = S_hat + B / (sqrtD * A * D)
        # The RIE denoiser: the map of the D eigenvalues on the host.
        lam, O = xp.linalg.eigh(R)
        sp = Spectrum(rho, delta)
        S_new = (O * xp.asarray(sp.denoise(to_host(lam)))) @ O.T
        c_hat = sp.mmse()
        step = float(xp.sum((S_new - S_hat) ** 2)) / D
        S_hat = S_new
        err = float(xp.sum((S_hat - S) ** 2)) / D if S is not None else float('nan')
        recs.append({'iter': it, 'error': err, 'step': step, 'delta': delta,
                     'seconds': time.perf_counter() - t0})
        if step < tol:
            break
    return recs


def draw(D, alpha, rho, T, beta, seed):
    """A teacher and its data from the array module's generator (same model as engine/aim)."""
    rng = xp.random.default_rng(seed)
    R, N = int(math.floor(rho * D)), int(math.floor(alpha * D * D))
    W = rng.standard_normal((D, R))
    S = W @ W.T / math.sqrt(R * D)
    X = rng.standard_normal((N, T, D))
    Hp = token_dots((X.reshape(N * T, D) @ S).reshape(N, T, D), X, T).copy()
    Hp[:, xp.asarray(np.nonzero(np.triu_indices(T)[0] == np.triu_indices(T)[1])[0])] -= xp.trace(S)
    h = unpack_sym(Hp / math.sqrt(D), T, 1.0)
    z = beta * h
    z -= z.max(axis=2, keepdims=True)
    y = xp.exp(z)
    y /= y.sum(axis=2, keepdims=True)
    return X, y, S


def blas_info():
    """OpenBLAS's core type and threads, when numpy's BLAS is OpenBLAS (else 'unknown')."""
    for name in ('libopenblas.so.0', 'libblas.so.3', 'libopenblasp-r0.3.21.so'):
        try:
            lib = ctypes.CDLL(name)
            lib.openblas_get_corename.restype = ctypes.c_char_p
            lib.openblas_get_config.restype = ctypes.c_char_p
            return {'blas': lib.openblas_get_config().decode(), 'core': lib.openblas_get_corename().decode(),
                    'threads': lib.openblas_get_num_threads()}
        except (OSError, AttributeError):
            continue
    return {'blas': 'unknown'}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--D', type=int, default=200)
    ap.add_argument('--alpha', type=float, default=0.2)
    ap.add_argument('--rho', type=float, default=0.5)
    ap.add_argument('--T', type=int, default=2)
    ap.add_argument('--beta', type=float, default=1.0)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--iters', type=int, default=4, help='iterations; the first is warm-up')
    ap.add_argument('--data', help="aim's S, X, y (float64, little endian, in that order)")
    ap.add_argument('--eigh', type=int, help='time numpy.linalg.eigh at this size instead')
    ap.add_argument('--symmetric', action='store_true',
                    help="back-project as aim does: per-sample eigh of C and two dsyrk (default: dgemm)")
    ap.add_argument('--reps', type=int, default=3)
    ap.add_argument('--xp', choices=['numpy', 'cupy'], default='numpy',
                    help='the array module: numpy on the CPU, or cupy on the GPU')
    a = ap.parse_args()
    global xp
    if a.xp == 'cupy':
        try:
            import cupy
        except ImportError as e:
            sys.exit(f'--xp cupy: {e} (CuPy runs on an NVIDIA GPU: pip install cupy-cuda12x or cupy-cuda13x)')
        xp = cupy
        info = {'xp': 'cupy', 'cupy': cupy.__version__,
                'gpu': cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}
    else:
        info = dict(blas_info(), xp='numpy')

    def sync():
        if xp is not np:
            xp.cuda.Device().synchronize()
    if a.eigh:
        rng = xp.random.default_rng(a.seed)
        M = rng.standard_normal((a.eigh, a.eigh))
        M = (M + M.T) / 2
        xp.linalg.eigh(M)  # warm-up
        sync()
        ts = []
        for _ in range(a.reps):
            t0 = time.perf_counter()
            xp.linalg.eigh(M)
            sync()
            ts.append(time.perf_counter() - t0)
        print(json.dumps(dict(info, eigh=a.eigh, seconds=sorted(ts)[len(ts) // 2], all=ts)))
        return
    N = int(math.floor(a.alpha * a.D * a.D))
    if a.data:
        raw = np.fromfile(a.data, dtype='<f8')
        D, T = a.D, a.T
        want = D * D + N * T * D + N * T * T
        if raw.size != want:
            sys.exit(f'{a.data}: {raw.size} values, want {want} for D = {D}, N = {N}, T = {T}')
        S = xp.asarray(raw[:D * D].reshape(D, D))
        X = xp.asarray(raw[D * D:D * D + N * T * D].reshape(N, T, D))
        y = xp.asarray(raw[D * D + N * T * D:].reshape(N, T, T))
    else:
        X, y, S = draw(a.D, a.alpha, a.rho, a.T, a.beta, a.seed)
    recs = gamp_rie(X, y, S, a.rho, a.alpha, a.beta, a.iters, symmetric=a.symmetric)
    secs = [r['seconds'] for r in recs]
    per = [b - c for b, c in zip(secs[1:], secs[:-1])]  # iterations after the first
    out = dict(info, D=a.D, N=N, T=a.T, alpha=a.alpha, rho=a.rho, iters=len(recs), symmetric=a.symmetric,
               seconds_per_iter=(secs[-1] - secs[0]) / (len(secs) - 1) if len(secs) > 1 else secs[0],
               median_per_iter=sorted(per)[len(per) // 2] if per else secs[0],
               errors=[r['error'] for r in recs], deltas=[r['delta'] for r in recs])
    print(json.dumps(out))


if __name__ == '__main__':
    main()
