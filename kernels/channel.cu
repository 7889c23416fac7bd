// channel.cu: the output channels of the attention-indexed model, one thread per sample.
//
// Twins: cpu/channel.go (ChannelOutput, ChannelGOut: the z <-> u coordinate conversion and the
// square-sum) around the scalar channels of engine/channel: softmax.go (Softmax.Output,
// Softmax.GOut), hardmax.go (Hardmax.Output, Hardmax.GOut) and bvn.go (bvnRatios,
// BivariateNormalCDF / genzUpper, bvnTailIntegral, logNormCDF, millsSeries, invMills). Each
// __device__ function below is a line-by-line port of the Go function named in its comment,
// with the same variable names and the same order of operations; math.Exp, Log, Log1p, Erfc,
// Asin, Sin and Sqrt become CUDA's exp, log, log1p, erfc, asin, sin and sqrt (within 1-2 ulp
// of Go's, so results agree to about 1e-15 relative, not bit for bit), and math.Max/Min/IsInf/
// IsNaN become go_max/go_min/is_inf/is_nan with Go's semantics (NaN and signed zeros).
//
// Launch: thread mu = blockIdx.x * BLOCK + threadIdx.x handles sample mu (no grid stride);
// grid = GridThreads(n). softmax_gout and hardmax_gout also write part[blockIdx.x] = the sum
// over the block's samples of sum_{a<=b} g_mu,ab^2 (z-coordinates), reduced by a fixed tree
// (warp shuffles, then the warp sums), so part has GridThreads(n) entries.
//
// Coordinates (cpu.ChannelGOut): omega and g are full symmetric t x t matrices in
// z-coordinates, of which only the upper triangle of omega is read. The scalar channels work
// in packed unit coordinates u: omega_u = omega_z / sqrt2, V_u = V / 2, g_z = g_u / sqrt2,
// written to both (a, b) and (b, a). g may be omega (each omega entry is read before g is
// written there); g must not be y. y may be h in the output kernels.

#include "common.cuh"
#include "gomath.cuh"

#define SQRT2 1.4142135623730951      // 0x1.6a09e667f3bcdp+00 math.Sqrt2
#define TWO_PI 6.2831853071795862     // 0x1.921fb54442d18p+02 2 * math.Pi
#define LN_SQRT_2PI 0.91893853320467278 // 0x1.d67f1c864beb5p-01 lnSqrt2Pi = log(sqrt(2 pi))
#define BVN_TAIL_CUT (-2.0)           // bvnTailCut

// ---------------------------------------------------------------------------------------
// Gauss-Legendre rules on [-1, 1] (bvn.go gl6, gl12, gl20, glTail = 12 points): the values of
// gonum's quad.Legendre{}.FixedLocations (embed_test.go checks them bit for bit).

__constant__ double gl6x[6] = {0.93246951420315205, 0.6612093864662647, 0.23861918608319677, -0.23861918608319677, -0.66120938646626437, -0.93246951420315205};
__constant__ double gl6w[6] = {0.17132449237917036, 0.36076157304813861, 0.46791393457269104, 0.46791393457269104, 0.36076157304813861, 0.17132449237917036};
__constant__ double gl12x[12] = {0.98156063424671913, 0.90411725637047491, 0.76990267419430469, 0.58731795428661737, 0.36783149899818035, 0.1252334085114688, -0.1252334085114688, -0.36783149899818013, -0.58731795428661715, -0.76990267419430469, -0.9041172563704748, -0.98156063424671913};
__constant__ double gl12w[12] = {0.047175336386511828, 0.10693932599531843, 0.16007832854334622, 0.20316742672306592, 0.23349253653835481, 0.24914704581340277, 0.24914704581340277, 0.23349253653835481, 0.20316742672306592, 0.16007832854334622, 0.10693932599531843, 0.047175336386511828};
__constant__ double gl20x[20] = {0.99312859918509488, 0.96397192727791392, 0.91223442825132595, 0.83911697182221889, 0.7463319064601508, 0.63605368072651514, 0.51086700195082724, 0.37370608871541977, 0.22778585114164507, 0.076526521133497338, -0.076526521133497116, -0.22778585114164496, -0.37370608871541955, -0.5108670019508269, -0.63605368072651502, -0.74633190646015068, -0.83911697182221878, -0.91223442825132584, -0.96397192727791381, -0.99312859918509488};
__constant__ double gl20w[20] = {0.017614007139152118, 0.040601429800386939, 0.062672048334109068, 0.083276741576704755, 0.10193011981724044, 0.11819453196151841, 0.13168863844917664, 0.14209610931838204, 0.14917298647260374, 0.15275338713072584, 0.15275338713072584, 0.14917298647260374, 0.14209610931838204, 0.13168863844917664, 0.11819453196151841, 0.10193011981724044, 0.083276741576704755, 0.062672048334109068, 0.040601429800386939, 0.017614007139152118};
#define glTailx gl12x
#define glTailw gl12w

// ---------------------------------------------------------------------------------------
// bvn.go

// normCDF is the standard normal CDF Phi(x).
static __device__ double normCDF(double x) { return 0.5 * erfc(-x / SQRT2); }

// logNormPDF is log phi(x).
static __device__ double logNormPDF(double x) { return -0.5 * x * x - LN_SQRT_2PI; }

// millsSeries is t Phi(-t)/phi(t) = 1 - 1/t^2 + 3/t^4 - ... for t >= 30 (12 terms).
static __device__ double millsSeries(double t) {
    double z = 1 / (t * t);
    double sum = 1.0, term = 1.0;
    for (int n = 1; n <= 12; n++) {
        term *= -(double)(2 * n - 1) * z;
        sum += term;
    }
    return sum;
}

