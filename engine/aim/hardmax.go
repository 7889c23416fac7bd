package aim

import (
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/aimtheory/aim/channel"
)

// Hardmax is the hardmax channel of docs/theory/aim.md 2.3 for T = 2 (channel.Hardmax: outputs and
// g_out, exact or in the published form) with its state-evolution integral:
// FisherSum(q, V) = H(q/V)/(3V), where H (FisherH) is a two-dimensional Gaussian integral
// that depends on q and V only through lambda = q/V. H is tabulated once per mode (lazily) with
// piecewise Chebyshev interpolants and asymptotic series; see FisherH.
type Hardmax struct{ *channel.Hardmax }

// NewHardmax returns the hardmax channel for T tokens; only T = 2 is implemented.
func NewHardmax(T int, paperCompat bool) (*Hardmax, error) {
	k, err := channel.NewHardmax(T, paperCompat)
	if err != nil {
		return nil, err
	}
	return &Hardmax{k}, nil
}

// Name is "hardmax".
func (h *Hardmax) Name() string { return "hardmax" }

// FisherSum returns E_{omega,y}[g11^2 + g12^2 + g22^2] = H(q/V)/(3V) (see FisherH), for
// omega ~ N(0, q I_3), u = omega + sqrt(V) xi. It returns an error for q < 0, V <= 0 or
// non-finite arguments.
func (h *Hardmax) FisherSum(q, V float64) (float64, error) {
	if math.IsNaN(q) || math.IsNaN(V) || math.IsInf(q, 0) || math.IsInf(V, 0) {
		return 0, fmt.Errorf("hardmax: FisherSum(q = %v, V = %v): arguments must be finite", q, V)
	}
	if q < 0 || V <= 0 {
		return 0, fmt.Errorf("hardmax: FisherSum(q = %v, V = %v): need q >= 0 and V > 0", q, V)
	}
	return h.FisherH(q/V) / (3 * V), nil
}

// FisherH returns H(lambda), lambda = q/V >= 0, with FisherSum(q, V) = H(q/V)/(3V):
//
//	H(lambda) = E_b sum_{s in {+-1}^2} [2 D1^2 + 2 D2^2 + (s1 D1 + s2 D2)^2] / Phi2(kappa; s1 s2/3),
//
// kappa = (s1 b1, s2 b2), b ~ N(0, lambda C), C = [[1, 1/3], [1/3, 1]], and D_a = d_aPhi2(kappa)
// (exact) or phi2(kappa) (paperCompat). Here b = (sqrt2 omega11 - omega12, sqrt2 omega22 -
// omega12)/sqrt(3V). H(0) = 2/(pi Z+) + 1/(pi Z-) exactly (exact mode) and
// (16/Z+ + 8/Z-) phi2(0,0;1/3)^2 (paper mode), Z+- = 1/4 +- asin(1/3)/(2 pi), so the rho -> 0
// threshold is alphabar_c = 3/(2 H(0)). For large lambda, H ~ c/sqrt(lambda) (exact mode) and
// H ~ c/lambda (paper mode). The first call in each mode builds the table (about 0.6 s on one
// core); later calls cost about 0.15 microseconds. Relative accuracy better than 1e-12 (the
// tests find 1e-14 against direct and refined quadratures). NaN for lambda < 0.
func (h *Hardmax) FisherH(lambda float64) float64 {
	if math.IsNaN(lambda) || lambda < 0 {
		return math.NaN()
	}
	return hTableFor(h.PaperCompat()).eval(lambda)
}

// ---------------------------------------------------------------------------------------
// The integrand.

// hTerm is [2 D1^2 + 2 D2^2 + (s1 D1 + s2 D2)^2]/Z for one sign pattern, written with
// kappa = (k1, k2) and rho = s1 s2/3: (s1 D1 + s2 D2)^2 = D1^2 + D2^2 + 2 sign(rho) D1 D2.
func hTerm(k1, k2, rho float64, paper bool) float64 {
	lz, r1, r2, p := channel.BVNRatios(k1, k2, rho)
	sigma := 1.0
	if rho < 0 {
		sigma = -1
	}
	if paper {
		return (6 + 2*sigma) * math.Exp(lz) * p * p
	}
	return math.Exp(lz) * (3*r1*r1 + 3*r2*r2 + 2*sigma*r1*r2)
}

