// deep.cu: deep_sample, the importance sampler of the deep attention channel with M = 2 tokens
// and DEEP_MIN_L <= L <= DEEP_MAX_L layers: deep_sample, one task per thread, and
// deep_sample_warp, one task per warp (its lanes' sums merged by merge_lane, which has no Go
// twin).
//
// Twin: kernels/deep.go, type DeepSampler (Moments, here prepare, run_draws and finish; setup, Attention2, solveAttention,
// logJacobianAt, drawPrior, drawChart, point, reset, add, endDraw, finish, mul2, matMul2,
// solve2, quad2, logSumExp, deepFail, and the layout functions DeepIn, DeepOut, DeepNormals,
// DeepOutSecond, DeepOutErr, DeepOutLogZ, DeepOutESS, DeepOutStatus) and the per-task logic of
// DeepSampleBatch (the slot check and the place of the task's draws in the normal stream),
// around internal/spd's Factor, SolveFactored and Invert (n = L). Each __device__ function
// below is a line-by-line port of the Go function named in its comment, with the same variable
// names and the same order of operations, in double; DeepSampler's fields are the members of
// struct deep_sampler, fixed-size arrays for DEEP_MAX_L layers (as deepMaxPM and the
// [DeepMaxL] arrays in Go) of which loops bounded by L use the leading part, kept in the
// thread's registers and local memory (no shared memory). math.Exp, Log and Sqrt become CUDA's
// exp, log and sqrt (sqrt and division are correctly rounded, as in Go; exp and log are within
// an ulp or two of Go's, so results agree to rounding, not bit for bit), math.Abs fabs,
// math.Floor floor, and math.Max/Min/IsInf/IsNaN go_max/fmin/is_inf/is_nan with Go's semantics
// (fmin only where both arguments are finite and positive).
//
// The normals: draw i (0 <= i < draws) of the task with slot s takes the DeepNormals(L) =
// 2 (L - 1) normals G(seed, base + 2 (L - 1) i + k), k < 2 (L - 1), base = offset + s stride
// (indices modulo 2^64), the stream of device.NormalAt (normal.cuh) that DeepSampleBatch fills
// with device.FillNormals. The caller makes offset and stride even, so base + 2 (L - 1) i is
// even and the draw is exactly L - 1 Philox blocks: pair p < L - 1 is
// gauss_pair((base + 2 (L - 1) i + 2 p) >> 1), normals 2 p and 2 p + 1 (the sum taken modulo
// 2^64 before the shift, as FillNormals does).
//
// Launch: deep_sample: thread t = blockIdx.x * BLOCK + threadIdx.x handles task t (no grid
// stride); grid = GridThreads(n). deep_sample_warp (at the end of this file): warp t handles
// task t, its lanes taking the draws in turn; grid = GridWarps(n). Task t reads in[t DeepIn(L) .. (t+1) DeepIn(L)) = (slot, u_0, u_1, omega
// (L x 2, row-major), V (L x L, row-major)) and writes out[t DeepOut(L) .. (t+1) DeepOut(L)) as
// kernels.DeepSampleBatch does: the layout of DeepOut(L), or NaN everywhere and a status (V not
// positive definite, no point, a slot that is not an integer in [0, 2^53)). draws >= 2.
//
// An L outside DEEP_MIN_L..DEEP_MAX_L does not fit the work space. The device front
// (device.Checked) refuses it before the launch and DeepSampleBatch returns an error, so Go has
// no status for it; the kernel, should it get one anyway, reads nothing and, for
// 1 <= L <= DEEP_FAIL_MAX_L, writes NaN everywhere and the kernel-only status DEEP_BAD_L at the
// layout of DeepOut(L) (defined for every L); for L <= 0 or L > DEEP_FAIL_MAX_L it writes
// nothing at all (no buffer of that layout is plausible, and nothing is written out of bounds
// of one).

#include "common.cuh"
#include "normal.cuh"
#include "gomath.cuh"

// The number of layers and the status codes (deep.go's DeepMinL, DeepMaxL, Deep*).
#define DEEP_MIN_L 2
#define DEEP_MAX_L 4
#define DEEP_MAX_PM (2 * DEEP_MAX_L) // deepMaxPM: P M at DEEP_MAX_L, the size of Z
#define DEEP_OK 0
#define DEEP_NOT_PD 1
#define DEEP_NO_POINT 2
#define DEEP_BAD_SLOT 3
#define DEEP_BAD_L 4        // kernel only (see the top of this file): L outside DEEP_MIN_L..DEEP_MAX_L
#define DEEP_FAIL_MAX_L 64  // the largest bad L whose layout still gets NaN and DEEP_BAD_L
#define DEEP_BROAD_VLL 0.25                 // deepBroadVLL
#define MAX_DEEP_SLOT 9007199254740992.0    // 0x1p53 MaxDeepSlot
#define DEEP_SQRT2 1.4142135623730951       // 0x1.6a09e667f3bcdp+00 math.Sqrt2
#define DEEP_TWO_PI 6.2831853071795862      // 0x1.921fb54442d18p+02 2 * math.Pi