// logNormCDF is log Phi(x), accurate in relative terms for all x.
static __device__ double logNormCDF(double x) {
    if (is_nan(x)) {
        return go_nan();
    } else if (x > 0) {
        return log1p(-0.5 * erfc(x / SQRT2));
    } else if (x > -30) {
        return log(0.5 * erfc(-x / SQRT2));
    } else if (is_inf(x, -1)) {
        return neg_inf();
    }
    return logNormPDF(x) - log(-x) + log(millsSeries(-x));
}

// invMills is phi(x)/Phi(x), with full relative accuracy for all x.
static __device__ double invMills(double x) {
    if (x > -30) {
        return exp(logNormPDF(x)) / normCDF(x);
    }
    return -x / millsSeries(-x);
}

static __device__ double clamp01(double x) { return go_max(0, go_min(1, x)); }

// genzUpper is Genz's BVNU: P(X > dh, Y > dk) with correlation r.
static __device__ __noinline__ double genzUpper(double dh, double dk, double r) {
    if (is_inf(dh, 1) || is_inf(dk, 1)) {
        return 0;
    } else if (is_inf(dh, -1)) {
        if (is_inf(dk, -1)) {
            return 1;
        }
        return normCDF(-dk);
    } else if (is_inf(dk, -1)) {
        return normCDF(-dh);
    } else if (r == 0) {
        return normCDF(-dh) * normCDF(-dk);
    }
    const double twoPi = TWO_PI;
    const double *xs, *ws;
    int ng;
    double ar = fabs(r);
    if (ar < 0.3) {
        xs = gl6x, ws = gl6w, ng = 6;
    } else if (ar < 0.75) {
        xs = gl12x, ws = gl12w, ng = 12;
    } else {
        xs = gl20x, ws = gl20w, ng = 20;
    }
    double h = dh, k = dk;
    double hk = h * k;
    double bvn = 0.0;
    if (fabs(r) < 0.925) {
        // Drezner-Wesolowsky: int_0^{asin r} exp(-(h^2+k^2-2hk sin t)/(2cos^2 t)) dt/(2 pi).
        double hs = (h * h + k * k) / 2;
        double asr = asin(r) / 2;
        for (int i = 0; i < ng; i++) {
            double sn = sin(asr * (xs[i] + 1));
            bvn += ws[i] * exp((sn * hk - hs) / (1 - sn * sn));
        }
        return clamp01(bvn * asr / twoPi + normCDF(-h) * normCDF(-k));
    }
    if (r < 0) {
        k = -k;
        hk = -hk;
    }
    if (fabs(r) < 1) {
        double as = (1 - r) * (1 + r);
        double a = sqrt(as);
        double bs = (h - k) * (h - k);
        double c = (4 - hk) / 8;
        double d = (12 - hk) / 16;
        bvn = a * exp(-(bs / as + hk) / 2) * (1 - c * (bs - as) * (1 - d * bs / 5) / 3 + c * d * as * as / 5);
        if (hk > -160) {
            double b = sqrt(bs);
            bvn -= exp(-hk / 2) * sqrt(twoPi) * normCDF(-b / a) * b * (1 - c * bs * (1 - d * bs / 5) / 3);
        }
        a /= 2;
        for (int i = 0; i < ng; i++) {
            double x = xs[i];
            for (int j = 0; j < 2; j++) {
                double xx = j == 0 ? a * (x + 1) : a * (1 - x);
                double xs2 = xx * xx;
                double rs = sqrt(1 - xs2);
                double asr = -(bs / xs2 + hk) / 2;
                if (asr > -100) {
                    bvn += a * ws[i] / 2 * exp(asr) *
                           (exp(-hk * xs2 / (2 * (1 + rs) * (1 + rs))) / rs - (1 + c * xs2 * (1 + d * xs2)));
                }
            }
        }
        bvn = -bvn / twoPi;
    }
    if (r > 0) {
        bvn += normCDF(-go_max(h, k));
    } else {
        bvn = -bvn;
        if (k > h) {
            if (h < 0) {
                bvn += normCDF(k) - normCDF(h);
            } else {
                bvn += normCDF(-h) - normCDF(-k);
            }
        }
    }
    return clamp01(bvn);
}

// BivariateNormalCDF returns P(X < h, Y < k) for standard normals with correlation r.
static __device__ __noinline__ double BivariateNormalCDF(double h, double k, double r) {
    if (is_nan(h) || is_nan(k) || is_nan(r) || r < -1 || r > 1) {
        return go_nan();
    }
    return genzUpper(-h, -k, r);
}

// tailF is the closure f of bvnTailIntegral: exp(h t - t^2/2) Phi(a + beta t)/Phi(a).
static __device__ double tailF(double t, double h, double a, double beta, bool direct, double pa, double la) {
    if (direct) {
        return exp(h * t - t * t / 2) * normCDF(a + beta * t) / pa;
    }
    return exp(h * t - t * t / 2 + logNormCDF(a + beta * t) - la);
}

// bvnTailIntegral returns I = Phi2(h, k; r)/D1 for h <= k, h < 0.
static __device__ double bvnTailIntegral(double h, double k, double r, double s) {
    double a = (k - r * h) / s;
    double beta = r / s;
    double la = logNormCDF(a);
    double gamma = -(h + beta * invMills(a));
    if (gamma < 1) {
        gamma = 1;
    }
    // ratio(t) = Phi(a + beta t)/Phi(a), directly while Phi does not underflow.
    bool direct = a > -30 && a + beta * 40 / gamma > -30 && a + beta * 40 / gamma < 30;
    double pa = normCDF(a);
    double capU = 1.5 * gamma / sqrt(1 + beta * beta);
    double sum = 0.0;
    for (double u0 = 0.0; u0 < 45;) {
        double w = go_min(3 * exp(u0 / 24), capU);
        double t0 = u0 / gamma, t1 = (u0 + w) / gamma;
        double half = (t1 - t0) / 2, mid = (t1 + t0) / 2;
        double part = 0.0;
        for (int i = 0; i < 12; i++) {
            part += glTailw[i] * tailF(mid + half * glTailx[i], h, a, beta, direct, pa, la);
        }
        sum += part * half;
        u0 += w;
        // The integrand is log-concave: past its maximum the rest is at most f(t1)/slope.
        if (tailF(t1, h, a, beta, direct, pa, la) * go_max(1 / gamma, 1) < 1e-17 * sum) {
            break;
        }
    }
    return sum;
}