// hIntegrand is the sum over the four sign patterns at b = (b1, b2); it is even in b.
func hIntegrand(b1, b2 float64, paper bool) float64 {
	return hTerm(b1, b2, 1.0/3, paper) + hTerm(-b1, -b2, 1.0/3, paper) +
		hTerm(b1, -b2, -1.0/3, paper) + hTerm(-b1, b2, -1.0/3, paper)
}

// hBand is the limit of hIntegrand(b1, b2) as |b2| -> inf in exact mode:
// sum_{s = +-1} 3 phi(s b)^2/Phi(s b). In paper mode the integrand has no such band (phi2 -> 0).
func hBand(b float64) float64 {
	return 3*math.Exp(2*channel.LogNormPDF(b)-channel.LogNormCDF(b)) + 3*math.Exp(2*channel.LogNormPDF(b)-channel.LogNormCDF(-b))
}

// hZero is H(0) in closed form.
func hZero(paper bool) float64 {
	zp := 0.25 + math.Asin(1.0/3)/(2*math.Pi)
	zm := 0.25 - math.Asin(1.0/3)/(2*math.Pi)
	if paper {
		p := channel.BivariateNormalPDF(0, 0, 1.0/3)
		return (16/zp + 8/zm) * p * p
	}
	return 2/(math.Pi*zp) + 1/(math.Pi*zm)
}

// ---------------------------------------------------------------------------------------
// Direct quadrature of H.
//
// Small lambda (< hGHMax): Gauss-Hermite in whitened coordinates, b = sqrt(lambda) L z,
// C = L L^T, z ~ N(0, I_2); the integrand varies on the scale 1/sqrt(lambda) in z.
//
// Larger lambda: the integrand (in b) is O(1) on bands of width O(1) around the axes (exact
// mode), so split it as f(b) = hBand(b1) + hBand(b2) + g(b) with g decaying like a Gaussian
// in every direction (paper mode: g = f). Then
//
//	H(lambda) = 2 E_{b ~ N(0, lambda)} hBand(b) + int p_lambda(b) g(b) db,
//
// both integrals of functions localised in |b| <~ 10 against a Gaussian of width sqrt(lambda);
// they use one fixed tensor Gauss-Legendre grid on [-hBox, hBox]^2 on which hBand and g are
// evaluated once per mode. The same grid gives the moments of the large-lambda series.

const (
	hGHMax     = 0.5  // lambda below which Gauss-Hermite is used
	hGHPoints  = 48   // Gauss-Hermite points per dimension
	hBox       = 12.0 // the localised parts are < 1e-30 beyond |b_i| = hBox
	hGLPoints  = 12   // Gauss-Legendre points per grid panel
	hSeriesMin = 1e5  // lambda above which the asymptotic series is used
	hChebSplit = 0.01 // lambda below which H is interpolated in lambda, above in log(lambda)
)

// hGridEdges are the panel edges of the grid on [0, hBox] (mirrored to [-hBox, 0]).
var hGridEdges = [...]float64{0, 1, 2, 3, 4, 5, 6, 8, 10, hBox}

// hQuad holds the per-mode data of the direct quadrature.
type hQuad struct {
	paper bool
	// Gauss-Hermite rule for z ~ N(0,1): nodes and probability weights (n = hGHPoints).
	ghx, ghw []float64
	// Grid nodes and weights on [-hBox, hBox] (symmetric: bx[n-1-i] = -bx[i]).
	bx, bw []float64
	band   []float64 // hBand(bx[i]) * bw[i] (exact mode; zero in paper mode)
	g      []float64 // g(bx[i], bx[j]) * bw[i] * bw[j], row-major
	// Moments for the large-lambda series: m[k] = int b^(2k) hBand(b) db,
	// gm[k] = int Q(b)^k g(b) db with Q(b) = b^T C^-1 b.
	m, gm [3]float64
}

