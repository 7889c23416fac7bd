package kernels

import (
	"math"

	"github.com/aimtheory/aim/internal/par"
	"github.com/aimtheory/aim/internal/spd"
)

// The layout of DeepSample's tasks and results, and the number of normals one draw takes.
const (
	// DeepNormals is the number of standard normals one draw of DeepSampler takes.
	DeepNormals = 4
	// DeepIn is the number of values of one task: its slot s (an integer 0 <= s < 2^53 that
	// places its draws in the normal stream), u (2), omega (3 x 2, row-major: layer then
	// token) and V (3 x 3, row-major, symmetric positive definite).
	DeepIn = 18
	// DeepOut is the number of values of one task's result, at the offsets below.
	DeepOut = 51

	DeepOutMean   = 0  // 6 values: the posterior mean of Z - omega, first-order bias removed
	DeepOutSecond = 6  // 36: E[(Z - omega)(Z - omega)^T], row-major 6 x 6, symmetric
	DeepOutErr    = 42 // 6: the delta-method standard error of each mean
	DeepOutLogZ   = 48 // log Z_out, first-order bias removed
	DeepOutESS    = 49 // the effective sample size (sum w)^2 / sum_i W_i^2 over draws
	DeepOutStatus = 50 // DeepOK or the reason there is no estimate
)

// Status values of DeepOut's DeepOutStatus entry.
const (
	DeepOK      = 0 // an estimate
	DeepNotPD   = 1 // V is not positive definite
	DeepNoPoint = 2 // no draw reached the output (the estimate of Z_out is 0)
	DeepBadSlot = 3 // the slot is not an integer in [0, 2^53)
)

// deepBroadV33 is the last layer's variance V_33 above which the charts are not drawn: the
// prior alone then gives the larger effective sample size per draw.
const deepBroadV33 = 0.25

// deepPM is P M = 3 x 2, the size of Z.
const deepPM = 6

// DeepSampler estimates the posterior moments of the L = 3, M = 2 deep attention channel of
// the sequence multi-index model (docs/SMI.md 2.2; engine/smi.Deep) by importance sampling:
// given u, omega (3 x 2) and V (3 x 3), the density of Z = (z_1, z_2, z_3) is
// N(Z; omega, V) (per token) times the delta of the output, u = +-B(z_1, z_2) z_3 with
// B = A(v_2) A(z_1), v_2 = A(z_1) z_2, A(v) = softmax_row(beta v v^T) + c I. With z_3 solved
// from the output, the integral runs over x = (z_1, z_2) with the Jacobian 1/|det B|.
//
// The integrand concentrates, once the last layer is learned (V_33 small), on the 2-d surface
// B(x) omega_3 = s u. Two closed-form charts follow it. In the token basis
// e_+- = (1, +-1)/sqrt 2 every attention is triangular,
// A(v) = [[1 + c, tau_0 - tau_1], [0, tau_0 + tau_1 - 1 + c]] with tau_i = sigma(beta alpha_i),
// alpha_0 = v_0 (v_0 - v_1), alpha_1 = v_1 (v_1 - v_0), so A(v) w = r has the closed-form
// solutions v = +-(alpha_0, -alpha_1)/sqrt(alpha_0 + alpha_1) (solveAttention). The proposal
// is the mixture of
//
//	q_0: x ~ N(omega_x, V_xx), the prior (it bounds every weight, since f <= q_0 times a constant);
//	q_1: z_1 ~ N(omega_1, V_11), z_3 ~ N(omega_3, V_33), then v_2 solves A(v_2) A(z_1) z_3 = s u;
//	q_2: v_2 ~ N(A(omega_1) omega_2, S_v), z_3 ~ N(omega_3, V_33), then z_1 solves
//	     A(z_1) z_3 = A(v_2)^{-1} s u;
//
// and z_2 = A(z_1)^{-1} v_2. Of n draws, n/5 are q_0's and the rest are split evenly between
// the charts; above V_33 = 0.25 all are q_0's. Each chart is singular where its solved
// layer's two tokens are equal (the Jacobian |d(A(v)^{-1} r)/dv| of logAttentionJacobian
// vanishes as (v_0 - v_1)^2); the other chart covers it there. Weights use the balance
// heuristic, f / sum_k (n_k/n) q_k, with the branch s and the sign of the solved layer
// enumerated (Rao-Blackwellised) rather than drawn.
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
// order of draws and points); results agree to rounding. One DeepSampler per goroutine: it
// holds work space.
type DeepSampler struct {
	c, beta float64
	// per task
	u             [2]float64
	om1, om2, om3 [2]float64
	vinv          [9]float64 // V^{-1}
	lxx           [3]float64 // Cholesky factor of V_xx (2 x 2, packed lower: l00, l10, l11)
	v11, v33      float64
	mv            [2]float64 // the centre of q_2's v_2, A(omega_1) omega_2
	sv            float64    // its variance
	logNorm       float64    // log of the Gaussian normalisation of Z's density
	frac          [3]float64 // the mixture's fractions of draws, n_k / n
	logMix        [3]float64 // log of each component's weight and normalisation in q_mix
	l             [9]float64 // work space of the factorisation
	// the streaming reduction, relative to exp(mx)
	mx      float64         // the largest log-weight so far
	sw      float64         // sum of the points' weights
	mean    [deepPM]float64 // their weighted mean of Z - omega
	co      [deepPM * deepPM]float64
	dw      float64         // the current draw's W_i
	dn      [deepPM]float64 // and its weighted sum of Z - omega
	sw2     float64         // sum_i W_i^2
	mu2, m2 [deepPM]float64 // the W_i^2-weighted mean of zeta_i and centred sum of squares
}

