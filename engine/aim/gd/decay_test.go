package gd

import (
	"math"
	"runtime"
	"slices"
	"testing"

	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/internal/devtest"
	"github.com/aimtheory/aim/engine/stream"
)

// trainStudent repeats, operation for operation, Run's training of student k on one device and
// returns its final W (R x D) and S (D x D), downloaded: the same operations give the same
// bits, so that a test can check what Run reports of that student on the host.
func trainStudent(t *testing.T, dev device.Device, data *aim.Data, o Options, k int) (w, s []float64) {
	t.Helper()
	R := o.R
	if R == 0 {
		R = data.P.R()
	}
	st, err := newStudent(device.Single(dev), []device.Trainer{dev.Capabilities().Trainer}, []*aim.Data{data}, R, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer st.free()
	st.prec, st.uncentred, st.decay = o.Precision, o.Uncentred, o.WeightDecay
	if err := dev.GaussianFill(st.w, data.P.Seed, stream.Restart(k), 1); err != nil {
		t.Fatal(err)
	}
	for step := 1; step <= o.Steps; step++ {
		if _, err := st.lossAndGrad(); err != nil {
			t.Fatal(err)
		}
		if o.Adam {
			err = st.shards[0].tr.AdamStep(st.w, st.grad, st.m, st.v, o.LR, o.Beta1, o.Beta2, o.Eps, step)
		} else {
			err = dev.Axpby(st.w, -o.LR, st.grad, 1)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.lossAndGrad(); err != nil {
		t.Fatal(err)
	}
	w, s = make([]float64, R*data.P.D), make([]float64, data.P.D*data.P.D)
	if err := device.Seq(func() error { return dev.Download(w, st.w) }, func() error { return dev.Download(s, st.s) }); err != nil {
		t.Fatal(err)
	}
	return w, s
}

// sumSq is sum_i x_i^2.
func sumSq(x []float64) float64 {
	var v float64
	for _, xi := range x {
		v += xi * xi
	}
	return v
}

// TestPenalty: Result.Penalty of every student is lambda Tr S = lambda ||W||_F^2 / sqrt(R D),
// computed here on the host from the student's final W and, independently, from the trace of
// its final S, both to 1e-12 relative; 0 without weight decay. Softmax and linear students,
// R below, at and above D, Adam and plain GD.
func TestPenalty(t *testing.T) {
	dev := cpu.New(0)
	for _, c := range []struct {
		name  string
		p     aim.Params
		R     int
		adam  bool
		decay float64
	}{
		{"softmax R < D", params(12, 2, 0.4, 0.5, 1, 21), 4, true, 0.05},
		{"softmax R > D, plain GD", params(10, 3, 0.5, 0.5, 1, 22), 14, false, 0.2},
		{"linear R = D", linearParams(14, 0.3, 1, 0, 23), 14, true, 0.01},
		{"linear noisy R < D", linearParams(16, 0.3, 0.5, 0.25, 24), 5, true, 1},
		{"linear, no decay", linearParams(16, 0.3, 0.5, 0, 25), 0, true, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			data, err := aim.Generate(dev, c.p)
			if err != nil {
				t.Fatal(err)
			}
			defer data.Free(dev)
			o := DefaultOptions()
			o.Steps, o.Restarts, o.R, o.Adam, o.WeightDecay = 40, 2, c.R, c.adam, c.decay
			if !c.adam {
				o.LR = 0.01
			}
			res, err := Run(dev, data, o)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Penalty) != o.Restarts {
				t.Fatalf("%d penalties for %d students", len(res.Penalty), o.Restarts)
			}
			D := c.p.D
			R := c.R
			if R == 0 {
				R = c.p.R()
			}
			for k, got := range res.Penalty {
				w, s := trainStudent(t, dev, data, o, k)
				fromW := c.decay * sumSq(w) / math.Sqrt(float64(R*D))
				var trS float64
				for i := 0; i < D; i++ {
					trS += s[i*D+i]
				}
				fromS := c.decay * trS
				if c.decay == 0 {
					t.Logf("student %d: penalty %g without weight decay; data loss %.4g", k, got, res.FinalLoss[k])
					if got != 0 {
						t.Errorf("student %d: penalty %g without weight decay", k, got)
					}
					continue
				}
				t.Logf("student %d: penalty %.15g, lambda ||W||^2/sqrt(RD) %.15g (rel %.1e), lambda Tr S %.15g (rel %.1e); data loss %.4g",
					k, got, fromW, math.Abs(got-fromW)/fromW, fromS, math.Abs(got-fromS)/fromS, res.FinalLoss[k])
				if !(fromW > 0) || math.Abs(got-fromW) > 1e-12*fromW || math.Abs(got-fromS) > 1e-12*fromS {
					t.Errorf("student %d: penalty %.17g, lambda ||W||_F^2 / sqrt(R D) %.17g, lambda Tr S %.17g", k, got, fromW, fromS)
				}
			}
		})
	}
}

// TestSpectrum: with Spectrum, Result.Eigenvalues are the D eigenvalues of the first student's
// final S, ascending: they sum to Tr S and their squares to ||S||_F^2 (S computed on the host
// from the student's final W, to 1e-10 relative), S = W^T W / sqrt(R D) is positive
// semi-definite (all >= -1e-10) and of rank at most R (when R < D, at most R beyond 1e-9);
// Penalty[0] is lambda times their sum; the memory Run peaks at is Bytes with the spectrum.
func TestSpectrum(t *testing.T) {
	for _, c := range []struct {
		name  string
		p     aim.Params
		R     int
		decay float64
	}{
		{"softmax R < D", params(12, 2, 0.4, 0.5, 1, 31), 4, 0},
		{"softmax R < D, decay", params(12, 3, 0.5, 0.5, 1, 32), 3, 0.1},
		{"linear R < D", linearParams(16, 0.3, 0.5, 0, 33), 5, 0.02},
		{"linear R = D", linearParams(10, 0.5, 1, 0.1, 34), 10, 0},
		{"linear R > D", linearParams(10, 0.4, 0.5, 0, 35), 14, 0.5},
	} {
		t.Run(c.name, func(t *testing.T) {
			dev := devtest.NewCounting(cpu.New(0))
			data, err := aim.Generate(dev, c.p)
			if err != nil {
				t.Fatal(err)
			}
			defer data.Free(dev)
			o := DefaultOptions()
			o.Steps, o.Restarts, o.R, o.WeightDecay, o.Spectrum = 40, 2, c.R, c.decay, true
			before := dev.Live()
			dev.Peak()
			res, err := Run(dev, data, o)
			if err != nil {
				t.Fatal(err)
			}
			if peak := dev.Peak() - before; peak != Bytes(c.p, o, c.p.N()) {
				t.Errorf("Run with Spectrum peaked at %d bytes, Bytes says %d", peak, Bytes(c.p, o, c.p.N()))
			}
			D := c.p.D
			eig := res.Eigenvalues
			if len(eig) != D || !slices.IsSorted(eig) {
				t.Fatalf("%d eigenvalues, sorted %v: %v", len(eig), slices.IsSorted(eig), eig)
			}
			w, s := trainStudent(t, dev, data, o, 0)
			var trS, sum, sum2 float64
			for i := 0; i < D; i++ {
				trS += s[i*D+i]
			}
			normSq := sumSq(s)
			nonzero := 0
			for _, l := range eig {
				sum += l
				sum2 += l * l
				if math.Abs(l) > 1e-9 {
					nonzero++
				}
			}
			relTr, relF := math.Abs(sum-trS)/trS, math.Abs(sum2-normSq)/normSq
			t.Logf("D %d R %d lambda %g: eigenvalues %.3g .. %.3g, %d beyond 1e-9; sum %.15g vs Tr S %.15g (rel %.1e), sum of squares %.15g vs ||S||_F^2 %.15g (rel %.1e)",
				D, c.R, c.decay, eig[0], eig[D-1], nonzero, sum, trS, relTr, sum2, normSq, relF)
			if !(relTr <= 1e-10) || !(relF <= 1e-10) {
				t.Errorf("eigenvalues sum to %.17g (Tr S %.17g), squares to %.17g (||S||_F^2 %.17g)", sum, trS, sum2, normSq)
			}
			if fromW := sumSq(w) / math.Sqrt(float64(c.R*D)); math.Abs(trS-fromW) > 1e-12*fromW {
				t.Errorf("Tr S %.17g, ||W||_F^2 / sqrt(R D) %.17g", trS, fromW)
			}
			if eig[0] < -1e-10 {
				t.Errorf("smallest eigenvalue %g: S not positive semi-definite", eig[0])
			}
			if c.R < D && nonzero > c.R {
				t.Errorf("%d eigenvalues beyond 1e-9, S has rank at most R = %d", nonzero, c.R)
			}
			if want := c.decay * sum; math.Abs(res.Penalty[0]-want) > 1e-10*want {
				t.Errorf("penalty %.17g, lambda times the eigenvalues' sum %.17g", res.Penalty[0], want)
			}
		})
	}
}

// TestWeightDecayShrinks: at fixed data and seed (the linear channel, D = 20, 300 Adam steps),
// Tr S of the final S (the sum of its eigenvalues) decreases as lambda grows over
// {0, 0.01, 0.1}, and the final data loss grows.
func TestWeightDecayShrinks(t *testing.T) {
	dev := cpu.New(0)
	data, err := aim.Generate(dev, linearParams(20, 0.3, 0.5, 0, 11))
	if err != nil {
		t.Fatal(err)
	}
	defer data.Free(dev)
	lastTr, lastLoss := math.Inf(1), math.Inf(-1)
	for _, lambda := range []float64{0, 0.01, 0.1} {
		o := DefaultOptions()
		o.Steps, o.WeightDecay, o.Spectrum = 300, lambda, true
		res, err := Run(dev, data, o)
		if err != nil {
			t.Fatal(err)
		}
		var trS float64
		for _, l := range res.Eigenvalues {
			trS += l
		}
		t.Logf("lambda %g: Tr S %.6g, penalty %.4g, data loss %.4g, error %.4g", lambda, trS, res.Penalty[0], res.FinalLoss[0], res.Error)
		if !(trS < lastTr) {
			t.Errorf("lambda %g: Tr S %.6g, not below %.6g of the smaller lambda", lambda, trS, lastTr)
		}
		if !(res.FinalLoss[0] > lastLoss) {
			t.Errorf("lambda %g: data loss %.6g, not above %.6g of the smaller lambda", lambda, res.FinalLoss[0], lastLoss)
		}
		lastTr, lastLoss = trS, res.FinalLoss[0]
	}
}

// TestNoWeightDecayBitForBit: WeightDecay 0 is the training of before the option existed, bit
// for bit: on the pure-Go BLAS (whose rounding does not depend on the machine's optimised
// library) the averaged error, the students' errors and final losses and the traced points of
// a linear run are the values recorded from the code without weight decay, with and without
// Spectrum. They were recorded again when the pure-Go back-projection became exactly symmetric
// (its upper triangle mirrored), which moved them by at most 1e-14 relative. The recorded bits
// are those of amd64; elsewhere the compiler may fuse multiply-adds, and the values are
// compared to 1e-12 relative.
func TestNoWeightDecayBitForBit(t *testing.T) {
	want := []uint64{0x3fd71bdf89cb4096, 0x3fe51308d1a8e301, 0x3fdd1322857d2400, 0x3f425db26bff0ef8, 0x3f1eab011a8e923f,
		0x403884c351b2fb24, 0x3fffe6bd7834a70d, 0x3f9301ef7bea76bf, 0x3fe64a79b73fad8a, 0x3f6699c80d6e522f,
		0x3fe4cf241b220d6f, 0x3f425db26bff0ef8, 0x3fe51308d1a8e301}
	dev, err := cpu.Open(cpu.Options{Workers: 2, BLAS: cpu.GonumBLAS})
	if err != nil {
		t.Fatal(err)
	}
	data, err := aim.Generate(dev, linearParams(20, 0.3, 0.5, 0, 11))
	if err != nil {
		t.Fatal(err)
	}
	defer data.Free(dev)
	for _, spectrum := range []bool{false, true} {
		o := DefaultOptions()
		o.Steps, o.Restarts, o.TraceEvery, o.Spectrum = 300, 2, 100, spectrum
		res, err := Run(dev, data, o)
		if err != nil {
			t.Fatal(err)
		}
		got := append([]float64{res.Error}, res.SingleErrors...)
		got = append(got, res.FinalLoss...)
		for _, pt := range res.Trace {
			got = append(got, pt.Loss, pt.Error)
		}
		if len(got) != len(want) {
			t.Fatalf("%d values, recorded %d", len(got), len(want))
		}
		for i, g := range got {
			w := math.Float64frombits(want[i])
			if runtime.GOARCH == "amd64" && g != w || math.Abs(g-w) > 1e-12*math.Abs(w) {
				t.Errorf("spectrum %v: value %d is %.17g (%#016x), recorded %.17g (%#016x)", spectrum, i, g, math.Float64bits(g), w, want[i])
			}
		}
		if slices.ContainsFunc(res.Penalty, func(p float64) bool { return p != 0 }) || len(res.Eigenvalues) != 0 != spectrum {
			t.Errorf("spectrum %v: penalties %v, %d eigenvalues", spectrum, res.Penalty, len(res.Eigenvalues))
		}
	}
}