// The layout of a task and of its result at L layers (deep.go's DeepNormals, DeepIn, DeepOut,
// DeepOutSecond, DeepOutErr, DeepOutLogZ, DeepOutESS, DeepOutStatus; the means start at 0).
static __device__ __forceinline__ int deep_normals(int L) { return 2 * (L - 1); }
static __device__ __forceinline__ int deep_in(int L) { return 3 + 2 * L + L * L; }
static __device__ __forceinline__ int deep_out(int L) {
    int pm = 2 * L;
    return 3 + 2 * pm + pm * pm;
}
static __device__ __forceinline__ int deep_out_second(int L) { return 2 * L; }
static __device__ __forceinline__ int deep_out_err(int L) { return 2 * L + 4 * L * L; }
static __device__ __forceinline__ int deep_out_logz(int L) { return 4 * L + 4 * L * L; }
static __device__ __forceinline__ int deep_out_ess(int L) { return deep_out_logz(L) + 1; }
static __device__ __forceinline__ int deep_out_status(int L) { return deep_out_logz(L) + 2; }

// ---------------------------------------------------------------------------------------
// internal/spd (row-major n x n, n <= DEEP_MAX_L here).

// spd_factor is spd.Factor: the lower Cholesky factor of a into l (its upper triangle left
// alone); false when a is not positive definite or not finite. Only a's lower triangle is read.
static __device__ bool spd_factor(double *l, const double *a, int n) {
    for (int i = 0; i < n; i++) {
        for (int j = 0; j <= i; j++) {
            double s = a[i * n + j];
            for (int k = 0; k < j; k++) {
                s -= l[i * n + k] * l[j * n + k];
            }
            if (i == j) {
                if (!(s > 0) || is_inf(s, 0)) {
                    return false;
                }
                l[i * n + i] = sqrt(s);
            } else {
                l[i * n + j] = s / l[j * n + j];
            }
        }
    }
    return true;
}

// spd_solve_factored is spd.SolveFactored: L L^T x = b; x may be b.
static __device__ void spd_solve_factored(double *x, const double *l, const double *b, int n) {
    for (int i = 0; i < n; i++) { // L y = b
        double s = b[i];
        for (int k = 0; k < i; k++) {
            s -= l[i * n + k] * x[k];
        }
        x[i] = s / l[i * n + i];
    }
    for (int i = n - 1; i >= 0; i--) { // L^T x = y
        double s = x[i];
        for (int k = i + 1; k < n; k++) {
            s -= l[k * n + i] * x[k];
        }
        x[i] = s / l[i * n + i];
    }
}

// spd_invert is spd.Invert: a^{-1} into dst, exactly symmetric (the mean of the computed inverse
// and its transpose); false when a is not positive definite or the inverse is not finite.
static __device__ bool spd_invert(double *dst, const double *a, int n) {
    double l[DEEP_MAX_L * DEEP_MAX_L];
    if (!spd_factor(l, a, n)) {
        return false;
    }
    double col[DEEP_MAX_L];
    for (int c = 0; c < n; c++) {
        for (int i = 0; i < n; i++) {
            col[i] = 0;
        }
        col[c] = 1;
        spd_solve_factored(col, l, col, n);
        for (int i = 0; i < n; i++) {
            dst[i * n + c] = col[i];
        }
    }
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < i; j++) {
            double v = (dst[i * n + j] + dst[j * n + i]) / 2;
            dst[i * n + j] = v;
            dst[j * n + i] = v;
        }
    }
    for (int i = 0; i < n * n; i++) {
        double v = dst[i];
        if (is_nan(v) || is_inf(v, 0)) {
            return false;
        }
    }
    return true;
}

// ---------------------------------------------------------------------------------------
// deep.go: Go's [2]float64 and [4]float64 values (vectors and row-major 2 x 2 matrices).

struct deep_v2 {
    double e[2];
};
struct deep_m2 {
    double e[4];
};

static __device__ __forceinline__ deep_v2 make_v2(double a, double b) {
    deep_v2 v;
    v.e[0] = a;
    v.e[1] = b;
    return v;
}

// identity2 is Go's [4]float64{1, 0, 0, 1}.
static __device__ __forceinline__ deep_m2 identity2() {
    deep_m2 m;
    m.e[0] = 1;
    m.e[1] = 0;
    m.e[2] = 0;
    m.e[3] = 1;
    return m;
}

// mul2 is mul2: a b for the 2 x 2 a and the 2-vector b.
static __device__ __forceinline__ deep_v2 mul2(deep_m2 a, deep_v2 b) {
    return make_v2(a.e[0] * b.e[0] + a.e[1] * b.e[1], a.e[2] * b.e[0] + a.e[3] * b.e[1]);
}

// mat_mul2 is matMul2: the product a b of 2 x 2 matrices.
static __device__ __forceinline__ deep_m2 mat_mul2(deep_m2 a, deep_m2 b) {
    deep_m2 m;
    m.e[0] = a.e[0] * b.e[0] + a.e[1] * b.e[2];
    m.e[1] = a.e[0] * b.e[1] + a.e[1] * b.e[3];
    m.e[2] = a.e[2] * b.e[0] + a.e[3] * b.e[2];
    m.e[3] = a.e[2] * b.e[1] + a.e[3] * b.e[3];
    return m;
}