// NewDeepSampler returns the sampler of the L = 3, M = 2 deep attention channel with the
// attention's skip strength c and inverse temperature beta.
func NewDeepSampler(c, beta float64) *DeepSampler { return &DeepSampler{c: c, beta: beta} }

// Moments writes into out (DeepOut values) the estimates from n = len(normals)/DeepNormals >= 2
// draws for u, omega (3 x 2) and V (3 x 3); normals are i.i.d. N(0, 1).
func (q *DeepSampler) Moments(out, u, omega, V, normals []float64) {
	n := len(normals) / DeepNormals
	if !q.setup(u, omega, V) {
		deepFail(out, DeepNotPD)
		return
	}
	nk := [3]int{n, 0, 0}
	if q.v33 < deepBroadV33 {
		nk[0] = n / 5
		nk[1] = (n - nk[0]) / 2
		nk[2] = n - nk[0] - nk[1]
	}
	for k := range q.frac {
		q.frac[k] = float64(nk[k]) / float64(n)
	}
	// The log of each component's weight in the mixture, with its discrete choice (s for q_0;
	// s and the sign for the charts) and its Gaussians' normalisations (2-d: 1/(2 pi v)).
	q.logMix[0] = math.Log(q.frac[0]*0.5) - (2*math.Log(2*math.Pi) + 2*math.Log(q.lxx[0]*q.lxx[2]))
	q.logMix[1] = math.Log(q.frac[1]*0.25) - math.Log(2*math.Pi*q.v11) - math.Log(2*math.Pi*q.v33)
	q.logMix[2] = math.Log(q.frac[2]*0.25) - math.Log(2*math.Pi*q.sv) - math.Log(2*math.Pi*q.v33)
	q.reset()
	for i := 0; i < n; i++ {
		g := normals[i*DeepNormals : (i+1)*DeepNormals]
		q.dw = 0
		clear(q.dn[:])
		switch {
		case i < nk[0]:
			q.drawPrior(g)
		case i < nk[0]+nk[1]:
			q.drawChart1(g)
		default:
			q.drawChart2(g)
		}
		q.endDraw()
	}
	q.finish(out, n)
}

// deepFail writes a result without an estimate: NaN values and the status.
func deepFail(out []float64, status int) {
	for i := range out[:DeepOut] {
		out[i] = math.NaN()
	}
	out[DeepOutStatus] = float64(status)
}

