package sgd

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/aimtheory/aim/engine/smi"
)

func smiData(t testing.TB, p smi.Params) *smi.Data {
	t.Helper()
	d, err := smi.Generate(p)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestSMIForwardMatchesChannel checks the student's forward pass against channel.Deep's
// Forward and OutputU at the teacher's weights: the loss on the teacher's own labels is 0.
func TestSMIForwardMatchesChannel(t *testing.T) {
	for _, L := range []int{1, 2, 3} {
		for _, M := range []int{2, 3} {
			data := smiData(t, smi.Params{D: 7, Alpha: 2, M: M, L: L, C: 0.7, Beta: 1.3, Seed: 5})
			o := DefaultOptions()
			o.TestSamples = 0
			tr, err := newSMITrainer(data, o)
			if err != nil {
				t.Fatal(err)
			}
			copy(tr.w, data.W)
			idx := make([]int, tr.N)
			for i := range idx {
				idx[i] = i
			}
			if loss := tr.lossGrad(idx, tr.x, tr.y, true); loss > 1e-28 {
				t.Errorf("L %d M %d: loss at the teacher's weights %g, want 0", L, M, loss)
			}
			for _, g := range tr.grad {
				if math.Abs(g) > 1e-15 {
					t.Errorf("L %d M %d: gradient %g at the teacher's weights, want 0", L, M, g)
					break
				}
			}
		}
	}
}

// TestSMIGradientFiniteDifference checks dLoss/dWhat against central finite differences of the
// loss sum_mu ||yhat_mu - y_mu||_F^2 / D for L = 1, 2, 3, M = 2, 3, c in {0.5, 1} and
// beta in {1, 2}, at random weights.
func TestSMIGradientFiniteDifference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, L := range []int{1, 2, 3} {
		for _, M := range []int{2, 3} {
			for _, c := range []float64{0.5, 1} {
				for _, beta := range []float64{1, 2} {
					data := smiData(t, smi.Params{D: 6, Alpha: 1, M: M, L: L, C: c, Beta: beta, Seed: uint64(10*L + M)})
					o := DefaultOptions()
					o.TestSamples = 0
					tr, err := newSMITrainer(data, o)
					if err != nil {
						t.Fatal(err)
					}
					for i := range tr.w {
						tr.w[i] = r.NormFloat64()
					}
					idx := make([]int, tr.N)
					for i := range idx {
						idx[i] = i
					}
					tr.lossGrad(idx, tr.x, tr.y, true)
					grad := append([]float64(nil), tr.grad...)
					var worst, gmax float64
					for i := range tr.w {
						const h = 1e-5
						w0 := tr.w[i]
						tr.w[i] = w0 + h
						lp := tr.lossGrad(idx, tr.x, tr.y, false)
						tr.w[i] = w0 - h
						lm := tr.lossGrad(idx, tr.x, tr.y, false)
						tr.w[i] = w0
						fd := (lp - lm) / (2 * h)
						worst = math.Max(worst, math.Abs(grad[i]-fd)/math.Max(math.Abs(fd), 1e-3))
						gmax = math.Max(gmax, math.Abs(fd))
					}
					if worst > 1e-6 || gmax < 1e-3 {
						t.Errorf("L %d M %d c %g beta %g: gradient off finite differences by %.3g relative (max |grad| %.3g)", L, M, c, beta, worst, gmax)
					} else {
						t.Logf("L %d M %d c %g beta %g: max relative error %.2e (max |grad| %.3g)", L, M, c, beta, worst, gmax)
					}
				}
			}
		}
	}
}

// firstAbove returns the first recorded update at which layer l's cosine exceeds th (-1: never).
func firstAbove(tr []Point, l int, th float64) int {
	for _, p := range tr {
		if p.Cos[l] > th {
			return p.Update
		}
	}
	return -1
}