func newHQuad(paper bool) *hQuad {
	return newHQuadWith(paper, hGHPoints, hGLPoints, hGridEdges[:])
}

// newHQuadWith takes the Gauss-Hermite size, the Gauss-Legendre points per panel and the
// panel edges on [0, box] (tests use it to check convergence).
func newHQuadWith(paper bool, ghN, glN int, edges []float64) *hQuad {
	hq := &hQuad{paper: paper}
	hq.ghx, hq.ghw = channel.HermiteNormal(ghN)
	hq.bx, hq.bw = gridNodes(glN, edges)
	n := len(hq.bx)
	hq.band = make([]float64, n)
	if !paper {
		for i, b := range hq.bx {
			hq.band[i] = hBand(b) * hq.bw[i]
		}
	}
	hq.g = make([]float64, n*n)
	// g is even in b: compute rows i < n/2 and mirror.
	for i := 0; i < n/2; i++ {
		for j := 0; j < n; j++ {
			v := hIntegrand(hq.bx[i], hq.bx[j], paper)
			if !paper {
				v -= hBand(hq.bx[i]) + hBand(hq.bx[j])
			}
			v *= hq.bw[i] * hq.bw[j]
			hq.g[i*n+j] = v
			hq.g[(n-1-i)*n+(n-1-j)] = v
		}
	}
	for i, b := range hq.bx {
		b2 := b * b
		hq.m[0] += hq.band[i]
		hq.m[1] += hq.band[i] * b2
		hq.m[2] += hq.band[i] * b2 * b2
		for j, c := range hq.bx {
			Q := 9.0 / 8 * (b2 - 2.0/3*b*c + c*c)
			v := hq.g[i*n+j]
			hq.gm[0] += v
			hq.gm[1] += v * Q
			hq.gm[2] += v * Q * Q
		}
	}
	return hq
}

// gridNodes returns the symmetric tensor-grid axis on [-box, box]: glN Gauss-Legendre points
// per panel, the panel edges on [0, box] mirrored (x[n-1-i] = -x[i]), increasing.
func gridNodes(glN int, edges []float64) (x, w []float64) {
	glx, glw := channel.GaussLegendre(glN)
	var half []float64
	var halfW []float64
	for p := len(edges) - 1; p > 0; p-- { // nodes on [-box, 0], increasing
		a, b := -edges[p], -edges[p-1]
		for i := range glx {
			half = append(half, (a+b)/2+(b-a)/2*glx[i])
			halfW = append(halfW, (b-a)/2*glw[i])
		}
	}
	sort.Sort(sortPair{half, halfW})
	n := 2 * len(half)
	x, w = make([]float64, n), make([]float64, n)
	for i := range half {
		x[i], w[i] = half[i], halfW[i]
		x[n-1-i], w[n-1-i] = -half[i], halfW[i]
	}
	return x, w
}

type sortPair struct{ x, w []float64 }

func (s sortPair) Len() int           { return len(s.x) }
func (s sortPair) Less(i, j int) bool { return s.x[i] < s.x[j] }
func (s sortPair) Swap(i, j int) {
	s.x[i], s.x[j] = s.x[j], s.x[i]
	s.w[i], s.w[j] = s.w[j], s.w[i]
}

// direct returns H(lambda) by quadrature (Gauss-Hermite below hGHMax, the grid above).
func (hq *hQuad) direct(lambda float64) float64 {
	if lambda == 0 {
		return hZero(hq.paper)
	}
	if lambda < hGHMax {
		return hq.gaussHermite(lambda)
	}
	return hq.grid(lambda)
}

// gaussHermite integrates the full integrand over z ~ N(0, I_2), b = sqrt(lambda) L z,
// L = [[1, 0], [1/3, sqrt(8)/3]], using the evenness of the integrand (z -> -z).
func (hq *hQuad) gaussHermite(lambda float64) float64 {
	return gaussHermiteEven(hq.ghx, hq.ghw, lambda, func(b1, b2 float64) float64 { return hIntegrand(b1, b2, hq.paper) })
}

