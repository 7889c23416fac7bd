package channel

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestIndexAndHFromU(t *testing.T) {
	for T := 1; T <= 5; T++ {
		k := 0
		for a := 0; a < T; a++ {
			for b := a; b < T; b++ {
				if got := Index(T, a, b); got != k || Index(T, b, a) != k {
					t.Errorf("Index(%d, %d, %d) = %d, want %d", T, a, b, got, k)
				}
				k++
			}
		}
		if k != Fields(T) {
			t.Errorf("Fields(%d) = %d, want %d", T, Fields(T), k)
		}
	}
	u := []float64{1, 2, 3, 4, 5, 6} // T = 3: (00, 01, 02, 11, 12, 22)
	h := make([]float64, 9)
	HFromU(h, u, 3)
	want := []float64{math.Sqrt2, 2, 3, 2, 4 * math.Sqrt2, 5, 3, 5, 6 * math.Sqrt2}
	for i := range h {
		if math.Abs(h[i]-want[i]) > 1e-15*math.Abs(want[i]) {
			t.Fatalf("HFromU = %v, want %v", h, want)
		}
	}
}

// TestSoftmaxOutput compares the stable row softmax with the textbook formula, and checks it
// at magnitudes where the textbook formula overflows.
func TestSoftmaxOutput(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, T := range []int{2, 3, 6} {
		for _, beta := range []float64{0.5, 1, 3} {
			s, err := NewSoftmax(T, beta)
			if err != nil {
				t.Fatal(err)
			}
			h := make([]float64, T*T)
			for i := range h {
				h[i] = r.NormFloat64()
			}
			y := make([]float64, T*T)
			s.Output(y, h)
			for a := 0; a < T; a++ {
				var z float64
				for b := 0; b < T; b++ {
					z += math.Exp(beta * h[a*T+b])
				}
				for b := 0; b < T; b++ {
					if want := math.Exp(beta*h[a*T+b]) / z; math.Abs(y[a*T+b]-want) > 1e-15 {
						t.Errorf("T %d beta %g y[%d,%d] = %g, want %g", T, beta, a, b, y[a*T+b], want)
					}
				}
			}
		}
	}
	s, _ := NewSoftmax(2, 1)
	y := make([]float64, 4)
	s.Output(y, []float64{1000, 999, -1000, -1001})
	e := 1 / (1 + math.Exp(-1))
	if math.Abs(y[0]-e) > 1e-15 || math.Abs(y[1]-(1-e)) > 1e-15 || math.Abs(y[2]-e) > 1e-15 {
		t.Errorf("softmax at |h| = 1000: %v", y)
	}
}

// TestSoftmaxGOut checks g_out against its definition: the softmax determines u up to the
// shift direction n, so V g_out = P_perp (u - omega) for the u that produced y.
func TestSoftmaxGOut(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, T := range []int{2, 3, 5} {
		for _, beta := range []float64{0.7, 1, 2.5} {
			s, _ := NewSoftmax(T, beta)
			nf := Fields(T)
			u, omega, g := make([]float64, nf), make([]float64, nf), make([]float64, nf)
			h, y := make([]float64, T*T), make([]float64, T*T)
			n := make([]float64, nf)
			for a := 0; a < T; a++ {
				for b := a; b < T; b++ {
					n[Index(T, a, b)] = 1
					if a == b {
						n[Index(T, a, b)] = 1 / math.Sqrt2
					}
				}
			}
			for trial := 0; trial < 5; trial++ {
				for k := range u {
					u[k] = 2 * r.NormFloat64()
					omega[k] = r.NormFloat64()
				}
				HFromU(h, u, T)
				s.Output(y, h)
				V := 0.3 + r.Float64()
				s.GOut(g, y, omega, V)
				var dn, nn float64
				for k := range u {
					dn += (u[k] - omega[k]) * n[k]
					nn += n[k] * n[k]
				}
				for k := range u {
					want := (u[k] - omega[k] - dn/nn*n[k]) / V
					if math.Abs(g[k]-want) > 1e-10*(1+math.Abs(want)) {
						t.Fatalf("T %d beta %g: g[%d] = %.15g, want %.15g", T, beta, k, g[k], want)
					}
				}
				var gn float64
				for k := range g {
					gn += g[k] * n[k]
				}
				if math.Abs(gn) > 1e-10 {
					t.Errorf("T %d: g . n = %g, want 0", T, gn)
				}
			}
		}
	}
}