// solve2 is solve2: a^{-1} b by Cramer's rule.
static __device__ __forceinline__ deep_v2 solve2(deep_m2 a, deep_v2 b) {
    double det = a.e[0] * a.e[3] - a.e[1] * a.e[2];
    return make_v2((a.e[3] * b.e[0] - a.e[1] * b.e[1]) / det, (-a.e[2] * b.e[0] + a.e[0] * b.e[1]) / det);
}

// quad2 is quad2: |x - m|^2.
static __device__ __forceinline__ double quad2(deep_v2 x, deep_v2 m) {
    double a = x.e[0] - m.e[0], b = x.e[1] - m.e[1];
    return a * a + b * b;
}

// log_sum_exp is logSumExp: log sum_k e^{x_k} over x[0 .. n-1] (n >= 1), -Inf when every x_k
// is.
static __device__ double log_sum_exp(const double *x, int n) {
    double m = x[0];
    for (int k = 1; k < n; k++) {
        m = go_max(m, x[k]);
    }
    if (is_inf(m, -1)) {
        return m;
    }
    double s = 0;
    for (int k = 0; k < n; k++) {
        s += exp(x[k] - m);
    }
    return m + log(s);
}

// attention2 is Attention2: A(v) = softmax_row(beta v v^T) + c I, row-major.
static __device__ deep_m2 attention2(double c, double beta, deep_v2 v) {
    double s0 = 1 / (1 + exp(beta * v.e[0] * (v.e[1] - v.e[0])));
    double s1 = 1 / (1 + exp(beta * v.e[1] * (v.e[0] - v.e[1])));
    deep_m2 a;
    a.e[0] = s0 + c;
    a.e[1] = 1 - s0;
    a.e[2] = 1 - s1;
    a.e[3] = s1 + c;
    return a;
}

// deep_sampler holds DeepSampler's fields.
struct deep_sampler {
    double c, beta;
    int L, pm;                  // layers and P M = 2 L
    double logHalf, logQuarter; // log 1/2 and log 1/4: a prior point's and a chart point's discrete probability
    // per task
    deep_v2 u;
    deep_v2 om[DEEP_MAX_L]; // omega by layer
    double vinv[DEEP_MAX_L * DEEP_MAX_L];
    double l[DEEP_MAX_L * DEEP_MAX_L]; // the Cholesky factor of V (its leading block is V_xx's)
    double vdiag[DEEP_MAX_L];
    deep_v2 mc[DEEP_MAX_L];     // the centres of the charts' v_k (m_1 = omega_1)
    double sc[DEEP_MAX_L];      // and their variances (S_1 = V_11)
    double logNorm;             // log of the Gaussian normalisation of Z's density
    double frac[DEEP_MAX_L];    // the mixture's fractions of draws: the prior, then chart j at j
    double logMix[DEEP_MAX_L];  // log of each component's weight and normalisation in q_mix
    // the current draw's layer inputs v_k and attentions A(v_k), k < L (a prior draw's or a chart's)
    deep_v2 v[DEEP_MAX_L];
    deep_m2 a[DEEP_MAX_L];
    // the streaming reduction, relative to exp(mx)
    double mx;                            // the largest log-weight so far
    double sw;                            // sum of the points' weights
    double mean[DEEP_MAX_PM];             // their weighted mean of Z - omega
    double co[DEEP_MAX_PM * DEEP_MAX_PM]; // their centred sums of products (upper triangle, pm x pm)
    double dw;                            // the current draw's W_i
    double dn[DEEP_MAX_PM];               // and its weighted sum of Z - omega
    double sw2;                           // sum_i W_i^2
    double mu2[DEEP_MAX_PM], m2[DEEP_MAX_PM]; // the W_i^2-weighted mean of zeta_i and centred sum of squares
};

// attention is DeepSampler.attention.
static __device__ __forceinline__ deep_m2 attention(const deep_sampler *q, deep_v2 v) {
    return attention2(q->c, q->beta, v);
}

// deep_fail is deepFail: NaN values and the status.
static __device__ void deep_fail(double *out, int L, int status) {
    int n = deep_out(L);
    for (int i = 0; i < n; i++) {
        out[i] = go_nan();
    }
    out[deep_out_status(L)] = (double)status;
}

