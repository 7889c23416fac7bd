package aim

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/internal/par"
)

// The state-evolution integral of the hardmax channel at T > 2, tabulated.
//
// FisherSum(q, V) = F(lambda)/V with lambda = q/V (FisherSumLattice). F is smooth on
// [0, inf): F(0) = FisherSum(0, 1) (the output patterns), and for large lambda the integrand
// lives within O(1) of the facets of the cones {h : row a's argmax is b_a}, so that
//
//	F(lambda) = c1 lambda^-1/2 + c2 lambda^-1 + ...,   c1 = kappa/sqrt(2 pi) sum_b sum_k P_k(b),
//
// the facets' share (FisherLimit). Written in s = (1 + lambda)^-1/2 in [0, 1], G(s) =
// sqrt(1 + lambda) F(lambda) is smooth from G(0) = c1 to G(1) = F(0). A FisherTable holds G at
// lambda = 0, 2^-4, ..., 2^5 (lattice estimates with their errors, where the lattice over omega
// is accurate) and at s = 0 (c1), and FisherFit fits a Chebyshev series in s to them by weighted
// least squares: the fit interpolates between the computed nodes and bridges lambda > 32 to the
// exact limit. At T = 2, where H is known in closed form (Hardmax.FisherH), the whole
// construction is tested against it.
//
// The error model. Each node is a lattice estimate of its own: node i has its own outer shifts and
// inner reseeds (fisherNodeSeed), so the nodes' errors are independent and each node's Err (the
// spread over its 8 shifts) is its standard error. The fit's error at lambda (FisherFit.Eval) is
//
//	err(lambda) = (max(sigma_fit(s), e(s) G(s)) + |G_6(s) - G_5(s)|) / sqrt(1 + lambda),
//
// sigma_fit the nodes' errors propagated through the least squares, G_6 - G_5 the change from the
// series of one degree less (the truncation), and e(s) the relative error of the nodes on either
// side of s, interpolated linearly in s: the fit never claims more accuracy than the nodes it
// comes from. The least squares alone would: with independent nodes it averages 12 of them into
// 7 coefficients and states a half to 0.8 of the nodes' error between them (a gain that holds
// only if G is exactly a degree-6 series); with correlated nodes (one lattice for all,
// FisherTable.Shared) the averaging gains nothing, and the propagated error understates the
// actual one. Beyond lambda ~ 40 the propagated error is the larger, and the floor does not bind.

// FisherTable is the tabulated F(lambda) of the hardmax channel at T tokens.
type FisherTable struct {
	T      int
	Points int // lattice points per shift of each node (FisherSumLattice)
	// Shared marks a table whose nodes all lie on one lattice, FisherSumLattice(lambda, 1,
	// Points) with the shifts of hardmaxTSeed, so that their errors are correlated; otherwise
	// node i has its own lattice (fisherNodeSeed).
	Shared bool
	Limit  Value     // c1 = lim sqrt(lambda) F(lambda) (FisherLimit)
	Lambda []float64 // the nodes, lambda = 0 first
	F      []Value   // F at the nodes
}

// fisherNodes are the lambda of a FisherTable: 0 and 2^-4 .. 2^5.
func fisherNodes() []float64 {
	l := []float64{0}
	for e := -4; e <= 5; e++ {
		l = append(l, math.Ldexp(1, e))
	}
	return l
}

// fisherNodeSeed is the lattice seed of node i of a FisherTable (mixSeed of hardmaxTSeed): each
// node has its own outer shifts and inner reseeds, so that the nodes' errors are independent.
func fisherNodeSeed(i int) uint64 { return mixSeed(hardmaxTSeed, i) }