// bvnRatios returns log Phi2(h, k; r), R1 = D1/Phi2, R2 = D2/Phi2 and P = phi2/Phi2.
static __device__ void bvnRatios(double h, double k, double r, double *lz, double *r1, double *r2, double *p) {
    double s = sqrt((1 - r) * (1 + r));
    double a1 = (k - r * h) / s; // D1 = phi(h) Phi(a1), phi2 = phi(h) phi(a1)/s
    double a2 = (h - r * k) / s; // D2 = phi(k) Phi(a2), phi2 = phi(k) phi(a2)/s
    double ld1 = logNormPDF(h) + logNormCDF(a1);
    double ld2 = logNormPDF(k) + logNormCDF(a2);
    if (go_min(h, k) >= BVN_TAIL_CUT) {
        double z = BivariateNormalCDF(h, k, r);
        if (r >= 0 || z > 1e-3) {
            *r1 = exp(ld1) / z;
            *r2 = exp(ld2) / z;
            *lz = log(z);
            *p = *r1 * invMills(a1) / s;
            return;
        }
    }
    if (h <= k) {
        double I = bvnTailIntegral(h, k, r, s);
        *r1 = 1 / I;
        *lz = ld1 + log(I);
        *r2 = exp(ld2 - ld1) * *r1;
        *p = *r1 * invMills(a1) / s;
        return;
    }
    double I = bvnTailIntegral(k, h, r, s);
    *r2 = 1 / I;
    *lz = ld2 + log(I);
    *r1 = exp(ld1 - ld2) * *r2;
    *p = *r2 * invMills(a2) / s;
}

// ---------------------------------------------------------------------------------------
// softmax.go and hardmax.go, one sample. m points at the sample's t x t block.

// softmaxOutput is Softmax.Output: the row softmax of beta h, the row maximum subtracted.
// y may be h: each entry of a row is read before it is written.
static __device__ void softmaxOutput(double *y, const double *h, int T, double beta) {
    for (int a = 0; a < T; a++) {
        const double *row = h + (i64)a * T;
        double *out = y + (i64)a * T;
        double m = row[0];
        for (int b = 1; b < T; b++) {
            m = go_max(m, row[b]);
        }
        double sum = 0;
        for (int b = 0; b < T; b++) {
            double e = exp(beta * (row[b] - m));
            out[b] = e;
            sum += e;
        }
        for (int b = 0; b < T; b++) {
            out[b] /= sum;
        }
    }
}

// hardmaxOutput is Hardmax.Output: one-hot row argmax, ties to the lowest index.
static __device__ void hardmaxOutput(double *y, const double *hm, int T) {
    for (int a = 0; a < T; a++) {
        int best = 0;
        for (int c = 1; c < T; c++) {
            if (hm[(i64)a * T + c] > hm[(i64)a * T + best]) {
                best = c;
            }
        }
        for (int c = 0; c < T; c++) {
            y[(i64)a * T + c] = 0;
        }
        y[(i64)a * T + best] = 1;
    }
}

// softmaxLogy is the closure logy of Softmax.GOut: log(max(y_ab, 2^-1022)), the smallest
// normal double (bits 0x0010000000000000).
static __device__ __forceinline__ double softmaxLogy(const double *y, int T, int a, int b) {
    return log(go_max(y[(i64)a * T + b], __longlong_as_double(0x0010000000000000LL)));
}

// softmaxPhi is the closure phi of Softmax.GOut: (logy(a, b) - logy(a, T-1)) / beta.
static __device__ __forceinline__ double softmaxPhi(const double *y, int T, double beta, int a, int b) {
    return (softmaxLogy(y, T, a, b) - softmaxLogy(y, T, a, T - 1)) / beta;
}

// softmaxGOut is cpu.ChannelGOut around Softmax.GOut for one sample: omega_u[k] =
// omz[a,b]/sqrt2 (upper triangle, packed order k), g_u = Softmax.GOut(y, omega_u, V/2), and
// g_z = g_u/sqrt2 written to (a, b) and (b, a). The packed intermediate g[k] of the first pass
// of Softmax.GOut is kept in gz[a,b] (the entry of omega it replaces has been read). Returns
// sum_{a<=b} g_z^2 in packed order.
static __device__ double softmaxGOut(double *gz, const double *y, const double *omz, int T, double beta, double V) {
    const double Vu = V / 2;
    double dot = 0; // n . (u^p - omega)
    for (int a = 0; a < T; a++) {
        for (int b = a; b < T; b++) {
            double ou = omz[(i64)a * T + b] / SQRT2;
            double hp = softmaxPhi(y, T, beta, T - 1, a) + softmaxPhi(y, T, beta, a, b);
            double gk;
            if (a == b) {
                gk = hp / SQRT2 - ou;
                dot += gk / SQRT2;
            } else {
                gk = hp - ou;
                dot += gk;
            }
            gz[(i64)a * T + b] = gk;
        }
    }
    double c = dot / ((double)(T * T) / 2);
    double s = 0;
    for (int a = 0; a < T; a++) {
        for (int b = a; b < T; b++) {
            double gk = gz[(i64)a * T + b];
            double gu;
            if (a == b) {
                gu = (gk - c / SQRT2) / Vu;
            } else {
                gu = (gk - c) / Vu;
            }
            double g = gu / SQRT2;
            gz[(i64)a * T + b] = g;
            gz[(i64)b * T + a] = g;
            s += g * g;
        }
    }
    return s;
}

