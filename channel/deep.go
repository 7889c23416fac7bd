package channel

import (
	"fmt"
	"math"

	"github.com/aimtheory/aim/internal/par"
	"github.com/aimtheory/aim/internal/spd"
)

// DeepMaxL is the largest number of layers DeepSampler takes (fixed-size work space, the same
// in the CUDA kernel); DeepMinL the smallest.
const (
	DeepMinL = 2
	DeepMaxL = 4
)

// DeepNormals returns the number of standard normals one draw of DeepSampler takes at L
// layers: 2 (L - 1), one per free coordinate.
func DeepNormals(L int) int { return 2 * (L - 1) }

// DeepIn returns the number of values of one task at L layers: its slot s (an integer
// 0 <= s < 2^53 that places its draws in the normal stream), u (2), omega (L x 2, row-major:
// layer then token) and V (L x L, row-major, symmetric positive definite), in that order.
func DeepIn(L int) int { return 3 + 2*L + L*L }

// DeepOut returns the number of values of one task's result at L layers, P M = 2 L: the
// posterior mean of Z - omega (P M values, first-order bias removed), E[(Z - omega)(Z -
// omega)^T] ((P M)^2, row-major, symmetric), the delta-method standard error of each mean
// (P M), log Z_out (first-order bias removed), the effective sample size (sum w)^2 /
// sum_i W_i^2 over draws, and the status (DeepOK or the reason there is no estimate): the
// offsets DeepOutSecond, DeepOutErr, DeepOutLogZ, DeepOutESS and DeepOutStatus give them.
func DeepOut(L int) int { pm := 2 * L; return 3 + 2*pm + pm*pm }

// DeepOutSecond returns the offset of the second moments in a result at L layers (the means
// start at 0).
func DeepOutSecond(L int) int { return 2 * L }

// DeepOutErr returns the offset of the standard errors of the means.
func DeepOutErr(L int) int { return 2*L + 4*L*L }

// DeepOutLogZ returns the offset of log Z_out; the effective sample size and the status
// follow it.
func DeepOutLogZ(L int) int { return 4*L + 4*L*L }

// DeepOutESS returns the offset of the effective sample size.
func DeepOutESS(L int) int { return DeepOutLogZ(L) + 1 }

// DeepOutStatus returns the offset of the status.
func DeepOutStatus(L int) int { return DeepOutLogZ(L) + 2 }

// Status values of a result's status entry.
const (
	DeepOK      = 0 // an estimate
	DeepNotPD   = 1 // V is not positive definite
	DeepNoPoint = 2 // no draw reached the output (the estimate of Z_out is 0)
	DeepBadSlot = 3 // the slot is not an integer in [0, 2^53)
	DeepBadL    = 4 // the kernel only: L outside DeepMinL..DeepMaxL (the device front refuses it first)
)

// deepBroadVLL is the last layer's variance V_LL above which the charts are not drawn: the
// prior alone then gives the larger effective sample size per draw.
const deepBroadVLL = 0.25

// deepMaxPM is P M at DeepMaxL.
const deepMaxPM = 2 * DeepMaxL