// Tabulate computes the FisherTable of the channel with points lattice points per shift at every
// node (the estimate of FisherSumLattice on node i's own lattice, fisherNodeSeed(i)) and
// FisherLimit with 16 times as many. progress, if not nil, is called after each node.
func (h *HardmaxT) Tabulate(points int, progress func(lambda float64, v Value)) (*FisherTable, error) {
	t := &FisherTable{T: h.T, Points: points, Lambda: fisherNodes()}
	var err error
	if t.Limit, err = h.FisherLimit(16 * points); err != nil {
		return nil, err
	}
	for i, l := range t.Lambda {
		v, err := h.FisherSumLatticeSeed(l, 1, points, fisherNodeSeed(i))
		if err != nil {
			return nil, err
		}
		t.F = append(t.F, v)
		if progress != nil {
			progress(l, v)
		}
	}
	return t, nil
}

// fisherKappa is kappa = int phi(d)^2 / Phi(d) dd, the one-dimensional Fisher integral of a
// single facet: a half-space constraint n . (omega + xi) >= 0 at distance d = n . omega has
// Z_out = Phi(d) and |g_out| = phi(d)/Phi(d). By Gauss-Legendre on [-40, 40] in 160 panels of
// 16 points (the integrand is below 1e-300 beyond).
func fisherKappa() float64 {
	x, w := channel.GaussLegendre(16)
	const lo, hi, panels = -40.0, 40.0, 160
	var s float64
	for p := 0; p < panels; p++ {
		a := lo + (hi-lo)*float64(p)/panels
		b := a + (hi-lo)/panels
		for i := range x {
			d := (a+b)/2 + (b-a)/2*x[i]
			s += w[i] * (b - a) / 2 * math.Exp(2*channel.LogNormPDF(d)-channel.LogNormCDF(d))
		}
	}
	return s
}

// FisherLimit returns c1 = lim_{lambda -> inf} sqrt(lambda) F(lambda) = kappa/sqrt(2 pi) sum_b
// sum_k P_k(b), summed over the output patterns b (by classes) and their constraints k, where
// P_k(b) is the probability that a standard Gaussian in the hyperplane a_k . omega = 0 satisfies
// b's other constraints (the facet's share of the hyperplane; 0 for a redundant constraint), and
// kappa = fisherKappa. Near facet k of b and far from the others the channel is the half-space
// of fisherKappa, and the density of a_k . omega/|a_k| at 0 is 1/sqrt(2 pi lambda). Each P_k is
// a polytope probability (Polytope with thresholds 0) with points lattice points of 8 shifts;
// Err adds their errors in quadrature.
func (h *HardmaxT) FisherLimit(points int) (Value, error) {
	T, M := h.T, channel.Fields(h.T)
	k0, err := channel.NewHardmaxT(T, 0, 0)
	if err != nil {
		return Value{}, err
	}
	rule, err := channel.NewLattice(M-1, points, 8, hardmaxTSeed)
	if err != nil {
		return Value{}, fmt.Errorf("hardmax T = %d: %w", T, err)
	}
	reps, counts := PatternClasses(T)
	K := T * (T - 1)
	type acc struct{ s, v float64 }
	res, err := par.MapReduce(h.Workers, len(reps)*K, func() (struct{}, error) { return struct{}{}, nil },
		func(_ struct{}, j int) (acc, error) {
			b, k := reps[j/K], j%K
			A := k0.Constraints(b)
			n := A[k*M : (k+1)*M]
			nn := floats.Dot(n, n)
			var rows []float64 // b's other constraints, projected on the hyperplane n . omega = 0
			for i := 0; i < K; i++ {
				if i == k {
					continue
				}
				a := A[i*M : (i+1)*M]
				dot := floats.Dot(a, n)
				for x := range a {
					rows = append(rows, a[x]-dot/nn*n[x])
				}
			}
			p, err := channel.NewPolytope(rows, K-1, M)
			if err != nil {
				return acc{}, fmt.Errorf("hardmax T = %d, pattern %v, facet %d: %w", T, b, k, err)
			}
			m := make([]float64, M)
			est := p.Moments(m, make([]float64, K-1), rule, 0)
			if math.IsInf(est.LogZ, -1) {
				return acc{}, nil
			}
			z := math.Exp(est.LogZ)
			w := float64(counts[j/K])
			return acc{w * z, w * w * z * z * est.ErrLogZ * est.ErrLogZ}, nil
		}, acc{}, func(a, b acc) acc { return acc{a.s + b.s, a.v + b.v} })
	if err != nil {
		return Value{}, err
	}
	c := fisherKappa() / math.Sqrt(2*math.Pi)
	return Value{V: c * res.s, Err: c * math.Sqrt(res.v)}, nil
}

