package aim

import (
	"fmt"
	"math"
	"sync"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/internal/par"
)

// NoisySoftmax is the softmax channel at T = 2 with additive Gaussian label noise,
// y = softmax_row(beta h) + sqrt(Delta) xi, xi_ab iid N(0, 1) (channel.NoisySoftmax: the
// outputs, Z_out and g_out), with the state-evolution integrals FisherSum and OutputEntropy.
//
// In the notation of channel.NoisySoftmax the channel sees d = (h11 - h12, h22 - h12) through
// y~_a = sigma(beta d_a) + s eta_a, s = sqrt(Delta/2), and given omega, d ~ N(m, V C3) with
// m ~ N(0, q C3) (omega ~ N(0, q I_3)), C3 = [[3, 1], [1, 3]]. Both integrals are
//
//	E_m E_{y~|m} F(y~; m),   F = log Z (psi_out),  G^T C3 G with G = grad_m log Z (FisherSum),
//
// Z(y~; m, V) = E_{g_0} prod_a K(y~_a; m_a + sqrt(V) g_0, 2V) the density of y~ given m. The
// rule integrates over the generative variables, never over y~, so that its accuracy does not
// depend on Delta:
//
//   - m: a product Gauss-Hermite rule in the marginals m_a = sqrt(3q) z_a, z_a ~ N(0, 1), with
//     the weight of each pair multiplied by the copula ratio N_2(z; rho = 1/3)/(N(z_1) N(z_2)),
//     so that both rows take their means from one list of values;
//   - y~ given m: the product of the rules of the marginals M_a(y) = K(y; m_a, 3V) of each row,
//     y = sigma(beta (m_a + sqrt(3V) x)) + s e with x, e Gauss-Hermite, and the weight of each
//     pair multiplied by Z/(M_1 M_2) = E_{g_0} A_1 A_2, A_a = K(y~_a; m_a + sqrt(V) g_0, 2V)/M_a
//     (the ratio of the posterior of g_0 given y~_a alone to its prior);
//   - g_0: Gauss-Hermite, with M_a = E_{g_0} K on the same rule, so that E_{g_0} A_a = 1.
//
// All three integrands are smooth in the generative variables at every Delta: as Delta -> 0
// the posterior of d pins to logit(y~)/beta except where the output saturates, and there it
// varies with e on the scale 1. The tables of K (kernels' RowLog) depend on m only through m_a,
// so each row value is tabulated once and shared by both rows, and the mirror
// K(1 - y; -mu) = K(y; mu) gives the tables of the negative values. psi_out is then
// E log M_1 + E log M_2 + E log(Z/(M_1 M_2)) and G_a = E_{g_0}[A_1 A_2 dlog K_a/dmu]/(Z/(M_1 M_2)).
//
// The stated error of each integral is its difference from the same rule with fewer points
// (noisyCoarse), an over-estimate where the rule converges geometrically: FisherSumValue and
// OutputEntropyValue return it, and Bound moves FisherSum by it. The SE's points come from
// interpolants of both rules along the lines V = Q0 - q (noisyLine), whose stated error adds the
// interpolation's; Direct evaluates the rule at every call.
type NoisySoftmax struct {
	*channel.NoisySoftmax
	Workers int // goroutines of the integrals (0: GOMAXPROCS); the values do not depend on it

	rule, coarse *noisyRule
	bound        float64          // Bound's multiple of the error added to FisherSum
	memo         *pairMemo[Value] // shared with the Bound channels
	lines        *noisyLines      // the interpolants along V = Q0 - q, shared with the Bound channels
	direct       bool             // evaluate the rule at every call (Direct), not the interpolants
}

// noisyRule is one set of sizes of the SE rule of NoisySoftmax: Gauss-Hermite points of each
// marginal of m, Gauss-Legendre points per panel of the y~ rule of a row (yNodes), and
// Gauss-Hermite points of g_0.
type noisyRule struct {
	sizes          [3]int
	mx, mw, yx, yw []float64
	gx, gw         []float64
}