// hardmaxGOut is cpu.ChannelGOut around Hardmax.GOut (T = 2) for one sample; paper selects
// the published phi2 formula (PaperCompat). Returns g11^2 + g12^2 + g22^2 in z-coordinates.
static __device__ double hardmaxGOut(double *gz, const double *y, const double *omz, double V, bool paper) {
    // cpu.ChannelGOut: packed omega_u and V_u.
    const double omega0 = omz[0] / SQRT2, omega1 = omz[1] / SQRT2, omega2 = omz[3] / SQRT2;
    const double Vu = V / 2;
    // Hardmax.GOut.
    double r = sqrt(3 * Vu);
    double s1 = -1.0, s2 = -1.0;
    if (y[0] > 0.5) {
        s1 = 1;
    }
    if (y[3] > 0.5) {
        s2 = 1;
    }
    double k1 = s1 * (SQRT2 * omega0 - omega1) / r;
    double k2 = s2 * (SQRT2 * omega2 - omega1) / r;
    double rho = s1 * s2 / 3;
    double lz, r1, r2, p;
    bvnRatios(k1, k2, rho, &lz, &r1, &r2, &p);
    if (paper) {
        r1 = p, r2 = p;
    }
    double g0 = SQRT2 * s1 * r1 / r;
    double g1 = -(s1 * r1 + s2 * r2) / r;
    double g2 = SQRT2 * s2 * r2 / r;
    // cpu.ChannelGOut: g_z = g_u/sqrt2, symmetric, and the square-sum in packed order.
    double z0 = g0 / SQRT2, z1 = g1 / SQRT2, z2 = g2 / SQRT2;
    gz[0] = z0;
    gz[1] = z1;
    gz[2] = z1;
    gz[3] = z2;
    double s = 0;
    s += z0 * z0;
    s += z1 * z1;
    s += z2 * z2;
    return s;
}

// ---------------------------------------------------------------------------------------
// Kernels.

// softmax_output: y[mu] = row softmax of beta h[mu] (t x t). y may be h.
extern "C" __global__ void softmax_output(double *y, const double *h, long long n, int t, double beta) {
    const i64 mu = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (mu < n && t > 0) {
        const i64 tt = (i64)t * t;
        softmaxOutput(y + mu * tt, h + mu * tt, t, beta);
    }
}

// hardmax_output: y[mu] = one-hot row argmax of h[mu] (t x t; the channel uses t = 2). y may
// be h.
extern "C" __global__ void hardmax_output(double *y, const double *h, long long n, int t) {
    const i64 mu = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (mu < n && t > 0) {
        const i64 tt = (i64)t * t;
        hardmaxOutput(y + mu * tt, h + mu * tt, t);
    }
}

// softmax_gout: g[mu] = g_out(y[mu]; omega[mu], v) in z-coordinates (t x t, t >= 2, beta > 0,
// v > 0: the host checks), part[blockIdx.x] = the block's square-sum.
extern "C" __global__ void softmax_gout(double *g, double *part, const double *y, const double *omega,
                                        long long n, int t, double beta, double v) {
    __shared__ double sh[BLOCK / 32];
    const i64 mu = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    double s = 0;
    if (mu < n && t > 0) {
        const i64 tt = (i64)t * t;
        s = softmaxGOut(g + mu * tt, y + mu * tt, omega + mu * tt, t, beta, v);
    }
    s = block_sum(s, sh);
    if (threadIdx.x == 0) {
        part[blockIdx.x] = s;
    }
}

// hardmax_gout: as softmax_gout for the hardmax channel (t = 2, 2 x 2 blocks); paper != 0
// selects the published phi2 formula.
extern "C" __global__ void hardmax_gout(double *g, double *part, const double *y, const double *omega,
                                        long long n, double v, int paper) {
    __shared__ double sh[BLOCK / 32];
    const i64 mu = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    double s = 0;
    if (mu < n) {
        s = hardmaxGOut(g + mu * 4, y + mu * 4, omega + mu * 4, v, paper != 0);
    }
    s = block_sum(s, sh);
    if (threadIdx.x == 0) {
        part[blockIdx.x] = s;
    }
}

// ---------------------------------------------------------------------------------------
// The hardmax channel at 3 <= T <= 6 (hardmaxt.go HardmaxT.GOut, polytope.go Polytope.Moments,
// Lattice, truncated, InvLogNormCDF, and gonum's mathext.NormalQuantile): one sample per block,
// the threads over the lattice points.
//
// Per sample the block builds the T(T-1) winner constraints A (K x M, packed unit coordinates)
// and the thresholds c = -A omega_u / sqrt(V_u) in shared memory; thread 0 orders them (least
// probable first, a stable sort as slices.SortStableFunc) and computes the Householder QR, L
// and the last variables exactly as Polytope.prepare; then for each shift r every thread draws
// the points i = i0 + threadIdx.x, i0 + threadIdx.x + BLOCK, ... of [i0, i1) (Lattice.point,
// Polytope.sample: per-thread eta), keeping its weights relative to its own largest; the block
// takes the largest log weight (block_max), rescales every thread's sums to it and adds them
// (block_sum, a fixed tree), and thread 0 merges them into the shift's running sums. Thread 0
// then combines the shifts (Polytope.combine) and applies Moments' stopping rule (from 64
// points, doubling up to points, until the errors are below tol; tol = 0: every point). The
// lattice's generators and shifts are computed here as NewLattice computes them (the shifts
// from SplitMix64 of HARDMAXT_SEED), so the rule is the CPU's point for point. Only the order
// of the sums over points differs from the CPU's sequential one: values agree to about 1e-14
// relative with the same number of points; the adaptive rule may stop at another doubling
// where an error is within rounding of tol.