// setup is DeepSampler.setup: false when V is not positive definite.
static __device__ bool setup(deep_sampler *q, const double *u, const double *omega, const double *V) {
    int L = q->L;
    q->u = make_v2(u[0], u[1]);
    for (int k = 0; k < L; k++) {
        q->om[k] = make_v2(omega[2 * k], omega[2 * k + 1]);
        q->vdiag[k] = V[k * L + k];
    }
    // V = L L^T: V_xx's factor is L's leading block, and log det V = 2 sum log L_ii.
    if (!spd_factor(q->l, V, L) || !spd_invert(q->vinv, V, L)) {
        return false;
    }
    double logDet = 0;
    for (int k = 0; k < L; k++) {
        logDet += 2 * log(q->l[k * L + k]);
    }
    // Z's density per token is N(0, V): two tokens.
    q->logNorm = -((double)L * log(DEEP_TWO_PI) + logDet);
    // The charts' proposals for v_k = B_{k-1} z_k, k >= 2 (deep.go).
    q->mc[0] = q->om[0];
    q->sc[0] = q->vdiag[0];
    double c1 = 1 + q->c;
    deep_m2 b = attention(q, q->om[0]); // B_1 at omega
    double g = c1 * c1;
    for (int k = 1; k < L - 1; k++) {
        deep_v2 m = mul2(b, q->om[k]);
        q->mc[k] = m;
        // fmin is math.Min here: vdiag[0] is finite and positive (spd_factor checked it).
        q->sc[k] = 2 * g * q->vdiag[k] + 0.25 * (q->om[k].e[0] * q->om[k].e[0] + q->om[k].e[1] * q->om[k].e[1]) * fmin(q->vdiag[0], 1.0) + 0.01;
        b = mat_mul2(attention(q, m), b);
        g *= c1 * c1;
    }
    return true;
}

// solve_attention is DeepSampler.solveAttention: the v with A(v) w = r (and -v), or false.
static __device__ bool solve_attention(const deep_sampler *q, deep_v2 w, deep_v2 r, deep_v2 *v) {
    double wp = (w.e[0] + w.e[1]) / DEEP_SQRT2, wm = (w.e[0] - w.e[1]) / DEEP_SQRT2;
    double rp = (r.e[0] + r.e[1]) / DEEP_SQRT2, rm = (r.e[0] - r.e[1]) / DEEP_SQRT2;
    if (wm == 0) {
        return false;
    }
    double g = rm / wm;                      // tau_0 + tau_1 - 1 + c
    double dl = (rp - (1 + q->c) * wp) / wm; // tau_0 - tau_1
    double t0 = (g + 1 - q->c + dl) / 2;
    double t1 = (g + 1 - q->c - dl) / 2;
    if (!(t0 > 0 && t0 < 1 && t1 > 0 && t1 < 1)) {
        return false;
    }
    double a0 = log(t0 / (1 - t0)) / q->beta;
    double a1 = log(t1 / (1 - t1)) / q->beta;
    double p = a0 + a1; // (v_0 - v_1)^2
    if (!(p > 0)) {
        return false;
    }
    double d = sqrt(p);
    *v = make_v2(a0 / d, -a1 / d);
    return true;
}

// log_jacobian_at is DeepSampler.logJacobianAt: log |det d(A(v)^{-1} r)/dv| with a = A(v).
static __device__ double log_jacobian_at(const deep_sampler *q, deep_m2 a, deep_v2 v, deep_v2 r) {
    double s0 = a.e[0] - q->c, s1 = a.e[3] - q->c;
    double g = s0 + s1 - 1 + q->c;
    double rm = (r.e[0] - r.e[1]) / DEEP_SQRT2;
    double d = v.e[0] - v.e[1];
    return log(4 * q->beta * q->beta * s0 * (1 - s0) * s1 * (1 - s1) * d * d * rm * rm / ((1 + q->c) * g * g * g));
}

// reset is DeepSampler.reset: empties the reduction.
static __device__ void reset(deep_sampler *q) {
    q->mx = neg_inf();
    q->sw = 0;
    q->sw2 = 0;
    for (int a = 0; a < q->pm; a++) {
        q->mean[a] = 0;
        q->mu2[a] = 0;
        q->m2[a] = 0;
        for (int b = 0; b < q->pm; b++) {
            q->co[a * q->pm + b] = 0;
        }
    }
}

// add is DeepSampler.add: the point z (Z - omega) of log-weight lw into the running sums.
static __device__ void add(deep_sampler *q, const double *z, double lw) {
    int pm = q->pm;
    if (lw > q->mx) {
        double f = exp(q->mx - lw);
        double f2 = f * f;
        q->sw *= f;
        q->dw *= f;
        q->sw2 *= f2;
        for (int a = 0; a < pm; a++) {
            q->dn[a] *= f;
            q->m2[a] *= f2;
            for (int b = a; b < pm; b++) {
                q->co[a * pm + b] *= f;
            }
        }
        q->mx = lw;
    }
    double w = exp(lw - q->mx);
    double sw = q->sw + w;
    double r = w / sw, k = w * (q->sw / sw);
    double d[DEEP_MAX_PM];
    for (int a = 0; a < pm; a++) {
        q->dn[a] += w * z[a];
        d[a] = z[a] - q->mean[a];
        q->mean[a] += d[a] * r;
    }
    for (int a = 0; a < pm; a++) {
        for (int b = a; b < pm; b++) {
            q->co[a * pm + b] += k * d[a] * d[b];
        }
    }
    q->dw += w;
    q->sw = sw;
}

// end_draw is DeepSampler.endDraw: the draw's W_i and zeta_i = N_i / W_i into the sums over
// draws (a draw without a point adds nothing).
static __device__ void end_draw(deep_sampler *q) {
    if (!(q->dw > 0)) {
        return;
    }
    double w2 = q->dw * q->dw;
    double s2 = q->sw2 + w2;
    double r = w2 / s2, k = w2 * (q->sw2 / s2);
    for (int a = 0; a < q->pm; a++) {
        double d = q->dn[a] / q->dw - q->mu2[a];
        q->mu2[a] += d * r;
        q->m2[a] += k * d * d;
    }
    q->sw2 = s2;
}