func newNoisyRule(sizes [3]int) *noisyRule {
	r := &noisyRule{sizes: sizes}
	r.mx, r.mw = symmetric(channel.HermiteNormal(sizes[0]))
	r.yx, r.yw = channel.GaussLegendre(sizes[1])
	r.gx, r.gw = symmetric(channel.HermiteNormal(sizes[2]))
	return r
}

// symmetric returns the rule (x, w), x ascending, made exactly symmetric: x[n-1-i] = -x[i] and
// w[n-1-i] = w[i], so that the tables of the negative row means are mirrors (noisyTable.mirror).
func symmetric(x, w []float64) ([]float64, []float64) {
	n := len(x)
	for i := 0; i < n/2; i++ {
		j := n - 1 - i
		xi, wi := (x[j]-x[i])/2, (w[i]+w[j])/2
		x[i], x[j], w[i], w[j] = -xi, xi, wi, wi
	}
	if n%2 == 1 {
		x[n/2] = 0
	}
	return x, w
}

// Sizes of the SE rule of NoisySoftmax (m, y~ per panel, g_0) and of the coarser rule that
// states its error.
var (
	noisySizes  = [3]int{20, 8, 14}
	noisyCoarse = [3]int{14, 6, 10}
)

// NewNoisySoftmax returns the noisy softmax channel: T = 2, 0 < beta < inf, 0 < Delta < inf.
func NewNoisySoftmax(T int, beta, delta float64) (*NoisySoftmax, error) {
	return newNoisySoftmax(T, beta, delta, noisySizes, noisyCoarse)
}

func newNoisySoftmax(T int, beta, delta float64, sizes, coarse [3]int) (*NoisySoftmax, error) {
	k, err := channel.NewNoisySoftmax(T, beta, delta)
	if err != nil {
		return nil, err
	}
	return newNoisySoftmaxOf(k, sizes, coarse), nil
}

// newNoisySoftmaxOf returns the theory's channel of the scalar channel k with the quadrature
// sizes and coarse sizes of the rules.
func newNoisySoftmaxOf(k *channel.NoisySoftmax, sizes, coarse [3]int) *NoisySoftmax {
	return &NoisySoftmax{NoisySoftmax: k, rule: newNoisyRule(sizes), coarse: newNoisyRule(coarse), memo: &pairMemo[Value]{},
		lines: &noisyLines{m: map[float64]*noisyLine{}}}
}

// Direct returns the channel that evaluates the rule at every (q, V) instead of the
// interpolants along the lines V = Q0 - q (the reference of the interpolants; about 0.1 s a call).
func (n *NoisySoftmax) Direct() *NoisySoftmax {
	d := *n
	d.direct = true
	return &d
}

// Name returns "softmax".
func (n *NoisySoftmax) Name() string { return "softmax" }

// Bound returns the channel whose FisherSum is FisherSum + sign times its stated error (the
// SE solved with both bounds brackets the error of the fixed point that the rule causes).
func (n *NoisySoftmax) Bound(sign float64) *NoisySoftmax {
	b := *n
	b.bound = sign
	return &b
}

// FisherSum returns E[sum_{a<=b} g_out,ab^2] = E[G^T C3 G] (see the type's comment), plus the
// Bound's multiple of its error: q-hat = 2 alpha FisherSum(q, V). By the Nishimori identity
//
//	FisherSum = (2 - E tr(C3^-1 Cov(d | y~, m))/V)/V,
//
// below the noiseless 2/V and tending to it as Delta -> 0; it stays bounded as V -> 0, so there
// is no perfect recovery at finite alpha (se.AlphaPR is +Inf for this channel).
func (n *NoisySoftmax) FisherSum(q, V float64) (float64, error) {
	_, f, err := n.integrals("FisherSum", q, V)
	return f.V + n.bound*f.Err, err
}

