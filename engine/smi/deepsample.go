package smi

import (
	"fmt"
	"math"

	"github.com/aimtheory/aim/engine/internal/spd"
)

// DeepSampler estimates the posterior moments of the L = 3 deep attention channel (the same
// integrals as DeepPosterior, docs/SMI.md 2.2) by importance sampling, without bias in Z_out
// and with an error that it measures, where the cubature's error is a bias of unknown sign.
//
// The integrand over the free pre-activations x = (z_1, z_2) concentrates, once the last
// layer is learned (V_33 small), on the 2-d surface B(x) omega_3 = s u. Two closed-form charts
// follow it. In the token basis e_+- = (1, +-1)/sqrt 2 every attention is triangular,
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
// and z_2 = A(z_1)^{-1} v_2. Each chart is singular where its solved layer's two tokens are
// equal (the Jacobian |d(A(v)^{-1} r)/dv| of logAttentionJacobian vanishes as (v_0 - v_1)^2); the
// other chart covers it there. Weights use the balance heuristic, f / sum_k (n_k/n) q_k, with
// the branch s and the sign of the solved layer enumerated (Rao-Blackwellised) rather than
// drawn. The estimates of Z_out and of the unnormalised moments are unbiased; their ratios
// (the posterior moments) carry the usual O(1/ESS) bias of self-normalised sampling.
//
// Measured (README, "What is computed"): against the cubature at ten times its budget, every
// mean within 4.5 standard errors plus that cubature's own error, broad and sharp, diagonal
// and correlated V (TestSampleAgainstCubature); over SE samples at a sharp last layer the
// product of two independent halves' means has the cubature's E[g_out^2] within its paired
// noise (TestSampleHalvesUnbiased). About 600 ns per draw.
//
// One DeepSampler per goroutine: it holds work space.
type DeepSampler struct {
	c, beta float64
	// per call
	u             [2]float64
	om1, om2, om3 [2]float64
	vinv          [9]float64 // V^{-1}
	lxx           [3]float64 // Cholesky factor of V_xx (2 x 2, packed lower: l00, l10, l11)
	v11, v22, v33 float64
	mv            [2]float64
	sv            float64
	logNorm       float64    // log of the Gaussian normalisation of Z's density
	logPrior0     float64    // log of q_0's normalisation
	frac          [3]float64 // the mixture's fractions of draws, n_k / n
	logMix        [3]float64 // log of each component's weight and normalisation in q_mix
	pts           []samplePoint
	draw          int       // the current draw's index
	wd            []float64 // per draw: W_i, then N_i (P M)
}

// samplePoint is one weighted point: Z - omega (P M, row-major) and its log-weight.
type samplePoint struct {
	z    [6]float64
	lw   float64
	draw int
}

// SampleMoments are DeepMoments with the standard errors of the importance-sampling estimate.
type SampleMoments struct {
	DeepMoments
	MeanErr []float64 // P M: the delta-method standard error of each entry of Mean
	ESS     float64   // effective sample size (sum w)^2 / sum w^2
}

// NewSampler returns the importance sampler of the channel's posterior; it needs L = 3 and
// M = 2.
func (d *Deep) NewSampler() (*DeepSampler, error) {
	if d.L != 3 || d.M != 2 {
		return nil, fmt.Errorf("deep channel sampler: L = %d, M = %d: implemented for L = 3, M = 2", d.L, d.M)
	}
	return &DeepSampler{c: d.C, beta: d.Beta}, nil
}

// NewSampleMoments returns moments sized for the sampler.
func (d *Deep) NewSampleMoments() *SampleMoments {
	return &SampleMoments{DeepMoments: *d.NewMoments(), MeanErr: make([]float64, d.P()*d.M)}
}

// MinSampleESS is the effective sample size below which an estimate is flagged inexact
// (DeepMoments.Exact false).
const MinSampleESS = 10

// SampleNormals is the number of standard normals one draw takes.
const SampleNormals = 4

// broadSigma2 is the last layer's variance V_33 above which the charts are not drawn: the
// prior alone then gives the larger effective sample size per draw.
const broadSigma2 = 0.25

