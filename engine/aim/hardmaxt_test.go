package aim

import (
	"math"
	"os"
	"testing"

	"github.com/aimtheory/aim/channel"
)

// TestHardmaxTFisherSumT2: at T = 2 the polytope channel's FisherSum, over the patterns at
// q = 0 and by Monte Carlo at q > 0, equals the closed-form H(q/V)/(3V) of Hardmax within 4
// reported standard errors.
func TestHardmaxTFisherSumT2(t *testing.T) {
	ex, _ := NewHardmax(2, false)
	h, err := NewHardmaxT(2)
	if err != nil {
		t.Fatal(err)
	}
	h.Samples = 4000
	z, err := h.FisherSumZero(0.7)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := ex.FisherSum(0, 0.7)
	if math.Abs(z.V-want) > 4*z.Err+1e-12 {
		t.Errorf("FisherSum(0, 0.7) over the patterns %.8g +- %.2g, closed form %.8g", z.V, z.Err, want)
	}
	t.Logf("FisherSum(0, 0.7): patterns %.8g +- %.2g, closed form %.8g", z.V, z.Err, want)
	for _, qv := range [][2]float64{{0.5, 1}, {1.2, 0.3}} {
		got, err := h.FisherSumEstimate(qv[0], qv[1])
		if err != nil {
			t.Fatal(err)
		}
		want, _ := ex.FisherSum(qv[0], qv[1])
		if math.Abs(got.V-want) > 4*got.Err {
			t.Errorf("FisherSum(%g, %g): Monte Carlo %.6g +- %.2g, closed form %.6g", qv[0], qv[1], got.V, got.Err, want)
		}
		t.Logf("FisherSum(%g, %g): Monte Carlo %.6g +- %.2g, closed form %.6g", qv[0], qv[1], got.V, got.Err, want)
	}
}

// TestHardmaxTFisherSumT3: at T = 3 the two estimates of FisherSum(0, 1), the sum over the 27
// output patterns and Monte Carlo over (omega, y), are independent methods and agree within 4
// combined standard errors; the sum gives the rho -> 0 weak-recovery threshold
// alpha-bar_c(T = 3) = 1/(2 FisherSum(0, 1)).
func TestHardmaxTFisherSumT3(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds of polytope integrals")
	}
	h, _ := NewHardmaxT(3)
	h.Tol, h.Samples = 1e-2, 3000
	z, err := h.FisherSumZero(1)
	if err != nil {
		t.Fatal(err)
	}
	mc, err := h.FisherSumEstimate(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(z.V-mc.V) > 4*math.Hypot(z.Err, mc.Err) {
		t.Errorf("FisherSum(0, 1) at T = 3: patterns %.6g +- %.2g, Monte Carlo %.6g +- %.2g", z.V, z.Err, mc.V, mc.Err)
	}
	t.Logf("T = 3: FisherSum(0, 1) patterns %.6g +- %.2g, Monte Carlo %.6g +- %.2g; alpha-bar_c = %.5g +- %.2g",
		z.V, z.Err, mc.V, mc.Err, 1/(2*z.V), z.Err/(2*z.V*z.V))
}

// TestPatternClasses: the classes of the T^T hardmax patterns under relabelling partition
// them (sizes summing to T^T, each dividing T!), and their numbers are those of functional
// graphs on T unlabelled points with the map read as b: 3, 7, 19, 47, 130 for T = 2..6 (OEIS
// A001372, mappings from a set of n points to itself up to isomorphism).
func TestPatternClasses(t *testing.T) {
	want := []int{3, 7, 19, 47, 130}
	fact := 1
	for T := 2; T <= 6; T++ {
		fact *= T
		reps, counts := PatternClasses(T)
		n, total := 1, 0
		for range T {
			n *= T
		}
		for i, c := range counts {
			total += c
			if fact%c != 0 {
				t.Errorf("T = %d: class %v has %d patterns, which does not divide %d", T, reps[i], c, fact)
			}
		}
		if total != n || len(reps) != want[T-2] {
			t.Errorf("T = %d: %d classes covering %d patterns; want %d covering %d", T, len(reps), total, want[T-2], n)
		}
	}
}