// point is DeepSampler.point: the point x = (z_1, ..., z_{L-1} = zx[0 .. L-2]) with branch s,
// whose layer inputs v_k = B_{k-1} z_k and attentions A(v_k) (k < L) are in q->v and q->a,
// drawn with the discrete probability e^lpc, with log-weight lpc + log f - log q_mix; left out
// when not finite.
static __device__ void point(deep_sampler *q, const deep_v2 *zx, double s, double lpc) {
    int L = q->L;
    // ldb[k] = log |det B_k| (B_0 = I), B_k = A(v_k) B_{k-1}.
    double ldb[DEEP_MAX_L];
    ldb[0] = 0;
    deep_m2 b = identity2();
    for (int k = 1; k < L; k++) {
        b = mat_mul2(q->a[k - 1], b);
        ldb[k] = log(fabs(b.e[0] * b.e[3] - b.e[1] * b.e[2]));
    }
    deep_v2 su = make_v2(s * q->u.e[0], s * q->u.e[1]);
    deep_v2 zL = solve2(b, su);
    double z[DEEP_MAX_PM]; // Z - omega, layer by layer
    for (int k = 0; k < L - 1; k++) {
        z[2 * k] = zx[k].e[0] - q->om[k].e[0];
        z[2 * k + 1] = zx[k].e[1] - q->om[k].e[1];
    }
    z[2 * L - 2] = zL.e[0] - q->om[L - 1].e[0];
    z[2 * L - 1] = zL.e[1] - q->om[L - 1].e[1];
    double quad = 0;
    for (int l = 0; l < 2; l++) {
        for (int i = 0; i < L; i++) {
            for (int j = 0; j < L; j++) {
                quad += z[2 * i + l] * q->vinv[i * L + j] * z[2 * j + l];
            }
        }
    }
    double logF = q->logNorm - quad / 2 - ldb[L - 1];
    // q_0: the prior of x (the Cholesky factor's quadratic form), s with probability 1/2.
    double q0 = 0;
    for (int l = 0; l < 2; l++) {
        double e[DEEP_MAX_L];
        for (int k = 0; k < L - 1; k++) {
            double x = z[2 * k + l];
            for (int i = 0; i < k; i++) {
                x -= q->l[k * L + i] * e[i];
            }
            e[k] = x / q->l[k * L + k];
            q0 += e[k] * e[k];
        }
    }
    double lq = q->logMix[0] - q0 / 2;
    if (q->vdiag[L - 1] < DEEP_BROAD_VLL) {
        // The charts share N(z_L), the Gaussians of every v_k and sum_k log |det B_{k-1}|;
        // chart j leaves out v_j's Gaussian and |det B_{j-1}| and adds J(v_j, r_j). lt[0] is
        // q_0's term, lt[j] chart j's.
        double lt[DEEP_MAX_L];
        lt[0] = lq;
        double nL = quad2(zL, q->om[L - 1]) / q->vdiag[L - 1];
        double nv[DEEP_MAX_L];
        double sumN = 0, sumDet = 0;
        for (int k = 1; k < L; k++) {
            nv[k] = quad2(q->v[k - 1], q->mc[k - 1]) / q->sc[k - 1];
            sumN += nv[k];
            sumDet += ldb[k - 1];
        }
        deep_m2 bj = identity2(); // B_{j-1}
        for (int j = 1; j < L; j++) {
            deep_v2 r = mul2(q->a[j - 1], mul2(bj, zL));
            lt[j] = q->logMix[j] - (sumN - nv[j] + nL) / 2 + (sumDet - ldb[j - 1]) + log_jacobian_at(q, q->a[j - 1], q->v[j - 1], r);
            bj = mat_mul2(q->a[j - 1], bj);
        }
        lq = log_sum_exp(lt, L);
    }
    double lw = lpc + logF - lq;
    if (is_nan(lw) || is_inf(lw, 0)) {
        return;
    }
    add(q, z, lw);
}

// draw_prior is DeepSampler.drawPrior: x ~ N(omega_x, V_xx), both branches.
static __device__ void draw_prior(deep_sampler *q, const double *g) {
    int L = q->L;
    deep_v2 z[DEEP_MAX_L - 1];
    for (int l = 0; l < 2; l++) {
        for (int k = 0; k < L - 1; k++) {
            double x = q->om[k].e[l];
            for (int i = 0; i <= k; i++) {
                x += q->l[k * L + i] * g[i * 2 + l];
            }
            z[k].e[l] = x;
        }
    }
    // The forward map: v_k = B_{k-1} z_k and A(v_k), shared by both branches.
    deep_m2 b = identity2();
    for (int k = 1; k < L; k++) {
        q->v[k - 1] = mul2(b, z[k - 1]);
        q->a[k - 1] = attention(q, q->v[k - 1]);
        b = mat_mul2(q->a[k - 1], b);
    }
    point(q, z, 1, q->logHalf);
    point(q, z, -1, q->logHalf);
}