// OutputEntropy returns psi_out(q, V) = E log Z_out(y~; m, V), Z_out the density of the
// sufficient statistics y~ (channel.NoisySoftmax). The dropped constant is E log of the density
// of the uninformative combinations w_a = y_aa + y_ab ~ N(1, 2 Delta), independent of y~ (the
// map (y_aa, y_ab) -> (y~_a, w_a) has Jacobian 1): -log(4 pi Delta) - 1 per sample, independent
// of q and V (it cancels between fixed points and in the envelope identity). Its q-derivative
// along V = Q0 - q is FisherSum/2.
func (n *NoisySoftmax) OutputEntropy(q, V float64) (float64, error) {
	p, _, err := n.integrals("OutputEntropy", q, V)
	return p.V, err
}

// FisherSumValue returns FisherSum(q, V) with its stated error.
func (n *NoisySoftmax) FisherSumValue(q, V float64) (Value, error) {
	_, f, err := n.integrals("FisherSum", q, V)
	return f, err
}

// OutputEntropyValue returns psi_out(q, V) with its stated error.
func (n *NoisySoftmax) OutputEntropyValue(q, V float64) (Value, error) {
	p, _, err := n.integrals("OutputEntropy", q, V)
	return p, err
}

// integrals returns (psi_out, FisherSum) at (q, V) with their errors: from the line of
// Q0 = q + V (noisyLine) where V >= noisyVMin(Delta/beta^2), else from the rule, remembering the
// last pair. q = 0 is always the rule's (a single row mean: milliseconds).
func (n *NoisySoftmax) integrals(op string, q, V float64) (psi, fisher Value, err error) {
	if !n.direct && q > 0 && V >= noisyVMin*n.vScale() && V <= 1 && !math.IsInf(q, 0) {
		return n.lines.line(n, q+V).eval(n, V)
	}
	sz := n.rule.sizes
	return n.memo.integrals("noisy softmax", op, q, V, [2]int{sz[0]*100 + sz[1], sz[2]},
		func() (Value, Value, error) {
			p, f, err := n.integrate(n.rule, q, V)
			if err != nil {
				return Value{}, Value{}, err
			}
			pc, fc, err := n.integrate(n.coarse, q, V)
			if err != nil {
				return Value{}, Value{}, err
			}
			return Value{V: p, Err: statedErr(p, pc)}, Value{V: f, Err: statedErr(f, fc)}, nil
		})
}

// statedErr is |fine - coarse|, at least 1e-12 |fine| (the rounding of the sums).
func statedErr(fine, coarse float64) float64 {
	return math.Max(math.Abs(fine-coarse), 1e-12*math.Abs(fine))
}

// noisyTable holds, for one value mu of a row's mean m_a, the row's y~ rule (nodes y and
// weights w of the marginal density M(y) = K(y; mu, 3V), the density included), log M at each
// node, and per node i and g_0 node k the ratio A = K(y_i; mu + sqrt(V) g_0k, 2V)/M(y_i) and
// A dlog K/dmu, flat [i ng + k].
type noisyTable struct {
	y, w, logM []float64
	a, ar      []float64
	elogM      float64 // sum_i w_i log M_i
}

// Shape of the y~ rule of a row (yNodes): the windows reach noisyReach standard deviations of
// x and of the noise, the boundary layers reach noisyLayer noise deviations into (0, 1), and
// the panels of the interior are at most noisyPanelT wide in t = logit(y~) and at most
// noisyPanelSD standard deviations of beta x.
const (
	noisyReach   = 8.0
	noisyLayer   = 8.0
	noisyPanelT  = 1.5
	noisyPanelSD = 1.0
)