// setup takes the task's inputs; it reports false when V is not positive definite.
func (q *DeepSampler) setup(u, omega, V []float64) bool {
	q.u = [2]float64{u[0], u[1]}
	q.om1 = [2]float64{omega[0], omega[1]}
	q.om2 = [2]float64{omega[2], omega[3]}
	q.om3 = [2]float64{omega[4], omega[5]}
	// V = L L^T: V_xx's factor is L's leading 2 x 2 block, and log det V = 2 sum log L_ii.
	if !spd.Factor(q.l[:], V, 3) || !spd.Invert(q.vinv[:], V, 3) {
		return false
	}
	q.v11, q.v33 = V[0], V[8]
	l00, l10, l11 := q.l[0], q.l[3], q.l[4]
	q.lxx = [3]float64{l00, l10, l11}
	logDet := 2 * (math.Log(l00) + math.Log(l11) + math.Log(q.l[8]))
	// Z's density per token is N(0, V): two tokens.
	q.logNorm = -(3*math.Log(2*math.Pi) + logDet)
	// q_2's proposal for v_2 = A(z_1) z_2: centred at A(omega_1) omega_2, with a variance S_v
	// wider than v_2's spread, twice (1 + c)^2 V_22 (1 + c is A's largest eigenvalue) plus
	// |omega_2|^2 min(V_11, 1)/4 for the attention's own motion with z_1, plus 0.01.
	a1 := q.attention(q.om1)
	q.mv = mul2(a1, q.om2)
	c1 := 1 + q.c
	q.sv = 2*c1*c1*V[4] + 0.25*(q.om2[0]*q.om2[0]+q.om2[1]*q.om2[1])*math.Min(q.v11, 1) + 0.01
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
	var z1, z2 [2]float64
	for l := 0; l < 2; l++ {
		z1[l] = q.om1[l] + q.lxx[0]*g[l]
		z2[l] = q.om2[l] + q.lxx[1]*g[l] + q.lxx[2]*g[2+l]
	}
	a1 := q.attention(z1)
	q.point(z1, z2, a1, 1, 0.5)
	q.point(z1, z2, a1, -1, 0.5)
}

func (q *DeepSampler) drawChart1(g []float64) {
	s1, s3 := math.Sqrt(q.v11), math.Sqrt(q.v33)
	z1 := [2]float64{q.om1[0] + s1*g[0], q.om1[1] + s1*g[1]}
	z3 := [2]float64{q.om3[0] + s3*g[2], q.om3[1] + s3*g[3]}
	a1 := q.attention(z1)
	w := mul2(a1, z3)
	for _, s := range [2]float64{1, -1} {
		v2, ok := q.solveAttention(w, [2]float64{s * q.u[0], s * q.u[1]})
		if !ok {
			continue
		}
		for _, sg := range [2]float64{1, -1} {
			q.point(z1, solve2(a1, [2]float64{sg * v2[0], sg * v2[1]}), a1, s, 0.25)
		}
	}
}

func (q *DeepSampler) drawChart2(g []float64) {
	sv, s3 := math.Sqrt(q.sv), math.Sqrt(q.v33)
	v2 := [2]float64{q.mv[0] + sv*g[0], q.mv[1] + sv*g[1]}
	z3 := [2]float64{q.om3[0] + s3*g[2], q.om3[1] + s3*g[3]}
	a2 := q.attention(v2)
	for _, s := range [2]float64{1, -1} {
		r := solve2(a2, [2]float64{s * q.u[0], s * q.u[1]})
		z1, ok := q.solveAttention(z3, r)
		if !ok {
			continue
		}
		for _, sg := range [2]float64{1, -1} {
			zz := [2]float64{sg * z1[0], sg * z1[1]}
			a1 := q.attention(zz)
			q.point(zz, solve2(a1, v2), a1, s, 0.25)
		}
	}
}