// DeepSampler estimates the posterior moments of the deep attention channel of the sequence
// multi-index model with M = 2 tokens and DeepMinL <= L <= DeepMaxL layers (docs/theory/smi.md 2.2;
// engine/smi.Deep) by importance sampling. Given u, omega (L x 2) and V (L x L), Z has
// independent token columns N(omega, V), and the output fixes u = s B_{L-1} z_L (s = +-1), with
// v_1 = z_1, B_0 = I, B_k = A(v_k) B_{k-1}, v_k = B_{k-1} z_k and
// A(v) = softmax_row(beta v v^T) + c I. With z_L solved from the output, the integral runs
// over the free coordinates x = (z_1, ..., z_{L-1}) with the Jacobian 1/|det B_{L-1}|:
//
//	f(x) = prod_tokens N(z; omega, V) / |det B_{L-1}(x)|,   z_L = s B_{L-1}(x)^{-1} u.
//
// The integrand concentrates, once the last layer is learned (V_LL small), on the surface
// B_{L-1}(x) omega_L = s u. Closed-form charts follow it. In the token basis
// e_+- = (1, +-1)/sqrt 2 every attention is triangular,
// A(v) = [[1 + c, tau_0 - tau_1], [0, tau_0 + tau_1 - 1 + c]] with tau_i = sigma(beta alpha_i),
// alpha_0 = v_0 (v_0 - v_1), alpha_1 = v_1 (v_1 - v_0), so A(v) w = r has the closed-form
// solutions v = +-(alpha_0, -alpha_1)/sqrt(alpha_0 + alpha_1) (solveAttention). Chart j
// (1 <= j <= L - 1) draws z_L ~ N(omega_L, V_LL) and every other layer input v_k, k != j, from
// a Gaussian (v_1 = z_1 ~ N(omega_1, V_11); for k >= 2, v_k ~ N(m_k, S_k) around the forward
// map at omega, m_k = B_{k-1}(omega) omega_k, with S_k wider than v_k's spread), then solves
//
//	A(v_j) B_{j-1} z_L = A(v_{j+1})^{-1} ... A(v_{L-1})^{-1} s u
//
// for v_j, and sets z_k = B_{k-1}^{-1} v_k. Its density at x is
//
//	q_j(x) = prod_{k != j} N(v_k) N(z_L) J(v_j, r_j) prod_{k < L, k != j} |det B_{k-1}|,
//
// J(v, r) = |det d(A(v)^{-1} r)/dv| (logAttentionJacobian) and r_j = A(v_j) B_{j-1} z_L: the
// chain x -> (v_1, ..., v_{L-1}) (block triangular, blocks B_{k-1}) -> (v_{-j}, z_L) (the
// block d z_L / d v_j = B_{j-1}^{-1} dA(v_j)^{-1} r_j / dv_j). The proposal mixes these charts
// with the prior of x, q_0 = N(omega_x, V_xx), which bounds every weight (f <= q_0 times a
// constant). Of n draws, n/5 are q_0's and the rest are split evenly between the charts, in
// the order j = L - 1, ..., 1; above V_LL = 0.25 all are q_0's. Each chart is singular where
// its solved layer's two tokens are equal (J vanishes as (v_0 - v_1)^2); the other charts cover
// it there. Weights use the balance heuristic, f / sum_k (n_k/n) q_k, with the branch s and the
// sign of the solved layer enumerated (Rao-Blackwellised) rather than drawn. A draw takes
// DeepNormals(L) = 2 (L - 1) normals: the prior's x (layer by layer, token by token), or a
// chart's v_k in increasing k, then z_L.
//
// The reduction streams over the draws (one pass, as the CUDA kernel deep_sample does): the
// log-weights are taken relative to the running maximum, and the accumulators are rescaled
// when it grows. With W_i the weight of draw i (the sum over its points), zeta_i its weighted
// mean of Z - omega and m the self-normalised mean, the estimates are
//
//	mean   m - sum_i W_i^2 (m - zeta_i) / (sum W)^2   (the ratio's first-order bias removed)
//	error  sqrt(sum_i W_i^2 (zeta_i - m)^2) / sum W    (delta method)
//	log Z  log(sum W / n) + Var(Z-hat) / (2 Z-hat^2)  (the log's first-order bias removed)
//
// with the weighted means and centred sums updated in West's (1979) form, so no sum of squares
// is cancelled against another. The draws' normals are the caller's (DeepSampleBatch: the
// counter-based stream of package device).
//
// This is the CPU twin of deep.cu's deep_sample (one task per thread, the same rule, the same
// order of draws and points) and deep_sample_warp (the same draws, summed over 32 lanes and
// merged in a tree); results agree to rounding. One DeepSampler per goroutine: it holds work
// space.
type DeepSampler struct {
	c, beta             float64
	L, pm               int     // layers and P M = 2 L
	logHalf, logQuarter float64 // log 1/2 and log 1/4: a prior point's and a chart point's discrete probability
	// per task
	u       [2]float64
	om      [DeepMaxL][2]float64 // omega by layer
	vinv    [DeepMaxL * DeepMaxL]float64
	l       [DeepMaxL * DeepMaxL]float64 // the Cholesky factor of V (its leading block is V_xx's)
	vdiag   [DeepMaxL]float64
	mc      [DeepMaxL][2]float64 // the centres of the charts' v_k (m_1 = omega_1)
	sc      [DeepMaxL]float64    // and their variances (S_1 = V_11)
	logNorm float64              // log of the Gaussian normalisation of Z's density
	frac    [DeepMaxL]float64    // the mixture's fractions of draws: the prior, then chart j at j
	logMix  [DeepMaxL]float64    // log of each component's weight and normalisation in q_mix
	// the current draw's layer inputs v_k and attentions A(v_k), k < L (a prior draw's or a chart's)
	v [DeepMaxL][2]float64
	a [DeepMaxL][4]float64
	// the streaming reduction, relative to exp(mx)
	mx      float64            // the largest log-weight so far
	sw      float64            // sum of the points' weights
	mean    [deepMaxPM]float64 // their weighted mean of Z - omega
	co      [deepMaxPM * deepMaxPM]float64
	dw      float64            // the current draw's W_i
	dn      [deepMaxPM]float64 // and its weighted sum of Z - omega
	sw2     float64            // sum_i W_i^2
	mu2, m2 [deepMaxPM]float64 // the W_i^2-weighted mean of zeta_i and centred sum of squares
}