#define HARDMAXT_MAXT 6
#define HARDMAXT_MAXM 21  // Fields(6)
#define HARDMAXT_MAXK 30  // 6 * 5 constraints
#define HARDMAXT_MAXR 16  // shifts
#define HARDMAXT_SEED 0x68617264ULL // hardmaxTSeed

__constant__ int latticePrimes[20] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71};

// gonum mathext.NormalQuantile's coefficients (Wichura's AS241).
__constant__ double zQSA[8] = {2509.0809287301226727, 33430.575583588128105, 67265.770927008700853, 45921.953931549871457, 13731.693765509461125, 1971.5909503065514427, 133.14166789178437745, 3.387132872796366608};
__constant__ double zQSB[8] = {5226.495278852854561, 28729.085735721942674, 39307.89580009271061, 21213.794301586595867, 5394.1960214247511077, 687.1870074920579083, 42.313330701600911252, 1.0};
__constant__ double zQIA[8] = {7.7454501427834140764e-4, 0.0227238449892691845833, 0.24178072517745061177, 1.27045825245236838258, 3.64784832476320460504, 5.7694972214606914055, 4.6303378461565452959, 1.42343711074968357734};
__constant__ double zQIB[8] = {1.05075007164441684324e-9, 5.475938084995344946e-4, 0.0151986665636164571966, 0.14810397642748007459, 0.68976733498510000455, 1.6763848301838038494, 2.05319162663775882187, 1.0};
__constant__ double zQTA[8] = {2.01033439929228813265e-7, 2.71155556874348757815e-5, 0.0012426609473880784386, 0.026532189526576123093, 0.29656057182850489123, 1.7848265399172913358, 5.4637849111641143699, 6.6579046435011037772};
__constant__ double zQTB[8] = {2.04426310338993978564e-15, 1.4215117583164458887e-7, 1.8463183175100546818e-5, 7.868691311456132591e-4, 0.0148753612908506148525, 0.13692988092273580531, 0.59983220655588793769, 1.0};

// poly8 is gonum's ((((((c0 z + c1) z + c2) z + c3) z + c4) z + c5) z + c6) z + c7.
static __device__ double poly8(const double *c, double z) {
    return ((((((c[0] * z + c[1]) * z + c[2]) * z + c[3]) * z + c[4]) * z + c[5]) * z + c[6]) * z + c[7];
}

// normalQuantile is mathext.NormalQuantile for 0 < p < 1 (0 and 1 give -Inf and +Inf).
static __device__ double normalQuantile(double p) {
    if (p == 1) {
        return pos_inf();
    } else if (p == 0) {
        return neg_inf();
    }
    double dp = p - 0.5;
    if (fabs(dp) <= 0.425) {
        double z = 0.180625 - dp * dp;
        return dp * poly8(zQSA, z) / poly8(zQSB, z);
    }
    double r = p < 0.5 ? sqrt(-log(p)) : sqrt(-log(1 - p));
    double x;
    if (r <= 5.0) {
        double z = r - 1.6;
        x = poly8(zQIA, z) / poly8(zQIB, z);
    } else {
        double z = r - 5;
        x = poly8(zQTA, z) / poly8(zQTB, z);
    }
    return p < 0.5 ? -x : x;
}

// invLogNormCDF is InvLogNormCDF: x with log Phi(x) = lp.
static __device__ __noinline__ double invLogNormCDF(double lp) {
    if (is_nan(lp) || lp > 0) {
        return go_nan();
    } else if (lp == 0) {
        return pos_inf();
    } else if (is_inf(lp, -1)) {
        return lp; // -Inf (not neg_inf(): NVRTC 11.8 numbered the two constants' registers at random)
    }
    if (lp > -0.69314718055994531) { // -math.Ln2
        return -normalQuantile(-expm1(lp));
    } else if (lp > -690) {
        return normalQuantile(exp(lp));
    }
    double x = -sqrt(-2 * lp - log(-4 * 3.14159265358979323846 * lp));
    for (int it = 0; it < 100; it++) {
        double dx = (logNormCDF(x) - lp) / invMills(x);
        x -= dx;
        if (fabs(dx) <= 1e-15 * fabs(x)) {
            break;
        }
    }
    return x;
}

// truncatedNormal is truncated: log(Phi(hi) - Phi(lo)) and the u-quantile (mean false) or the
// mean (mean true) of the standard normal on [lo, hi].
static __device__ __noinline__ double truncatedNormal(double lo, double hi, double u, bool mean, double *x) {
    bool flip = lo > 0;
    if (flip) {
        double t = lo;
        lo = -hi, hi = -t, u = 1 - u;
    }
    double a = logNormCDF(hi), b = logNormCDF(lo);
    double t = exp(b - a);
    double lp = a + log1p(-t);
    double v = 0;
    if (mean) {
        if (!is_inf(lo, -1)) {
            v += exp(logNormPDF(lo) - lp);
        }
        if (!is_inf(hi, 1)) {
            v -= exp(logNormPDF(hi) - lp);
        }
    } else {
        v = invLogNormCDF(a + log(t + u * (1 - t)));
    }
    v = go_min(go_max(v, lo), hi);
    if (flip) {
        v = -v;
    }
    *x = v;
    return lp;
}

// go_cmp is cmp.Compare for float64: NaN below everything, NaNs equal.
static __device__ int go_cmp(double x, double y) {
    bool xn = is_nan(x), yn = is_nan(y);
    if (xn) {
        return yn ? 0 : -1;
    }
    if (yn) {
        return 1;
    }
    return x < y ? -1 : (x > y ? 1 : 0);
}