// draw_chart is DeepSampler.drawChart: chart j's v_k (k != j) and z_L drawn from g, the points
// of both branches s and both signs of the solved v_j.
static __device__ void draw_chart(deep_sampler *q, int j, const double *g) {
    int L = q->L;
    int gi = 0;
    for (int k = 1; k < L; k++) {
        if (k == j) {
            continue;
        }
        double sd = sqrt(q->sc[k - 1]);
        q->v[k - 1] = make_v2(q->mc[k - 1].e[0] + sd * g[gi], q->mc[k - 1].e[1] + sd * g[gi + 1]);
        gi += 2;
    }
    double s3 = sqrt(q->vdiag[L - 1]);
    deep_v2 zL = make_v2(q->om[L - 1].e[0] + s3 * g[gi], q->om[L - 1].e[1] + s3 * g[gi + 1]);
    // w = B_{j-1} z_L from the layers below j.
    deep_v2 w = zL;
    for (int k = 1; k < j; k++) {
        q->a[k - 1] = attention(q, q->v[k - 1]);
        w = mul2(q->a[k - 1], w);
    }
    for (int k = j + 1; k < L; k++) {
        q->a[k - 1] = attention(q, q->v[k - 1]);
    }
    for (int is = 0; is < 2; is++) {
        double s = is == 0 ? 1.0 : -1.0;
        deep_v2 r = make_v2(s * q->u.e[0], s * q->u.e[1]);
        for (int k = L - 1; k > j; k--) {
            r = solve2(q->a[k - 1], r);
        }
        deep_v2 vj;
        if (!solve_attention(q, w, r, &vj)) {
            continue;
        }
        for (int ig = 0; ig < 2; ig++) {
            double sg = ig == 0 ? 1.0 : -1.0;
            q->v[j - 1] = make_v2(sg * vj.e[0], sg * vj.e[1]);
            q->a[j - 1] = attention(q, q->v[j - 1]);
            // z_k = B_{k-1}^{-1} v_k.
            deep_v2 z[DEEP_MAX_L - 1];
            deep_m2 b = identity2();
            for (int k = 1; k < L; k++) {
                z[k - 1] = solve2(b, q->v[k - 1]);
                b = mat_mul2(q->a[k - 1], b);
            }
            point(q, z, s, q->logQuarter);
        }
    }
}

// finish is DeepSampler.finish: the estimates of n draws into out.
static __device__ void finish(const deep_sampler *q, double *out, int n) {
    int L = q->L, pm = q->pm;
    if (!(q->sw > 0)) {
        deep_fail(out, L, DEEP_NO_POINT);
        return;
    }
    double sw = q->sw;
    int sec = deep_out_second(L), er = deep_out_err(L);
    for (int a = 0; a < pm; a++) {
        double m = q->mean[a];
        double dm = m - q->mu2[a];
        out[a] = m - q->sw2 * dm / (sw * sw);
        out[er + a] = sqrt(q->m2[a] + q->sw2 * dm * dm) / sw;
        for (int b = a; b < pm; b++) {
            double v = q->co[a * pm + b] / sw + m * q->mean[b];
            out[sec + a * pm + b] = v;
            out[sec + b * pm + a] = v;
        }
    }
    double zhat = sw / (double)n;
    double varZ = (q->sw2 / (double)n - zhat * zhat) / (double)n;
    // E log Zhat = log Z - Var/(2 Z^2) + O(1/n^2): remove the first-order bias.
    out[deep_out_logz(L)] = log(zhat) + q->mx + varZ / (2 * zhat * zhat);
    out[deep_out_ess(L)] = sw * sw / q->sw2;
    out[deep_out_status(L)] = DEEP_OK;
}

// prepare is the part of DeepSampler.Moments before its loop over the draws: the split nk of
// the n draws over the prior (nk[0]) and the charts (nk[j]), the mixture's fractions and log
// weights, and the empty reduction. It returns false when V is not positive definite.
static __device__ bool prepare(deep_sampler *q, int *nk, const double *u, const double *omega, const double *V,
                               int n) {
    int L = q->L;
    if (!setup(q, u, omega, V)) {
        return false;
    }
    // nk[0]: the prior's draws; nk[j]: chart j's.
    for (int k = 0; k < DEEP_MAX_L; k++) {
        nk[k] = 0;
    }
    nk[0] = n;
    if (q->vdiag[L - 1] < DEEP_BROAD_VLL) {
        nk[0] = n / 5;
        int rest = n - nk[0];
        for (int j = L - 1; j >= 1; j--) {
            nk[j] = rest / j; // the charts j, j-1, ..., 1 share what is left evenly
            rest -= nk[j];
        }
    }
    for (int k = 0; k < L; k++) {
        q->frac[k] = (double)nk[k] / (double)n;
    }
    // The log of each component's weight in the mixture, with its discrete choice and its
    // Gaussians' normalisations (deep.go).
    double ldx = 0;
    for (int k = 0; k < L - 1; k++) {
        ldx += log(q->l[k * L + k]);
    }
    q->logMix[0] = log(q->frac[0] * 0.5) - ((double)(L - 1) * log(DEEP_TWO_PI) + 2 * ldx);
    for (int j = 1; j < L; j++) {
        double lm = log(q->frac[j] * 0.25) - log(DEEP_TWO_PI * q->vdiag[L - 1]);
        for (int k = 1; k < L; k++) {
            if (k != j) {
                lm -= log(DEEP_TWO_PI * q->sc[k - 1]);
            }
        }
        q->logMix[j] = lm;
    }
    reset(q);
    return true;
}