// NewDeepSampler returns the sampler of the deep attention channel with L layers
// (DeepMinL <= L <= DeepMaxL), M = 2 tokens, the attention's skip strength c and inverse
// temperature beta. It panics on another L (the callers check it).
func NewDeepSampler(L int, c, beta float64) *DeepSampler {
	if L < DeepMinL || L > DeepMaxL {
		panic(fmt.Sprintf("channel: DeepSampler at L = %d, need %d <= L <= %d", L, DeepMinL, DeepMaxL))
	}
	return &DeepSampler{c: c, beta: beta, L: L, pm: 2 * L, logHalf: math.Log(0.5), logQuarter: math.Log(0.25)}
}

// Moments writes into out (DeepOut(L) values) the estimates from n = len(normals) /
// DeepNormals(L) >= 2 draws for u, omega (L x 2) and V (L x L); normals are i.i.d. N(0, 1).
func (q *DeepSampler) Moments(out, u, omega, V, normals []float64) {
	L := q.L
	nn := DeepNormals(L)
	n := len(normals) / nn
	if !q.setup(u, omega, V) {
		deepFail(out, L, DeepNotPD)
		return
	}
	// nk[0]: the prior's draws; nk[j]: chart j's.
	var nk [DeepMaxL]int
	nk[0] = n
	if q.vdiag[L-1] < deepBroadVLL {
		nk[0] = n / 5
		rest := n - nk[0]
		for j := L - 1; j >= 1; j-- {
			nk[j] = rest / j // the charts j, j-1, ..., 1 share what is left evenly
			rest -= nk[j]
		}
	}
	for k := 0; k < L; k++ {
		q.frac[k] = float64(nk[k]) / float64(n)
	}
	// The log of each component's weight in the mixture, with its discrete choice (s for q_0;
	// s and the sign for the charts) and its Gaussians' normalisations (2-d: 1/(2 pi v)); the
	// prior's is that of N(omega_x, V_xx) per token.
	var ldx float64
	for k := 0; k < L-1; k++ {
		ldx += math.Log(q.l[k*L+k])
	}
	q.logMix[0] = math.Log(q.frac[0]*0.5) - (float64(L-1)*math.Log(2*math.Pi) + 2*ldx)
	for j := 1; j < L; j++ {
		lm := math.Log(q.frac[j]*0.25) - math.Log(2*math.Pi*q.vdiag[L-1])
		for k := 1; k < L; k++ {
			if k != j {
				lm -= math.Log(2 * math.Pi * q.sc[k-1])
			}
		}
		q.logMix[j] = lm
	}
	q.reset()
	chart, end := L-1, nk[0]+nk[L-1] // the chart of draw i >= nk[0], and the end of its draws
	for i := 0; i < n; i++ {
		g := normals[i*nn : (i+1)*nn]
		q.dw = 0
		for a := 0; a < q.pm; a++ {
			q.dn[a] = 0
		}
		if i < nk[0] {
			q.drawPrior(g)
		} else {
			for i >= end {
				chart--
				end += nk[chart]
			}
			q.drawChart(chart, g)
		}
		q.endDraw()
	}
	q.finish(out, n)
}

