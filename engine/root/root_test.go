package root

import (
	"errors"
	"math"
	"testing"
)

// TestFind checks roots against closed forms, to the stated relative tolerance, and counts
// that Illinois beats bisection's evaluation count on smooth functions.
func TestFind(t *testing.T) {
	for _, tc := range []struct {
		name   string
		f      func(float64) float64
		lo, hi float64
		want   float64
	}{
		{"cubic", func(x float64) float64 { return x*x*x - 2 }, 0, 3, math.Cbrt(2)},
		{"cos", func(x float64) float64 { return math.Cos(x) - x }, 0, 1, 0.7390851332151607},
		{"1/x - c (alpha_PR-like)", func(x float64) float64 { return 0.1875/x - 1 }, 1e-3, 1, 0.1875},
		{"exp, flat end", func(x float64) float64 { return math.Exp(x) - 1e4 }, 0, 20, math.Log(1e4)},
	} {
		n := 0
		f := func(x float64) (float64, error) { n++; return tc.f(x), nil }
		got, err := Find(f, tc.lo, tc.hi, tc.f(tc.lo), tc.f(tc.hi), 1e-12, 200)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if math.Abs(got-tc.want) > 2e-12*tc.want {
			t.Errorf("%s: root %.17g, want %.17g", tc.name, got, tc.want)
		}
		bisect := int(math.Ceil(math.Log2((tc.hi - tc.lo) / (1e-12 * tc.want))))
		if n > bisect {
			t.Errorf("%s: %d evaluations, more than bisection's %d", tc.name, n, bisect)
		}
	}
}

func TestFindErrors(t *testing.T) {
	f := func(x float64) (float64, error) { return x*x + 1, nil }
	if _, err := Find(f, -1, 1, 2, 2, 1e-9, 50); !errors.Is(err, ErrNotBracketed) {
		t.Errorf("same signs: %v, want ErrNotBracketed", err)
	}
	boom := errors.New("boom")
	g := func(x float64) (float64, error) { return 0, boom }
	if _, err := Find(g, -1, 1, -1, 1, 1e-9, 50); !errors.Is(err, boom) {
		t.Errorf("f's error: %v", err)
	}
	if x, err := Find(f, 0, 1, 0, 5, 1e-9, 50); err != nil || x != 0 {
		t.Errorf("zero at lo: %v, %v", x, err)
	}
}

func TestExpand(t *testing.T) {
	f := func(x float64) (float64, error) { return x - 37, nil }
	a, b, fa, fb, err := Expand(f, 0, -37, 1e-3, 2, 1e6)
	if err != nil || !(a < 37 && 37 <= b) || fa >= 0 || fb < 0 || b != a*2 && a != 0 {
		t.Errorf("Expand: [%g, %g] (f %g, %g), %v", a, b, fa, fb, err)
	}
	if _, _, _, _, err := Expand(f, 0, -37, 1e-3, 2, 10); !errors.Is(err, ErrNotBracketed) {
		t.Errorf("limit: %v, want ErrNotBracketed", err)
	}
}
