package channel

import (
	"fmt"
	"math"
)

// The softmax channel with additive Gaussian label noise, T = 2:
//
//	y = softmax_row(beta h) + sqrt(Delta) xi,   xi_ab iid N(0, 1) per output entry.
//
// Reduction. Row a of softmax(beta h) at T = 2 is (s_a, 1 - s_a) up to order, with
// s_a = sigma(beta d_a), sigma the logistic function, d_1 = h11 - h12 and d_2 = h22 - h12. The
// combination y~_a = (y_aa - y_ab + 1)/2 (b != a) is s_a + sqrt(Delta/2) eta_a, eta_a iid
// N(0, 1), and the other combination y_aa + y_ab = 1 + sqrt(Delta) (xi_aa + xi_ab) carries no
// information on h: (y~_1, y~_2) is sufficient. In unit coordinates d_1 = sqrt2 u11 - u12,
// d_2 = sqrt2 u22 - u12, so given omega the pair d has mean m = (sqrt2 omega11 - omega12,
// sqrt2 omega22 - omega12) and covariance V C3, C3 = [[3, 1], [1, 3]] = 1 1^T + 2 I. Writing
// d_a = m_a + sqrt(V) (g_0 + sqrt2 g_a) with g_0, g_1, g_2 iid N(0, 1), the likelihood factorises
// given g_0:
//
//	Z_out(y~; m, V) = E_{g_0} prod_a K(y~_a; m_a + sqrt(V) g_0, 2V),
//	K(y; mu, v)     = int dx N(x; mu, v) N(y; sigma(beta x), Delta/2),
//
// a Gauss-Hermite rule in g_0 (the integrand varies on the scale sqrt2 in g_0, since K is a
// convolution with N(0, 2V)) over one-dimensional integrals K. Z_out here is the density of
// (y~_1, y~_2); the full density of y differs by a factor that does not depend on omega or V.
// g_out = d/d omega log Z_out = A^T G with G_a = d log Z_out / d m_a and A the map omega -> m:
// g11 = sqrt2 G1, g12 = -(G1 + G2), g22 = sqrt2 G2, and sum_{a<=b} g_ab^2 = G^T C3 G.
//
// K is a Gauss-Legendre rule on the window where the integrand is not negligible. When the
// likelihood window |s - y| <= 7 sqrt(Delta/2), s = sigma(beta x), is narrower than the prior
// window x in mu +- 7 sqrt(v) mapped to s, the rule is in s on their intersection: there the
// likelihood is an exact Gaussian of width sqrt(Delta/2), so Delta -> 0 is resolved. Within
// sqrt(Delta/2) of s = 0 and 1 that piece is in x instead (the prior's density in s varies on a
// logarithmic scale there, the likelihood hardly at all). Otherwise the rule is in x on the
// prior window, where the prior is an exact Gaussian and the likelihood varies on a scale at
// least comparable. Each piece has NoisyRowPoints nodes. Everything is in logarithms, so K and Z_out may
// underflow without harm. Rows with y > 1/2 use the mirror sigma(-x) = 1 - sigma(x).

const (
	// NoisyHermitePoints is the Gauss-Hermite size of the g_0 integral of Z_out.
	NoisyHermitePoints = 16
	// NoisyRowPoints is the Gauss-Legendre size of each one-dimensional integral K.
	NoisyRowPoints = 32
	noisyWindow    = 7.0 // half-widths of the windows of K, in standard deviations
)

// NoisySoftmax is the row-softmax channel at T = 2 with additive Gaussian label noise of
// variance Delta per output entry, y = softmax_row(beta h) + sqrt(Delta) xi. Output writes the
// noiseless softmax(beta h) (the data add the noise from their own stream); GOut is the
// Bayes-optimal g_out of the noisy channel (see the comment above NoisyHermitePoints).
type NoisySoftmax struct {
	beta, delta float64
	ghx, ghw    []float64 // Gauss-Hermite rule of g_0 (probability weights)
	glx, glw    []float64 // Gauss-Legendre rule on [-1, 1] of K
	lglw        []float64 // log glw
	lw          []float64 // log ghw
}