// deepFail writes a result without an estimate: NaN values and the status.
func deepFail(out []float64, L, status int) {
	n := DeepOut(L)
	for i := range out[:n] {
		out[i] = math.NaN()
	}
	out[DeepOutStatus(L)] = float64(status)
}

// setup takes the task's inputs; it reports false when V is not positive definite.
func (q *DeepSampler) setup(u, omega, V []float64) bool {
	L := q.L
	q.u = [2]float64{u[0], u[1]}
	for k := 0; k < L; k++ {
		q.om[k] = [2]float64{omega[2*k], omega[2*k+1]}
		q.vdiag[k] = V[k*L+k]
	}
	// V = L L^T: V_xx's factor is L's leading block, and log det V = 2 sum log L_ii.
	if !spd.Factor(q.l[:L*L], V, L) || !spd.Invert(q.vinv[:L*L], V, L) {
		return false
	}
	var logDet float64
	for k := 0; k < L; k++ {
		logDet += 2 * math.Log(q.l[k*L+k])
	}
	// Z's density per token is N(0, V): two tokens.
	q.logNorm = -(float64(L)*math.Log(2*math.Pi) + logDet)
	// The charts' proposals for v_k = B_{k-1} z_k, k >= 2: centred on the forward map at omega,
	// with a variance wider than v_k's spread, twice (1 + c)^(2(k-1)) V_kk ((1 + c) is A's
	// largest eigenvalue) plus |omega_k|^2 min(V_11, 1)/4 for the attentions' own motion with
	// the earlier layers, plus 0.01. At k = 1, v_1 = z_1 ~ N(omega_1, V_11).
	q.mc[0], q.sc[0] = q.om[0], q.vdiag[0]
	c1 := 1 + q.c
	b := q.attention(q.om[0]) // B_1 at omega
	g := c1 * c1
	for k := 1; k < L-1; k++ {
		m := mul2(b, q.om[k])
		q.mc[k] = m
		q.sc[k] = 2*g*q.vdiag[k] + 0.25*(q.om[k][0]*q.om[k][0]+q.om[k][1]*q.om[k][1])*math.Min(q.vdiag[0], 1) + 0.01
		b = matMul2(q.attention(m), b)
		g *= c1 * c1
	}
	return true
}

// attention returns A(v) (row-major, M = 2).
func (q *DeepSampler) attention(v [2]float64) [4]float64 { return Attention2(q.c, q.beta, v) }

// Attention2 is engine/smi.Deep.Attention written out for M = 2: A(v) = softmax_row(beta v v^T)
// + c I, row-major, whose row softmax is a logistic function of beta v_i (v_j - v_i).
func Attention2(c, beta float64, v [2]float64) [4]float64 {
	s0 := 1 / (1 + math.Exp(beta*v[0]*(v[1]-v[0])))
	s1 := 1 / (1 + math.Exp(beta*v[1]*(v[0]-v[1])))
	return [4]float64{s0 + c, 1 - s0, 1 - s1, s1 + c}
}

