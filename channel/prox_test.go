package channel

import (
	"math"
	"math/rand/v2"
	"testing"
)

// proxCase draws a teacher field, its softmax label (noiseless, or with label noise) and an
// estimate omega near the teacher.
func proxCase(r *rand.Rand, T int, beta, noise, spread float64) (y, omega []float64) {
	M := Fields(T)
	u, h := make([]float64, M), make([]float64, T*T)
	omega = make([]float64, M)
	for i := range u {
		u[i] = 1.2 * r.NormFloat64()
		omega[i] = u[i] + spread*r.NormFloat64()
	}
	if T == 1 {
		return []float64{math.Sqrt2*u[0] + math.Sqrt(noise)*r.NormFloat64()}, omega
	}
	HFromU(h, u, T)
	y = make([]float64, T*T)
	sm, _ := NewSoftmax(T, beta)
	sm.Output(y, h)
	for i := range y {
		y[i] += math.Sqrt(noise) * r.NormFloat64()
	}
	return y, omega
}

// TestSquareLossGrad checks Grad against central differences of the loss.
func TestSquareLossGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, T := range []int{1, 2, 3, 4} {
		l, err := NewSquareLoss(T, 1.5)
		if err != nil {
			t.Fatal(err)
		}
		M := Fields(T)
		for trial := 0; trial < 20; trial++ {
			y, u := proxCase(r, T, 1.5, 0.01, 1)
			g, gd := make([]float64, M), make([]float64, M)
			l.Grad(g, u, y)
			for j := 0; j < M; j++ {
				e := 1e-6
				up := append([]float64(nil), u...)
				up[j] += e
				fp := l.Grad(gd, up, y)
				up[j] -= 2 * e
				fm := l.Grad(gd, up, y)
				if fd := (fp - fm) / (2 * e); math.Abs(fd-g[j]) > 1e-7*(1+math.Abs(g[j])) {
					t.Fatalf("T = %d: dl/du_%d = %.12g, differences %.12g", T, j, g[j], fd)
				}
			}
		}
	}
}

// TestSquareLossProx checks the proximal map: the objective's gradient vanishes at P, no point
// of a dense multistart search is lower, the Jacobian's trace matches central differences of
// P in omega, and the linear channel's map is the closed form (omega/V + 2 sqrt(2) y)/(1/V + 4).
func TestSquareLossProx(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		T           int
		beta, noise float64
		V           float64
	}{
		{1, 1, 0.1, 0.7}, {2, 1, 0, 0.3}, {2, 1, 0, 3}, {2, 2, 0.001, 1}, {3, 1, 0, 0.5}, {3, 1, 0.01, 2},
		{2, 3, 0, 2.5}, {3, 2, 0, 1}, // saturated softmaxes
	} {
		l, err := NewSquareLoss(tc.T, tc.beta)
		if err != nil {
			t.Fatal(err)
		}
		M := Fields(tc.T)
		p, q, g := make([]float64, M), make([]float64, M), make([]float64, M)
		for trial := 0; trial < 30; trial++ {
			y, omega := proxCase(r, tc.T, tc.beta, tc.noise, 1.5)
			obj, trJ, err := l.Prox(p, y, omega, tc.V)
			if err != nil {
				t.Fatalf("%+v: %v", tc, err)
			}
			l.objective(g, p, y, omega, tc.V)
			for i := range g {
				if math.Abs(g[i]) > 1e-9 {
					t.Fatalf("%+v: gradient %g at P", tc, g[i])
				}
			}
			if tc.T == 1 {
				want := (omega[0]/tc.V + 2*math.Sqrt2*y[0]) / (1/tc.V + 4)
				if math.Abs(p[0]-want) > 1e-13 || math.Abs(trJ-1/(1+4*tc.V)) > 1e-13 {
					t.Fatalf("linear prox %g, tr J %g; want %g, %g", p[0], trJ, want, 1/(1+4*tc.V))
				}
			}
			// Multistart: random starts around omega and P must not find a lower minimum.
			lc, _ := NewSquareLoss(tc.T, tc.beta)
			for s := 0; s < 20; s++ {
				for i := range lc.u {
					lc.u[i] = omega[i] + 3*math.Sqrt(tc.V)*r.NormFloat64()
				}
				if f, ok := lc.newton(y, omega, tc.V); ok && f < obj-1e-10 {
					t.Fatalf("%+v: a start finds objective %.12g below Prox's %.12g", tc, f, obj)
				}
			}
			// tr dP/domega by central differences.
			var fd float64
			for j := 0; j < M; j++ {
				e := 1e-5
				op := append([]float64(nil), omega...)
				op[j] += e
				if _, _, err := l.Prox(q, y, op, tc.V); err != nil {
					t.Fatalf("%+v: y %v omega %v: %v", tc, y, op, err)
				}
				qp := q[j]
				op[j] -= 2 * e
				if _, _, err := l.Prox(q, y, op, tc.V); err != nil {
					t.Fatalf("%+v: y %v omega %v: %v", tc, y, op, err)
				}
				fd += (qp - q[j]) / (2 * e)
			}
			if math.Abs(fd-trJ) > 1e-6*(1+trJ) {
				t.Fatalf("%+v: tr dP/domega = %.10g, differences %.10g", tc, trJ, fd)
			}
		}
	}
}

// TestSquareLossProxSaturated holds two samples of GAMP for ERM and its state evolution at
// beta = 2 whose softmax saturates (outputs down to 3e-7). In the first, near the minimum the
// objective's decrease falls below the rounding of its residuals and Newton's steps are judged
// by the gradient; in the second, far from it, judging them so would accept a step that raises
// the objective, and the iteration would cycle. Prox converges in both, to a vanishing gradient.
func TestSquareLossProxSaturated(t *testing.T) {
	l, err := NewSquareLoss(2, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		y, omega []float64
		V        float64
	}{
		{[]float64{0.9999996655639306, 3.344360692820502e-07, 6.086799245231901e-07, 0.9999993913200754},
			[]float64{1.6736764954592285, -4.784327744257875, 1.4822362231043504}, 2.9898357196815315},
		{[]float64{7.090552777810917e-05, 0.999929094472222, 0.9987060036842442, 0.0012939963157557535},
			[]float64{0.36894534320676564, 0.2215053154435126, -0.9274794587915667}, 2.3242061430392815},
	} {
		p, g := make([]float64, 3), make([]float64, 3)
		if _, _, err := l.Prox(p, c.y, c.omega, c.V); err != nil {
			t.Fatal(err)
		}
		l.objective(g, p, c.y, c.omega, c.V)
		if m := maxAbs(g); m > 1e-10 {
			t.Errorf("omega %v: gradient %g at P", c.omega, m)
		}
	}
}
