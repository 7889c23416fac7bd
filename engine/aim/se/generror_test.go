package se

import (
	"math"
	"runtime"
	"testing"

	"gonum.org/v1/gonum/integrate/quad"
)

// TestGenErrorHardmaxClosedForm checks the Monte Carlo against the hardmax T = 2 closed form:
// each row is one-hot with P(y_aa = 1 | omega) = p = Phi(sqrt(q/V) z), so
// e_gen = 4 E[p (1 - p)] = 1 - (2/pi) asin(q/(q + V)).
func TestGenErrorHardmaxClosedForm(t *testing.T) {
	ch := hardmax(t, false)
	for _, qv := range [][2]float64{{0, 1}, {0.5, 1}, {1.2, 0.3}, {1.45, 0.05}} {
		q, V := qv[0], qv[1]
		got, se, err := GenError(ch, q, V, GenErrorOptions{Samples: 40000, Inner: 8, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		want := 1 - 2/math.Pi*math.Asin(q/(q+V))
		if math.Abs(got-want) > 4*se+1e-12 {
			t.Errorf("q %g V %g: e_gen = %.5f ± %.5f, closed form %.5f", q, V, got, se, want)
		}
	}
}

// TestGenErrorSoftmaxQuadrature checks the Monte Carlo for softmax T = 2 against deterministic
// nested Gauss-Hermite quadrature: row a is (s, 1 - s) with s = sigmoid(beta d_a), d_a given
// omega ~ N(m, 3V), m ~ N(0, 3q), so e_gen = 2 rows x 2 entries x E_m Var(s | m).
func TestGenErrorSoftmaxQuadrature(t *testing.T) {
	const n = 80
	x := make([]float64, n)
	w := make([]float64, n)
	quad.Hermite{}.FixedLocations(x, w, math.Inf(-1), math.Inf(1))
	for _, c := range []struct{ beta, q, V float64 }{{1, 0.5, 1}, {2, 1, 0.5}, {0.5, 0.2, 1.3}} {
		var want float64
		for i := range x {
			m := math.Sqrt(2*3*c.q) * x[i]
			var s1, s2 float64
			for j := range x {
				s := 1 / (1 + math.Exp(-c.beta*(m+math.Sqrt(2*3*c.V)*x[j])))
				s1 += w[j] * s / math.SqrtPi
				s2 += w[j] * s * s / math.SqrtPi
			}
			want += w[i] / math.SqrtPi * 4 * (s2 - s1*s1)
		}
		ch, err := newSoftmaxBeta(c.beta)
		if err != nil {
			t.Fatal(err)
		}
		got, se, err := GenError(ch, c.q, c.V, GenErrorOptions{Samples: 40000, Inner: 8, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-want) > 4*se {
			t.Errorf("beta %g q %g V %g: e_gen = %.5f ± %.5f, quadrature %.5f", c.beta, c.q, c.V, got, se, want)
		}
	}
}

// TestGenErrorDeterministic checks that the estimate depends on the seed only, not on the
// number of goroutines.
func TestGenErrorDeterministic(t *testing.T) {
	ch := softmax(t, 3)
	o := GenErrorOptions{Samples: 3000, Inner: 4, Seed: 11}
	a, _, _ := GenError(ch, 0.4, 0.8, o)
	prev := runtime.GOMAXPROCS(1)
	b, _, _ := GenError(ch, 0.4, 0.8, o)
	runtime.GOMAXPROCS(prev)
	if a != b {
		t.Errorf("GenError differs with GOMAXPROCS: %.17g vs %.17g", a, b)
	}
	for _, w := range []int{1, 3, 7} {
		ow := o
		ow.Workers = w
		if c, _, _ := GenError(ch, 0.4, 0.8, ow); c != a {
			t.Errorf("GenError with %d workers: %.17g, want %.17g", w, c, a)
		}
	}
	o.Seed = 12
	c, _, _ := GenError(ch, 0.4, 0.8, o)
	if c == a {
		t.Errorf("GenError ignores the seed")
	}
	if z, se, _ := GenError(ch, 1.5, 0, o); z != 0 || se != 0 {
		t.Errorf("GenError at V = 0 = %g ± %g, want exactly 0", z, se)
	}
	if _, _, err := GenError(ch, -1, 1, o); err == nil {
		t.Errorf("GenError accepted q < 0")
	}
}
