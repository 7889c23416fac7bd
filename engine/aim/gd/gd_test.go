package gd

import (
	"cmp"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/internal/devtest"
)

func params(D, T int, alpha, rho, beta float64, seed uint64) aim.Params {
	return aim.Params{D: D, Alpha: alpha, Rho: rho, Channel: channel.Spec{Kind: channel.KindSoftmax, T: T, Beta: beta}, Seed: seed}
}

// linearParams is the quadratic network's problem: the linear channel at T = 1 with label
// noise delta.
func linearParams(D int, alpha, rho, delta float64, seed uint64) aim.Params {
	return aim.Params{D: D, Alpha: alpha, Rho: rho, Channel: channel.Spec{Kind: channel.KindLinear, T: 1, Noise: delta}, Seed: seed}
}

// TestGradientFiniteDifference checks the analytic gradient dL_lambda/dW against central finite
// differences of the objective L_lambda = L + lambda ||W||_F^2 / sqrt(R D) (the data loss that
// lossAndGrad returns, the weight decay's lambda Tr S computed here on the host), on random
// small problems with several T and a student width R that differs from the teacher's, softmax
// and linear (the quadratic network, noiseless and noisy, centred and uncentred), without
// weight decay and with lambda > 0.
func TestGradientFiniteDifference(t *testing.T) {
	dev := cpu.New(0)
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		p         aim.Params
		R         int
		uncentred bool
		decay     float64
	}{{params(8, 2, 0.5, 0.5, 1, 1), 3, false, 0}, {params(7, 3, 0.6, 0.3, 0.8, 2), 5, false, 0}, {params(6, 4, 0.8, 1, 1.5, 3), 2, false, 0},
		{linearParams(9, 0.6, 0.5, 0, 4), 4, false, 0}, {linearParams(8, 0.4, 1, 0.25, 5), 6, false, 0},
		{linearParams(9, 0.6, 0.5, 0, 6), 4, true, 0}, {linearParams(8, 0.4, 1, 0.25, 7), 6, true, 0},
		// Weight decay: softmax and linear, centred and uncentred, R below and above D.
		{params(8, 2, 0.5, 0.5, 1, 8), 3, false, 0.3}, {params(6, 3, 0.6, 1, 1.2, 9), 9, false, 2},
		{linearParams(9, 0.6, 0.5, 0, 10), 4, false, 0.05}, {linearParams(8, 0.4, 1, 0.25, 11), 10, false, 1},
		{linearParams(9, 0.6, 0.5, 0.1, 12), 4, true, 0.5}} {
		data, err := aim.Generate(dev, c.p)
		if err != nil {
			t.Fatal(err)
		}
		st, err := newStudent(device.Single(dev), []device.Trainer{dev.Capabilities().Trainer}, []*aim.Data{data}, c.R, 1)
		if err != nil {
			t.Fatal(err)
		}
		st.uncentred, st.decay = c.uncentred, c.decay
		D := c.p.D
		w := make([]float64, c.R*D)
		for i := range w {
			w[i] = r.NormFloat64()
		}
		objective := func(w []float64) float64 {
			if err := dev.Upload(st.w, w); err != nil {
				t.Fatal(err)
			}
			l, err := st.lossAndGrad()
			if err != nil {
				t.Fatal(err)
			}
			var ww float64
			for _, x := range w {
				ww += x * x
			}
			return l[0] + c.decay*ww/math.Sqrt(float64(c.R*D))
		}
		objective(w)
		grad := make([]float64, len(w))
		if err := dev.Download(grad, st.grad); err != nil {
			t.Fatal(err)
		}
		var worst float64
		for i := range w {
			const h = 1e-5
			wp, wm := append([]float64(nil), w...), append([]float64(nil), w...)
			wp[i] += h
			wm[i] -= h
			fd := (objective(wp) - objective(wm)) / (2 * h)
			rel := math.Abs(grad[i]-fd) / math.Max(math.Abs(fd), 1e-3)
			worst = math.Max(worst, rel)
		}
		t.Logf("D %d T %d R %d (teacher R %d, uncentred %v, lambda %g): max relative gradient error %.2e", D, c.p.T(), c.R, c.p.R(), c.uncentred, c.decay, worst)
		if worst > 1e-6 {
			t.Errorf("D %d T %d R %d lambda %g: analytic gradient off finite differences by %.3g relative", D, c.p.T(), c.R, c.decay, worst)
		}
		st.free()
		data.Free(dev)
	}
}