// solveAttention returns the v with A(v) w = r: none, or the pair v, -v (docs in DeepSampler).
func (q *DeepSampler) solveAttention(w, r [2]float64) (v [2]float64, ok bool) {
	wp, wm := (w[0]+w[1])/math.Sqrt2, (w[0]-w[1])/math.Sqrt2
	rp, rm := (r[0]+r[1])/math.Sqrt2, (r[0]-r[1])/math.Sqrt2
	if wm == 0 {
		return v, false
	}
	g := rm / wm                 // tau_0 + tau_1 - 1 + c
	dl := (rp - (1+q.c)*wp) / wm // tau_0 - tau_1
	t0 := (g + 1 - q.c + dl) / 2
	t1 := (g + 1 - q.c - dl) / 2
	if !(t0 > 0 && t0 < 1 && t1 > 0 && t1 < 1) {
		return v, false
	}
	a0 := math.Log(t0/(1-t0)) / q.beta
	a1 := math.Log(t1/(1-t1)) / q.beta
	p := a0 + a1 // (v_0 - v_1)^2
	if !(p > 0) {
		return v, false
	}
	d := math.Sqrt(p)
	return [2]float64{a0 / d, -a1 / d}, true
}

// logAttentionJacobian returns log |det d(A(v)^{-1} r)/dv|
//
//	= log [ 4 beta^2 tau_0 (1 - tau_0) tau_1 (1 - tau_1) (v_0 - v_1)^2 (r^-)^2 / ((1 + c) gamma^3) ],
//
// gamma = tau_0 + tau_1 - 1 + c and r^- = (r_0 - r_1)/sqrt 2 (the chain v -> alpha -> tau ->
// (gamma, tau_0 - tau_1) -> A^{-1} r of DeepSampler's triangular form).
func (q *DeepSampler) logAttentionJacobian(v, r [2]float64) float64 {
	return q.logJacobianAt(q.attention(v), v, r)
}

// logJacobianAt is logAttentionJacobian with a = A(v) already computed (tau_i = a_ii - c).
func (q *DeepSampler) logJacobianAt(a [4]float64, v, r [2]float64) float64 {
	s0, s1 := a[0]-q.c, a[3]-q.c
	g := s0 + s1 - 1 + q.c
	rm := (r[0] - r[1]) / math.Sqrt2
	d := v[0] - v[1]
	return math.Log(4 * q.beta * q.beta * s0 * (1 - s0) * s1 * (1 - s1) * d * d * rm * rm / ((1 + q.c) * g * g * g))
}

func (q *DeepSampler) drawPrior(g []float64) {
	L := q.L
	var z [DeepMaxL - 1][2]float64
	for l := 0; l < 2; l++ {
		for k := 0; k < L-1; k++ {
			x := q.om[k][l]
			for i := 0; i <= k; i++ {
				x += q.l[k*L+i] * g[i*2+l]
			}
			z[k][l] = x
		}
	}
	// The forward map: v_k = B_{k-1} z_k and A(v_k), shared by both branches.
	b := [4]float64{1, 0, 0, 1}
	for k := 1; k < L; k++ {
		q.v[k-1] = mul2(b, z[k-1])
		q.a[k-1] = q.attention(q.v[k-1])
		b = matMul2(q.a[k-1], b)
	}
	q.point(&z, 1, q.logHalf)
	q.point(&z, -1, q.logHalf)
}

