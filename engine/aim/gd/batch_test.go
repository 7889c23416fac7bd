package gd

import (
	"errors"
	"math"
	"testing"

	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/internal/devtest"
)

// trainBatch trains on the data of p (a group of k CPU devices, chunk 0 for stored tokens) with
// the given batch size and returns the result and the error.
func trainBatch(t *testing.T, k int, p aim.Params, chunk int, o Options, batch int) (Result, error) {
	t.Helper()
	o.Batch = batch
	return runOnGroup(t, k, p, chunk, o)
}

// flatResult lists every number of a result: the averaged error, each student's error, loss and
// penalty, the trace and the spectrum.
func flatResult(r Result) []float64 {
	v := append([]float64{r.Error}, r.SingleErrors...)
	v = append(v, r.FinalLoss...)
	v = append(v, r.Penalty...)
	for _, pt := range r.Trace {
		v = append(v, float64(pt.Step), pt.Loss, pt.Error)
	}
	return append(v, r.Eigenvalues...)
}

// TestBatchEqualsSequential: training the restarts in batches (Options.Batch) gives, bit for bit
// on the CPU, what training them one after another gives: every student's error, loss and
// penalty, the average, the first student's trace and spectrum. Softmax and the quadratic
// network (uncentred, weight decay), Adam and plain gradient descent, fp64 and fp32 products,
// stored and streamed tokens, one device and a group of two, a last batch shorter than the
// others; and the steps the progress callback counts.
func TestBatchEqualsSequential(t *testing.T) {
	type tcase struct {
		name        string
		p           aim.Params
		k, chunk    int
		restarts    int
		batches     []int
		adam        bool
		uncentred   bool
		decay       float64
		prec        device.Precision
		spectrum    bool
		traceEvery  int
		studentRank int
	}
	cases := []tcase{
		{"softmax T=2", params(16, 2, 0.4, 0.5, 1, 21), 1, 0, 3, []int{0, 2, 3}, true, false, 0, device.FP64, true, 5, 0},
		{"softmax T=3 decay, group", params(12, 3, 0.5, 0.5, 1.3, 22), 2, 0, 4, []int{0, 3}, true, false, 0.05, device.FP64, false, 7, 5},
		{"softmax streamed", params(14, 2, 0.5, 0.5, 1, 23), 1, 29, 3, []int{0, 2}, true, false, 0, device.FP64, false, 4, 0},
		{"linear uncentred decay, plain GD", linearParams(15, 0.5, 0.5, 0.1, 24), 1, 0, 3, []int{0}, false, true, 0.1, device.FP64, true, 6, 0},
		{"softmax fp32, group streamed", params(12, 2, 0.6, 0.5, 1, 25), 2, 20, 3, []int{0, 2}, true, false, 0, device.FP32, false, 5, 0},
	}
	for _, c := range cases {
		o := DefaultOptions()
		o.Steps, o.Restarts, o.Adam, o.Uncentred, o.WeightDecay, o.Precision, o.Spectrum, o.TraceEvery, o.R =
			25, c.restarts, c.adam, c.uncentred, c.decay, c.prec, c.spectrum, c.traceEvery, c.studentRank
		if !c.adam {
			o.LR = 0.02
		}
		calls := 0
		o.Progress = func() { calls++ }
		seq, err := trainBatch(t, c.k, c.p, c.chunk, o, 1)
		if err != nil {
			t.Fatalf("%s, one at a time: %v", c.name, err)
		}
		if calls != o.Steps*o.Restarts {
			t.Errorf("%s, one at a time: %d progress calls, want %d", c.name, calls, o.Steps*o.Restarts)
		}
		want := flatResult(seq)
		if len(seq.SingleErrors) != c.restarts || (c.spectrum && len(seq.Eigenvalues) != c.p.D) {
			t.Fatalf("%s: %d students, %d eigenvalues", c.name, len(seq.SingleErrors), len(seq.Eigenvalues))
		}
		for _, b := range c.batches {
			calls = 0
			res, err := trainBatch(t, c.k, c.p, c.chunk, o, b)
			if err != nil {
				t.Fatalf("%s, batch %d: %v", c.name, b, err)
			}
			if calls != o.Steps*o.Restarts {
				t.Errorf("%s, batch %d: %d progress calls, want %d", c.name, b, calls, o.Steps*o.Restarts)
			}
			got := flatResult(res)
			if len(got) != len(want) {
				t.Fatalf("%s, batch %d: %d numbers, one at a time %d", c.name, b, len(got), len(want))
			}
			for i := range want {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
					t.Errorf("%s, batch %d: number %d is %.17g, one at a time %.17g", c.name, b, i, got[i], want[i])
					break
				}
			}
		}
		t.Logf("%s: error %.6g, students %.6g", c.name, seq.Error, seq.SingleErrors)
	}
}

// TestBatchDivergence: a student that diverges in a batch is named, with the step, as in a
// sequential run, and the error wraps ErrDiverged.
func TestBatchDivergence(t *testing.T) {
	p := linearParams(10, 0.5, 0.5, 0, 31)
	o := DefaultOptions()
	o.Steps, o.Restarts, o.Adam, o.LR = 50, 3, false, 50 // plain GD far above the stable rate
	_, seqErr := trainBatch(t, 1, p, 0, o, 1)
	_, batchErr := trainBatch(t, 1, p, 0, o, 3)
	for _, err := range []error{seqErr, batchErr} {
		if !errors.Is(err, ErrDiverged) {
			t.Fatalf("error %v, want ErrDiverged", err)
		}
	}
	if seqErr.Error() != batchErr.Error() {
		t.Errorf("one at a time: %q; in a batch: %q", seqErr, batchErr)
	}
	t.Log(batchErr)
}

// TestBatchBytes: the memory model is what RunGroup allocates for every batch size, stored
// and streamed tokens.
func TestBatchBytes(t *testing.T) {
	p := params(16, 3, 0.5, 0.5, 1, 1)
	o := DefaultOptions()
	o.Steps, o.Restarts = 2, 5
	for _, chunk := range []int{0, 13} {
		for _, b := range []int{1, 2, 5, 0} {
			dev := devtest.NewCounting(cpu.New(0))
			var data *aim.Data
			var err error
			if chunk == 0 {
				data, err = aim.Generate(dev, p)
			} else {
				data, err = aim.GenerateStreamed(dev, p, chunk)
			}
			if err != nil {
				t.Fatal(err)
			}
			before := dev.Live()
			dev.Peak()
			o.Batch = b
			if _, err := Run(dev, data, o); err != nil {
				t.Fatal(err)
			}
			want := Bytes(p, o, p.N())
			if chunk > 0 {
				want = StreamedBytes(p, o, p.N(), chunk)
			}
			if peak := dev.Peak() - before; peak != want {
				t.Errorf("chunk %d, batch %d: Run peaked at %d bytes, the model says %d", chunk, b, peak, want)
			}
			data.Free(dev)
		}
	}
	o.Batch = -1
	if err := o.validate(); err == nil {
		t.Error("batch -1: no error")
	}
}