// TestHardmaxTFisherSumLattice: the lattice estimate over omega with the pattern classes
// matches the T = 2 closed form within 4 reported errors, and at T = 3 the Monte Carlo
// estimate over (omega, y), an independent method, within 4 combined errors.
func TestHardmaxTFisherSumLattice(t *testing.T) {
	ex, _ := NewHardmax(2, false)
	h2, _ := NewHardmaxT(2)
	h2.Tol = 1e-2
	for _, qv := range [][2]float64{{0.5, 1}, {1.2, 0.3}} {
		got, err := h2.FisherSumLattice(qv[0], qv[1], 128)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := ex.FisherSum(qv[0], qv[1])
		if math.Abs(got.V-want) > 4*got.Err {
			t.Errorf("T = 2, FisherSum(%g, %g): lattice %.6g +- %.2g, closed form %.6g", qv[0], qv[1], got.V, got.Err, want)
		}
		t.Logf("T = 2, FisherSum(%g, %g): lattice %.6g +- %.2g, closed form %.6g", qv[0], qv[1], got.V, got.Err, want)
	}
	if testing.Short() {
		t.Skip("T = 3: about 10 s")
	}
	h3, _ := NewHardmaxT(3)
	h3.Tol, h3.Samples = 1e-2, 3000
	lat, err := h3.FisherSumLattice(0.5, 1, 128)
	if err != nil {
		t.Fatal(err)
	}
	mc, err := h3.FisherSumEstimate(0.5, 1)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(lat.V-mc.V) > 4*math.Hypot(lat.Err, mc.Err) {
		t.Errorf("T = 3, FisherSum(0.5, 1): lattice %.6g +- %.2g, Monte Carlo %.6g +- %.2g", lat.V, lat.Err, mc.V, mc.Err)
	}
	t.Logf("T = 3, FisherSum(0.5, 1): lattice %.6g +- %.2g, Monte Carlo %.6g +- %.2g", lat.V, lat.Err, mc.V, mc.Err)
}

// TestFisherTableT2: the whole construction of the T > 2 tables (lattice nodes, the facet limit
// c1, the Chebyshev fit in s) run at T = 2 reproduces the closed form H(lambda)/3 of Hardmax at
// lambda from 0 to 1e6 within 3 reported errors, and the errors are below 2% relative (at 1024
// points per shift the nodes beyond lambda = 8 have 1% to 1.5%, and an error from 8 shifts
// scatters by about a quarter); c1 equals the closed form's sqrt(lambda) FisherSum(lambda, 1)
// at lambda = 1e12 to 1e-6.
func TestFisherTableT2(t *testing.T) {
	if testing.Short() {
		t.Skip("about 10 s of polytope integrals")
	}
	ex, _ := NewHardmax(2, false)
	h, _ := NewHardmaxT(2)
	tab, err := h.Tabulate(1024, nil)
	if err != nil {
		t.Fatal(err)
	}
	far, _ := ex.FisherSum(1e12, 1)
	if c := far * 1e6; math.Abs(tab.Limit.V/c-1) > 1e-6 {
		t.Errorf("c1 = %.10g, closed form %.10g", tab.Limit.V, c)
	}
	fit, err := tab.Fit()
	if err != nil {
		t.Fatal(err)
	}
	worst, rel := 0.0, 0.0
	for l := 0.0; l < 1e6; l = 2*l + 0.01 {
		f, e := fit.Eval(l)
		want, _ := ex.FisherSum(l, 1)
		if math.Abs(f-want) > 3*e || e > 2e-2*want {
			t.Errorf("lambda = %g: fit %.6g +- %.2g, closed form %.6g", l, f, e, want)
		}
		worst, rel = math.Max(worst, math.Abs(f-want)/e), math.Max(rel, e/want)
	}
	t.Logf("c1 = %.10g; the fit is within %.2f reported errors of the closed form; the largest error is %.2f%%", tab.Limit.V, worst, 100*rel)
}

// TestShippedTables holds F(0) of the FisherTables that aim ships (hardmaxt_tables.go) to the
// sum over the output patterns (FisherSumZero, another integrator), within 4 combined errors.
func TestShippedTables(t *testing.T) {
	for T := 3; T <= channel.HardmaxTMax; T++ {
		if !HardmaxTTabulated(T) {
			continue
		}
		if T > 3 && testing.Short() {
			t.Skipf("T = %d: a minute of polytope integrals", T)
		}
		ch, err := NewHardmaxTChannel(T)
		if err != nil {
			t.Fatal(err)
		}
		h, _ := NewHardmaxT(T)
		h.Tol, h.Points = 0, 4096
		z, err := h.FisherSumZero(1)
		if err != nil {
			t.Fatal(err)
		}
		f0, _ := ch.FisherSum(0, 1)
		if e := ch.FisherSumErr(0, 1); math.Abs(f0-z.V) > 4*math.Hypot(e, z.Err) {
			t.Errorf("T = %d: F(0) = %.6g +- %.2g from the table, %.6g +- %.2g over the patterns", T, f0, e, z.V, z.Err)
		}
		t.Logf("T = %d: F(0) %.6g (table) vs %.6g +- %.2g (patterns)", T, f0, z.V, z.Err)
	}
}

// shippedCheckSeed is the seed of the reference lattices of TestShippedTablesIndependent: the
// reference at lambda_j uses mixSeed(shippedCheckSeed, j), and no table node uses a seed
// derived from it (fisherNodeSeed derives from hardmaxTSeed), so reference and table are
// independent estimates.
const shippedCheckSeed = 0x7461626c652d6368 // "table-ch"

