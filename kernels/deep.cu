// deep.cu: deep_sample, the importance sampler of the L = 3, M = 2 deep attention channel, one
// task per thread.
//
// Twin: kernels/deep.go, type DeepSampler (Moments, setup, Attention2, solveAttention,
// logJacobianAt, drawPrior, drawChart1, drawChart2, point, reset, add, endDraw, finish, mul2,
// solve2, quad2, logSumExp3, deepFail) and the per-task logic of DeepSampleBatch (the slot
// check and the place of the task's draws in the normal stream), around internal/spd's Factor,
// SolveFactored and Invert (n = 3). Each __device__ function below is a line-by-line port of
// the Go function named in its comment, with the same variable names and the same order of
// operations, in double; DeepSampler's fields are the members of struct deep_sampler, kept in
// the thread's registers and local memory (no shared memory). math.Exp, Log and Sqrt become
// CUDA's exp, log and sqrt (sqrt and division are correctly rounded, as in Go; exp and log are
// within an ulp or two of Go's, so results agree to rounding, not bit for bit), math.Abs fabs,
// math.Floor floor, and math.Max/Min/IsInf/IsNaN go_max/fmin/is_inf/is_nan with Go's semantics
// (fmin only where both arguments are finite and positive).
//
// The normals: draw i (0 <= i < draws) of the task with slot s takes G(seed, base + 4 i + k),
// k = 0..3, base = offset + s stride (indices modulo 2^64), the stream of device.NormalAt
// (normal.cuh) that DeepSampleBatch fills with device.FillNormals. The caller makes offset and
// stride even, so base + 4 i is even and the draw is exactly two Philox blocks:
// gauss_pair((base + 4 i) >> 1) gives normals 0 and 1, gauss_pair((base + 4 i + 2) >> 1) normals
// 2 and 3 (the sum taken modulo 2^64 before the shift, as FillNormals does).
//
// Launch: thread t = blockIdx.x * BLOCK + threadIdx.x handles task t (no grid stride); grid =
// GridThreads(n). Task t reads in[t*18 .. t*18+17] = (slot, u_0, u_1, omega (3 x 2, row-major),
// V (3 x 3, row-major)) and writes out[t*51 .. t*51+50] as kernels.DeepSampleBatch does:
// kernels.DeepOut's layout, or NaN everywhere and a status (V not positive definite, no point,
// a slot that is not an integer in [0, 2^53)). draws >= 2.

#include "common.cuh"
#include "normal.cuh"

// The layout of kernels.DeepIn / DeepOut and the status codes (deep.go).
#define DEEP_NORMALS 4
#define DEEP_IN 18
#define DEEP_OUT 51
#define DEEP_OUT_MEAN 0
#define DEEP_OUT_SECOND 6
#define DEEP_OUT_ERR 42
#define DEEP_OUT_LOGZ 48
#define DEEP_OUT_ESS 49
#define DEEP_OUT_STATUS 50
#define DEEP_OK 0
#define DEEP_NOT_PD 1
#define DEEP_NO_POINT 2
#define DEEP_BAD_SLOT 3
#define DEEP_PM 6                           // deepPM = P M, the size of Z
#define DEEP_BROAD_V33 0.25                 // deepBroadV33
#define MAX_DEEP_SLOT 9007199254740992.0    // 0x1p53 MaxDeepSlot
#define DEEP_SQRT2 1.4142135623730951       // 0x1.6a09e667f3bcdp+00 math.Sqrt2
#define DEEP_TWO_PI 6.2831853071795862      // 0x1.921fb54442d18p+02 2 * math.Pi

// ---------------------------------------------------------------------------------------
// Go's math.Inf(-1), NaN, IsInf, IsNaN and Max.

static __device__ __forceinline__ double deep_pos_inf() { return __longlong_as_double(0x7ff0000000000000LL); }
static __device__ __forceinline__ double deep_neg_inf() { return __longlong_as_double((long long)0xfff0000000000000ULL); }
static __device__ __forceinline__ double deep_nan() { return __longlong_as_double(0x7ff8000000000001LL); }
static __device__ __forceinline__ bool is_nan(double x) { return x != x; }
// is_inf is math.IsInf(x, sign): sign > 0 +Inf, sign < 0 -Inf, 0 either.
static __device__ __forceinline__ bool is_inf(double x, int sign) {
    return (sign >= 0 && x > 1.7976931348623157e308) || (sign <= 0 && x < -1.7976931348623157e308);
}