// block_max returns, in every thread, the largest v over the block (NaN ignored, as fmax),
// through sh (BLOCK values); every thread must call it.
static __device__ double block_max(double v, double *sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (unsigned o = BLOCK / 2; o > 0; o >>= 1) {
        if (threadIdx.x < o) {
            sh[threadIdx.x] = fmax(sh[threadIdx.x], sh[threadIdx.x + o]);
        }
        __syncthreads();
    }
    double m = sh[0];
    __syncthreads();
    return m;
}

// hardmaxTPoly is the block's shared state of one sample's Polytope (K constraints on M
// variables) and its Lattice (Dim = M - 1, R shifts).
struct hardmaxTPoly {
    int K, M, R;
    double a[HARDMAXT_MAXK * HARDMAXT_MAXM];   // A, unordered
    double l[HARDMAXT_MAXK * HARDMAXT_MAXM];   // L = A_ordered Q
    double q[HARDMAXT_MAXM * HARDMAXT_MAXM];   // Q
    double hh[HARDMAXT_MAXM * HARDMAXT_MAXK];  // Householder work
    double c0[HARDMAXT_MAXK];                  // thresholds, unordered
    double c[HARDMAXT_MAXK];                   // thresholds, ordered
    double score[HARDMAXT_MAXK];
    double v[HARDMAXT_MAXM];
    int order[HARDMAXT_MAXK], last[HARDMAXT_MAXK];
    double alpha[HARDMAXT_MAXM - 1];
    double shift[HARDMAXT_MAXR * (HARDMAXT_MAXM - 1)];
    // Per shift: the running sums (top, sw, sm) of shiftSum, and the combine's work.
    double top[HARDMAXT_MAXR], sw[HARDMAXT_MAXR], sm[HARDMAXT_MAXR * HARDMAXT_MAXM];
    double ratio[HARDMAXT_MAXR * HARDMAXT_MAXM], ratioNaN[HARDMAXT_MAXR];
    double mean[HARDMAXT_MAXM], m[HARDMAXT_MAXM];
    double omega[HARDMAXT_MAXM];
    int n, done, stop;
};

static __device__ double hardmaxTNorm(const double *v, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) {
        s += v[i] * v[i];
    }
    return sqrt(s);
}

// hardmaxTPrepare is Polytope.prepare (thread 0).
static __device__ __noinline__ void hardmaxTPrepare(hardmaxTPoly *p) {
    const int K = p->K, M = p->M;
    for (int k = 0; k < K; k++) {
        p->order[k] = k;
        p->score[k] = p->c0[k] / hardmaxTNorm(p->a + k * M, M);
    }
    // slices.SortStableFunc(order, cmp.Compare(score[j], score[i])): stable, descending.
    for (int k = 1; k < K; k++) {
        int x = p->order[k], j = k - 1;
        while (j >= 0 && go_cmp(p->score[p->order[j]], p->score[x]) < 0) {
            p->order[j + 1] = p->order[j];
            j--;
        }
        p->order[j + 1] = x;
    }
    double *h = p->hh;
    for (int k = 0; k < K; k++) {
        int o = p->order[k];
        p->c[k] = p->c0[o];
        for (int j = 0; j < M; j++) {
            h[j * K + k] = p->a[o * M + j];
        }
    }
    for (int i = 0; i < M * M; i++) {
        p->q[i] = 0;
    }
    for (int j = 0; j < M; j++) {
        p->q[j * M + j] = 1;
    }
    double *v = p->v;
    for (int col = 0; col < (M < K ? M : K); col++) {
        double s = 0;
        for (int i = col; i < M; i++) {
            s += h[i * K + col] * h[i * K + col];
        }
        s = sqrt(s);
        if (s == 0) {
            continue;
        }
        double alpha = -copysign(s, h[col * K + col]);
        for (int i = 0; i < M; i++) {
            v[i] = 0;
        }
        for (int i = col; i < M; i++) {
            v[i] = h[i * K + col];
        }
        v[col] -= alpha;
        double vv = 0.0;
        for (int i = col; i < M; i++) {
            vv += v[i] * v[i];
        }
        if (vv == 0) {
            continue;
        }
        for (int k = 0; k < K; k++) {
            double d = 0;
            for (int i = col; i < M; i++) {
                d += v[i] * h[i * K + k];
            }
            d *= 2 / vv;
            for (int i = col; i < M; i++) {
                h[i * K + k] -= d * v[i];
            }
        }
        for (int r = 0; r < M; r++) {
            double d = 0;
            for (int i = col; i < M; i++) {
                d += p->q[r * M + i] * v[i];
            }
            d *= 2 / vv;
            for (int i = col; i < M; i++) {
                p->q[r * M + i] -= d * v[i];
            }
        }
    }
    for (int k = 0; k < K; k++) {
        double nk = 0.0;
        for (int j = 0; j < M; j++) {
            double x = h[j * K + k];
            if (j > k) {
                x = 0;
            }
            p->l[k * M + j] = x;
            nk = go_max(nk, fabs(x));
        }
        p->last[k] = 0;
        for (int j = M - 1; j >= 0; j--) {
            if (fabs(p->l[k * M + j]) > 1e-12 * nk) {
                p->last[k] = j;
                break;
            }
        }
    }
}

