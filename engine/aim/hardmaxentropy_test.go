package aim

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/aimtheory/aim/channel"
)

// E(lambda) against its closed form at 0, the I-MMSE-like identity E'(lambda) =
// H(lambda)/(6 (1 + lambda)) (central differences, across the switch of rule at hGHMax), and the
// limit 0 at lambda -> inf.
func TestHardmaxOutputEntropyDerivative(t *testing.T) {
	h := mustHardmax(t, false)
	e := eQuadRule()
	if d := math.Abs(e.eval(1e-10) - eZero()); d > 1e-9 {
		t.Errorf("E(1e-10) - E(0) = %.2e", d)
	}
	for _, lam := range []float64{0.01, 0.1, 0.3, 0.5, 1, 3, 20, 300, 1e4} {
		dl := 1e-4 * lam
		fd := (e.eval(lam+dl) - e.eval(lam-dl)) / (2 * dl)
		want := h.FisherH(lam) / (6 * (1 + lam))
		if rel := math.Abs(fd/want - 1); rel > 1e-6 {
			t.Errorf("lambda=%g: dE/dlambda = %.12g, H/(6(1+lambda)) = %.12g (rel %.1e)", lam, fd, want, rel)
		}
	}
	// The two rules agree where they meet.
	gh := gaussHermiteEven(e.ghx, e.ghw, hGHMax, eIntegrand)
	gr := gridGauss(e.bx, e.band, e.g, hGHMax, true)
	if d := math.Abs(gh - gr); d > 1e-12 {
		t.Errorf("at lambda = %g Gauss-Hermite %.15g, grid %.15g (diff %.1e)", hGHMax, gh, gr, d)
	}
	// E is increasing to 0 (the output becomes certain); at large lambda, by the identity,
	// E(lambda) ~ -(c/3) lambda^-1/2 with H ~ c lambda^-1/2.
	lam := 1e6
	c := h.FisherH(lam) * math.Sqrt(lam)
	if got, want := e.eval(lam), -c/3/math.Sqrt(lam); math.Abs(got/want-1) > 1e-2 {
		t.Errorf("E(1e6) = %.6g, asymptote -(c/3)/sqrt(lambda) = %.6g", got, want)
	}
	t.Logf("E(0) = %.12f, E(1) = %.12f, E(10) = %.12f", eZero(), e.eval(1), e.eval(10))
}

// psi_out(q, V) against an independent Monte Carlo over (omega, xi): y = hardmax(h(u)) with
// the channel's own Output, log Z_out = log Phi2(kappa1, kappa2; rho12) of docs/theory/aim.md 2.3.
func TestHardmaxOutputEntropyMonteCarlo(t *testing.T) {
	h := mustHardmax(t, false)
	rng := rand.New(rand.NewPCG(17, 1))
	for _, c := range []struct{ q, V float64 }{{0.4, 1.1}, {1.2, 0.3}} {
		const n = 200000
		r := math.Sqrt(3 * c.V)
		sum, sum2 := 0.0, 0.0
		y := make([]float64, 4)
		for i := 0; i < n; i++ {
			w11, w12, w22 := math.Sqrt(c.q)*rng.NormFloat64(), math.Sqrt(c.q)*rng.NormFloat64(), math.Sqrt(c.q)*rng.NormFloat64()
			u11 := w11 + math.Sqrt(c.V)*rng.NormFloat64()
			u12 := w12 + math.Sqrt(c.V)*rng.NormFloat64()
			u22 := w22 + math.Sqrt(c.V)*rng.NormFloat64()
			h.Output(y, []float64{math.Sqrt2 * u11, u12, u12, math.Sqrt2 * u22})
			s1, s2 := 1.0, 1.0
			if y[0] != 1 {
				s1 = -1
			}
			if y[3] != 1 {
				s2 = -1
			}
			k1 := s1 * (math.Sqrt2*w11 - w12) / r
			k2 := s2 * (math.Sqrt2*w22 - w12) / r
			lz := math.Log(channel.BivariateNormalCDF(k1, k2, s1*s2/3))
			sum += lz
			sum2 += lz * lz
		}
		mean := sum / n
		se := math.Sqrt((sum2/n - mean*mean) / n)
		got, err := h.OutputEntropy(c.q, c.V)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("q=%g V=%g: quadrature %.6f, Monte Carlo %.6f +- %.6f", c.q, c.V, got, mean, se)
		if math.Abs(got-mean) > 4*se {
			t.Errorf("q=%g V=%g: OutputEntropy %.6f, Monte Carlo %.6f +- %.6f", c.q, c.V, got, mean, se)
		}
	}
}