// go_max is math.Max.
static __device__ __forceinline__ double go_max(double x, double y) {
    if (is_inf(x, 1) || is_inf(y, 1)) {
        return deep_pos_inf();
    }
    if (is_nan(x) || is_nan(y)) {
        return deep_nan();
    }
    if (x == 0 && x == y) {
        return __double_as_longlong(x) < 0 ? y : x;
    }
    return x > y ? x : y;
}

// ---------------------------------------------------------------------------------------
// internal/spd (row-major n x n, n <= 3 here).

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
    double l[9];
    if (!spd_factor(l, a, n)) {
        return false;
    }
    double col[3];
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

// mul2 is mul2: a b.
static __device__ __forceinline__ deep_v2 mul2(deep_m2 a, deep_v2 b) {
    return make_v2(a.e[0] * b.e[0] + a.e[1] * b.e[1], a.e[2] * b.e[0] + a.e[3] * b.e[1]);
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

// log_sum_exp3 is logSumExp3.
static __device__ double log_sum_exp3(double a, double b, double c) {
    double m = go_max(a, go_max(b, c));
    if (is_inf(m, -1)) {
        return m;
    }
    return m + log(exp(a - m) + exp(b - m) + exp(c - m));
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
    // per task
    deep_v2 u;
    deep_v2 om1, om2, om3;
    double vinv[9]; // V^{-1}
    double lxx[3];  // Cholesky factor of V_xx (2 x 2, packed lower: l00, l10, l11)
    double v11, v33;
    deep_v2 mv;       // the centre of q_2's v_2, A(omega_1) omega_2
    double sv;        // its variance
    double logNorm;   // log of the Gaussian normalisation of Z's density
    double frac[3];   // the mixture's fractions of draws, n_k / n
    double logMix[3]; // log of each component's weight and normalisation in q_mix
    double l[9];      // work space of the factorisation
    // the streaming reduction, relative to exp(mx)
    double mx;                      // the largest log-weight so far
    double sw;                      // sum of the points' weights
    double mean[DEEP_PM];           // their weighted mean of Z - omega
    double co[DEEP_PM * DEEP_PM];   // their centred sums of products (upper triangle)
    double dw;                      // the current draw's W_i
    double dn[DEEP_PM];             // and its weighted sum of Z - omega
    double sw2;                     // sum_i W_i^2
    double mu2[DEEP_PM], m2[DEEP_PM]; // the W_i^2-weighted mean of zeta_i and centred sum of squares
};

// attention is DeepSampler.attention.
static __device__ __forceinline__ deep_m2 attention(const deep_sampler *q, deep_v2 v) {
    return attention2(q->c, q->beta, v);
}

// deep_fail is deepFail: NaN values and the status.
static __device__ void deep_fail(double *out, int status) {
    for (int i = 0; i < DEEP_OUT; i++) {
        out[i] = deep_nan();
    }
    out[DEEP_OUT_STATUS] = (double)status;
}

// setup is DeepSampler.setup: false when V is not positive definite.
static __device__ bool setup(deep_sampler *q, const double *u, const double *omega, const double *V) {
    q->u = make_v2(u[0], u[1]);
    q->om1 = make_v2(omega[0], omega[1]);
    q->om2 = make_v2(omega[2], omega[3]);
    q->om3 = make_v2(omega[4], omega[5]);
    // V = L L^T: V_xx's factor is L's leading 2 x 2 block, and log det V = 2 sum log L_ii.
    if (!spd_factor(q->l, V, 3) || !spd_invert(q->vinv, V, 3)) {
        return false;
    }
    q->v11 = V[0];
    q->v33 = V[8];
    double l00 = q->l[0], l10 = q->l[3], l11 = q->l[4];
    q->lxx[0] = l00;
    q->lxx[1] = l10;
    q->lxx[2] = l11;
    double logDet = 2 * (log(l00) + log(l11) + log(q->l[8]));
    // Z's density per token is N(0, V): two tokens.
    q->logNorm = -(3 * log(DEEP_TWO_PI) + logDet);
    // q_2's proposal for v_2 = A(z_1) z_2 (deep.go).
    deep_m2 a1 = attention(q, q->om1);
    q->mv = mul2(a1, q->om2);
    double c1 = 1 + q->c;
    // fmin is math.Min here: v11 is finite and positive (spd_factor checked it).
    q->sv = 2 * c1 * c1 * V[4] + 0.25 * (q->om2.e[0] * q->om2.e[0] + q->om2.e[1] * q->om2.e[1]) * fmin(q->v11, 1.0) + 0.01;
    return true;
}

// solve_attention is DeepSampler.solveAttention: the v with A(v) w = r (and -v), or false.
static __device__ bool solve_attention(const deep_sampler *q, deep_v2 w, deep_v2 r, deep_v2 *v) {
    double wp = (w.e[0] + w.e[1]) / DEEP_SQRT2, wm = (w.e[0] - w.e[1]) / DEEP_SQRT2;
    double rp = (r.e[0] + r.e[1]) / DEEP_SQRT2, rm = (r.e[0] - r.e[1]) / DEEP_SQRT2;
    if (wm == 0) {
        return false;
    }
    double g = rm / wm;                    // tau_0 + tau_1 - 1 + c
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
    q->mx = deep_neg_inf();
    q->sw = 0;
    q->sw2 = 0;
    for (int a = 0; a < DEEP_PM; a++) {
        q->mean[a] = 0;
        q->mu2[a] = 0;
        q->m2[a] = 0;
    }
    for (int a = 0; a < DEEP_PM * DEEP_PM; a++) {
        q->co[a] = 0;
    }
}

// add is DeepSampler.add: the point z (Z - omega) of log-weight lw into the running sums.
static __device__ void add(deep_sampler *q, const double *z, double lw) {
    if (lw > q->mx) {
        double f = exp(q->mx - lw);
        double f2 = f * f;
        q->sw *= f;
        q->dw *= f;
        q->sw2 *= f2;
        for (int a = 0; a < DEEP_PM; a++) {
            q->dn[a] *= f;
            q->m2[a] *= f2;
            for (int b = a; b < DEEP_PM; b++) {
                q->co[a * DEEP_PM + b] *= f;
            }
        }
        q->mx = lw;
    }
    double w = exp(lw - q->mx);
    double sw = q->sw + w;
    double r = w / sw, k = w * (q->sw / sw);
    double d[DEEP_PM];
    for (int a = 0; a < DEEP_PM; a++) {
        q->dn[a] += w * z[a];
        d[a] = z[a] - q->mean[a];
        q->mean[a] += d[a] * r;
    }
    for (int a = 0; a < DEEP_PM; a++) {
        for (int b = a; b < DEEP_PM; b++) {
            q->co[a * DEEP_PM + b] += k * d[a] * d[b];
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
    for (int a = 0; a < DEEP_PM; a++) {
        double d = q->dn[a] / q->dw - q->mu2[a];
        q->mu2[a] += d * r;
        q->m2[a] += k * d * d;
    }
    q->sw2 = s2;
}

// point is DeepSampler.point: the point (z_1, z_2, branch s), with a1 = A(z_1), drawn with the
// discrete probability pc, with log-weight log(pc f / q_mix); left out when not finite.
static __device__ void point(deep_sampler *q, deep_v2 z1, deep_v2 z2, deep_m2 a1, double s, double pc) {
    deep_v2 v2 = mul2(a1, z2);
    deep_m2 a2 = attention(q, v2);
    deep_m2 B;
    B.e[0] = a2.e[0] * a1.e[0] + a2.e[1] * a1.e[2];
    B.e[1] = a2.e[0] * a1.e[1] + a2.e[1] * a1.e[3];
    B.e[2] = a2.e[2] * a1.e[0] + a2.e[3] * a1.e[2];
    B.e[3] = a2.e[2] * a1.e[1] + a2.e[3] * a1.e[3];
    double detB = B.e[0] * B.e[3] - B.e[1] * B.e[2];
    deep_v2 su = make_v2(s * q->u.e[0], s * q->u.e[1]);
    deep_v2 z3 = solve2(B, su);
    double z[DEEP_PM];
    double quad = 0;
    for (int l = 0; l < 2; l++) {
        double x[3] = {z1.e[l] - q->om1.e[l], z2.e[l] - q->om2.e[l], z3.e[l] - q->om3.e[l]};
        z[l] = x[0];
        z[2 + l] = x[1];
        z[4 + l] = x[2];
        for (int i = 0; i < 3; i++) {
            for (int j = 0; j < 3; j++) {
                quad += x[i] * q->vinv[i * 3 + j] * x[j];
            }
        }
    }
    double logF = q->logNorm - quad / 2 - log(fabs(detB));
    // q_0: the prior of x (the Cholesky factor's quadratic form), s with probability 1/2.
    double q0 = 0;
    for (int l = 0; l < 2; l++) {
        double e0 = z[l] / q->lxx[0];
        double e1 = (z[2 + l] - q->lxx[1] * e0) / q->lxx[2];
        q0 += e0 * e0 + e1 * e1;
    }
    double lq = q->logMix[0] - q0 / 2;
    if (q->frac[1] > 0) {
        double n3 = quad2(z3, q->om3) / q->v33;
        double lq1 = q->logMix[1] - (quad2(z1, q->om1) / q->v11 + n3) / 2 + log_jacobian_at(q, a2, v2, su);
        double lq2 = q->logMix[2] - (quad2(v2, q->mv) / q->sv + n3) / 2 + log(fabs(a1.e[0] * a1.e[3] - a1.e[1] * a1.e[2])) +
                     log_jacobian_at(q, a1, z1, mul2(a1, z3));
        lq = log_sum_exp3(lq, lq1, lq2);
    }
    double lw = log(pc) + logF - lq;
    if (is_nan(lw) || is_inf(lw, 0)) {
        return;
    }
    add(q, z, lw);
}

// draw_prior is DeepSampler.drawPrior: x ~ N(omega_x, V_xx), both branches.
static __device__ void draw_prior(deep_sampler *q, const double *g) {
    deep_v2 z1, z2;
    for (int l = 0; l < 2; l++) {
        z1.e[l] = q->om1.e[l] + q->lxx[0] * g[l];
        z2.e[l] = q->om2.e[l] + q->lxx[1] * g[l] + q->lxx[2] * g[2 + l];
    }
    deep_m2 a1 = attention(q, z1);
    point(q, z1, z2, a1, 1, 0.5);
    point(q, z1, z2, a1, -1, 0.5);
}

// draw_chart1 is DeepSampler.drawChart1: z_1, z_3 drawn, v_2 solved.
static __device__ void draw_chart1(deep_sampler *q, const double *g) {
    double s1 = sqrt(q->v11), s3 = sqrt(q->v33);
    deep_v2 z1 = make_v2(q->om1.e[0] + s1 * g[0], q->om1.e[1] + s1 * g[1]);
    deep_v2 z3 = make_v2(q->om3.e[0] + s3 * g[2], q->om3.e[1] + s3 * g[3]);
    deep_m2 a1 = attention(q, z1);
    deep_v2 w = mul2(a1, z3);
    for (int is = 0; is < 2; is++) {
        double s = is == 0 ? 1.0 : -1.0;
        deep_v2 v2;
        if (!solve_attention(q, w, make_v2(s * q->u.e[0], s * q->u.e[1]), &v2)) {
            continue;
        }
        for (int ig = 0; ig < 2; ig++) {
            double sg = ig == 0 ? 1.0 : -1.0;
            point(q, z1, solve2(a1, make_v2(sg * v2.e[0], sg * v2.e[1])), a1, s, 0.25);
        }
    }
}

// draw_chart2 is DeepSampler.drawChart2: v_2, z_3 drawn, z_1 solved.
static __device__ void draw_chart2(deep_sampler *q, const double *g) {
    double sv = sqrt(q->sv), s3 = sqrt(q->v33);
    deep_v2 v2 = make_v2(q->mv.e[0] + sv * g[0], q->mv.e[1] + sv * g[1]);
    deep_v2 z3 = make_v2(q->om3.e[0] + s3 * g[2], q->om3.e[1] + s3 * g[3]);
    deep_m2 a2 = attention(q, v2);
    for (int is = 0; is < 2; is++) {
        double s = is == 0 ? 1.0 : -1.0;
        deep_v2 r = solve2(a2, make_v2(s * q->u.e[0], s * q->u.e[1]));
        deep_v2 z1;
        if (!solve_attention(q, z3, r, &z1)) {
            continue;
        }
        for (int ig = 0; ig < 2; ig++) {
            double sg = ig == 0 ? 1.0 : -1.0;
            deep_v2 zz = make_v2(sg * z1.e[0], sg * z1.e[1]);
            deep_m2 a1 = attention(q, zz);
            point(q, zz, solve2(a1, v2), a1, s, 0.25);
        }
    }
}

// finish is DeepSampler.finish: the estimates of n draws into out.
static __device__ void finish(const deep_sampler *q, double *out, int n) {
    if (!(q->sw > 0)) {
        deep_fail(out, DEEP_NO_POINT);
        return;
    }
    double sw = q->sw;
    for (int a = 0; a < DEEP_PM; a++) {
        double m = q->mean[a];
        double dm = m - q->mu2[a];
        out[DEEP_OUT_MEAN + a] = m - q->sw2 * dm / (sw * sw);
        out[DEEP_OUT_ERR + a] = sqrt(q->m2[a] + q->sw2 * dm * dm) / sw;
        for (int b = a; b < DEEP_PM; b++) {
            double v = q->co[a * DEEP_PM + b] / sw + m * q->mean[b];
            out[DEEP_OUT_SECOND + a * DEEP_PM + b] = v;
            out[DEEP_OUT_SECOND + b * DEEP_PM + a] = v;
        }
    }
    double zhat = sw / (double)n;
    double varZ = (q->sw2 / (double)n - zhat * zhat) / (double)n;
    // E log Zhat = log Z - Var/(2 Z^2) + O(1/n^2): remove the first-order bias.
    out[DEEP_OUT_LOGZ] = log(zhat) + q->mx + varZ / (2 * zhat * zhat);
    out[DEEP_OUT_ESS] = sw * sw / q->sw2;
    out[DEEP_OUT_STATUS] = DEEP_OK;
}

// moments is DeepSampler.Moments for n draws whose normals start at index base of the stream
// of key (base even): draw i takes G(base + 4 i + k), k < DEEP_NORMALS.
static __device__ void moments(deep_sampler *q, double *out, const double *u, const double *omega, const double *V,
                               int n, uint2 key, u64 base) {
    if (!setup(q, u, omega, V)) {
        deep_fail(out, DEEP_NOT_PD);
        return;
    }
    int nk[3] = {n, 0, 0};
    if (q->v33 < DEEP_BROAD_V33) {
        nk[0] = n / 5;
        nk[1] = (n - nk[0]) / 2;
        nk[2] = n - nk[0] - nk[1];
    }
    for (int k = 0; k < 3; k++) {
        q->frac[k] = (double)nk[k] / (double)n;
    }
    // The log of each component's weight in the mixture, with its discrete choice and its
    // Gaussians' normalisations (deep.go).
    q->logMix[0] = log(q->frac[0] * 0.5) - (2 * log(DEEP_TWO_PI) + 2 * log(q->lxx[0] * q->lxx[2]));
    q->logMix[1] = log(q->frac[1] * 0.25) - log(DEEP_TWO_PI * q->v11) - log(DEEP_TWO_PI * q->v33);
    q->logMix[2] = log(q->frac[2] * 0.25) - log(DEEP_TWO_PI * q->sv) - log(DEEP_TWO_PI * q->v33);
    reset(q);
    for (int i = 0; i < n; i++) {
        double g[DEEP_NORMALS];
        const u64 idx = base + 4ULL * (u64)i; // indices modulo 2^64, as FillNormals
        gauss_pair(idx >> 1, key, &g[0], &g[1]);
        gauss_pair((idx + 2ULL) >> 1, key, &g[2], &g[3]);
        q->dw = 0;
        for (int a = 0; a < DEEP_PM; a++) {
            q->dn[a] = 0;
        }
        if (i < nk[0]) {
            draw_prior(q, g);
        } else if (i < nk[0] + nk[1]) {
            draw_chart1(q, g);
        } else {
            draw_chart2(q, g);
        }
        end_draw(q);
    }
    finish(q, out, n);
}

// deep_sample runs DeepSampler (c, beta) on task t = blockIdx.x * BLOCK + threadIdx.x of n:
// the per-task body of kernels.DeepSampleBatch (the slot check, the task's normals at
// offset + slot stride, Moments). See the top of this file.
extern "C" __global__ void deep_sample(double *out, const double *in, long long n, int draws, double c, double beta,
                                       unsigned long long seed, unsigned long long offset, unsigned long long stride) {
    const i64 t = (i64)blockIdx.x * BLOCK + threadIdx.x;
    if (t >= n) {
        return;
    }
    const double *task = in + t * DEEP_IN;
    double *res = out + t * DEEP_OUT;
    const double slot = task[0];
    if (!(slot >= 0 && slot < MAX_DEEP_SLOT && slot == floor(slot))) {
        deep_fail(res, DEEP_BAD_SLOT);
        return;
    }
    const uint2 key = make_uint2((u32)seed, (u32)(seed >> 32));
    deep_sampler q;
    q.c = c;
    q.beta = beta;
    moments(&q, res, task + 1, task + 3, task + 9, draws, key, offset + (u64)slot * stride);
}