// point adds the point (z_1, z_2, branch s), with a1 = A(z_1), drawn with the discrete
// probability pc, with its log-weight log(pc f / q_mix); a point whose weight is not finite
// is left out.
func (q *DeepSampler) point(z1, z2 [2]float64, a1 [4]float64, s, pc float64) {
	v2 := mul2(a1, z2)
	a2 := q.attention(v2)
	B := [4]float64{a2[0]*a1[0] + a2[1]*a1[2], a2[0]*a1[1] + a2[1]*a1[3], a2[2]*a1[0] + a2[3]*a1[2], a2[2]*a1[1] + a2[3]*a1[3]}
	detB := B[0]*B[3] - B[1]*B[2]
	su := [2]float64{s * q.u[0], s * q.u[1]}
	z3 := solve2(B, su)
	var z [deepPM]float64
	var quad float64
	for l := 0; l < 2; l++ {
		x := [3]float64{z1[l] - q.om1[l], z2[l] - q.om2[l], z3[l] - q.om3[l]}
		z[l], z[2+l], z[4+l] = x[0], x[1], x[2]
		for i := 0; i < 3; i++ {
			for j := 0; j < 3; j++ {
				quad += x[i] * q.vinv[i*3+j] * x[j]
			}
		}
	}
	logF := q.logNorm - quad/2 - math.Log(math.Abs(detB))
	// q_0: the prior of x (the Cholesky factor's quadratic form), s with probability 1/2.
	var q0 float64
	for l := 0; l < 2; l++ {
		e0 := z[l] / q.lxx[0]
		e1 := (z[2+l] - q.lxx[1]*e0) / q.lxx[2]
		q0 += e0*e0 + e1*e1
	}
	lq := q.logMix[0] - q0/2
	if q.frac[1] > 0 {
		n3 := quad2(z3, q.om3) / q.v33
		lq1 := q.logMix[1] - (quad2(z1, q.om1)/q.v11+n3)/2 + q.logJacobianAt(a2, v2, su)
		lq2 := q.logMix[2] - (quad2(v2, q.mv)/q.sv+n3)/2 + math.Log(math.Abs(a1[0]*a1[3]-a1[1]*a1[2])) +
			q.logJacobianAt(a1, z1, mul2(a1, z3))
		lq = logSumExp3(lq, lq1, lq2)
	}
	lw := math.Log(pc) + logF - lq
	if math.IsNaN(lw) || math.IsInf(lw, 0) {
		return
	}
	q.add(&z, lw)
}

// reset empties the reduction.
func (q *DeepSampler) reset() {
	q.mx = math.Inf(-1)
	q.sw, q.sw2 = 0, 0
	clear(q.mean[:])
	clear(q.co[:])
	clear(q.mu2[:])
	clear(q.m2[:])
}

