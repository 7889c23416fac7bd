package channel

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestInvLogNormCDF inverts LogNormCDF to 1e-13 relative from the far lower tail to near 1.
func TestInvLogNormCDF(t *testing.T) {
	for _, x := range []float64{-1e3, -200, -40, -38.4, -30, -10, -3, -1, -1e-3, 0, 0.5, 2, 5, 7.5} {
		lp := LogNormCDF(x)
		got := InvLogNormCDF(lp)
		if d := math.Abs(got - x); d > 1e-13*math.Max(1, math.Abs(x)) && !(x > 7 && d < 1e-6) {
			t.Errorf("InvLogNormCDF(LogNormCDF(%g) = %g) = %.17g", x, lp, got)
		}
	}
}

// TestPolytopeExact: the estimates against closed forms: one constraint (Z = Phi(-c / |a|),
// m = a phi(c/|a|) / (|a| Phi(-c/|a|)) along a), exact with no lattice dimension, far into
// the tail; two constraints, Phi2 with correlation a1.a2/(|a1||a2|), within 4 reported errors.
func TestPolytopeExact(t *testing.T) {
	rule, err := NewLattice(1, 1, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []float64{-3, 0, 1.5, 40, 400} {
		p, _ := NewPolytope([]float64{2}, 1, 1)
		m := make([]float64, 1)
		est := p.Moments(m, []float64{2 * c}, rule, 0)
		wantZ := LogNormCDF(-c)
		wantM := math.Exp(LogNormPDF(c) - wantZ)
		if math.Abs(est.LogZ-wantZ) > 1e-12*math.Max(1, math.Abs(wantZ)) || math.Abs(m[0]-wantM) > 1e-12*wantM {
			t.Errorf("c = %g: log Z %.15g (want %.15g), m %.15g (want %.15g)", c, est.LogZ, wantZ, m[0], wantM)
		}
	}
	rule, err = NewLattice(1, 512, 8, 7)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		a [4]float64
		c [2]float64
	}{
		{[4]float64{math.Sqrt2, -1, -1, math.Sqrt2}, [2]float64{0.3, -0.2}},
		{[4]float64{1, 0, 0.6, 0.8}, [2]float64{-1, 2}},
		{[4]float64{1, 0.2, -0.5, 1}, [2]float64{3, 4}},
	} {
		p, _ := NewPolytope(tc.a[:], 2, 2)
		m := make([]float64, 2)
		est := p.Moments(m, tc.c[:], rule, 0)
		n1, n2 := math.Hypot(tc.a[0], tc.a[1]), math.Hypot(tc.a[2], tc.a[3])
		r := (tc.a[0]*tc.a[2] + tc.a[1]*tc.a[3]) / (n1 * n2)
		want := math.Log(BivariateNormalCDF(-tc.c[0]/n1, -tc.c[1]/n2, r))
		if math.Abs(est.LogZ-want) > 4*est.ErrLogZ+1e-14 {
			t.Errorf("%v: log Z %.12g +- %.2g, Phi2 gives %.12g", tc, est.LogZ, est.ErrLogZ, want)
		}
		t.Logf("%v: log Z %.12g +- %.2g (Phi2 %.12g), m %v +- %.2g", tc, est.LogZ, est.ErrLogZ, want, m, est.ErrM)
	}
}

// TestPolytopeMonteCarlo: random polytopes of 6 and 10 variables (K = 6, 12) against plain Monte
// Carlo with 2e6 draws: Z and every coordinate of m within 4 combined standard errors.
func TestPolytopeMonteCarlo(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, sz := range []struct{ K, M int }{{6, 6}, {12, 10}} {
		K, M := sz.K, sz.M
		A := make([]float64, K*M)
		for i := range A {
			A[i] = r.NormFloat64()
		}
		c := make([]float64, K)
		for k := range c {
			c[k] = -0.3 - 0.5*r.Float64()
		}
		p, err := NewPolytope(A, K, M)
		if err != nil {
			t.Fatal(err)
		}
		rule, _ := NewLattice(M-1, 4096, 8, 3)
		m := make([]float64, M)
		est := p.Moments(m, c, rule, 0)
		const draws = 2000000
		hits := 0
		sum := make([]float64, M)
		sum2 := make([]float64, M)
		xi := make([]float64, M)
		for n := 0; n < draws; n++ {
			for j := range xi {
				xi[j] = r.NormFloat64()
			}
			ok := true
			for k := 0; k < K && ok; k++ {
				var s float64
				for j := 0; j < M; j++ {
					s += A[k*M+j] * xi[j]
				}
				ok = s >= c[k]
			}
			if ok {
				hits++
				for j := range xi {
					sum[j] += xi[j]
					sum2[j] += xi[j] * xi[j]
				}
			}
		}
		z := float64(hits) / draws
		seZ := math.Sqrt(z * (1 - z) / draws)
		Z := math.Exp(est.LogZ)
		if math.Abs(Z-z) > 4*math.Hypot(seZ, Z*est.ErrLogZ) {
			t.Errorf("K = %d, M = %d: Z %.6g +- %.2g, Monte Carlo %.6g +- %.2g", K, M, Z, Z*est.ErrLogZ, z, seZ)
		}
		for j := range m {
			mean := sum[j] / float64(hits)
			se := math.Sqrt((sum2[j]/float64(hits) - mean*mean) / float64(hits))
			if math.Abs(m[j]-mean) > 4*math.Hypot(se, est.ErrM) {
				t.Errorf("K = %d, M = %d: m_%d %.5f +- %.2g, Monte Carlo %.5f +- %.2g", K, M, j, m[j], est.ErrM, mean, se)
			}
		}
		t.Logf("K = %d, M = %d: Z %.6g (rel err %.2g), Monte Carlo %.6g +- %.2g; m err %.2g", K, M, Z, est.ErrLogZ, z, seZ, est.ErrM)
	}
}