// hardmaxTSample is Lattice.point (point i of shift r) then Polytope.sample: it writes eta and
// returns false when an interval is empty, else true with *lw the log weight.
static __device__ __noinline__ bool hardmaxTSample(const hardmaxTPoly *p, int r, long long i, double *eta, double *lw) {
    const int K = p->K, M = p->M, dim = M - 1;
    double s0 = 0;
    for (int j = 0; j < M; j++) {
        double lo = neg_inf(), hi = pos_inf();
        for (int k = 0; k < K; k++) {
            if (p->last[k] != j) {
                continue;
            }
            double s = p->c[k];
            for (int ii = 0; ii < j; ii++) {
                s -= p->l[k * M + ii] * eta[ii];
            }
            double coef = p->l[k * M + j];
            if (coef > 0) {
                lo = go_max(lo, s / coef);
            } else {
                hi = go_min(hi, s / coef);
            }
        }
        if (!(lo < hi)) {
            return false;
        }
        double u = 0;
        if (j < M - 1) {
            double x = (double)i * p->alpha[j] + p->shift[r * dim + j];
            x -= floor(x);
            u = fabs(2 * x - 1);
        }
        double x;
        double lp = truncatedNormal(lo, hi, u, j == M - 1, &x);
        if (is_inf(lp, -1)) {
            return false;
        }
        s0 += lp;
        eta[j] = x;
    }
    *lw = s0;
    return true;
}

// hardmaxTRotate is Polytope.rotate: (Q eta)_j.
static __device__ double hardmaxTRotate(const hardmaxTPoly *p, const double *eta, int j) {
    const int M = p->M;
    double s = 0;
    for (int i = 0; i < M; i++) {
        s += p->q[j * M + i] * eta[i];
    }
    return s;
}

// hardmaxTCombine is Polytope.combine (thread 0) over n points per shift: it writes m and
// returns log Z, with the errors in *errLogZ and *errM.
static __device__ __noinline__ double hardmaxTCombine(hardmaxTPoly *p, int n, double *errLogZ, double *errM) {
    const int M = p->M, R = p->R;
    double top = neg_inf();
    for (int r = 0; r < R; r++) {
        if (p->sw[r] > 0) {
            top = go_max(top, p->top[r] + log(p->sw[r] / (double)n));
        }
    }
    if (is_inf(top, -1)) {
        for (int j = 0; j < M; j++) {
            p->m[j] = go_nan();
        }
        *errLogZ = pos_inf(), *errM = pos_inf();
        return neg_inf();
    }
    double sz = 0, sz2 = 0;
    double *eta = p->mean;
    for (int j = 0; j < M; j++) {
        eta[j] = 0;
    }
    for (int r = 0; r < R; r++) {
        if (p->sw[r] == 0) {
            p->ratioNaN[r] = 1;
            continue;
        }
        p->ratioNaN[r] = 0;
        double z = exp(p->top[r] + log(p->sw[r] / (double)n) - top);
        sz += z;
        sz2 += z * z;
        for (int j = 0; j < M; j++) {
            p->ratio[r * M + j] = p->sm[r * M + j] / p->sw[r];
            eta[j] += z * p->ratio[r * M + j];
        }
    }
    for (int j = 0; j < M; j++) {
        eta[j] /= sz;
    }
    double meanZ = sz / (double)R;
    double varZ = (sz2 / (double)R - meanZ * meanZ) * (double)R / (double)(R - 1);
    double lz = top + log(meanZ);
    *errLogZ = sqrt(go_max(varZ, 0) / (double)R) / meanZ;
    double em = 0;
    for (int j = 0; j < M; j++) {
        double s = 0, s2 = 0;
        for (int r = 0; r < R; r++) {
            double x = go_nan();
            if (!p->ratioNaN[r]) {
                x = hardmaxTRotate(p, p->ratio + r * M, j);
            }
            s += x;
            s2 += x * x;
        }
        double v = (s2 - s * s / (double)R) / (double)(R - 1);
        em = go_max(em, sqrt(go_max(v, 0) / (double)R));
        if (is_nan(v)) {
            em = pos_inf();
        }
    }
    *errM = em;
    for (int j = 0; j < M; j++) {
        p->m[j] = hardmaxTRotate(p, eta, j);
    }
    return lz;
}

