package gd

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/internal/devtest"
)

// directStudent returns a direct student (Options.Direct) on data, as RunGroup sets it up.
func directStudent(t *testing.T, dev device.Device, data *aim.Data, decay float64) *student {
	t.Helper()
	D := data.P.D
	st, err := newStudent(device.Single(dev), []device.Trainer{dev.Capabilities().Trainer}, []*aim.Data{data}, D, 1)
	if err != nil {
		t.Fatal(err)
	}
	st.direct, st.decay = true, decay
	if st.eye, err = dev.Alloc(D * D); err != nil {
		t.Fatal(err)
	}
	if err := dev.Upload(st.eye, make([]float64, D*D)); err != nil {
		t.Fatal(err)
	}
	if err := dev.AddDiag(st.eye, 1, D, 1); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestDirectGradientFiniteDifference checks the direct student's gradient, (G_S + G_S^T)/2 +
// 2 lambda S, against central finite differences of L + lambda ||S||_F^2 along the symmetric
// directions E_ij + E_ji (whose derivative is 2 grad_ij off the diagonal, grad_ii on it), for
// softmax (T = 2, 3) and linear students, with and without weight decay.
func TestDirectGradientFiniteDifference(t *testing.T) {
	dev := cpu.New(0)
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		p     aim.Params
		decay float64
	}{{params(7, 2, 0.5, 0.5, 1, 1), 0}, {params(6, 3, 0.6, 1, 1.2, 2), 0.4},
		{linearParams(8, 0.5, 0.5, 0.25, 3), 0}, {linearParams(8, 0.4, 1, 0, 4), 1.5}} {
		data, err := aim.Generate(dev, c.p)
		if err != nil {
			t.Fatal(err)
		}
		st := directStudent(t, dev, data, c.decay)
		D := c.p.D
		s := make([]float64, D*D)
		for i := 0; i < D; i++ {
			for j := i; j < D; j++ {
				v := r.NormFloat64() / math.Sqrt(float64(D))
				s[i*D+j], s[j*D+i] = v, v
			}
		}
		objective := func(s []float64) float64 {
			if err := dev.Upload(st.w, s); err != nil {
				t.Fatal(err)
			}
			l, err := st.lossAndGrad()
			if err != nil {
				t.Fatal(err)
			}
			ss := 0.0
			for _, x := range s {
				ss += x * x
			}
			if math.Abs(st.penalty[0]-c.decay*ss) > 1e-12*math.Max(1, c.decay*ss) {
				t.Errorf("penalty %g, want lambda ||S||^2 = %g", st.penalty[0], c.decay*ss)
			}
			return l[0] + c.decay*ss
		}
		objective(s)
		grad := make([]float64, D*D)
		if err := dev.Download(grad, st.grad); err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for i := 0; i < D; i++ {
			for j := i; j < D; j++ {
				const h = 1e-5
				sp, sm := append([]float64(nil), s...), append([]float64(nil), s...)
				sp[i*D+j] += h
				sm[i*D+j] -= h
				want := grad[i*D+j]
				if i != j {
					sp[j*D+i] += h
					sm[j*D+i] -= h
					want = grad[i*D+j] + grad[j*D+i]
				}
				fd := (objective(sp) - objective(sm)) / (2 * h)
				worst = math.Max(worst, math.Abs(want-fd)/math.Max(math.Abs(fd), 1e-3))
				if math.Abs(grad[i*D+j]-grad[j*D+i]) > 1e-14*math.Max(1, math.Abs(grad[i*D+j])) {
					t.Errorf("gradient not symmetric at (%d, %d): %g, %g", i, j, grad[i*D+j], grad[j*D+i])
				}
			}
		}
		t.Logf("%v lambda %g: max relative gradient error %.2e", c.p.Channel, c.decay, worst)
		if worst > 1e-6 {
			t.Errorf("%v lambda %g: gradient off finite differences by %.3g relative", c.p.Channel, c.decay, worst)
		}
		dev.Free(st.eye)
		st.free()
		data.Free(dev)
	}
}

// TestDirectRidgeMinimiser: gradient descent on S directly with weight decay lambda converges
// to the ridge estimator argmin (1/D) sum_mu (h_mu(S) - y_mu)^2 + lambda ||S||_F^2, which for the
// linear channel is a linear least-squares problem in the D (D + 1)/2 free entries of S, solved
// independently by its normal equations (devtest.RidgeMinimiser). At D = 12, 4000 steps of plain gradient
// descent bring the error ||S - S*||_F^2 / D within 1e-9 of the exact minimiser's (measured
// 1e-12 and below); without weight decay (alpha < 1/2, more unknowns than samples) gradient
// descent from S = 0 finds the minimal Frobenius-norm interpolator, the normal equations' limit.
func TestDirectRidgeMinimiser(t *testing.T) {
	dev := cpu.New(0)
	for _, c := range []struct {
		p     aim.Params
		decay float64
	}{{linearParams(12, 0.8, 0.5, 0.25, 1), 0.05}, {linearParams(12, 0.3, 0.5, 0.25, 2), 0.2}, {linearParams(12, 0.3, 0.5, 0, 3), 0}} {
		data, err := aim.Generate(dev, c.p)
		if err != nil {
			t.Fatal(err)
		}
		D, N := c.p.D, c.p.N()
		x, y, sStar := make([]float64, N*D), make([]float64, N), make([]float64, D*D)
		for _, d := range []struct {
			dst []float64
			src device.Buffer
		}{{x, data.X}, {y, data.Y}, {sStar, data.S}} {
			if err := dev.Download(d.dst, d.src); err != nil {
				t.Fatal(err)
			}
		}
		s, err := devtest.RidgeMinimiser(x, y, N, D, c.decay)
		if err != nil {
			t.Fatal(err)
		}
		exact := 0.0
		for k := range s {
			exact += (s[k] - sStar[k]) * (s[k] - sStar[k])
		}
		exact /= float64(D)
		o := DefaultOptions()
		o.Direct, o.WeightDecay, o.Adam, o.LR, o.Steps = true, c.decay, false, 0.05, 4000
		res, err := Run(dev, data, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("alpha %g lambda %g: exact ridge error %.10f, direct GD %.10f (%.1e)", c.p.Alpha, c.decay, exact, res.Error, res.Error-exact)
		if math.Abs(res.Error-exact) > 1e-9 {
			t.Errorf("alpha %g lambda %g: direct GD error %.10f, exact minimiser %.10f", c.p.Alpha, c.decay, res.Error, exact)
		}
		data.Free(dev)
	}
}
