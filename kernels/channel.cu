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

#define SQRT2 1.4142135623730951      // 0x1.6a09e667f3bcdp+00 math.Sqrt2
#define TWO_PI 6.2831853071795862     // 0x1.921fb54442d18p+02 2 * math.Pi
#define LN_SQRT_2PI 0.91893853320467278 // 0x1.d67f1c864beb5p-01 lnSqrt2Pi = log(sqrt(2 pi))
#define BVN_TAIL_CUT (-2.0)           // bvnTailCut

// ---------------------------------------------------------------------------------------
// Go's math.Max, Min, IsInf, IsNaN.

static __device__ __forceinline__ double pos_inf() { return __longlong_as_double(0x7ff0000000000000LL); }
static __device__ __forceinline__ double neg_inf() { return __longlong_as_double((long long)0xfff0000000000000ULL); }
static __device__ __forceinline__ double go_nan() { return __longlong_as_double(0x7ff8000000000001LL); }
static __device__ __forceinline__ bool is_nan(double x) { return x != x; }
// is_inf is math.IsInf(x, sign): sign > 0 +Inf, sign < 0 -Inf, 0 either.
static __device__ __forceinline__ bool is_inf(double x, int sign) {
    return (sign >= 0 && x > 1.7976931348623157e308) || (sign <= 0 && x < -1.7976931348623157e308);
}
static __device__ __forceinline__ bool signbit_(double x) { return __double_as_longlong(x) < 0; }

// go_max is math.Max.
static __device__ __forceinline__ double go_max(double x, double y) {
    if (is_inf(x, 1) || is_inf(y, 1)) {
        return pos_inf();
    }
    if (is_nan(x) || is_nan(y)) {
        return go_nan();
    }
    if (x == 0 && x == y) {
        return signbit_(x) ? y : x;
    }
    return x > y ? x : y;
}

// go_min is math.Min.
static __device__ __forceinline__ double go_min(double x, double y) {
    if (is_inf(x, -1) || is_inf(y, -1)) {
        return neg_inf();
    }
    if (is_nan(x) || is_nan(y)) {
        return go_nan();
    }
    if (x == 0 && x == y) {
        return signbit_(x) ? x : y;
    }
    return x < y ? x : y;
}

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