// drawChart draws chart j's v_k (k != j) and z_L from g and adds the points of both branches s
// and both signs of the solved v_j.
func (q *DeepSampler) drawChart(j int, g []float64) {
	L := q.L
	gi := 0
	for k := 1; k < L; k++ {
		if k == j {
			continue
		}
		sd := math.Sqrt(q.sc[k-1])
		q.v[k-1] = [2]float64{q.mc[k-1][0] + sd*g[gi], q.mc[k-1][1] + sd*g[gi+1]}
		gi += 2
	}
	s3 := math.Sqrt(q.vdiag[L-1])
	zL := [2]float64{q.om[L-1][0] + s3*g[gi], q.om[L-1][1] + s3*g[gi+1]}
	// w = B_{j-1} z_L from the layers below j.
	w := zL
	for k := 1; k < j; k++ {
		q.a[k-1] = q.attention(q.v[k-1])
		w = mul2(q.a[k-1], w)
	}
	for k := j + 1; k < L; k++ {
		q.a[k-1] = q.attention(q.v[k-1])
	}
	for _, s := range [2]float64{1, -1} {
		r := [2]float64{s * q.u[0], s * q.u[1]}
		for k := L - 1; k > j; k-- {
			r = solve2(q.a[k-1], r)
		}
		vj, ok := q.solveAttention(w, r)
		if !ok {
			continue
		}
		for _, sg := range [2]float64{1, -1} {
			q.v[j-1] = [2]float64{sg * vj[0], sg * vj[1]}
			q.a[j-1] = q.attention(q.v[j-1])
			// z_k = B_{k-1}^{-1} v_k.
			var z [DeepMaxL - 1][2]float64
			b := [4]float64{1, 0, 0, 1}
			for k := 1; k < L; k++ {
				z[k-1] = solve2(b, q.v[k-1])
				b = matMul2(q.a[k-1], b)
			}
			q.point(&z, s, q.logQuarter)
		}
	}
}

// point adds the point x = (z_1, ..., z_{L-1}) with branch s, whose layer inputs
// v_k = B_{k-1} z_k and attentions A(v_k) (k < L) are in q.v and q.a, drawn with the discrete
// probability e^lpc, with its log-weight lpc + log f - log q_mix; a point whose weight is not
// finite is left out.
func (q *DeepSampler) point(zx *[DeepMaxL - 1][2]float64, s, lpc float64) {
	L := q.L
	// ldb[k] = log |det B_k| (B_0 = I), B_k = A(v_k) B_{k-1}.
	var ldb [DeepMaxL]float64
	b := [4]float64{1, 0, 0, 1}
	for k := 1; k < L; k++ {
		b = matMul2(q.a[k-1], b)
		ldb[k] = math.Log(math.Abs(b[0]*b[3] - b[1]*b[2]))
	}
	su := [2]float64{s * q.u[0], s * q.u[1]}
	zL := solve2(b, su)
	var z [deepMaxPM]float64 // Z - omega, layer by layer
	for k := 0; k < L-1; k++ {
		z[2*k], z[2*k+1] = zx[k][0]-q.om[k][0], zx[k][1]-q.om[k][1]
	}
	z[2*L-2], z[2*L-1] = zL[0]-q.om[L-1][0], zL[1]-q.om[L-1][1]
	var quad float64
	for l := 0; l < 2; l++ {
		for i := 0; i < L; i++ {
			for j := 0; j < L; j++ {
				quad += z[2*i+l] * q.vinv[i*L+j] * z[2*j+l]
			}
		}
	}
	logF := q.logNorm - quad/2 - ldb[L-1]
	// q_0: the prior of x (the Cholesky factor's quadratic form), s with probability 1/2.
	var q0 float64
	for l := 0; l < 2; l++ {
		var e [DeepMaxL]float64
		for k := 0; k < L-1; k++ {
			x := z[2*k+l]
			for i := 0; i < k; i++ {
				x -= q.l[k*L+i] * e[i]
			}
			e[k] = x / q.l[k*L+k]
			q0 += e[k] * e[k]
		}
	}
	lq := q.logMix[0] - q0/2
	if q.vdiag[L-1] < deepBroadVLL {
		// The charts share N(z_L), the Gaussians of every v_k and sum_k log |det B_{k-1}|; chart
		// j leaves out v_j's Gaussian and |det B_{j-1}| and adds J(v_j, r_j). lt[0] is q_0's
		// term, lt[j] chart j's.
		var lt [DeepMaxL]float64
		lt[0] = lq
		nL := quad2(zL, q.om[L-1]) / q.vdiag[L-1]
		var nv [DeepMaxL]float64
		var sumN, sumDet float64
		for k := 1; k < L; k++ {
			nv[k] = quad2(q.v[k-1], q.mc[k-1]) / q.sc[k-1]
			sumN += nv[k]
			sumDet += ldb[k-1]
		}
		bj := [4]float64{1, 0, 0, 1} // B_{j-1}
		for j := 1; j < L; j++ {
			r := mul2(q.a[j-1], mul2(bj, zL))
			lt[j] = q.logMix[j] - (sumN-nv[j]+nL)/2 + (sumDet - ldb[j-1]) + q.logJacobianAt(q.a[j-1], q.v[j-1], r)
			bj = matMul2(q.a[j-1], bj)
		}
		lq = logSumExp(lt[:L])
	}
	lw := lpc + logF - lq
	if math.IsNaN(lw) || math.IsInf(lw, 0) {
		return
	}
	q.add(&z, lw)
}