// gaussHermiteEven returns E f(b) for b ~ N(0, lambda C), C = [[1, 1/3], [1/3, 1]], and f even
// (f(-b) = f(b)), by the tensor Gauss-Hermite rule (ghx, ghw: nodes and probability weights of
// N(0, 1)) in the whitened coordinates b = sqrt(lambda) L z, L = [[1, 0], [1/3, sqrt(8)/3]].
func gaussHermiteEven(ghx, ghw []float64, lambda float64, f func(b1, b2 float64) float64) float64 {
	sl := math.Sqrt(lambda)
	l21, l22 := 1.0/3, math.Sqrt(8)/3
	n := len(ghx)
	sum := 0.0
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			// Pair (i, j) with (n-1-i, n-1-j): take the half with i < n/2 twice.
			if i >= n/2 || ghw[i]*ghw[j] < 1e-18 {
				continue
			}
			z1, z2 := ghx[i], ghx[j]
			b1 := sl * z1
			b2 := sl * (l21*z1 + l22*z2)
			sum += 2 * ghw[i] * ghw[j] * f(b1, b2)
		}
	}
	return sum
}

// grid evaluates 2 E_{N(0,lambda)} hBand + int p_lambda g on the fixed grid.
func (hq *hQuad) grid(lambda float64) float64 {
	return gridGauss(hq.bx, hq.band, hq.g, lambda, !hq.paper)
}

// gridGauss returns 2 sum_i band_i N(bx_i; 0, lambda) + sum_ij g_ij p_lambda(bx_i, bx_j) (when
// withBand; the g term only otherwise): the integral against b ~ N(0, lambda C) of a function
// split into bands along the axes and a localised part, with the weights already folded into
// band and g (see the direct quadrature's comment).
func gridGauss(bx, band, g []float64, lambda float64, withBand bool) float64 {
	n := len(bx)
	bsum := 0.0
	if withBand {
		c := 1 / math.Sqrt(2*math.Pi*lambda)
		for i, b := range bx {
			bsum += band[i] * c * math.Exp(-b*b/(2*lambda))
		}
	}
	// p_lambda(b) = exp(-Q/(2 lambda))/(2 pi lambda sqrt(8/9)), Q = (9/8)(b1^2 - (2/3) b1 b2 + b2^2).
	a := 9.0 / 16 / lambda
	cross := 9.0 / 8 / 3 / lambda
	e := make([]float64, n)
	for i, b := range bx {
		e[i] = -a * b * b
	}
	sum := 0.0
	for i := 0; i < n; i++ {
		row := g[i*n : (i+1)*n]
		bi := bx[i]
		part := 0.0
		for j, v := range row {
			part += v * math.Exp(e[i]+e[j]+cross*bi*bx[j])
		}
		sum += part
	}
	return 2*bsum + sum/(2*math.Pi*lambda*math.Sqrt(8.0/9))
}

// series is the large-lambda expansion of grid():
// 2 (2 pi lambda)^-1/2 [m0 - m2/(2 lambda) + m4/(8 lambda^2)] +
// (2 pi lambda sqrt(8/9))^-1 [g0 - g1/(2 lambda) + g2/(8 lambda^2)], relative error O(lambda^-3).
func (hq *hQuad) series(lambda float64) float64 {
	x := 1 / lambda
	band := 2 / math.Sqrt(2*math.Pi*lambda) * (hq.m[0] - hq.m[1]*x/2 + hq.m[2]*x*x/8)
	loc := (hq.gm[0] - hq.gm[1]*x/2 + hq.gm[2]*x*x/8) / (2 * math.Pi * lambda * math.Sqrt(8.0/9))
	return band + loc
}

// ---------------------------------------------------------------------------------------
// The table: Chebyshev interpolants of H(lambda) on [0, hChebSplit] (in lambda) and of
// log H on [log hChebSplit, log hSeriesMin] (in log lambda, pieces bisected until the trailing
// Chebyshev coefficients are below hChebTol), the series above hSeriesMin.

const (
	hChebN   = 17    // Chebyshev-Lobatto points per piece
	hChebTol = 1e-12 // bound on the trailing coefficients (relative error of H)
)