// yNodes appends to t the nodes y and the Jacobian times Gauss-Legendre weights of the rule of
// y~ for a row of mean mu, where x ~ N(mu, 3V) and y~ = sigma(beta x) + s e. With [sa, sb] the
// image of the window mu -/+ noisyReach sqrt(3V) under sigma(beta .):
//
//   - when sb - sa < 4 noisyLayer s (the noise dominates): equal panels in y~ on
//     [sa - noisyReach s, sb + noisyReach s], at most 2 s wide;
//   - otherwise the boundary layers, in y~, on [sa - noisyReach s, noisyLayer s] and its mirror
//     (where sa < noisyLayer s, the outputs saturate; two panels each), and between them the
//     interior in t = logit(y~), where the density is that of beta x smoothed by noise of
//     relative size s/y~ << 1: panels at most noisyPanelT wide (the scale of the saturation)
//     and noisyPanelSD beta sqrt(3V) (the scale of the density).
//
// The rule is symmetric: the nodes of -mu are 1 minus those of mu in reverse order.
func (n *NoisySoftmax) yNodes(t *noisyTable, gl, glw []float64, mu, V float64) {
	s := math.Sqrt(n.Noise() / 2)
	beta, sx := n.Beta(), math.Sqrt(3*V)
	ua, ub := beta*(mu-noisyReach*sx), beta*(mu+noisyReach*sx)
	sa, sb := channel.Logistic(ua), channel.Logistic(ub)
	inY := func(a, b float64, panels int) {
		h := (b - a) / float64(panels) / 2
		for p := 0; p < panels; p++ {
			c := a + h*float64(2*p+1)
			for i, x := range gl {
				t.y = append(t.y, c+h*x)
				t.w = append(t.w, h*glw[i])
			}
		}
	}
	inT := func(a, b float64, panels int) {
		h := (b - a) / float64(panels) / 2
		for p := 0; p < panels; p++ {
			c := a + h*float64(2*p+1)
			for i, x := range gl {
				y := channel.Logistic(c + h*x)
				t.y = append(t.y, y)
				t.w = append(t.w, h*glw[i]*y*(1-y))
			}
		}
	}
	layer := noisyLayer * s
	if sb-sa < 4*layer || layer >= 0.25 {
		lo, hi := sa-noisyReach*s, sb+noisyReach*s
		inY(lo, hi, max(2, int(math.Ceil((hi-lo)/(2*s)))))
		return
	}
	ta, tb := ua, ub
	lowLayer, highLayer := sa < layer, sb > 1-layer
	if lowLayer {
		inY(sa-noisyReach*s, layer, 2)
		ta = math.Log(layer) - math.Log1p(-layer)
	}
	if !highLayer {
		tb = ub
	} else {
		tb = math.Log1p(-layer) - math.Log(layer)
	}
	if tb > ta {
		w := math.Min(noisyPanelT, noisyPanelSD*beta*sx)
		inT(ta, tb, max(1, int(math.Ceil((tb-ta)/w))))
	}
	if highLayer {
		inY(1-layer, sb+noisyReach*s, 2)
	}
}

// table fills t for the row mean mu at V with the rule r.
func (n *NoisySoftmax) table(t *noisyTable, r *noisyRule, mu, V float64) {
	sv := math.Sqrt(V)
	ng := len(r.gx)
	t.y, t.w, t.logM, t.a, t.ar = t.y[:0], t.w[:0], t.logM[:0], t.a[:0], t.ar[:0]
	t.elogM = 0
	n.yNodes(t, r.yx, r.yw, mu, V)
	lk := make([]float64, ng)
	dk := make([]float64, ng)
	for i, y := range t.y {
		lmax := math.Inf(-1)
		for k, g := range r.gx {
			lk[k], dk[k] = n.RowLog(y, mu+sv*g, 2*V)
			lmax = math.Max(lmax, lk[k])
		}
		var sum float64
		for k := range lk {
			sum += r.gw[k] * math.Exp(lk[k]-lmax)
		}
		lm := lmax + math.Log(sum)
		for k := range lk {
			a := math.Exp(lk[k] - lm)
			t.a = append(t.a, a)
			t.ar = append(t.ar, a*dk[k])
		}
		t.logM = append(t.logM, lm)
		t.w[i] *= math.Exp(lm)
		if t.w[i] > 0 {
			t.elogM += t.w[i] * lm
		}
	}
}