// reset empties the reduction.
func (q *DeepSampler) reset() {
	q.mx = math.Inf(-1)
	q.sw, q.sw2 = 0, 0
	for a := 0; a < q.pm; a++ {
		q.mean[a], q.mu2[a], q.m2[a] = 0, 0, 0
		for b := 0; b < q.pm; b++ {
			q.co[a*q.pm+b] = 0
		}
	}
}

// add takes the point z (Z - omega) of log-weight lw into the running sums: the weight is
// exp(lw - mx), and a new maximum rescales every sum first (exp(mx_old - mx), squared for the
// sums of squared weights).
func (q *DeepSampler) add(z *[deepMaxPM]float64, lw float64) {
	pm := q.pm
	if lw > q.mx {
		f := math.Exp(q.mx - lw)
		f2 := f * f
		q.sw *= f
		q.dw *= f
		q.sw2 *= f2
		for a := 0; a < pm; a++ {
			q.dn[a] *= f
			q.m2[a] *= f2
			for b := a; b < pm; b++ {
				q.co[a*pm+b] *= f
			}
		}
		q.mx = lw
	}
	w := math.Exp(lw - q.mx)
	sw := q.sw + w
	r, k := w/sw, w*(q.sw/sw)
	var d [deepMaxPM]float64
	for a := 0; a < pm; a++ {
		q.dn[a] += w * z[a]
		d[a] = z[a] - q.mean[a]
		q.mean[a] += d[a] * r
	}
	for a := 0; a < pm; a++ {
		for b := a; b < pm; b++ {
			q.co[a*pm+b] += k * d[a] * d[b]
		}
	}
	q.dw += w
	q.sw = sw
}

// endDraw takes the current draw's W_i and zeta_i = N_i / W_i into the sums over draws (a draw
// without a point has W_i = 0 and adds nothing).
func (q *DeepSampler) endDraw() {
	if !(q.dw > 0) {
		return
	}
	w2 := q.dw * q.dw
	s2 := q.sw2 + w2
	r, k := w2/s2, w2*(q.sw2/s2)
	for a := 0; a < q.pm; a++ {
		d := q.dn[a]/q.dw - q.mu2[a]
		q.mu2[a] += d * r
		q.m2[a] += k * d * d
	}
	q.sw2 = s2
}

// finish writes the estimates of n draws (DeepSampler's formulas) into out.
func (q *DeepSampler) finish(out []float64, n int) {
	L, pm := q.L, q.pm
	if !(q.sw > 0) {
		deepFail(out, L, DeepNoPoint)
		return
	}
	sw := q.sw
	sec, er := DeepOutSecond(L), DeepOutErr(L)
	for a := 0; a < pm; a++ {
		m := q.mean[a]
		dm := m - q.mu2[a]
		out[a] = m - q.sw2*dm/(sw*sw)
		out[er+a] = math.Sqrt(q.m2[a]+q.sw2*dm*dm) / sw
		for b := a; b < pm; b++ {
			v := q.co[a*pm+b]/sw + m*q.mean[b]
			out[sec+a*pm+b], out[sec+b*pm+a] = v, v
		}
	}
	zhat := sw / float64(n)
	varZ := (q.sw2/float64(n) - zhat*zhat) / float64(n)
	// E log Zhat = log Z - Var/(2 Z^2) + O(1/n^2): remove the first-order bias.
	out[DeepOutLogZ(L)] = math.Log(zhat) + q.mx + varZ/(2*zhat*zhat)
	out[DeepOutESS(L)] = sw * sw / q.sw2
	out[DeepOutStatus(L)] = DeepOK
}