// Moments estimates the posterior moments of Z - omega given u, omega (3 x 2) and V (3 x 3,
// symmetric positive definite) from n = len(normals)/SampleNormals draws; normals are i.i.d.
// N(0, 1) (the caller's stream fixes them).
func (q *DeepSampler) Moments(m *SampleMoments, u, omega, V, normals []float64) error {
	n := len(normals) / SampleNormals
	if n < 2 {
		return fmt.Errorf("deep channel sampler: %d draws, need >= 2", n)
	}
	if err := q.setup(u, omega, V); err != nil {
		return err
	}
	nk := [3]int{n, 0, 0}
	if q.v33 < broadSigma2 {
		nk[0] = n / 5
		nk[1] = (n - nk[0]) / 2
		nk[2] = n - nk[0] - nk[1]
	}
	for k := range q.frac {
		q.frac[k] = float64(nk[k]) / float64(n)
	}
	// The log of each component's weight in the mixture, with its discrete choice (s for q_0;
	// s and the sign for the charts) and its Gaussians' normalisations (2-d: 1/(2 pi v)).
	q.logMix[0] = math.Log(q.frac[0]*0.5) + q.logPrior0
	q.logMix[1] = math.Log(q.frac[1]*0.25) - math.Log(2*math.Pi*q.v11) - math.Log(2*math.Pi*q.v33)
	q.logMix[2] = math.Log(q.frac[2]*0.25) - math.Log(2*math.Pi*q.sv) - math.Log(2*math.Pi*q.v33)
	q.pts = q.pts[:0]
	for i := 0; i < n; i++ {
		q.draw = i
		g := normals[i*SampleNormals : (i+1)*SampleNormals]
		switch {
		case i < nk[0]:
			q.drawPrior(g)
		case i < nk[0]+nk[1]:
			q.drawChart1(g)
		default:
			q.drawChart2(g)
		}
	}
	return q.reduce(m, n)
}

func (q *DeepSampler) setup(u, omega, V []float64) error {
	q.u = [2]float64{u[0], u[1]}
	q.om1 = [2]float64{omega[0], omega[1]}
	q.om2 = [2]float64{omega[2], omega[3]}
	q.om3 = [2]float64{omega[4], omega[5]}
	// V = L L^T: V_xx's factor is L's leading 2 x 2 block, and log det V = 2 sum log L_ii.
	var l [9]float64
	if !spd.Factor(l[:], V, 3) || !spd.Invert(q.vinv[:], V, 3) {
		return fmt.Errorf("deep channel sampler: V = %v is not positive definite", V)
	}
	q.v11, q.v22, q.v33 = V[0], V[4], V[8]
	l00, l10, l11 := l[0], l[3], l[4]
	q.lxx = [3]float64{l00, l10, l11}
	logDet := 2 * (math.Log(l00) + math.Log(l11) + math.Log(l[8]))
	// Z's density per token is N(0, V): two tokens.
	q.logNorm = -(3*math.Log(2*math.Pi) + logDet)
	q.logPrior0 = -(2*math.Log(2*math.Pi) + 2*math.Log(l00*l11))
	// q_2's proposal for v_2 = A(z_1) z_2: centred at A(omega_1) omega_2, with a variance S_v
	// wider than v_2's spread, twice (1 + c)^2 V_22 (1 + c is A's largest eigenvalue) plus
	// |omega_2|^2 min(V_11, 1)/4 for the attention's own motion with z_1, plus 0.01.
	a1 := q.attention(q.om1)
	q.mv = mul2(a1, q.om2)
	c1 := 1 + q.c
	q.sv = 2*c1*c1*q.v22 + 0.25*(q.om2[0]*q.om2[0]+q.om2[1]*q.om2[1])*math.Min(q.v11, 1) + 0.01
	return nil
}

// attention returns A(v) (row-major, M = 2).
func (q *DeepSampler) attention(v [2]float64) [4]float64 { return attention2(q.c, q.beta, v) }