// TestSMILearnsLastLayerFirst trains at L = 2, M = 2, c = 1, D = 100, alpha = 15 (N = 1500)
// with the notebook's hyperparameters: the last layer's cosine passes 0.9 before the first
// layer's, and both end high.
func TestSMILearnsLastLayerFirst(t *testing.T) {
	data := smiData(t, smi.Params{D: 100, Alpha: 15, M: 2, L: 2, C: 1, Beta: 1, Seed: 1})
	o := DefaultOptions()
	o.Epochs, o.Every, o.TestSamples = 25, 1, 500
	res, err := Run(data, o)
	if err != nil {
		t.Fatal(err)
	}
	tr := res.Trace
	first, last := tr[0], tr[len(tr)-1]
	t2, t1 := firstAbove(tr, 1, 0.9), firstAbove(tr, 0, 0.9)
	t.Logf("%d updates in %.2fs; cosines %.3f %.3f -> %.3f %.3f; first update above 0.9: layer 2 at %d, layer 1 at %d; "+
		"e_gen %.4f -> %.4f, train error %.4f -> %.4f",
		res.Updates, res.Seconds, first.Cos[0], first.Cos[1], last.Cos[0], last.Cos[1], t2, t1,
		first.TestError, last.TestError, first.TrainError, last.TrainError)
	for _, p := range tr {
		if p.Update%25 == 0 {
			t.Logf("update %4d epoch %2d: C1 %.3f C2 %.3f Q1 %.3f Q2 %.3f loss %.4f e_gen %.4f", p.Update, p.Epoch, p.Cos[0], p.Cos[1], p.Q[0], p.Q[1], p.Loss, p.TestError)
		}
	}
	if want := o.Epochs * 8 * 3; res.Updates != want || last.Update != want || len(tr) != want+1 {
		t.Errorf("updates %d, last record %d, %d records; want %d updates and %d records", res.Updates, last.Update, len(tr), want, want+1)
	}
	// Layer 2 within the first few mini-batches (update 15 here), layer 1 much later (242).
	if t2 < 0 || t2 > 30 || t1 < 4*t2 {
		t.Errorf("layer 2 passed cosine 0.9 at update %d and layer 1 at %d: want layer 2 by update 30 and layer 1 at least 4x later", t2, t1)
	}
	if !(last.Cos[1] > 0.99) || !(last.Cos[0] > 0.95) {
		t.Errorf("final cosines %.3f (layer 1), %.3f (layer 2): want > 0.95 and > 0.99", last.Cos[0], last.Cos[1])
	}
	if !(last.TestError < 0.25*first.TestError) {
		t.Errorf("test error %.4f -> %.4f: want a fall by 4x", first.TestError, last.TestError)
	}
}

// TestSMIDeterministic runs twice with the same seeds and different worker counts (with
// shuffling): the trajectories agree bit for bit. A different student seed changes them.
func TestSMIDeterministic(t *testing.T) {
	data := smiData(t, smi.Params{D: 40, Alpha: 6, M: 2, L: 2, C: 1, Beta: 1, Seed: 9})
	o := DefaultOptions()
	o.Epochs, o.Batch, o.Every, o.TestSamples, o.Shuffle = 3, 130, 2, 120, true
	o.Workers = 1
	a, err := Run(data, o)
	if err != nil {
		t.Fatal(err)
	}
	o.Workers = 3
	b, err := Run(data, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Trace) != len(b.Trace) {
		t.Fatalf("trace lengths %d and %d", len(a.Trace), len(b.Trace))
	}
	same := func(x, y []float64) bool {
		for i := range x {
			if math.Float64bits(x[i]) != math.Float64bits(y[i]) {
				return false
			}
		}
		return len(x) == len(y)
	}
	for i := range a.Trace {
		p, q := a.Trace[i], b.Trace[i]
		if p.Update != q.Update || p.Epoch != q.Epoch || p.Batch != q.Batch || !same(p.M, q.M) || !same(p.Q, q.Q) ||
			!same([]float64{p.Loss, p.TestError}, []float64{q.Loss, q.TestError}) {
			t.Fatalf("record %d differs: %+v vs %+v", i, p, q)
		}
	}
	if !same(a.W, b.W) {
		t.Error("final weights differ")
	}
	seed := uint64(77)
	o.StudentSeed = &seed
	c, err := Run(data, o)
	if err != nil {
		t.Fatal(err)
	}
	if same(a.W, c.W) || a.Trace[0].M[0] == c.Trace[0].M[0] {
		t.Error("a different student seed gave the same run")
	}
	// Without shuffling the order is fixed, and the result differs from the shuffled run.
	o.StudentSeed, o.Shuffle = nil, false
	d, err := Run(data, o)
	if err != nil {
		t.Fatal(err)
	}
	if d.Trace[0].M[0] != a.Trace[0].M[0] || same(a.W, d.W) {
		t.Error("the shuffle did not change the trajectory, or changed the initialisation")
	}
}