// NewNoisySoftmax returns the noisy softmax channel: T = 2 (the only size implemented),
// 0 < beta < inf and 0 < Delta < inf.
func NewNoisySoftmax(T int, beta, delta float64) (*NoisySoftmax, error) {
	if T != 2 {
		return nil, fmt.Errorf("noisy softmax channel: implemented for T = 2 only (got T = %d)", T)
	}
	if !(beta > 0) || math.IsInf(beta, 1) {
		return nil, fmt.Errorf("noisy softmax channel: beta = %g, need 0 < beta < inf", beta)
	}
	if !(delta > 0) || math.IsInf(delta, 1) {
		return nil, fmt.Errorf("noisy softmax channel: noise Delta = %g, need 0 < Delta < inf", delta)
	}
	n := &NoisySoftmax{beta: beta, delta: delta}
	n.ghx, n.ghw = HermiteNormal(NoisyHermitePoints)
	n.glx, n.glw = GaussLegendre(NoisyRowPoints)
	n.lglw = make([]float64, len(n.glw))
	for i, w := range n.glw {
		n.lglw[i] = math.Log(w)
	}
	n.lw = make([]float64, len(n.ghw))
	for i, w := range n.ghw {
		n.lw[i] = math.Log(w)
	}
	return n, nil
}

// Name returns "softmax".
func (n *NoisySoftmax) Name() string { return "softmax" }

// Tokens returns T = 2.
func (n *NoisySoftmax) Tokens() int { return 2 }

// Beta returns the inverse temperature beta.
func (n *NoisySoftmax) Beta() float64 { return n.beta }

// Noise returns Delta, the variance of the label noise per output entry.
func (n *NoisySoftmax) Noise() float64 { return n.delta }

// Output writes the noiseless row softmax y_ab = exp(beta h_ab)/sum_c exp(beta h_ac) (2 x 2).
func (n *NoisySoftmax) Output(y, h []float64) {
	(&Softmax{t: 2, beta: n.beta}).Output(y, h)
}

// Reduced returns the sufficient statistics y~_a = (y_aa - y_ab + 1)/2 of a 2 x 2 row-major y.
func (n *NoisySoftmax) Reduced(y []float64) (y1, y2 float64) {
	return (y[0] - y[1] + 1) / 2, (y[3] - y[2] + 1) / 2
}