// mirror writes into d the table of the row mean -mu from t, that of mu, by
// K(1 - y; -mu, v) = K(y; mu, v) and the symmetric rules: node i of d is node ny-1-i of t
// (y -> 1 - y), g_0 node k is node ng-1-k (g_0 -> -g_0), and dlog K/dmu changes sign.
func (t *noisyTable) mirror(d *noisyTable, ng int) {
	ny := len(t.y)
	d.y, d.w, d.logM = make([]float64, ny), make([]float64, ny), make([]float64, ny)
	d.a, d.ar = make([]float64, ny*ng), make([]float64, ny*ng)
	d.elogM = t.elogM
	for i := range ny {
		j := ny - 1 - i
		d.y[i], d.w[i], d.logM[i] = 1-t.y[j], t.w[j], t.logM[j]
		for k := range ng {
			d.a[i*ng+k] = t.a[j*ng+ng-1-k]
			d.ar[i*ng+k] = -t.ar[j*ng+ng-1-k]
		}
	}
}

// noisyMinWeight is the smallest product weight a rule keeps.
const noisyMinWeight = 1e-15

// rowCorr is the correlation of m_1 and m_2 (and of d_1 and d_2): C3's 1/3.
const rowCorr = 1.0 / 3

// integrate returns (psi_out, FisherSum) at (q, V) with the rule r.
func (n *NoisySoftmax) integrate(r *noisyRule, q, V float64) (psi, fisher float64, err error) {
	mx, mw := r.mx, r.mw
	if q == 0 { // m = 0
		mx, mw = []float64{0}, []float64{1}
	}
	nm := len(mx)
	sq := math.Sqrt(3 * q)
	// Tables of the row means mu_p = sqrt(3q) z_p, shared by both rows: those of z_p >= 0
	// computed, those of z_p < 0 their mirrors.
	tabs := make([]noisyTable, nm)
	half := nm / 2
	if err := par.For(n.Workers, nm-half, par.NoState, func(_ struct{}, i int) error {
		n.table(&tabs[half+i], r, sq*mx[half+i], V)
		return nil
	}); err != nil {
		return math.NaN(), math.NaN(), err
	}
	for p := 0; p < half; p++ {
		tabs[nm-1-p].mirror(&tabs[p], len(r.gx))
	}
	// Pairs p <= o (the integrand is symmetric under the swap of the rows).
	type pair struct {
		p, q int
		w    float64
	}
	var pairs []pair
	c := 1 / math.Sqrt(1-rowCorr*rowCorr)
	for p := 0; p < nm; p++ {
		for o := p; o < nm; o++ {
			z1, z2 := mx[p], mx[o]
			w := mw[p] * mw[o] * c * math.Exp(-(z1*z1-2*rowCorr*z1*z2+z2*z2)/(2*(1-rowCorr*rowCorr))+(z1*z1+z2*z2)/2)
			if w < noisyMinWeight {
				continue
			}
			if o > p {
				w *= 2
			}
			pairs = append(pairs, pair{p, o, w})
		}
	}
	type acc struct{ psi, fisher float64 }
	res, err := par.MapReduce(n.Workers, len(pairs), par.NoState, func(_ struct{}, i int) (acc, error) {
		pr := pairs[i]
		p, f, err := atPair(&tabs[pr.p], &tabs[pr.q], r.gw)
		return acc{pr.w * p, pr.w * f}, err
	}, acc{}, func(a, b acc) acc { return acc{a.psi + b.psi, a.fisher + b.fisher} })
	if err != nil {
		return math.NaN(), math.NaN(), err
	}
	return res.psi, res.fisher, nil
}

// atPair returns E log Z and E G^T C3 G given m = (mu_1, mu_2), the row tables t1 and t2.
func atPair(t1, t2 *noisyTable, gw []float64) (psi, fisher float64, err error) {
	ng := len(gw)
	aw := make([]float64, ng)  // g_0 weight times A_1
	arw := make([]float64, ng) // g_0 weight times A_1 dlog K_1
	var elogr float64
	for i, w1 := range t1.w {
		a1, ar1 := t1.a[i*ng:(i+1)*ng], t1.ar[i*ng:(i+1)*ng]
		for k, g := range gw {
			aw[k], arw[k] = g*a1[k], g*ar1[k]
		}
		var sp, sf float64
		for j, w2 := range t2.w {
			a2, ar2 := t2.a[j*ng:(j+1)*ng], t2.ar[j*ng:(j+1)*ng]
			var z, n1, n2 float64
			for k := range aw {
				z += aw[k] * a2[k]
				n1 += arw[k] * a2[k]
				n2 += aw[k] * ar2[k]
			}
			if !(z > 0) {
				continue
			}
			sp += w2 * z * math.Log(z)
			sf += w2 * (3*n1*n1 + 2*n1*n2 + 3*n2*n2) / z
		}
		elogr += w1 * sp
		fisher += w1 * sf
	}
	psi = t1.elogM + t2.elogM + elogr
	if math.IsNaN(psi) || math.IsNaN(fisher) {
		return psi, fisher, fmt.Errorf("the integrand is NaN at a pair of row means (Delta or V out of range?)")
	}
	return psi, fisher, nil
}

