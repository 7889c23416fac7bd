package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/aimtheory/aim/channel"
)

// TestSoftmaxLossGrad checks gamma, the symmetric part of the gradient in h, against central
// finite differences of the loss through the row softmax, computed naively from h, moving h_ab
// and h_ba together (their derivative is 2 gamma_ab off the diagonal, gamma_aa on it), and the
// loss against its definition.
func TestSoftmaxLossGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, tc := range []struct {
		n, t int
		beta float64
	}{{3, 2, 1}, {5, 3, 0.7}, {2, 5, 2}} {
		ch := channel.Spec{Kind: channel.KindSoftmax, T: tc.t, Beta: tc.beta}
		tt := tc.t * tc.t
		h, y := make([]float64, tc.n*tt), make([]float64, tc.n*tt)
		for i := range h {
			h[i] = r.NormFloat64()
			y[i] = r.Float64()
		}
		softmax := func(h []float64) []float64 {
			out := make([]float64, len(h))
			for row := 0; row < len(h)/tc.t; row++ {
				var z float64
				for c := 0; c < tc.t; c++ {
					z += math.Exp(tc.beta * h[row*tc.t+c])
				}
				for c := 0; c < tc.t; c++ {
					out[row*tc.t+c] = math.Exp(tc.beta*h[row*tc.t+c]) / z
				}
			}
			return out
		}
		const scale = 0.3
		loss := func(h []float64) float64 {
			var s float64
			for i, v := range softmax(h) {
				s += (v - y[i]) * (v - y[i])
			}
			return scale * s
		}
		for _, workers := range []int{1, 3} {
			dev := New(workers)
			yhat, yb, gamma := up(t, dev, softmax(h)), up(t, dev, y), up(t, dev, make([]float64, len(h)))
			got, err := dev.Capabilities().Trainer.SoftmaxLossGrad(ch, gamma, yhat, yb, tc.n, scale)
			if err != nil {
				t.Fatal(err)
			}
			if want := loss(h); math.Abs(got-want) > 1e-13*want {
				t.Errorf("n %d t %d: loss %.15g, want %.15g", tc.n, tc.t, got, want)
			}
			g := down(t, dev, gamma)
			for i := range h {
				mu, a, b := i/tt, i%tt/tc.t, i%tc.t
				j := mu*tt + b*tc.t + a // h_ba
				const eps = 1e-6
				hp, hm := append([]float64(nil), h...), append([]float64(nil), h...)
				hp[i] += eps
				hm[i] -= eps
				if j != i {
					hp[j] += eps
					hm[j] -= eps
				}
				fd := (loss(hp) - loss(hm)) / (2 * eps)
				if j != i {
					fd /= 2
				}
				if math.Abs(g[i]-fd) > 1e-8*(1+math.Abs(fd)) || g[i] != g[j] {
					t.Errorf("n %d t %d: gamma[%d] = %.10g (transpose %.10g), finite difference %.10g", tc.n, tc.t, i, g[i], g[j], fd)
				}
			}
		}
	}
	dev := New(1)
	b := up(t, dev, make([]float64, 4))
	if _, err := dev.Capabilities().Trainer.SoftmaxLossGrad(channel.Spec{Kind: channel.KindHardmax, T: 2}, b, b, b, 1, 1); err == nil {
		t.Error("SoftmaxLossGrad accepted the hardmax channel")
	}
}

// TestAdamStep compares three Adam steps with a naive loop.
func TestAdamStep(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const n = 9000 // several chunks
	w, g := make([]float64, n), make([]float64, n)
	for i := range w {
		w[i] = r.NormFloat64()
	}
	dev := New(3)
	wb, gb, mb, vb := up(t, dev, w), up(t, dev, make([]float64, n)), up(t, dev, make([]float64, n)), up(t, dev, make([]float64, n))
	m, v := make([]float64, n), make([]float64, n)
	const lr, b1, b2, eps = 0.1, 0.9, 0.999, 1e-8
	for step := 1; step <= 3; step++ {
		for i := range g {
			g[i] = r.NormFloat64()
		}
		if err := dev.Upload(gb, g); err != nil {
			t.Fatal(err)
		}
		if err := dev.Capabilities().Trainer.AdamStep(wb, gb, mb, vb, lr, b1, b2, eps, step); err != nil {
			t.Fatal(err)
		}
		for i := range w {
			m[i] = b1*m[i] + (1-b1)*g[i]
			v[i] = b2*v[i] + (1-b2)*g[i]*g[i]
			mh := m[i] / (1 - math.Pow(b1, float64(step)))
			vh := v[i] / (1 - math.Pow(b2, float64(step)))
			w[i] -= lr * mh / (math.Sqrt(vh) + eps)
		}
	}
	got := down(t, dev, wb)
	for i := range w {
		if math.Abs(got[i]-w[i]) > 1e-13*(1+math.Abs(w[i])) {
			t.Fatalf("w[%d] = %.15g, naive %.15g", i, got[i], w[i])
		}
	}
	if err := dev.Capabilities().Trainer.AdamStep(wb, gb, mb, vb, lr, b1, b2, eps, 0); err == nil {
		t.Error("AdamStep accepted step 0")
	}
}