// mul2 is a b for the 2 x 2 a (row-major) and the 2-vector b.
func mul2(a [4]float64, b [2]float64) [2]float64 {
	return [2]float64{a[0]*b[0] + a[1]*b[1], a[2]*b[0] + a[3]*b[1]}
}

// matMul2 is the product a b of 2 x 2 matrices (row-major).
func matMul2(a, b [4]float64) [4]float64 {
	return [4]float64{a[0]*b[0] + a[1]*b[2], a[0]*b[1] + a[1]*b[3], a[2]*b[0] + a[3]*b[2], a[2]*b[1] + a[3]*b[3]}
}

// solve2 is a^{-1} b by Cramer's rule.
func solve2(a [4]float64, b [2]float64) [2]float64 {
	det := a[0]*a[3] - a[1]*a[2]
	return [2]float64{(a[3]*b[0] - a[1]*b[1]) / det, (-a[2]*b[0] + a[0]*b[1]) / det}
}

// quad2 is |x - m|^2.
func quad2(x, m [2]float64) float64 {
	a, b := x[0]-m[0], x[1]-m[1]
	return a*a + b*b
}

// logSumExp is log sum_k e^{x_k}, -Inf when every x_k is.
func logSumExp(x []float64) float64 {
	m := x[0]
	for _, v := range x[1:] {
		m = math.Max(m, v)
	}
	if math.IsInf(m, -1) {
		return m
	}
	var s float64
	for _, v := range x {
		s += math.Exp(v - m)
	}
	return m + math.Log(s)
}

// deepChunk is the number of tasks per chunk of DeepSampleBatch's worker pool.
const deepChunk = 4

// MaxDeepSlot bounds a task's slot: below it every integer is exact in float64.
const MaxDeepSlot = 1 << 53

// DeepSampleBatch runs DeepSampler (L layers, c, beta) over n tasks: task t's inputs are
// in[t DeepIn(L) : (t+1) DeepIn(L)], its result goes to out[t DeepOut(L) : (t+1) DeepOut(L)],
// and its draws take the normals G(seed, offset + s stride + k), k < DeepNormals(L) draws, s
// the task's slot, written by fill(dst, seed, off) as dst[k] = G(seed, off + k) (package
// device's FillNormals, passed in because package device depends on this one). Workers run
// chunks of tasks (par.For); each task is computed alone, so the results do not depend on
// workers. This is the CPU twin of the kernel deep_sample.
func DeepSampleBatch(out, in []float64, n, L, draws int, c, beta float64, seed, offset, stride uint64, workers int,
	fill func(dst []float64, seed, offset uint64)) error {
	if L < DeepMinL || L > DeepMaxL {
		return fmt.Errorf("deep channel sampler: L = %d, need %d <= L <= %d", L, DeepMinL, DeepMaxL)
	}
	type state struct {
		q *DeepSampler
		g []float64
	}
	nin, nout := DeepIn(L), DeepOut(L)
	return par.For(workers, par.Chunks(n, deepChunk), func() (state, error) {
		return state{NewDeepSampler(L, c, beta), make([]float64, draws*DeepNormals(L))}, nil
	}, func(s state, ch int) error {
		lo, hi := par.Span(ch, n, deepChunk)
		for t := lo; t < hi; t++ {
			task, res := in[t*nin:(t+1)*nin], out[t*nout:(t+1)*nout]
			slot := task[0]
			if !(slot >= 0 && slot < MaxDeepSlot && slot == math.Floor(slot)) {
				deepFail(res, L, DeepBadSlot)
				continue
			}
			fill(s.g, seed, offset+uint64(slot)*stride)
			s.q.Moments(res, task[1:3], task[3:3+2*L], task[3+2*L:nin], s.g)
		}
		return nil
	})
}