// The interpolants along the lines of the SE.
//
// At one rho the SE asks for (psi_out, FisherSum) only on the line V = Q0 - q, Q0 = 1 + rho
// (1 in the rescaled SE), V in (0, 1]. On it both are smooth functions of
//
//	u = log(V + c),   c = noisyC Delta/beta^2,
//
// u in [log(c + V_lo), log(min(Q0, 1) + c)], V_lo = noisyVMin Delta/beta^2: for V >> Delta/beta^2 the
// channel is scale-free in V (FisherSum ~ 2/V up to the noise's correction), and for V below
// Delta/beta^2 the noise dominates and both tend to their limits at V = 0, analytically in V,
// which c keeps at a finite distance in u. The range of u is cut into equal segments at most
// noisySegWidth wide, each built on its first use: the rule and the coarse rule at the 17
// Chebyshev-Lobatto points of the segment (newChebPiece), four interpolants (log FisherSum and
// psi_out of each rule), bisected while a trailing coefficient of the fine ones exceeds noisyTol
// (at most noisyDepth times). At any V of the segment
//
//	FisherSum = exp(L(u)) +- (|exp(L(u)) - exp(Lc(u))| + exp(L(u)) noisyTailMul tail(L)),
//	psi_out   = P(u) +- (|P(u) - Pc(u)| + noisyTailMul tail(P)),
//
// the rule's stated error (fine minus coarse, as the rule states it at the nodes) plus the
// interpolation's, a multiple of the largest of the last three Chebyshev coefficients. Below
// V_lo, above V = 1 (the SE's m = V stays in [0, 1]), at q = 0, and for Direct, the rule is
// evaluated.

// Shape of the lines: c and V_lo in units of Delta/beta^2, the widest segment in u, the
// bisection tolerance on the trailing coefficients and depth, and the multiple of the trailing
// coefficients stated as the interpolation error.
const (
	noisyC        = 0.01
	noisyVMin     = 1e-6
	noisySegWidth = 3.0
	noisyTol      = 1e-7
	noisyDepth    = 0
	noisyTailMul  = 4.0
)

// vScale is Delta/beta^2, the V below which the label noise dominates.
func (n *NoisySoftmax) vScale() float64 { return n.Noise() / (n.Beta() * n.Beta()) }

// noisyLines holds the lines of one channel by Q0 (rounded to 1e-12, so that q + V of the SE's
// (Q0 - m, m) finds its line whatever the rounding of Q0 - m).
type noisyLines struct {
	mu sync.Mutex
	m  map[float64]*noisyLine
}

// line returns the line of Q0, created (not built) on first use.
func (ls *noisyLines) line(n *NoisySoftmax, Q0 float64) *noisyLine {
	key := math.Round(Q0*1e12) / 1e12
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l := ls.m[key]
	if l == nil {
		c := noisyC * n.vScale()
		l = &noisyLine{Q0: key, c: c, lo: math.Log(c + noisyVMin*n.vScale()), hi: math.Log(math.Min(key, 1) + c)}
		k := max(1, int(math.Ceil((l.hi-l.lo)/noisySegWidth)))
		l.segs = make([]noisySegment, k)
		for i := range l.segs {
			l.segs[i].lo = l.lo + (l.hi-l.lo)*float64(i)/float64(k)
			l.segs[i].hi = l.lo + (l.hi-l.lo)*float64(i+1)/float64(k)
		}
		ls.m[key] = l
	}
	return l
}