// TestGDLearns trains on a small problem: the loss falls, averaging students beats a single
// one, a seed fixes the result, and the memory estimate is what Run allocates.
func TestGDLearns(t *testing.T) {
	dev := devtest.NewCounting(cpu.New(0))
	p := params(30, 2, 0.25, 0.5, 1, 4) // alpha-bar = 1
	data, err := aim.Generate(dev, p)
	if err != nil {
		t.Fatal(err)
	}
	before := dev.Live()
	dev.Peak()
	o := DefaultOptions()
	o.Steps, o.Restarts, o.TraceEvery = 200, 4, 50
	res, err := Run(dev, data, o)
	if err != nil {
		t.Fatal(err)
	}
	if peak := dev.Peak() - before; peak != Bytes(p, o, p.N()) {
		t.Errorf("Run peaked at %d bytes, Bytes says %d", peak, Bytes(p, o, p.N()))
	}
	tr := res.Trace
	t.Logf("loss %.4g -> %.4g, error %.4f -> %.4f; students %v, averaged %.4f", tr[0].Loss, tr[len(tr)-1].Loss, tr[0].Error, tr[len(tr)-1].Error, res.SingleErrors, res.Error)
	if !(tr[len(tr)-1].Loss < 0.2*tr[0].Loss) || !(tr[len(tr)-1].Error < tr[0].Error) {
		t.Errorf("training did not progress: %+v", tr)
	}
	var mean float64
	for _, e := range res.SingleErrors {
		mean += e / float64(len(res.SingleErrors))
	}
	if !(res.Error < mean) {
		t.Errorf("averaged error %.4f not below the students' mean %.4f", res.Error, mean)
	}
	dev1 := cpu.New(1)
	data1, err := aim.Generate(dev1, p)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Run(dev1, data1, o)
	if err != nil {
		t.Fatal(err)
	}
	if again.Error != res.Error {
		t.Errorf("same seed, different result: %.17g vs %.17g", again.Error, res.Error)
	}
}