// Logistic is sigma(x) = 1/(1 + e^-x).
func Logistic(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// RowLog returns log K(y; mu, v) and dlog K/dmu = E[x - mu]/v under the tilted measure, for
// K(y; mu, v) = int dx N(x; mu, v) N(y; sigma(beta x), Delta/2) (v > 0).
func (n *NoisySoftmax) RowLog(y, mu, v float64) (logK, dmu float64) {
	sign := 1.0
	if y > 0.5 { // mirror: sigma(-x) = 1 - sigma(x), so K(y; mu) = K(1 - y; -mu)
		y, mu, sign = 1-y, -mu, -1
	}
	d2 := n.delta / 2
	sd, sv := math.Sqrt(d2), math.Sqrt(v)
	pl, ph := mu-noisyWindow*sv, mu+noisyWindow*sv
	sa, sb := Logistic(n.beta*pl), Logistic(n.beta*ph) // the prior window in s
	lo, hi := math.Max(sa, y-noisyWindow*sd), math.Min(sb, y+noisyWindow*sd)
	norm := -0.5*math.Log(2*math.Pi*d2) - 0.5*math.Log(2*math.Pi*v)
	var ls, xs [3 * NoisyRowPoints]float64
	k := 0
	inX := func(a, b float64) { // Gauss-Legendre in x on [a, b]
		c, h := (a+b)/2, (b-a)/2
		lh := math.Log(h)
		for i, t := range n.glx {
			x := c + h*t
			e := y - Logistic(n.beta*x)
			ls[k] = -e*e/(2*d2) - (x-mu)*(x-mu)/(2*v) + lh + n.lglw[i]
			xs[k] = x
			k++
		}
	}
	inS := func(a, b float64) { // Gauss-Legendre in s = sigma(beta x) on [a, b]
		c, h := (a+b)/2, (b-a)/2
		lh := math.Log(h) - math.Log(n.beta)
		for i, t := range n.glx {
			s := c + h*t
			l0, l1 := math.Log(s), math.Log1p(-s)
			x := (l0 - l1) / n.beta
			e := y - s
			ls[k] = -e*e/(2*d2) - (x-mu)*(x-mu)/(2*v) - l0 - l1 + lh + n.lglw[i]
			xs[k] = x
			k++
		}
	}
	logit := func(s float64) float64 { return (math.Log(s) - math.Log1p(-s)) / n.beta }
	if 2*noisyWindow*sd < sb-sa && lo < hi {
		// The likelihood binds: s-space on [lo, hi], except within sd of 0 and 1, where the
		// prior's density in s varies on a logarithmic scale and the likelihood hardly
		// varies: there x-space.
		a := math.Min(math.Max(sd, lo), hi)
		b := math.Min(math.Max(1-sd, a), hi)
		if a > lo {
			xl := pl
			if lo > sa {
				xl = logit(lo)
			}
			inX(xl, logit(a))
		}
		if b > a {
			inS(a, b)
		}
		if hi > b {
			xh := ph
			if hi < sb {
				xh = logit(hi)
			}
			inX(logit(b), xh)
		}
	} else {
		inX(pl, ph)
	}
	lmax := math.Inf(-1)
	for _, l := range ls[:k] {
		lmax = math.Max(lmax, l)
	}
	if math.IsInf(lmax, -1) {
		return math.Inf(-1), 0
	}
	var sum, mom float64
	for i := range ls[:k] {
		w := math.Exp(ls[i] - lmax)
		sum += w
		mom += w * (xs[i] - mu)
	}
	return lmax + math.Log(sum) + norm, sign * mom / (sum * v)
}

// LogZ returns log Z_out(y~; m, V) and G = d log Z_out/d m for the sufficient statistics y~ =
// (y1, y2), the known means m = (m1, m2) of d = (h11 - h12, h22 - h12) and V > 0 (unit
// coordinates): Z_out = E_{g_0} K(y1; m1 + sqrt(V) g_0, 2V) K(y2; m2 + sqrt(V) g_0, 2V).
func (n *NoisySoftmax) LogZ(y1, y2, m1, m2, V float64) (logZ, g1, g2 float64) {
	sv := math.Sqrt(V)
	var l, r1, r2 [NoisyHermitePoints]float64
	lmax := math.Inf(-1)
	for k, g0 := range n.ghx {
		k1, d1 := n.RowLog(y1, m1+sv*g0, 2*V)
		k2, d2 := n.RowLog(y2, m2+sv*g0, 2*V)
		l[k], r1[k], r2[k] = n.lw[k]+k1+k2, d1, d2
		lmax = math.Max(lmax, l[k])
	}
	if math.IsInf(lmax, -1) {
		return math.Inf(-1), 0, 0
	}
	var sum, s1, s2 float64
	for k := range l {
		w := math.Exp(l[k] - lmax)
		sum += w
		s1 += w * r1[k]
		s2 += w * r2[k]
	}
	return lmax + math.Log(sum), s1 / sum, s2 / sum
}

// GOut writes g_out(y; omega, V) = d/d omega log Z_out in packed unit coordinates
// (g11, g12, g22) for one sample: y is 2 x 2 row-major (noisy), omega packed, V > 0.
// With G = d log Z_out/d m (LogZ): g11 = sqrt2 G1, g12 = -(G1 + G2), g22 = sqrt2 G2.
func (n *NoisySoftmax) GOut(g, y, omega []float64, V float64) {
	y1, y2 := n.Reduced(y)
	m1 := math.Sqrt2*omega[0] - omega[1]
	m2 := math.Sqrt2*omega[2] - omega[1]
	_, g1, g2 := n.LogZ(y1, y2, m1, m2, V)
	g[0] = math.Sqrt2 * g1
	g[1] = -(g1 + g2)
	g[2] = math.Sqrt2 * g2
}