// fisherDegree is the degree of the Chebyshev series of FisherFit (12 data, 7 coefficients).
const fisherDegree = 6

// FisherFit is the weighted least-squares Chebyshev series G(s) = sum_j a_j T_j(2s - 1) of a
// FisherTable (see the section comment), the series of one degree less for the error, and the
// nodes' relative errors that floor it.
type FisherFit struct {
	a, a1 []float64  // the coefficients of degree fisherDegree and fisherDegree - 1
	cov   *mat.Dense // the covariance of a from the nodes' errors
	s, e  []float64  // the nodes' s, increasing, and their relative errors Err/V
}

// Fit returns the table's FisherFit, or an error when the table has too few valid nodes or an
// error that is not positive and finite.
func (t *FisherTable) Fit() (*FisherFit, error) {
	xs, ys, ss := []float64{0}, []float64{t.Limit.V}, []float64{t.Limit.Err}
	for i, l := range t.Lambda {
		r := math.Sqrt(1 + l)
		xs, ys, ss = append(xs, 1/r), append(ys, r*t.F[i].V), append(ss, r*t.F[i].Err)
	}
	for i := range ss {
		if !(ss[i] >= 0) || math.IsInf(ss[i], 0) || !(ys[i] > 0) || math.IsInf(ys[i], 0) {
			return nil, fmt.Errorf("hardmax T = %d: table node %d has value %g +- %g", t.T, i, ys[i], ss[i])
		}
		ss[i] = math.Max(ss[i], 1e-7*ys[i]) // an exact node (c1 at T = 2) weighs as one to 1e-7
	}
	f := &FisherFit{}
	for _, i := range sortedIndex(xs) {
		f.s, f.e = append(f.s, xs[i]), append(f.e, ss[i]/ys[i])
	}
	var err error
	if f.a, f.cov, err = chebLSQ(xs, ys, ss, fisherDegree); err != nil {
		return nil, fmt.Errorf("hardmax T = %d: %w", t.T, err)
	}
	if f.a1, _, err = chebLSQ(xs, ys, ss, fisherDegree-1); err != nil {
		return nil, fmt.Errorf("hardmax T = %d: %w", t.T, err)
	}
	return f, nil
}

// sortedIndex returns the indices of xs in increasing order of xs.
func sortedIndex(xs []float64) []int {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(i, j int) int { return cmp.Compare(xs[i], xs[j]) })
	return idx
}

// relErr returns the nodes' relative error at s: linear in s between the two nodes around it
// (the nearest node's outside them).
func (f *FisherFit) relErr(s float64) float64 {
	n := len(f.s)
	j := sort.SearchFloat64s(f.s, s) // f.s[j-1] < s <= f.s[j]
	switch {
	case j == 0:
		return f.e[0]
	case j == n:
		return f.e[n-1]
	}
	u := (s - f.s[j-1]) / (f.s[j] - f.s[j-1])
	return (1-u)*f.e[j-1] + u*f.e[j]
}

// chebBasis writes T_j(2s - 1), j = 0..len(b)-1, into b.
func chebBasis(b []float64, s float64) {
	x := 2*s - 1
	for j := range b {
		switch j {
		case 0:
			b[j] = 1
		case 1:
			b[j] = x
		default:
			b[j] = 2*x*b[j-1] - b[j-2]
		}
	}
}