// add takes the point z (Z - omega) of log-weight lw into the running sums: the weight is
// exp(lw - mx), and a new maximum rescales every sum first (exp(mx_old - mx), squared for the
// sums of squared weights).
func (q *DeepSampler) add(z *[deepPM]float64, lw float64) {
	if lw > q.mx {
		f := math.Exp(q.mx - lw)
		f2 := f * f
		q.sw *= f
		q.dw *= f
		q.sw2 *= f2
		for a := 0; a < deepPM; a++ {
			q.dn[a] *= f
			q.m2[a] *= f2
			for b := a; b < deepPM; b++ {
				q.co[a*deepPM+b] *= f
			}
		}
		q.mx = lw
	}
	w := math.Exp(lw - q.mx)
	sw := q.sw + w
	r, k := w/sw, w*(q.sw/sw)
	var d [deepPM]float64
	for a := 0; a < deepPM; a++ {
		q.dn[a] += w * z[a]
		d[a] = z[a] - q.mean[a]
		q.mean[a] += d[a] * r
	}
	for a := 0; a < deepPM; a++ {
		for b := a; b < deepPM; b++ {
			q.co[a*deepPM+b] += k * d[a] * d[b]
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
	for a := 0; a < deepPM; a++ {
		d := q.dn[a]/q.dw - q.mu2[a]
		q.mu2[a] += d * r
		q.m2[a] += k * d * d
	}
	q.sw2 = s2
}

// finish writes the estimates of n draws (DeepSampler's formulas) into out.
func (q *DeepSampler) finish(out []float64, n int) {
	if !(q.sw > 0) {
		deepFail(out, DeepNoPoint)
		return
	}
	sw := q.sw
	for a := 0; a < deepPM; a++ {
		m := q.mean[a]
		dm := m - q.mu2[a]
		out[DeepOutMean+a] = m - q.sw2*dm/(sw*sw)
		out[DeepOutErr+a] = math.Sqrt(q.m2[a]+q.sw2*dm*dm) / sw
		for b := a; b < deepPM; b++ {
			v := q.co[a*deepPM+b]/sw + m*q.mean[b]
			out[DeepOutSecond+a*deepPM+b], out[DeepOutSecond+b*deepPM+a] = v, v
		}
	}
	zhat := sw / float64(n)
	varZ := (q.sw2/float64(n) - zhat*zhat) / float64(n)
	// E log Zhat = log Z - Var/(2 Z^2) + O(1/n^2): remove the first-order bias.
	out[DeepOutLogZ] = math.Log(zhat) + q.mx + varZ/(2*zhat*zhat)
	out[DeepOutESS] = sw * sw / q.sw2
	out[DeepOutStatus] = DeepOK
}

func mul2(a [4]float64, b [2]float64) [2]float64 {
	return [2]float64{a[0]*b[0] + a[1]*b[1], a[2]*b[0] + a[3]*b[1]}
}

func solve2(a [4]float64, b [2]float64) [2]float64 {
	det := a[0]*a[3] - a[1]*a[2]
	return [2]float64{(a[3]*b[0] - a[1]*b[1]) / det, (-a[2]*b[0] + a[0]*b[1]) / det}
}

// quad2 is |x - m|^2.
func quad2(x, m [2]float64) float64 {
	a, b := x[0]-m[0], x[1]-m[1]
	return a*a + b*b
}

func logSumExp3(a, b, c float64) float64 {
	m := math.Max(a, math.Max(b, c))
	if math.IsInf(m, -1) {
		return m
	}
	return m + math.Log(math.Exp(a-m)+math.Exp(b-m)+math.Exp(c-m))
}

// deepChunk is the number of tasks per chunk of DeepSampleBatch's worker pool.
const deepChunk = 4

// MaxDeepSlot bounds a task's slot: below it every integer is exact in float64.
const MaxDeepSlot = 1 << 53

// DeepSampleBatch runs DeepSampler (c, beta) over n tasks: task t's inputs are
// in[t DeepIn : (t+1) DeepIn] (DeepIn), its result goes to out[t DeepOut : (t+1) DeepOut], and
// its draws take the normals G(seed, offset + s stride + k), k < DeepNormals draws, s the
// task's slot, written by fill(dst, seed, off) as dst[k] = G(seed, off + k) (package device's
// FillNormals, passed in because package device depends on this one). Workers run chunks of
// tasks (par.For); each task is computed alone, so the results do not depend on workers.
// This is the CPU twin of the kernel deep_sample.
func DeepSampleBatch(out, in []float64, n, draws int, c, beta float64, seed, offset, stride uint64, workers int,
	fill func(dst []float64, seed, offset uint64)) error {
	type state struct {
		q *DeepSampler
		g []float64
	}
	return par.For(workers, par.Chunks(n, deepChunk), func() (state, error) {
		return state{NewDeepSampler(c, beta), make([]float64, draws*DeepNormals)}, nil
	}, func(s state, ch int) error {
		lo, hi := par.Span(ch, n, deepChunk)
		for t := lo; t < hi; t++ {
			task, res := in[t*DeepIn:(t+1)*DeepIn], out[t*DeepOut:(t+1)*DeepOut]
			slot := task[0]
			if !(slot >= 0 && slot < MaxDeepSlot && slot == math.Floor(slot)) {
				deepFail(res, DeepBadSlot)
				continue
			}
			fill(s.g, seed, offset+uint64(slot)*stride)
			s.q.Moments(res, task[1:3], task[3:9], task[9:18], s.g)
		}
		return nil
	})
}