// run_draws is DeepSampler.Moments' loop over the draws, for draws i = first, first + step, ...
// below n (Moments: first 0, step 1), whose normals start at index base of the stream of key
// (base even): draw i takes G(base + nn i + k), k < nn = deep_normals(L). The draws of the
// prior come first, then those of the charts L - 1, ..., 1, as nk splits them.
static __device__ void run_draws(deep_sampler *q, const int *nk, int n, int first, int step, uint2 key, u64 base) {
    int L = q->L;
    int nn = deep_normals(L);
    int chart = L - 1, end = nk[0] + nk[L - 1]; // the chart of draw i >= nk[0], and the end of its draws
    for (int i = first; i < n; i += step) {
        double g[2 * (DEEP_MAX_L - 1)];
        const u64 idx = base + (u64)nn * (u64)i; // indices modulo 2^64, as FillNormals
        for (int p = 0; p < L - 1; p++) {
            gauss_pair((idx + 2ULL * (u64)p) >> 1, key, &g[2 * p], &g[2 * p + 1]);
        }
        q->dw = 0;
        for (int a = 0; a < q->pm; a++) {
            q->dn[a] = 0;
        }
        if (i < nk[0]) {
            draw_prior(q, g);
        } else {
            while (i >= end) {
                chart--;
                end += nk[chart];
            }
            draw_chart(q, chart, g);
        }
        end_draw(q);
    }
}

// moments is DeepSampler.Moments for n draws whose normals start at index base of the stream
// of key (base even).
static __device__ void moments(deep_sampler *q, double *out, const double *u, const double *omega, const double *V,
                               int n, uint2 key, u64 base) {
    int nk[DEEP_MAX_L];
    if (!prepare(q, nk, u, omega, V, n)) {
        deep_fail(out, q->L, DEEP_NOT_PD);
        return;
    }
    run_draws(q, nk, n, 0, 1, key, base);
    finish(q, out, n);
}

// merge_lane adds to q's reduction the reduction of the draws of the lane o above (its fields
// read with __shfl_down_sync; every lane of the warp calls it, and only lanes below o keep the
// result). Both reductions are weighted means and co-moments (Chan, Golub and LeVeque's pairwise
// update, the two-sample form of add and end_draw): the points' weights w (sw, mean, co),
// scaled by e^-mx, and the draws' squared weights W^2 (sw2, mu2, m2), scaled by e^-2 mx. The
// smaller maximum's sums are rescaled to the larger one first, as add does when a new maximum
// comes. No Go twin: DeepSampler streams its draws in one order, and deep_sample_warp's result
// is the same estimator summed in another (kernels/emu compares it with DeepSampleBatch).
static __device__ void merge_lane(deep_sampler *q, int o) {
    const unsigned full = 0xffffffffu;
    const bool keep = (threadIdx.x & 31) < (unsigned)o;
    int pm = q->pm;
    double mxb = __shfl_down_sync(full, q->mx, o);
    double swb = __shfl_down_sync(full, q->sw, o);
    double sw2b = __shfl_down_sync(full, q->sw2, o);
    bool takeB = keep && swb > 0 && !(q->sw > 0);   // q has no point: q becomes B
    bool both = keep && swb > 0 && q->sw > 0;       // both have points: the pairwise update
    double m = go_max(q->mx, mxb);
    double fa = both ? exp(q->mx - m) : 0, fb = both ? exp(mxb - m) : 0;
    double swa = q->sw * fa, swbs = swb * fb, sw = swa + swbs;
    double r = both ? swbs / sw : 0, k = both ? swa * (swbs / sw) : 0;
    double s2a = q->sw2 * fa * fa, s2b = sw2b * fb * fb, s2 = s2a + s2b;
    double r2 = both && s2 > 0 ? s2b / s2 : 0, k2 = both && s2 > 0 ? s2a * (s2b / s2) : 0;
    double d[DEEP_MAX_PM];
    for (int a = 0; a < pm; a++) {
        double meanb = __shfl_down_sync(full, q->mean[a], o);
        double mu2b = __shfl_down_sync(full, q->mu2[a], o);
        double m2b = __shfl_down_sync(full, q->m2[a], o);
        if (takeB) {
            q->mean[a] = meanb;
            q->mu2[a] = mu2b;
            q->m2[a] = m2b;
        } else if (both) {
            d[a] = meanb - q->mean[a];
            q->mean[a] += d[a] * r;
            double d2 = mu2b - q->mu2[a];
            q->mu2[a] += d2 * r2;
            q->m2[a] = q->m2[a] * fa * fa + m2b * fb * fb + k2 * d2 * d2;
        }
    }
    for (int a = 0; a < pm; a++) {
        for (int b = a; b < pm; b++) {
            double cob = __shfl_down_sync(full, q->co[a * pm + b], o);
            if (takeB) {
                q->co[a * pm + b] = cob;
            } else if (both) {
                q->co[a * pm + b] = q->co[a * pm + b] * fa + cob * fb + k * d[a] * d[b];
            }
        }
    }
    if (takeB) {
        q->mx = mxb;
        q->sw = swb;
        q->sw2 = sw2b;
    } else if (both) {
        q->mx = m;
        q->sw = sw;
        q->sw2 = s2;
    }
}