// chebLSQ fits sum_j a_j T_j(2x - 1), j <= deg, to (x_i, y_i) with standard errors s_i, and
// returns a and its covariance (A^T W A)^-1.
func chebLSQ(xs, ys, ss []float64, deg int) ([]float64, *mat.Dense, error) {
	n, p := len(xs), deg+1
	if n < p {
		return nil, nil, fmt.Errorf("%d nodes for %d coefficients", n, p)
	}
	A, y := mat.NewDense(n, p, nil), mat.NewVecDense(n, nil)
	row := make([]float64, p)
	for i := range xs {
		chebBasis(row, xs[i])
		for j := range row {
			A.Set(i, j, row[j]/ss[i])
		}
		y.SetVec(i, ys[i]/ss[i])
	}
	var qr mat.QR
	qr.Factorize(A)
	var a mat.VecDense
	if err := qr.SolveVecTo(&a, false, y); err != nil {
		return nil, nil, fmt.Errorf("Chebyshev fit: %w", err)
	}
	var ata, cov mat.Dense
	ata.Mul(A.T(), A)
	if err := cov.Inverse(&ata); err != nil {
		return nil, nil, fmt.Errorf("Chebyshev fit covariance: %w", err)
	}
	return a.RawVector().Data, &cov, nil
}

// Eval returns F(lambda) and its error: the propagated error of the nodes, floored at the nodes'
// relative error around s (relErr) times G(s), plus the truncation estimate |G_6(s) - G_5(s)|,
// both divided by sqrt(1 + lambda) (the section comment). NaN for lambda < 0.
func (f *FisherFit) Eval(lambda float64) (F, err float64) {
	if !(lambda >= 0) {
		return math.NaN(), math.NaN()
	}
	var b [fisherDegree + 1]float64
	r := 1.0
	s := 0.0
	if !math.IsInf(lambda, 1) {
		r = math.Sqrt(1 + lambda)
		s = 1 / r
	}
	chebBasis(b[:], s)
	var g, g1, v float64
	for i := range f.a {
		g += f.a[i] * b[i]
		if i < len(f.a1) {
			g1 += f.a1[i] * b[i]
		}
		for j := range f.a {
			v += b[i] * f.cov.At(i, j) * b[j]
		}
	}
	if math.IsInf(lambda, 1) {
		return 0, 0
	}
	stat := math.Max(math.Sqrt(math.Max(v, 0)), f.relErr(s)*math.Abs(g))
	return g / r, (stat + math.Abs(g-g1)) / r
}

// HardmaxTChannel is the hardmax channel at T > 2 as the state evolution sees it: FisherSum(q, V)
// = F(q/V)/V from the FisherTable that aim ships for T (hardmaxt_tables.go, fishergen), with
// the error of every value (FisherSumErr). Bound gives the channel whose F is moved by a
// multiple of its error, which is how the SE propagates the integration error to its points.
type HardmaxTChannel struct {
	k     *channel.HardmaxT // Output
	table *FisherTable
	fit   *FisherFit
	bound float64
}

// HardmaxTTabulated reports whether aim ships the table of T (and so the SE curves at T).
func HardmaxTTabulated(T int) bool { return hardmaxTTables[T] != nil }

// NewHardmaxTChannel returns the channel at T from the shipped table; an error names the T that
// have one.
func NewHardmaxTChannel(T int) (*HardmaxTChannel, error) {
	t := hardmaxTTables[T]
	if t == nil {
		var have []int
		for T := 2; T <= channel.HardmaxTMax; T++ {
			if hardmaxTTables[T] != nil {
				have = append(have, T)
			}
		}
		return nil, fmt.Errorf("hardmax: no state-evolution table for T = %d (aim ships T = %v)", T, have)
	}
	k, err := channel.NewHardmaxT(T, 0, 0)
	if err != nil {
		return nil, err
	}
	fit, err := t.Fit()
	if err != nil {
		return nil, err
	}
	return &HardmaxTChannel{k: k, table: t, fit: fit}, nil
}

// Name is "hardmax".
func (c *HardmaxTChannel) Name() string { return "hardmax" }