// hardmaxTGOut is cpu.ChannelGOut around HardmaxT.GOut for one sample (the whole block
// calls it): g in z-coordinates, and the square-sum returned in thread 0.
static __device__ __noinline__ double hardmaxTGOut(hardmaxTPoly *p, double *sh, double *gz, const double *y, const double *omz,
                                      int T, double V, int points, double tol) {
    const int M = p->M, K = p->K, R = p->R;
    const double Vu = V / 2, sv = sqrt(Vu);
    if (threadIdx.x == 0) {
        // cpu.ChannelGOut: packed omega_u.
        int k = 0;
        for (int a = 0; a < T; a++) {
            for (int b = a; b < T; b++) {
                p->omega[k++] = omz[a * T + b] / SQRT2;
            }
        }
        // HardmaxT.winners and Constraints.
        int win[HARDMAXT_MAXT];
        for (int a = 0; a < T; a++) {
            win[a] = 0;
            for (int c = 0; c < T; c++) {
                if (y[a * T + c] > 0.5) {
                    win[a] = c;
                }
            }
        }
        for (int i = 0; i < K * M; i++) {
            p->a[i] = 0;
        }
        int row = 0;
        for (int a = 0; a < T; a++) {
            for (int c = 0; c < T; c++) {
                if (c == win[a]) {
                    continue;
                }
                double *ar = p->a + row * M;
                const int ab = win[a], lo1 = a < ab ? a : ab, hi1 = a < ab ? ab : a;
                const int i1 = lo1 * T - lo1 * (lo1 - 1) / 2 + (hi1 - lo1);
                ar[i1] += a == ab ? SQRT2 : 1.0;
                const int lo2 = a < c ? a : c, hi2 = a < c ? c : a;
                const int i2 = lo2 * T - lo2 * (lo2 - 1) / 2 + (hi2 - lo2);
                ar[i2] += a == c ? -SQRT2 : -1.0;
                row++;
            }
        }
        // HardmaxT.GOut: c = -A omega / sqrt(V).
        for (int kk = 0; kk < K; kk++) {
            double s = 0;
            for (int j = 0; j < M; j++) {
                s += p->a[kk * M + j] * p->omega[j];
            }
            p->c0[kk] = -s / sv;
        }
        hardmaxTPrepare(p);
        for (int r = 0; r < R; r++) {
            p->top[r] = neg_inf(), p->sw[r] = 0;
            for (int j = 0; j < M; j++) {
                p->sm[r * M + j] = 0;
            }
        }
        p->n = tol > 0 ? (64 < points ? 64 : points) : points;
        p->done = 0;
        p->stop = 0;
    }
    __syncthreads();
    double eta[HARDMAXT_MAXM], sm[HARDMAXT_MAXM];
    for (;;) {
        const int i0 = p->done, i1 = p->n;
        for (int r = 0; r < R; r++) {
            // This thread's points of [i0, i1): weights relative to its largest log weight.
            double top = neg_inf(), sw = 0;
            for (int j = 0; j < M; j++) {
                sm[j] = 0;
            }
            for (long long i = i0 + threadIdx.x; i < i1; i += BLOCK) {
                double lw;
                if (!hardmaxTSample(p, r, i, eta, &lw)) {
                    continue;
                }
                if (lw > top) {
                    double f = exp(top - lw);
                    sw *= f;
                    for (int j = 0; j < M; j++) {
                        sm[j] *= f;
                    }
                    top = lw;
                }
                double e = exp(lw - top);
                sw += e;
                for (int j = 0; j < M; j++) {
                    sm[j] += e * eta[j];
                }
            }
            // The block's: relative to the largest of all, added in a fixed tree.
            double btop = block_max(top, sh);
            double f = sw > 0 ? exp(top - btop) : 0;
            double bsw = block_sum(sw * f, sh);
            for (int j = 0; j < M; j++) {
                double v = block_sum(sm[j] * f, sh);
                if (threadIdx.x == 0) {
                    sm[j] = v;
                }
            }
            if (threadIdx.x == 0 && bsw != 0) { // NaN merges too, as on the CPU
                // Merge into the shift's running sums (shiftSum, rescaled as its top moves).
                if (btop > p->top[r]) {
                    double g = exp(p->top[r] - btop);
                    p->sw[r] *= g;
                    for (int j = 0; j < M; j++) {
                        p->sm[r * M + j] *= g;
                    }
                    p->top[r] = btop;
                }
                double e = exp(btop - p->top[r]);
                p->sw[r] += e * bsw;
                for (int j = 0; j < M; j++) {
                    p->sm[r * M + j] += e * sm[j];
                }
            }
        }
        if (threadIdx.x == 0) {
            p->done = p->n;
            double errLogZ, errM;
            double lz = hardmaxTCombine(p, p->n, &errLogZ, &errM);
            double mx = 0;
            for (int j = 0; j < M; j++) {
                mx = go_max(mx, fabs(p->m[j]));
            }
            if (p->n >= points || (errLogZ <= tol && errM <= tol * go_max(1, mx)) || is_inf(lz, -1)) {
                p->stop = 1;
            } else {
                p->n = 2 * p->n < points ? 2 * p->n : points;
            }
        }
        __syncthreads();
        if (p->stop) {
            break;
        }
    }
    double s = 0;
    if (threadIdx.x == 0) {
        // HardmaxT.GOut g_u = m / sqrt(V_u); cpu.ChannelGOut g_z = g_u / sqrt2, symmetric.
        int k = 0;
        for (int a = 0; a < T; a++) {
            for (int b = a; b < T; b++) {
                double g = p->m[k++] / sv / SQRT2;
                gz[a * T + b] = g;
                gz[b * T + a] = g;
                s += g * g;
            }
        }
    }
    __syncthreads(); // p is reused by the next sample
    return s;
}

// hardmaxt_gout: g[mu] = g_out(y[mu]; omega[mu], v) of the hardmax channel at 3 <= t <= 6 in
// z-coordinates, with the lattice rule of shifts (2 to 16) shifts of up to points points each
// and the stopping tolerance tol (0: every point); part[mu] = sum_{a<=b} g_mu,ab^2 (NaN where
// the estimate fails). Block b handles the samples b, b + gridDim.x, ...; grid =
// GridSamples(n), and part has n entries. The host checks t, points, shifts and v > 0.
extern "C" __global__ void hardmaxt_gout(double *g, double *part, const double *y, const double *omega, long long n,
                                         int t, double v, int points, int shifts, double tol) {
    __shared__ hardmaxTPoly p;
    __shared__ double sh[BLOCK];
    const int M = t * (t + 1) / 2, dim = M - 1;
    if (threadIdx.x == 0) {
        p.M = M, p.K = t * (t - 1), p.R = shifts;
        // NewLattice: alpha_j = frac(sqrt(p_j)); the shifts by SplitMix64 from the seed.
        for (int j = 0; j < dim; j++) {
            double s = sqrt((double)latticePrimes[j]);
            p.alpha[j] = s - floor(s);
        }
        unsigned long long x = HARDMAXT_SEED;
        for (int i = 0; i < shifts * dim; i++) {
            x += 0x9e3779b97f4a7c15ULL;
            unsigned long long z = x;
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
            z ^= z >> 31;
            p.shift[i] = (double)(z >> 11) * 1.1102230246251565e-16; // 2^-53
        }
    }
    __syncthreads();
    const i64 tt = (i64)t * t;
    for (i64 mu = blockIdx.x; mu < n; mu += gridDim.x) {
        double s = hardmaxTGOut(&p, sh, g + mu * tt, y + mu * tt, omega + mu * tt, t, v, points, tol);
        if (threadIdx.x == 0) {
            part[mu] = s;
        }
    }
}