func TestRunRejects(t *testing.T) {
	dev := cpu.New(0)
	data, err := aim.Generate(dev, params(10, 2, 0.3, 0.5, 1, 1))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []Options{{Steps: 0, LR: 0.1, Restarts: 1}, {Steps: 5, LR: 0, Restarts: 1}, {Steps: 5, LR: 0.1, Restarts: 0},
		{Steps: 5, LR: 0.1, Restarts: 1, Adam: true, Beta1: 1, Beta2: 0.9, Eps: 1e-8},
		{Steps: 5, LR: 0.1, Restarts: 1, WeightDecay: -0.1}, {Steps: 5, LR: 0.1, Restarts: 1, WeightDecay: math.NaN()},
		{Steps: 5, LR: 0.1, Restarts: 1, WeightDecay: math.Inf(1)}} {
		if _, err := Run(dev, data, o); err == nil {
			t.Errorf("Run accepted %+v", o)
		}
	}
	hard, err := aim.Generate(dev, aim.Params{D: 10, Alpha: 0.3, Rho: 0.5, Channel: channel.Spec{Kind: channel.KindHardmax, T: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(dev, hard, DefaultOptions()); err == nil {
		t.Error("Run accepted a hardmax teacher")
	}
	o := DefaultOptions()
	o.LR, o.Adam, o.Steps = 1e200, false, 20
	if _, err := Run(dev, data, o); !errors.Is(err, ErrDiverged) {
		t.Errorf("plain GD with lr 1e200: %v, want ErrDiverged", err)
	}
}

// TestGDScratch holds Scratch to the work arrays the CPU keeps after a run (cpu.Device.Held),
// on a fresh device for each case: stored and streamed tokens, one student and a batch of
// four, the spectrum asked for or not, the power-law teacher (drawn with EighSym and
// SpectralCompose) or not, fp64 (the CPU's QuadFormSum) and a reduced precision (its float32
// arrays).
func TestGDScratch(t *testing.T) {
	for _, c := range []struct {
		prec     device.Precision
		chunk    int // 0: stored
		restarts int
		spectrum bool
		teacher  aim.Teacher
	}{{device.FP64, 0, 1, false, aim.Teacher{}}, {device.FP64, 11, 4, true, aim.Teacher{}}, {device.FP32, 0, 4, false, aim.Teacher{PowerLaw: true, Gamma: 1}},
		{device.BF16x9, 11, 1, true, aim.Teacher{}}, {device.FP64, 11, 1, false, aim.Teacher{PowerLaw: true, Gamma: 0.5}}} {
		p := params(20, 3, 0.4, 0.5, 1, 8)
		p.Teacher = c.teacher
		dev := cpu.New(0)
		parts, err := aim.GenerateGroup(device.Single(dev), p, c.chunk) // chunk 0: stored
		if err != nil {
			t.Fatal(err)
		}
		data := parts[0]
		rows := cmp.Or(data.Chunk, p.N()) // the samples of a product
		o := DefaultOptions()
		o.Steps, o.Restarts, o.Spectrum, o.Precision = 3, c.restarts, c.spectrum, c.prec
		if _, err := Run(dev, data, o); err != nil {
			t.Fatal(err)
		}
		if got, want := dev.Held(), Scratch(dev, p, o, p.N(), rows); got != want {
			t.Errorf("%+v: the device keeps %d bytes after the run, Scratch says %d", c, got, want)
		}
		data.Free(dev)
	}
}

// TestStreamedEqualsStored: gradient descent on streamed tokens (chunks of 11 samples, N = 160)
// follows the stored run of the same seed: loss and error of every traced step, each student's
// final error and the averaged error equal to 1e-10 relative over 60 Adam steps (the gradient
// is summed chunk by chunk, which moves the rounding; Adam's normalisation amplifies it a
// little), and the streamed run's peak memory is StreamedBytes.
func TestStreamedEqualsStored(t *testing.T) {
	p := params(20, 3, 0.4, 0.5, 1, 8)
	o := DefaultOptions()
	o.Steps, o.Restarts, o.TraceEvery = 60, 2, 10
	dev := devtest.NewCounting(cpu.New(0))
	stored, err := aim.Generate(dev, p)
	if err != nil {
		t.Fatal(err)
	}
	a, err := Run(dev, stored, o)
	if err != nil {
		t.Fatal(err)
	}
	stored.Free(dev)
	streamed, err := aim.GenerateStreamed(dev, p, 11)
	if err != nil {
		t.Fatal(err)
	}
	before := dev.Live()
	dev.Peak()
	b, err := Run(dev, streamed, o)
	if err != nil {
		t.Fatal(err)
	}
	if peak := dev.Peak() - before; peak != StreamedBytes(p, o, p.N(), 11) {
		t.Errorf("streamed Run peaked at %d bytes, StreamedBytes says %d", peak, StreamedBytes(p, o, p.N(), 11))
	}
	worst := 0.0
	close := func(what string, x, y float64) {
		worst = math.Max(worst, math.Abs(x-y)/math.Abs(x))
		if math.Abs(x-y) > 1e-10*math.Abs(x) {
			t.Errorf("%s: stored %.17g, streamed %.17g", what, x, y)
		}
	}
	if len(a.Trace) != len(b.Trace) || len(a.Trace) == 0 {
		t.Fatalf("traces of %d and %d points", len(a.Trace), len(b.Trace))
	}
	for i := range a.Trace {
		close("loss", a.Trace[i].Loss, b.Trace[i].Loss)
		close("error", a.Trace[i].Error, b.Trace[i].Error)
	}
	for k := range a.SingleErrors {
		close("student error", a.SingleErrors[k], b.SingleErrors[k])
	}
	close("averaged error", a.Error, b.Error)
	t.Logf("largest relative difference %.2g", worst)
}

// TestUncentredLoss: with Uncentred the loss is the authors' (docs/theory/aim.md 2.8),
// sum_mu (x^T S x / sqrt(D) - y_mu - Tr S* / sqrt(D))^2 / D with the teacher's outputs
// y = h* + noise, computed here naively on the host from the tokens, S = W^T W / sqrt(R D) and
// the teacher's trace.
func TestUncentredLoss(t *testing.T) {
	dev := cpu.New(0)
	p := linearParams(7, 0.5, 0.5, 0.1, 3)
	data, err := aim.Generate(dev, p)
	if err != nil {
		t.Fatal(err)
	}
	defer data.Free(dev)
	const R = 3
	st, err := newStudent(device.Single(dev), []device.Trainer{dev.Capabilities().Trainer}, []*aim.Data{data}, R, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer st.free()
	st.uncentred = true
	D, N := p.D, p.N()
	r := rand.New(rand.NewPCG(3, 4))
	w := make([]float64, R*D)
	for i := range w {
		w[i] = r.NormFloat64()
	}
	if err := dev.Upload(st.w, w); err != nil {
		t.Fatal(err)
	}
	got, err := st.lossAndGrad()
	if err != nil {
		t.Fatal(err)
	}
	x, y := make([]float64, N*D), make([]float64, N)
	if err := dev.Download(x, data.X); err != nil {
		t.Fatal(err)
	}
	if err := dev.Download(y, data.Y); err != nil {
		t.Fatal(err)
	}
	S := make([]float64, D*D) // W^T W / sqrt(R D)
	for i := 0; i < D; i++ {
		for j := 0; j < D; j++ {
			for k := 0; k < R; k++ {
				S[i*D+j] += w[k*D+i] * w[k*D+j]
			}
			S[i*D+j] /= math.Sqrt(float64(R * D))
		}
	}
	var want float64
	for mu := 0; mu < N; mu++ {
		xm := x[mu*D : (mu+1)*D]
		var q float64
		for i := 0; i < D; i++ {
			for j := 0; j < D; j++ {
				q += xm[i] * S[i*D+j] * xm[j]
			}
		}
		res := q/math.Sqrt(float64(D)) - y[mu] - data.TrS/math.Sqrt(float64(D))
		want += res * res / float64(D)
	}
	if math.Abs(got[0]-want) > 1e-12*want {
		t.Errorf("uncentred loss %.15g, naive %.15g", got[0], want)
	}
}