// noisyLine is the line V = Q0 - q of one channel: its segments in u = log(V + c).
type noisyLine struct {
	Q0, c, lo, hi float64
	segs          []noisySegment
}

// noisySegment is one segment [lo, hi] in u of a line, built once (sync.Once) into its pieces.
type noisySegment struct {
	once   sync.Once
	lo, hi float64
	pieces []*noisyPiece
	err    error
}

// noisyPiece holds the interpolants of one piece of a segment: log FisherSum and psi_out of the
// rule and of the coarse rule, and the trailing coefficients of the rule's two.
type noisyPiece struct {
	logF, psi, logFc, psic *chebPiece
	tailF, tailP           float64
}

// eval returns (psi_out, FisherSum) with their errors at V on the line.
func (l *noisyLine) eval(n *NoisySoftmax, V float64) (psi, fisher Value, err error) {
	u := math.Min(math.Max(math.Log(V+l.c), l.lo), l.hi)
	k := min(len(l.segs)-1, int((u-l.lo)/(l.hi-l.lo)*float64(len(l.segs))))
	s := &l.segs[k]
	s.once.Do(func() { s.pieces, s.err = l.build(n, s.lo, s.hi, 0) })
	if s.err != nil {
		return Value{}, Value{}, s.err
	}
	p := s.pieces[len(s.pieces)-1]
	for _, c := range s.pieces {
		if u <= c.logF.hi {
			p = c
			break
		}
	}
	f, fc := math.Exp(p.logF.eval(u)), math.Exp(p.logFc.eval(u))
	ps, pc := p.psi.eval(u), p.psic.eval(u)
	fisher = Value{V: f, Err: statedErr(f, fc) + f*noisyTailMul*p.tailF}
	psi = Value{V: ps, Err: statedErr(ps, pc) + noisyTailMul*p.tailP}
	return psi, fisher, nil
}

// build returns the pieces of [lo, hi] in u, bisected while the rule's interpolants' trailing
// coefficients exceed noisyTol (relative for psi_out where |psi_out| > 1), at most noisyDepth
// times.
func (l *noisyLine) build(n *NoisySoftmax, lo, hi float64, depth int) ([]*noisyPiece, error) {
	type vals struct{ logF, psi, logFc, psic float64 }
	at := map[float64]vals{}
	var ferr error
	node := func(u float64) vals {
		if v, ok := at[u]; ok || ferr != nil {
			return v
		}
		V := math.Exp(u) - l.c
		q := math.Max(l.Q0-V, 0)
		p, f, err := n.integrate(n.rule, q, V)
		if err == nil {
			var pc, fc float64
			pc, fc, err = n.integrate(n.coarse, q, V)
			at[u] = vals{math.Log(f), p, math.Log(fc), pc}
		}
		if err != nil {
			ferr = fmt.Errorf("noisy softmax line Q0 = %g at V = %g: %w", l.Q0, V, err)
		}
		return at[u]
	}
	p := &noisyPiece{
		logF:  newChebPiece(func(u float64) float64 { return node(u).logF }, lo, hi),
		psi:   newChebPiece(func(u float64) float64 { return node(u).psi }, lo, hi),
		logFc: newChebPiece(func(u float64) float64 { return node(u).logFc }, lo, hi),
		psic:  newChebPiece(func(u float64) float64 { return node(u).psic }, lo, hi),
	}
	if ferr != nil {
		return nil, ferr
	}
	p.tailF = p.logF.tail()
	p.tailP = p.psi.tail()
	if depth < noisyDepth && (p.tailF > noisyTol || p.tailP > noisyTol*math.Max(1, math.Abs(p.psi.c[0]))) {
		mid := (lo + hi) / 2
		a, err := l.build(n, lo, mid, depth+1)
		if err != nil {
			return nil, err
		}
		b, err := l.build(n, mid, hi, depth+1)
		return append(a, b...), err
	}
	return []*noisyPiece{p}, nil
}

// NoisySoftmax implements Entropic.
var _ Entropic = (*NoisySoftmax)(nil)
