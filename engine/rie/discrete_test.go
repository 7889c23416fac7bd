package rie

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// powerLaw returns n eigenvalues w_k proportional to k^-gamma with (1/n) sum w_k^2 = 1.
func powerLaw(n int, gamma float64) []float64 {
	w := make([]float64, n)
	norm := 0.0
	for k := range w {
		w[k] = math.Pow(float64(k+1), -gamma)
		norm += w[k] * w[k]
	}
	for k := range w {
		w[k] *= math.Sqrt(float64(n) / norm)
	}
	return w
}

// TestDiscreteMoments: the density of nu ⊞ SC(Delta) has mass 1, the mean of nu and second
// moment mean(w^2) + Delta (free additivity of the variance), ∫ h mu = 0 and ∫ x h mu = 1/2,
// each to 1e-9, for power laws with many outliers (tens of separate bulks) and at a Delta that
// merges them; and x g(x) = 1 + m1/x + m2/x^2 + ... far away.
func TestDiscreteMoments(t *testing.T) {
	for _, c := range []struct {
		gamma, delta float64
	}{{0.75, 0.01}, {0.75, 1}, {0.3, 0.1}, {1.5, 0.05}} {
		w := powerLaw(300, c.gamma)
		d, err := NewDiscrete(w, c.delta)
		if err != nil {
			t.Fatal(err)
		}
		mean, sq := 0.0, 0.0
		for _, x := range w {
			mean += x / float64(len(w))
			sq += x * x / float64(len(w))
		}
		in := func(F Integrand) float64 {
			v, _ := d.Integrate(F, math.Inf(-1), 1e-11)
			return v
		}
		for _, k := range []struct {
			name      string
			got, want float64
		}{
			{"mass", in(func(_, mu, _ float64) float64 { return mu }), 1},
			{"mean", in(func(x, mu, _ float64) float64 { return x * mu }), mean},
			{"second moment", in(func(x, mu, _ float64) float64 { return x * x * mu }), sq + c.delta},
			{"h mu", in(func(_, mu, h float64) float64 { return h * mu }), 0},
			{"x h mu", in(func(x, mu, h float64) float64 { return x * h * mu }), 0.5},
			{"x g(x) at 1e6", 1e6 * real(d.Stieltjes(1e6)), 1 + mean/1e6 + (sq+c.delta)/1e12},
		} {
			if math.Abs(k.got-k.want) > 1e-9 {
				t.Errorf("gamma %g Delta %g (%d edges): %s = %.12g, want %.12g", c.gamma, c.delta, len(d.Edges()), k.name, k.got, k.want)
			}
		}
	}
}

// TestDiscreteAgainstMarchenkoPastur: nu the n = 2000 quantiles of MP(rho) (read from
// Spectrum's CDF at Delta = 1e-8) gives the density, the RIE map and the mmse of Spectrum
// (MP(rho) ⊞ SC(Delta), an independent closed-form implementation) within the discretisation's
// O(1/n): mmse to 2e-3 relative, the RIE map to 5e-3 at the quartiles of the spectrum.
func TestDiscreteAgainstMarchenkoPastur(t *testing.T) {
	const rho, n = 2.0, 2000
	mp, err := New(rho, 1e-8)
	if err != nil {
		t.Fatal(err)
	}
	e := mp.Edges()
	w := make([]float64, n)
	for k := range w {
		p := (float64(k) + 0.5) / n
		w[k] = bisect(func(x float64) float64 {
			above, _ := mp.Integrate(func(_, mu, _ float64) float64 { return mu }, x, 1e-10)
			return (1 - above) - p
		}, e[0], e[1])
	}
	for _, delta := range []float64{0.1, 1} {
		d, err := NewDiscrete(w, delta)
		if err != nil {
			t.Fatal(err)
		}
		sp, _ := New(rho, delta)
		if got, want := d.MMSE(), sp.MMSE(); math.Abs(got-want) > 2e-3*want {
			t.Errorf("Delta %g: mmse %.6f, MP %.6f", delta, got, want)
		}
		se := sp.Edges()
		for _, q := range []float64{0.25, 0.5, 0.75} {
			x := se[0] + q*(se[1]-se[0])
			if got, want := d.Denoise(x), sp.Denoise(x); math.Abs(got-want) > 5e-3 {
				t.Errorf("Delta %g x %g: RIE map %.6f, MP %.6f", delta, x, got, want)
			}
			if got, want := d.Density(x), sp.Density(x); math.Abs(got-want) > 5e-3 {
				t.Errorf("Delta %g x %g: density %.6f, MP %.6f", delta, x, got, want)
			}
		}
	}
}

// TestDiscreteMonteCarlo: S = O diag(w) O^T with Haar O (the eigenvectors of a GOE draw) and a
// power-law w (gamma = 0.75, D = 600), Y = S + sqrt(Delta) Z: the RIE estimate O_Y f(y) O_Y^T
// has error ||S-hat - S||_F^2 / D within 0.01 of MMSE, and the eigenvalues of Y lie within
// 0.05 of the support (outliers included).
func TestDiscreteMonteCarlo(t *testing.T) {
	if testing.Short() {
		t.Skip("two 600 x 600 eigendecompositions")
	}
	const D, delta = 600, 0.1
	rng := rand.New(rand.NewPCG(5, 6))
	goe := func(scale float64) *mat.SymDense {
		z := mat.NewSymDense(D, nil)
		for i := 0; i < D; i++ {
			for j := i; j < D; j++ {
				v := rng.NormFloat64() * math.Sqrt(scale/D)
				if i == j {
					v *= math.Sqrt2
				}
				z.SetSym(i, j, v)
			}
		}
		return z
	}
	var eig mat.EigenSym
	if !eig.Factorize(goe(1), true) {
		t.Fatal("EigenSym")
	}
	var o mat.Dense
	eig.VectorsTo(&o)
	w := powerLaw(D, 0.75)
	s := mat.NewSymDense(D, nil)
	for k := 0; k < D; k++ {
		s.SymRankOne(s, w[k], o.ColView(k))
	}
	y := mat.NewSymDense(D, nil)
	y.AddSym(s, goe(delta))
	if !eig.Factorize(y, true) {
		t.Fatal("EigenSym")
	}
	vals := eig.Values(nil)
	var u mat.Dense
	eig.VectorsTo(&u)
	d, err := NewDiscrete(w, delta)
	if err != nil {
		t.Fatal(err)
	}
	est := mat.NewSymDense(D, nil)
	for k, l := range vals {
		est.SymRankOne(est, d.Denoise(l), u.ColView(k))
	}
	diff := 0.0
	for i := 0; i < D; i++ {
		for j := 0; j < D; j++ {
			v := est.At(i, j) - s.At(i, j)
			diff += v * v
		}
	}
	diff /= D
	t.Logf("D = %d, Delta %g: RIE error %.5f, MMSE %.5f; %d support edges", D, delta, diff, d.MMSE(), len(d.Edges()))
	if math.Abs(diff-d.MMSE()) > 0.01 {
		t.Errorf("RIE error %.5f at D = %d, MMSE %.5f", diff, D, d.MMSE())
	}
	e := d.Edges()
	for _, l := range vals {
		dist := math.Inf(1)
		for p := 0; p < len(e); p += 2 {
			switch {
			case l < e[p]:
				dist = math.Min(dist, e[p]-l)
			case l > e[p+1]:
				dist = math.Min(dist, l-e[p+1])
			default:
				dist = 0
			}
		}
		if dist > 0.05 {
			t.Errorf("eigenvalue %.4f is %.4f from the support", l, dist)
		}
	}
}