// TestSMIRecordsPerEpoch checks the default record schedule (Every = 0): the initialisation and
// the end of every epoch, with a short last mini-batch (N = 150, B = 40: 4 mini-batches).
func TestSMIRecordsPerEpoch(t *testing.T) {
	data := smiData(t, smi.Params{D: 30, Alpha: 5, M: 3, L: 3, C: 0.5, Beta: 1, Seed: 3})
	o := DefaultOptions()
	o.Epochs, o.Batch, o.StepsPerBatch, o.TestSamples, o.LR = 4, 40, 2, 0, 3
	res, err := Run(data, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Trace) != o.Epochs+1 || res.Updates != o.Epochs*4*2 {
		t.Fatalf("%d records, %d updates; want %d and %d", len(res.Trace), res.Updates, o.Epochs+1, o.Epochs*8)
	}
	for k, p := range res.Trace {
		if p.Update != 8*k || p.Epoch != k || p.Batch != 4*k || len(p.Cos) != 3 || !math.IsNaN(p.TestError) {
			t.Errorf("record %d: update %d epoch %d batch %d, %d cosines, test error %g", k, p.Update, p.Epoch, p.Batch, len(p.Cos), p.TestError)
		}
		// The epoch's last mini-batch holds 150 - 3 x 40 = 30 samples.
		if want := p.Loss * 30 / 30; k > 0 && p.TrainError != want {
			t.Errorf("record %d: train error %g, want loss D / 30 = %g", k, p.TrainError, want)
		}
	}
}

// TestSMIRejects checks the option validation and the divergence error.
func TestSMIRejects(t *testing.T) {
	data := smiData(t, smi.Params{D: 10, Alpha: 2, M: 2, L: 2, C: 1, Beta: 1, Seed: 2})
	bad := []func(*Options){
		func(o *Options) { o.LR = 0 }, func(o *Options) { o.LR = -1 }, func(o *Options) { o.LR = math.NaN() },
		func(o *Options) { o.LR = math.Inf(1) }, func(o *Options) { o.WeightDecay = -0.1 },
		func(o *Options) { o.Batch = 0 }, func(o *Options) { o.StepsPerBatch = 0 }, func(o *Options) { o.Epochs = 0 },
		func(o *Options) { o.InitScale = 0 }, func(o *Options) { o.Every = -1 }, func(o *Options) { o.TestSamples = -5 },
		func(o *Options) { o.Workers = -1 },
	}
	for i, f := range bad {
		o := DefaultOptions()
		f(&o)
		if _, err := Run(data, o); err == nil {
			t.Errorf("case %d: Run accepted %+v", i, o)
		}
	}
	if _, err := Run(nil, DefaultOptions()); err == nil {
		t.Error("Run accepted nil data")
	}
	short := *data
	short.U = short.U[:2]
	if _, err := Run(&short, DefaultOptions()); err == nil {
		t.Error("Run accepted inconsistent data")
	}
	o := DefaultOptions()
	o.LR, o.Epochs, o.TestSamples = 1e300, 5, 0
	res, err := Run(data, o)
	if !errors.Is(err, ErrDiverged) {
		t.Fatalf("lr 1e300: %v, want ErrDiverged", err)
	}
	t.Logf("lr 1e300: %v (after %d updates)", err, res.Updates)
	if res.Updates >= 5*3 || len(res.W) != len(data.W) {
		t.Errorf("diverged run reports %d updates and %d weights", res.Updates, len(res.W))
	}
}

// BenchmarkSMIUpdate times one SGD update at D = 500, batch 200, L = 2, M = 2.
func BenchmarkSMIUpdate(b *testing.B) {
	data := smiData(b, smi.Params{D: 500, Alpha: 0.4, M: 2, L: 2, C: 1, Beta: 1, Seed: 1})
	o := DefaultOptions()
	o.TestSamples = 0
	tr, err := newSMITrainer(data, o)
	if err != nil {
		b.Fatal(err)
	}
	idx := tr.perm[:200]
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tr.lossGrad(idx, tr.x, tr.y, true)
		tr.apply()
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/update")
}

// TestBytes checks the memory estimate against its terms written out: N = 100 samples (D = 50,
// alpha = 2), M = 2, P = 2, batch 40 and 300 test samples, so max(40, 300) / 50 = 6 partial
// gradients.
func TestBytes(t *testing.T) {
	p := smi.Params{D: 50, Alpha: 2, M: 2, L: 2, C: 1, Beta: 1}
	o := DefaultOptions()
	o.Batch, o.TestSamples = 40, 300
	want := uint64(8 * (100*2*2 + 300*(2*50+2*2) + (2+6)*2*50))
	if got := Bytes(p, o); got != want {
		t.Errorf("Bytes = %d, want %d", got, want)
	}
}