// Tokens is T.
func (c *HardmaxTChannel) Tokens() int { return c.table.T }

// Output writes the row-wise one-hot argmax of h (channel.HardmaxT.Output).
func (c *HardmaxTChannel) Output(y, h []float64) { c.k.Output(y, h) }

// Table is the channel's FisherTable.
func (c *HardmaxTChannel) Table() *FisherTable { return c.table }

// Bound returns the channel whose F is F + sign times its error.
func (c *HardmaxTChannel) Bound(sign float64) *HardmaxTChannel {
	b := *c
	b.bound = sign
	return &b
}

// FisherSum returns F(q/V)/V (plus the Bound's multiple of its error); an error for q < 0,
// V <= 0 or non-finite arguments.
func (c *HardmaxTChannel) FisherSum(q, V float64) (float64, error) {
	if !(q >= 0) || !(V > 0) || math.IsInf(q, 0) || math.IsInf(V, 0) {
		return math.NaN(), fmt.Errorf("hardmax T = %d: FisherSum(q = %g, V = %g): need q >= 0 and V > 0, finite", c.table.T, q, V)
	}
	f, e := c.fit.Eval(q / V)
	return (f + c.bound*e) / V, nil
}

// FisherSumErr returns the error of FisherSum(q, V) (FisherFit.Eval).
func (c *HardmaxTChannel) FisherSumErr(q, V float64) float64 {
	_, e := c.fit.Eval(q / V)
	return e / V
}

// BestRelErr returns the smallest relative error of F over lambda in [0, 1e8] (on a grid of
// 200 log-spaced values and 0): no point of an SE curve is computed more accurately than that.
func (c *HardmaxTChannel) BestRelErr() float64 {
	best := math.Inf(1)
	for i := -1; i < 200; i++ {
		l := 0.0
		if i >= 0 {
			l = math.Pow(10, -4+12*float64(i)/199)
		}
		f, e := c.fit.Eval(l)
		best = math.Min(best, e/f)
	}
	return best
}

// OutputEntropy returns psi_out(q, V) up to a constant: with lambda = q/V and the table's F
// (plus the Bound's multiple of its error),
//
//	psi_out(q, V) - psi_out(0, V) = ∫_0^lambda F(t) / (2 (1 + t)) dt = ∫_{s(lambda)}^1 F(t(s))/s ds,
//
// s = (1 + t)^{-1/2}. Hardmax's Z_out(y; omega, V) depends on omega/sqrt(V) only, so psi_out is
// a function E(lambda), and d psi_out/dq along V = Q0 - q = FisherSum/2 = F/(2V) gives
// E'(lambda) = F(lambda)/(2 (1 + lambda)). The dropped constant E(0) = sum_y P0(y) log P0(y)
// (the patterns' negative entropy at q = 0) depends on T only; it cancels between fixed points
// at one alpha and from both sides of the envelope identity. F/s = G(s) is the fit's polynomial
// in s (FisherFit), integrated by 32-point Gauss-Legendre on [s(lambda), 1] (exact for the
// polynomial; the error term is smooth): the accuracy is the table's, FisherSumErr.
func (c *HardmaxTChannel) OutputEntropy(q, V float64) (float64, error) {
	if !(q >= 0) || !(V > 0) || math.IsInf(q, 0) || math.IsInf(V, 0) {
		return math.NaN(), fmt.Errorf("hardmax T = %d: OutputEntropy(q = %g, V = %g): need q >= 0 and V > 0, finite", c.table.T, q, V)
	}
	lo := 1 / math.Sqrt(1+q/V)
	x, w := channel.GaussLegendre(32)
	sum := 0.0
	for i := range x {
		s := lo + (1-lo)*(x[i]+1)/2
		f, e := c.fit.Eval(1/(s*s) - 1)
		sum += w[i] * (f + c.bound*e) / s
	}
	return sum * (1 - lo) / 2, nil
}

// HardmaxTChannel implements Entropic.
var _ Entropic = (*HardmaxTChannel)(nil)