// deep_fail_bad_l writes the result of task t for an L outside DEEP_MIN_L..DEEP_MAX_L (see the
// top of this file): NaN and DEEP_BAD_L at the layout of DeepOut(L) for
// 1 <= L <= DEEP_FAIL_MAX_L, nothing otherwise.
static __device__ void deep_fail_bad_l(double *out, i64 t, int L) {
    if (L < 1 || L > DEEP_FAIL_MAX_L) {
        return;
    }
    deep_fail(out + t * deep_out(L), L, DEEP_BAD_L);
}

// start_task is what deep_sample and deep_sample_warp do before the draws (the per-task body
// of kernels.DeepSampleBatch up to Moments): it reads task t, checks L and the slot, and sets q
// up for (L, c, beta). It returns false when the task ends there, its failure written to out
// when write is set (in a warp, lane 0 writes); else task and res point at the task's input and
// output and base is where its normals start (offset + slot stride).
static __device__ bool start_task(deep_sampler *q, const double **task, double **res, u64 *base, double *out,
                                  const double *in, i64 t, int L, double c, double beta, u64 offset, u64 stride,
                                  bool write) {
    if (L < DEEP_MIN_L || L > DEEP_MAX_L) {
        if (write) {
            deep_fail_bad_l(out, t, L);
        }
        return false;
    }
    *task = in + t * deep_in(L);
    *res = out + t * deep_out(L);
    const double slot = (*task)[0];
    if (!(slot >= 0 && slot < MAX_DEEP_SLOT && slot == floor(slot))) {
        if (write) {
            deep_fail(*res, L, DEEP_BAD_SLOT);
        }
        return false;
    }
    *base = offset + (u64)slot * stride;
    q->c = c;
    q->beta = beta;
    q->L = L;
    q->pm = 2 * L;
    q->logHalf = log(0.5);
    q->logQuarter = log(0.25);
    return true;
}

// deep_sample runs DeepSampler (L, c, beta) on task t = blockIdx.x * BLOCK + threadIdx.x of n:
// the per-task body of kernels.DeepSampleBatch (the slot check, the task's normals at
// offset + slot stride, Moments). See the top of this file.
extern "C" __global__ void deep_sample(double *out, const double *in, long long n, int L, int draws, double c,
                                       double beta, unsigned long long seed, unsigned long long offset,
                                       unsigned long long stride) {
    const i64 t = (i64)blockIdx.x * BLOCK + threadIdx.x;
    if (t >= n) {
        return;
    }
    deep_sampler q;
    const double *task;
    double *res;
    u64 base;
    if (!start_task(&q, &task, &res, &base, out, in, t, L, c, beta, offset, stride, true)) {
        return;
    }
    const uint2 key = make_uint2((u32)seed, (u32)(seed >> 32));
    moments(&q, res, task + 1, task + 3, task + 3 + 2 * L, draws, key, base);
}

// deep_sample_warp is deep_sample with one task per warp: warp t = (blockIdx.x * BLOCK +
// threadIdx.x) / 32 of n takes task t, lane l its draws l, l + 32, ..., each lane into its own
// reduction, and the 32 reductions are merged in a fixed tree (lane l with lane l + o, o = 16,
// 8, 4, 2, 1; merge_lane); lane 0 writes the result. The same draws and the same estimator as
// deep_sample, summed in another order. Grid: GridWarps(n) = GridThreads(32 n).
extern "C" __global__ void deep_sample_warp(double *out, const double *in, long long n, int L, int draws, double c,
                                            double beta, unsigned long long seed, unsigned long long offset,
                                            unsigned long long stride) {
    const i64 t = ((i64)blockIdx.x * BLOCK + threadIdx.x) >> 5; // the same for the whole warp
    const int lane = threadIdx.x & 31;
    if (t >= n) {
        return;
    }
    deep_sampler q;
    const double *task;
    double *res;
    u64 base;
    if (!start_task(&q, &task, &res, &base, out, in, t, L, c, beta, offset, stride, lane == 0)) {
        return; // the same in every lane of the warp
    }
    const uint2 key = make_uint2((u32)seed, (u32)(seed >> 32));
    int nk[DEEP_MAX_L];
    if (!prepare(&q, nk, task + 1, task + 3, task + 3 + 2 * L, draws)) { // the same in every lane
        if (lane == 0) {
            deep_fail(res, L, DEEP_NOT_PD);
        }
        return;
    }
    run_draws(&q, nk, draws, lane, 32, key, base);
    for (int o = 16; o > 0; o >>= 1) {
        merge_lane(&q, o);
    }
    if (lane == 0) {
        finish(&q, res, draws);
    }
}