func TestOutputEntropyRefusals(t *testing.T) {
	if _, err := mustHardmax(t, true).OutputEntropy(0.5, 0.5); !errors.Is(err, ErrNoEntropy) {
		t.Errorf("paper-compat hardmax: err = %v, want ErrNoEntropy", err)
	}
	h := mustHardmax(t, false)
	for _, c := range [][2]float64{{-1, 1}, {1, 0}, {math.NaN(), 1}, {1, math.Inf(1)}} {
		if _, err := h.OutputEntropy(c[0], c[1]); err == nil {
			t.Errorf("hardmax OutputEntropy(%g, %g): no error", c[0], c[1])
		}
	}
	s, _ := NewSoftmax(2, 1)
	if _, err := s.OutputEntropy(0.5, 0); err == nil {
		t.Error("softmax OutputEntropy(V = 0): no error")
	}
}

// Softmax: psi_out = -(K/4)(log(2 pi V) + 1), and its q-derivative along V = Q0 - q is
// FisherSum/2 (the stationarity that gives q-hat = K alpha/V).
func TestSoftmaxOutputEntropy(t *testing.T) {
	for _, T := range []int{2, 3, 5} {
		s, err := NewSoftmax(T, 1)
		if err != nil {
			t.Fatal(err)
		}
		K := float64(T*T + T - 2)
		Q0 := 1.5
		for _, q := range []float64{0.1, 0.9, 1.4} {
			v, _ := s.OutputEntropy(q, Q0-q)
			if want := -K / 4 * (math.Log(2*math.Pi*(Q0-q)) + 1); math.Abs(v-want) > 1e-14*math.Abs(want) {
				t.Errorf("T=%d q=%g: %g, want %g", T, q, v, want)
			}
			dq := 1e-5
			a, _ := s.OutputEntropy(q-dq, Q0-q+dq)
			b, _ := s.OutputEntropy(q+dq, Q0-q-dq)
			f, _ := s.FisherSum(q, Q0-q)
			if fd := (b - a) / (2 * dq); math.Abs(fd/(f/2)-1) > 1e-8 {
				t.Errorf("T=%d q=%g: dpsi_out/dq = %.10g, FisherSum/2 = %.10g", T, q, fd, f/2)
			}
		}
	}
}

// Hardmax T = 3, 4 (the shipped tables): psi_out(q, V) - psi_out(0, V) = ∫_0^lambda F/(2(1+t)),
// whose q-derivative along V = Q0 - q is FisherSum/2 (central differences), and a naive
// trapezoid in t on a fine grid gives the same integral.
func TestHardmaxTOutputEntropy(t *testing.T) {
	for _, T := range []int{3, 4} {
		ch, err := NewHardmaxTChannel(T)
		if err != nil {
			t.Fatal(err)
		}
		Q0 := 1.5
		for _, q := range []float64{0.2, 0.8, 1.3, 1.49} {
			dq := 1e-5 * math.Min(q, Q0-q)
			a, _ := ch.OutputEntropy(q-dq, Q0-q+dq)
			b, _ := ch.OutputEntropy(q+dq, Q0-q-dq)
			f, _ := ch.FisherSum(q, Q0-q)
			if fd := (b - a) / (2 * dq); math.Abs(fd/(f/2)-1) > 1e-7 {
				t.Errorf("T=%d q=%g: dpsi_out/dq = %.10g, FisherSum/2 = %.10g", T, q, fd, f/2)
			}
			lam := q / (Q0 - q)
			const n = 200000
			naive := 0.0
			for i := 0; i <= n; i++ {
				tt := lam * float64(i) / n
				F, _ := ch.FisherSum(tt, 1)
				wt := 1.0
				if i == 0 || i == n {
					wt = 0.5
				}
				naive += wt * F / (2 * (1 + tt))
			}
			naive *= lam / n
			got, _ := ch.OutputEntropy(q, Q0-q)
			if math.Abs(got-naive) > 1e-8*(1+lam) {
				t.Errorf("T=%d lambda=%g: %.12g, trapezoid %.12g", T, lam, got, naive)
			}
		}
		if v, _ := ch.OutputEntropy(0, 1); v != 0 {
			t.Errorf("T=%d: psi_out(0) - psi_out(0) = %g", T, v)
		}
	}
}