// attention2 is Deep.Attention written out for M = 2: A(v) = softmax_row(beta v v^T) + c I,
// row-major, whose row softmax is a logistic function of beta v_i (v_j - v_i).
func attention2(c, beta float64, v [2]float64) [4]float64 {
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
// probability pc, with its log-weight log(pc f / q_mix).
func (q *DeepSampler) point(z1, z2 [2]float64, a1 [4]float64, s, pc float64) {
	v2 := mul2(a1, z2)
	a2 := q.attention(v2)
	B := [4]float64{a2[0]*a1[0] + a2[1]*a1[2], a2[0]*a1[1] + a2[1]*a1[3], a2[2]*a1[0] + a2[3]*a1[2], a2[2]*a1[1] + a2[3]*a1[3]}
	detB := B[0]*B[3] - B[1]*B[2]
	su := [2]float64{s * q.u[0], s * q.u[1]}
	z3 := solve2(B, su)
	var p samplePoint
	var quad float64
	for l := 0; l < 2; l++ {
		x := [3]float64{z1[l] - q.om1[l], z2[l] - q.om2[l], z3[l] - q.om3[l]}
		p.z[l], p.z[2+l], p.z[4+l] = x[0], x[1], x[2]
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
		e0 := p.z[l] / q.lxx[0]
		e1 := (p.z[2+l] - q.lxx[1]*e0) / q.lxx[2]
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
	p.lw = math.Log(pc) + logF - lq
	p.draw = q.draw
	if math.IsNaN(p.lw) || math.IsInf(p.lw, 0) {
		return
	}
	q.pts = append(q.pts, p)
}

// reduce forms the self-normalised estimates from the weighted points of n draws. With W_i the
// weight of draw i (the sum over its points) and N_i its weighted sum of Z - omega, the mean
// is sum N_i / sum W_i less its first-order bias sum W_i (W_i m - N_i) / (sum W)^2, and its
// standard error is sqrt(sum (N_i - W_i m)^2) / sum W.
func (q *DeepSampler) reduce(m *SampleMoments, n int) error {
	if len(q.pts) == 0 {
		return fmt.Errorf("deep channel sampler: no draw of %d reached the output (Z_out estimate 0)", n)
	}
	mx := math.Inf(-1)
	for _, p := range q.pts {
		mx = math.Max(mx, p.lw)
	}
	const pm = 6
	for a := range m.Mean {
		m.Mean[a] = 0
	}
	for a := range m.Second {
		m.Second[a] = 0
	}
	// Per draw: W_i and N_i, in q.wd (draws without points are left out: W_i = 0).
	q.wd = q.wd[:0]
	var sw, swp2 float64
	last := -1
	for _, p := range q.pts {
		w := math.Exp(p.lw - mx)
		if p.draw != last {
			q.wd = append(q.wd, make([]float64, 1+pm)...)
			last = p.draw
		}
		d := q.wd[len(q.wd)-1-pm:]
		d[0] += w
		sw += w
		swp2 += w * w
		for a := 0; a < pm; a++ {
			wa := w * p.z[a]
			d[1+a] += wa
			m.Mean[a] += wa
			for b := a; b < pm; b++ {
				m.Second[a*pm+b] += wa * p.z[b]
			}
		}
	}
	for a := 0; a < pm; a++ {
		m.Mean[a] /= sw
		for b := a; b < pm; b++ {
			v := m.Second[a*pm+b] / sw
			m.Second[a*pm+b], m.Second[b*pm+a] = v, v
		}
	}
	var bias [pm]float64
	var sw2 float64
	for a := range m.MeanErr {
		m.MeanErr[a] = 0
	}
	for i := 0; i < len(q.wd); i += 1 + pm {
		W := q.wd[i]
		sw2 += W * W
		for a := 0; a < pm; a++ {
			r := W*m.Mean[a] - q.wd[i+1+a]
			bias[a] += W * r
			m.MeanErr[a] += r * r
		}
	}
	for a := 0; a < pm; a++ {
		m.Mean[a] -= bias[a] / (sw * sw)
		m.MeanErr[a] = math.Sqrt(m.MeanErr[a]) / sw
	}
	zhat := sw / float64(n)
	varZ := (sw2/float64(n) - zhat*zhat) / float64(n)
	// E log Zhat = log Z - Var/(2 Z^2) + O(1/n^2): remove the first-order bias.
	m.LogZ = math.Log(zhat) + mx + varZ/(2*zhat*zhat)
	m.ESS = sw * sw / sw2
	m.Evals = n
	m.Exact = m.ESS >= MinSampleESS
	return nil
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