// TestShippedTablesIndependent holds the shipped tables' fit F(lambda) +- err (FisherFit.Eval)
// to an independent lattice estimate, FisherSumLattice's construction on a lattice of its own
// (seeded by shippedCheckSeed, not a part of any node's lattice):
//
//	|F(lambda) - F_ref(lambda)| <= 3 sqrt(err^2 + err_ref^2)
//
// at lambda between and on the nodes, where the table's error is largest relative to F. The fast
// version checks T = 3 at lambda = 2.5 and 10 with 512 points per shift and T = 4 at lambda = 3
// with 128 (a few seconds); with AIM_LONG_TESTS=1, T = 3 at eight lambda from 0.3 to 200 with
// 8192 points (0.1% to 0.3% relative) and T = 4 at four lambda with 2048 (minutes).
func TestShippedTablesIndependent(t *testing.T) {
	if testing.Short() {
		t.Skip("polytope integrals: skipped in -short mode")
	}
	type check struct {
		T      int
		lambda []float64
		points int
	}
	checks := []check{{3, []float64{2.5, 10}, 512}, {4, []float64{3}, 128}}
	if os.Getenv("AIM_LONG_TESTS") == "1" {
		checks = []check{
			{3, []float64{0.3, 3, 6, 9.75, 12, 24, 50, 200}, 8192},
			{4, []float64{1, 4, 10, 24}, 2048},
		}
	}
	for _, c := range checks {
		if !HardmaxTTabulated(c.T) {
			continue
		}
		ch, err := NewHardmaxTChannel(c.T)
		if err != nil {
			t.Fatal(err)
		}
		h, _ := NewHardmaxT(c.T)
		for j, l := range c.lambda {
			f, e := ch.fit.Eval(l)
			ref, err := h.FisherSumLatticeSeed(l, 1, c.points, mixSeed(shippedCheckSeed, j))
			if err != nil {
				t.Fatal(err)
			}
			z := (f - ref.V) / math.Hypot(e, ref.Err)
			if math.Abs(z) > 3 {
				t.Errorf("T = %d, lambda = %g: table %.6g +- %.2g, independent lattice (%d x 8) %.6g +- %.2g: %.1f combined errors",
					c.T, l, f, e, c.points, ref.V, ref.Err, z)
			}
			t.Logf("T = %d, lambda = %g: table %.6g +- %.2g (%.2f%%), independent lattice (%d x 8) %.6g +- %.2g (%.2f%%): %+.2f%%, %+.1f combined errors",
				c.T, l, f, e, 100*e/f, c.points, ref.V, ref.Err, 100*ref.Err/ref.V, 100*(f/ref.V-1), z)
		}
	}
}

// TestFisherFitErrorFloor: between two nodes the fit's error is at least the nodes' relative
// error interpolated in s times F, and at a node at least the node's own relative error, for
// every shipped table; the nodes of Tabulate have distinct seeds.
func TestFisherFitErrorFloor(t *testing.T) {
	seen := map[uint64]bool{hardmaxTSeed: true}
	for i := range fisherNodes() {
		s := fisherNodeSeed(i)
		if seen[s] {
			t.Errorf("node %d: seed %#x is used twice", i, s)
		}
		seen[s] = true
	}
	for T := 3; T <= channel.HardmaxTMax; T++ {
		if !HardmaxTTabulated(T) {
			continue
		}
		ch, err := NewHardmaxTChannel(T)
		if err != nil {
			t.Fatal(err)
		}
		tab := ch.Table()
		for i, l := range tab.Lambda {
			f, e := ch.fit.Eval(l)
			if rel := tab.F[i].Err / tab.F[i].V; e/f < rel*(1-1e-9) {
				t.Errorf("T = %d, node lambda = %g: the fit states %.3g relative, the node %.3g", T, l, e/f, rel)
			}
			if i+1 < len(tab.Lambda) {
				m := math.Sqrt(l * tab.Lambda[i+1]) // between the nodes
				f, e := ch.fit.Eval(m)
				lo := math.Min(tab.F[i].Err/tab.F[i].V, tab.F[i+1].Err/tab.F[i+1].V)
				if e/f < lo*(1-1e-9) {
					t.Errorf("T = %d, lambda = %g: the fit states %.3g relative, the nodes around it at least %.3g", T, m, e/f, lo)
				}
			}
		}
	}
}

// BenchmarkFisherSumLatticeT3 is one table node of hardmax at T = 3 (lambda = 1) with 256
// lattice points per shift (the shipped tables use 4096: 16 times this); it reports seconds per
// node.
func BenchmarkFisherSumLatticeT3(b *testing.B) {
	h, _ := NewHardmaxT(3)
	for b.Loop() {
		if _, err := h.FisherSumLattice(1, 1, 256); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/node")
}