type chebPiece struct {
	lo, hi float64   // interval in the piece's variable
	c      []float64 // Chebyshev coefficients
}

func (p *chebPiece) eval(x float64) float64 {
	t := (2*x - p.lo - p.hi) / (p.hi - p.lo)
	// Clenshaw.
	var b1, b2 float64
	for k := len(p.c) - 1; k >= 1; k-- {
		b1, b2 = 2*t*b1-b2+p.c[k], b1
	}
	return t*b1 - b2 + p.c[0]
}

// newChebPiece interpolates f at the Chebyshev-Lobatto points of [lo, hi].
func newChebPiece(f func(float64) float64, lo, hi float64) *chebPiece {
	n := hChebN - 1
	v := make([]float64, n+1)
	for j := 0; j <= n; j++ {
		x := math.Cos(math.Pi * float64(j) / float64(n))
		v[j] = f((lo+hi)/2 + (hi-lo)/2*x)
	}
	c := make([]float64, n+1)
	for k := 0; k <= n; k++ {
		s := 0.0
		for j := 0; j <= n; j++ {
			w := 1.0
			if j == 0 || j == n {
				w = 0.5
			}
			s += w * v[j] * math.Cos(math.Pi*float64(j*k)/float64(n))
		}
		c[k] = 2 * s / float64(n)
	}
	c[0] /= 2
	c[n] /= 2
	return &chebPiece{lo: lo, hi: hi, c: c}
}

func (p *chebPiece) tail() float64 {
	n := len(p.c)
	return math.Max(math.Abs(p.c[n-1]), math.Max(math.Abs(p.c[n-2]), math.Abs(p.c[n-3])))
}

type hTable struct {
	q      *hQuad
	small  *chebPiece   // H(lambda) on [0, hChebSplit]
	pieces []*chebPiece // log H on [log hChebSplit, log hSeriesMin], sorted
}

func newHTable(paper bool) *hTable {
	t := &hTable{q: newHQuad(paper)}
	t.small = newChebPiece(t.q.direct, 0, hChebSplit)
	logH := func(x float64) float64 { return math.Log(t.q.direct(math.Exp(x))) }
	var build func(lo, hi float64, depth int)
	build = func(lo, hi float64, depth int) {
		p := newChebPiece(logH, lo, hi)
		if p.tail() > hChebTol && depth < 12 {
			mid := (lo + hi) / 2
			build(lo, mid, depth+1)
			build(mid, hi, depth+1)
			return
		}
		t.pieces = append(t.pieces, p)
	}
	// Start with pieces of length about 2 in log lambda, with a boundary at hGHMax where the
	// direct quadrature changes method.
	edges := []float64{math.Log(hChebSplit), math.Log(hGHMax), math.Log(hSeriesMin)}
	for e := 0; e+1 < len(edges); e++ {
		m := int(math.Ceil((edges[e+1] - edges[e]) / 2))
		for i := 0; i < m; i++ {
			lo := edges[e] + (edges[e+1]-edges[e])*float64(i)/float64(m)
			hi := edges[e] + (edges[e+1]-edges[e])*float64(i+1)/float64(m)
			build(lo, hi, 0)
		}
	}
	return t
}

func (t *hTable) eval(lambda float64) float64 {
	switch {
	case math.IsInf(lambda, 1):
		return 0
	case lambda >= hSeriesMin:
		return t.q.series(lambda)
	case lambda <= hChebSplit:
		return t.small.eval(lambda)
	}
	x := math.Log(lambda)
	i := sort.Search(len(t.pieces), func(i int) bool { return t.pieces[i].hi >= x })
	if i == len(t.pieces) {
		i--
	}
	return math.Exp(t.pieces[i].eval(x))
}

var hTables [2]struct {
	once sync.Once
	t    *hTable
}

// hTableFor returns the (lazily built, then read-only) table of one mode.
func hTableFor(paper bool) *hTable {
	i := 0
	if paper {
		i = 1
	}
	e := &hTables[i]
	e.once.Do(func() { e.t = newHTable(paper) })
	return e.t
}

// Hardmax implements Channel.
var _ Channel = (*Hardmax)(nil)
