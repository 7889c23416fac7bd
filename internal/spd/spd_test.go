package spd

import (
	"math"
	"math/rand/v2"
	"testing"
)

// randomSPD returns B B^T + n I for a Gaussian B.
func randomSPD(rng *rand.Rand, n int) []float64 {
	b := make([]float64, n*n)
	for i := range b {
		b[i] = rng.NormFloat64()
	}
	a := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			for k := 0; k < n; k++ {
				a[i*n+j] += b[i*n+k] * b[j*n+k]
			}
		}
		a[i*n+i] += float64(n)
	}
	return a
}

// TestSolveAndInvert checks a x = b and a a^{-1} = I to 1e-12 on random SPD matrices of sizes
// 1 to 6, and the known inverse of a 2 x 2 matrix.
func TestSolveAndInvert(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 1; n <= 6; n++ {
		a := randomSPD(rng, n)
		b := make([]float64, n)
		for i := range b {
			b[i] = rng.NormFloat64()
		}
		x := make([]float64, n)
		if !Solve(x, a, b, n, nil) {
			t.Fatalf("n = %d: Solve refused an SPD matrix", n)
		}
		for i := 0; i < n; i++ {
			s := -b[i]
			for j := 0; j < n; j++ {
				s += a[i*n+j] * x[j]
			}
			if math.Abs(s) > 1e-12*float64(n) {
				t.Errorf("n = %d: residual %g in row %d", n, s, i)
			}
		}
		inv := make([]float64, n*n)
		if !Invert(inv, a, n) {
			t.Fatalf("n = %d: Invert refused an SPD matrix", n)
		}
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				s := 0.0
				for k := 0; k < n; k++ {
					s += a[i*n+k] * inv[k*n+j]
				}
				if i == j {
					s--
				}
				if math.Abs(s) > 1e-12 {
					t.Errorf("n = %d: (a a^-1 - I)[%d,%d] = %g", n, i, j, s)
				}
				if inv[i*n+j] != inv[j*n+i] {
					t.Errorf("n = %d: inverse not exactly symmetric at %d,%d", n, i, j)
				}
			}
		}
	}
	// [[2, 1], [1, 2]]^-1 = [[2, -1], [-1, 2]] / 3.
	inv := make([]float64, 4)
	if !Invert(inv, []float64{2, 1, 1, 2}, 2) {
		t.Fatal("Invert refused [[2,1],[1,2]]")
	}
	for i, want := range []float64{2.0 / 3, -1.0 / 3, -1.0 / 3, 2.0 / 3} {
		if math.Abs(inv[i]-want) > 1e-15 {
			t.Errorf("inverse[%d] = %g, want %g", i, inv[i], want)
		}
	}
}

// TestRejects checks that indefinite, singular and non-finite matrices are refused.
func TestRejects(t *testing.T) {
	for _, a := range [][]float64{{1, 2, 2, 1}, {1, 1, 1, 1}, {math.Inf(1), 0, 0, 1}, {math.NaN(), 0, 0, 1}, {-1, 0, 0, 1}} {
		if Invert(make([]float64, 4), a, 2) {
			t.Errorf("Invert accepted %v", a)
		}
		if Solve(make([]float64, 2), a, []float64{1, 1}, 2, nil) {
			t.Errorf("Solve accepted %v", a)
		}
	}
}
