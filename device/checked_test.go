package device

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aimtheory/aim/channel"
)

// recorder is a Backend that computes nothing and records every call, so that the tests can
// tell whether the front called it.
type recorder struct {
	name   string
	calls  []string
	frees  int
	closes int
	caps   Caps
	chans  channel.Support
	precs  []Precision // the precisions its PrecisionGemmer declares
	waits  []string    // the waits of its GaussianFillAsync, as "wait" then "free" or "close" in order of the calls
	work   Work        // the argument of its last Scratch
}

// recBuf is a buffer of the recorder.
type recBuf struct{ n int }

func (b *recBuf) Len() int { return b.n }

func (r *recorder) rec(op string) { r.calls = append(r.calls, op) }

func (r *recorder) Info() Info                  { return Info{Name: r.name, FreeBytes: 1 << 30} }
func (r *recorder) Capabilities() Caps          { return r.caps }
func (r *recorder) Channels() channel.Support   { return r.chans }
func (r *recorder) Close() error                { r.closes++; r.waits = append(r.waits, "close"); return nil }
func (r *recorder) Alloc(n int) (Buffer, error) { r.rec("Alloc"); return &recBuf{n}, nil }
func (r *recorder) Free(b Buffer)               { r.frees++; r.waits = append(r.waits, "free") }
func (r *recorder) Scratch(w Work) uint64       { r.work = w; return 8 }
func (r *recorder) Slice(b Buffer, off, n int) Buffer {
	if off < 0 || n < 0 || off+n > b.Len() {
		panic("Slice out of range")
	}
	return &recBuf{n}
}
func (r *recorder) Upload(dst Buffer, src []float64) error   { r.rec("Upload"); return nil }
func (r *recorder) Download(dst []float64, src Buffer) error { r.rec("Download"); return nil }
func (r *recorder) Copy(dst, src Buffer) error               { r.rec("Copy"); return nil }
func (r *recorder) Gemm(transA, transB bool, m, n, k int, alpha float64, a, b Buffer, beta float64, c Buffer) error {
	r.rec("Gemm")
	return nil
}
func (r *recorder) GemmStridedBatched(transA, transB bool, m, n, k int, alpha float64, a Buffer, strideA int, b Buffer, strideB int,
	beta float64, c Buffer, strideC int, batch int) error {
	r.rec("GemmStridedBatched")
	return nil
}
func (r *recorder) TokenDots(h, y, x Buffer, n, t, d int) error { r.rec("TokenDots"); return nil }
func (r *recorder) TokenMix(z, c, x Buffer, n, t, d int) error  { r.rec("TokenMix"); return nil }
func (r *recorder) ChannelOutput(ch channel.Spec, y, h Buffer, n int) error {
	r.rec("ChannelOutput")
	return nil
}
func (r *recorder) ChannelGOut(ch channel.Spec, g, y, omega Buffer, n int, v float64) (float64, error) {
	r.rec("ChannelGOut")
	return 0, nil
}
func (r *recorder) EighSym(vals, vecs, a Buffer, d int) error { r.rec("EighSym"); return nil }
func (r *recorder) SpectralCompose(out, vecs, f Buffer, d int) error {
	r.rec("SpectralCompose")
	return nil
}
func (r *recorder) Scal(x Buffer, alpha float64) error                   { r.rec("Scal"); return nil }
func (r *recorder) Axpby(y Buffer, a float64, x Buffer, b float64) error { r.rec("Axpby"); return nil }
func (r *recorder) Dot(x, y Buffer) (float64, error)                     { r.rec("Dot"); return 0, nil }
func (r *recorder) SqDist(x, y Buffer) (float64, error)                  { r.rec("SqDist"); return 0, nil }
func (r *recorder) AddDiag(x Buffer, n, t int, v float64) error          { r.rec("AddDiag"); return nil }
func (r *recorder) SumDiag(x Buffer, n, t int) (float64, error)          { r.rec("SumDiag"); return 0, nil }
func (r *recorder) MulPattern(x, p Buffer, n, m int) error               { r.rec("MulPattern"); return nil }
func (r *recorder) GaussianFill(x Buffer, seed, offset uint64, scale float64) error {
	r.rec("GaussianFill")
	return nil
}
func (r *recorder) GaussianFillAsync(x Buffer, seed, offset uint64, scale float64) (func() error, error) {
	r.rec("GaussianFillAsync")
	return func() error { r.waits = append(r.waits, "wait"); return nil }, nil
}
func (r *recorder) SoftmaxLossGrad(ch channel.Spec, gamma, yhat, y Buffer, n int, scale float64) (float64, error) {
	r.rec("SoftmaxLossGrad")
	return 0, nil
}
func (r *recorder) AdamStep(w, g, m, v Buffer, lr, b1, b2, eps float64, t int) error {
	r.rec("AdamStep")
	return nil
}
func (r *recorder) QuadFormSum(out, c, x, scratch Buffer, n, t, d int, alpha float64) error {
	r.rec("QuadFormSum")
	return nil
}
func (r *recorder) DeepSample(out, in Buffer, n, L, draws int, c, beta float64, seed, offset, stride uint64) error {
	r.rec("DeepSample")
	return nil
}

func (r *recorder) Precisions() []Precision { return r.precs }

func (r *recorder) GemmPrecision(p Precision, transA, transB bool, m, n, k int, alpha float64, a, b Buffer, beta float64, c Buffer) error {
	r.rec("GemmPrecision")
	return nil
}

// allCaps sets every field of Caps to r, failing when r does not implement one (a new
// capability must be added to the recorder, and so to these tests).
func allCaps(t *testing.T, r *recorder) Caps {
	t.Helper()
	var c Caps
	v := reflect.ValueOf(&c).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		if !reflect.TypeOf(r).Implements(f.Type) {
			t.Fatalf("the test backend does not implement capability %s (%v)", f.Name, f.Type)
		}
		v.Field(i).Set(reflect.ValueOf(r))
	}
	return c
}

// newRec returns a checked front over a recorder that has every capability.
func newRec(t *testing.T, name string) (*Checked, *recorder) {
	t.Helper()
	r := &recorder{name: name, precs: []Precision{FP32}}
	r.caps = allCaps(t, r)
	return New(r), r
}

// buffers returns a function that returns a buffer, failing t on an error.
func buffers(t *testing.T) func(Buffer, error) Buffer {
	return func(b Buffer, err error) Buffer {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

// foreign is a Buffer of no device.
type foreign struct{}

func (foreign) Len() int { return 1 << 20 }

// TestBadArguments: every bad argument of every operation gives an error that names the
// device and the operation (wrapping ErrSize where the sizes disagree), and the backend is
// not called.
func TestBadArguments(t *testing.T) {
	must := buffers(t)
	d, r := newRec(t, "rec")
	other, _ := newRec(t, "rec")
	otherKind, _ := newRec(t, "gpu")
	a := must(d.Alloc(16))
	b := must(d.Alloc(16))
	big := must(d.Alloc(32))
	freed := must(d.Alloc(16))
	d.Free(freed)
	theirs := must(other.Alloc(16))
	gpuBuf := must(otherKind.Alloc(16))
	lo := must(View(big, 0, 16))  // [0, 16) of big
	mid := must(View(big, 8, 16)) // [8, 24): overlaps lo and hi partially
	hi := must(View(big, 16, 16)) // [16, 32)
	short3 := must(View(b, 0, 3))
	gone := freedView(t, d)
	tr := d.Capabilities().Trainer
	qf := d.Capabilities().QuadFormSummer
	ds := d.Capabilities().DeepSampler
	pg := d.Capabilities().PrecisionGemmer
	pf := d.Capabilities().Prefetcher
	dIn := must(d.Alloc(2 * channel.DeepIn(3)))
	dOut := must(d.Alloc(2 * channel.DeepOut(3)))
	dBoth := must(d.Alloc(2 * (channel.DeepIn(3) + channel.DeepOut(3))))
	sm := channel.Spec{Kind: channel.KindSoftmax, T: 2, Beta: 1}
	f64 := func(_ float64, err error) error { return err }
	alloc := func(_ Buffer, err error) error { return err }

	cases := []struct {
		name string
		op   string // the operation the error must name
		size bool   // the error wraps ErrSize
		call func() error
		want string // a further substring of the error
	}{
		{"Alloc negative", "Alloc", false, func() error { return alloc(d.Alloc(-1)) }, "negative"},
		{"Alloc beyond int64 bytes", "Alloc", false, func() error { return alloc(d.Alloc(math.MaxInt)) }, "available"},

		{"Upload nil", "Upload", false, func() error { return d.Upload(nil, nil) }, "nil"},
		{"Upload short", "Upload", true, func() error { return d.Upload(a, make([]float64, 17)) }, "buffer dst"},
		{"Upload freed", "Upload", false, func() error { return d.Upload(freed, nil) }, "was freed"},
		{"Upload foreign", "Upload", false, func() error { return d.Upload(foreign{}, nil) }, "not a buffer of the rec device"},
		{"Upload other device", "Upload", false, func() error { return d.Upload(theirs, nil) }, "another rec device"},
		{"Upload other kind", "Upload", false, func() error { return d.Upload(gpuBuf, nil) }, "gpu device, not a buffer of the rec device"},
		{"Download short", "Download", true, func() error { return d.Download(make([]float64, 17), a) }, "buffer src"},
		{"Download view short", "Download", true, func() error { return d.Download(make([]float64, 17), mid) }, "buffer src"},
		{"Copy short", "Copy", true, func() error { return d.Copy(a, big) }, "buffer dst"},
		{"Copy overlap", "Copy", false, func() error { return d.Copy(lo, mid) }, "overlap"},

		{"Gemm negative", "Gemm", true, func() error { return d.Gemm(false, false, -1, 2, 2, 1, a, b, 0, big) }, "negative"},
		{"Gemm overflow", "Gemm", true, func() error { return d.Gemm(false, false, math.MaxInt/2, 1, 4, 1, a, b, 0, big) }, "overflow"},
		{"Gemm short a", "Gemm", true, func() error { return d.Gemm(false, false, 4, 4, 5, 1, a, big, 0, b) }, "buffer a"},
		{"Gemm short b", "Gemm", true, func() error { return d.Gemm(false, false, 4, 5, 4, 1, a, b, 0, big) }, "buffer b"},
		{"Gemm short c", "Gemm", true, func() error { return d.Gemm(false, false, 5, 4, 2, 1, a, a, 0, b) }, "buffer c"},
		{"Gemm c = a", "Gemm", false, func() error { return d.Gemm(false, false, 4, 4, 4, 1, a, b, 0, a) }, "must not overlap"},
		{"Gemm c overlaps b", "Gemm", false, func() error { return d.Gemm(false, false, 4, 4, 4, 1, a, lo, 0, mid) }, "must not overlap"},
		{"Gemm freed", "Gemm", false, func() error { return d.Gemm(false, false, 2, 2, 2, 1, a, freed, 0, b) }, "was freed"},
		{"GemmStridedBatched negative batch", "GemmStridedBatched", true, func() error { return d.GemmStridedBatched(false, false, 2, 2, 2, 1, a, 4, b, 4, 0, big, 4, -1) }, "negative"},
		{"GemmStridedBatched negative stride", "GemmStridedBatched", true, func() error { return d.GemmStridedBatched(false, false, 2, 2, 2, 1, a, -4, b, 4, 0, big, 4, 2) }, "negative"},
		{"GemmStridedBatched overflow", "GemmStridedBatched", true, func() error {
			return d.GemmStridedBatched(false, false, 1, 1, 1, 1, a, math.MaxInt/2, b, 0, 0, big, 1, 4)
		}, "overflow"},
		{"GemmStridedBatched short a", "GemmStridedBatched", true, func() error { return d.GemmStridedBatched(false, false, 2, 2, 2, 1, a, 8, b, 0, 0, big, 4, 3) }, "buffer a"},
		{"GemmStridedBatched short c", "GemmStridedBatched", true, func() error { return d.GemmStridedBatched(false, false, 2, 2, 2, 1, a, 0, b, 0, 0, a, 8, 3) }, "buffer c"},
		{"GemmStridedBatched c products overlap", "GemmStridedBatched", false, func() error { return d.GemmStridedBatched(false, false, 2, 2, 2, 1, a, 0, b, 0, 0, big, 3, 2) }, "would overlap"},
		{"GemmStridedBatched c overlaps b", "GemmStridedBatched", false, func() error { return d.GemmStridedBatched(false, false, 2, 2, 2, 1, a, 0, lo, 8, 0, mid, 4, 2) }, "must not overlap"},
		{"GemmStridedBatched freed", "GemmStridedBatched", false, func() error { return d.GemmStridedBatched(false, false, 2, 2, 2, 1, freed, 0, b, 0, 0, big, 4, 1) }, "was freed"},

		{"TokenDots negative", "TokenDots", true, func() error { return d.TokenDots(a, b, big, 1, -3, 2) }, "negative"},
		{"TokenDots short h", "TokenDots", true, func() error { return d.TokenDots(a, big, big, 2, 3, 5) }, "buffer h"},
		{"TokenDots short y", "TokenDots", true, func() error { return d.TokenDots(b, a, big, 1, 3, 6) }, "buffer y"},
		{"TokenDots short x", "TokenDots", true, func() error { return d.TokenDots(b, big, a, 1, 3, 6) }, "buffer x"},
		{"TokenDots h overlaps y", "TokenDots", false, func() error { return d.TokenDots(lo, mid, hi, 4, 2, 2) }, "must not overlap"},
		{"TokenMix short z", "TokenMix", true, func() error { return d.TokenMix(a, b, big, 2, 3, 5) }, "buffer z"},
		{"TokenMix short c", "TokenMix", true, func() error { return d.TokenMix(big, a, big, 2, 3, 5) }, "buffer c"},
		{"TokenMix z = x", "TokenMix", false, func() error { return d.TokenMix(big, a, big, 1, 4, 8) }, "must not overlap"},

		{"ChannelOutput unknown", "ChannelOutput", false, func() error { return d.ChannelOutput(channel.Spec{Kind: 7, T: 2}, a, b, 1) }, "channel(7)"},
		{"ChannelOutput T = 0", "ChannelOutput", true, func() error { return d.ChannelOutput(channel.Spec{Kind: channel.KindSoftmax, Beta: 1}, a, b, 1) }, "T = 0"},
		{"ChannelOutput softmax beta 0", "ChannelOutput", false, func() error { return d.ChannelOutput(channel.Spec{Kind: channel.KindSoftmax, T: 2}, a, b, 1) }, "beta = 0"},
		{"ChannelOutput softmax T = 1", "ChannelOutput", false, func() error { return d.ChannelOutput(channel.Spec{Kind: channel.KindSoftmax, T: 1, Beta: 1}, a, b, 1) }, "T = 1"},
		{"ChannelGOut hardmax T = 7", "ChannelGOut", false, func() error {
			return f64(d.ChannelGOut(channel.Spec{Kind: channel.KindHardmax, T: 7}, a, b, big, 1, 1))
		}, "need 2 <= T <= 6"},
		{"ChannelGOut hardmax T = 3 paper", "ChannelGOut", false, func() error {
			return f64(d.ChannelGOut(channel.Spec{Kind: channel.KindHardmax, T: 3, PaperCompat: true}, a, b, big, 1, 1))
		}, "T = 2 only"},
		{"ChannelGOut hardmax T = 3 points", "ChannelGOut", false, func() error {
			return f64(d.ChannelGOut(channel.Spec{Kind: channel.KindHardmax, T: 3, Points: -1}, a, b, big, 1, 1))
		}, "lattice points"},
		{"ChannelGOut hardmax T = 3 tol", "ChannelGOut", false, func() error {
			return f64(d.ChannelGOut(channel.Spec{Kind: channel.KindHardmax, T: 3, Tol: math.NaN()}, a, b, big, 1, 1))
		}, "tolerance"},
		{"ChannelOutput negative n", "ChannelOutput", true, func() error { return d.ChannelOutput(sm, a, b, -1) }, "negative"},
		{"ChannelOutput short h", "ChannelOutput", true, func() error { return d.ChannelOutput(sm, big, a, 5) }, "buffer h"},
		{"ChannelOutput short y", "ChannelOutput", true, func() error { return d.ChannelOutput(sm, a, big, 5) }, "buffer y"},
		{"ChannelOutput y overlaps h", "ChannelOutput", false, func() error { return d.ChannelOutput(sm, lo, mid, 4) }, "overlap"},
		{"ChannelGOut V = 0", "ChannelGOut", false, func() error { return f64(d.ChannelGOut(sm, a, b, big, 1, 0)) }, "V"},
		{"ChannelGOut V = inf", "ChannelGOut", false, func() error { return f64(d.ChannelGOut(sm, a, b, big, 1, math.Inf(1))) }, "V"},
		{"ChannelGOut V = NaN", "ChannelGOut", false, func() error { return f64(d.ChannelGOut(sm, a, b, big, 1, math.NaN())) }, "V"},
		{"ChannelGOut short omega", "ChannelGOut", true, func() error { return f64(d.ChannelGOut(sm, big, big, a, 5, 1)) }, "buffer omega"},
		{"ChannelGOut g = y", "ChannelGOut", false, func() error { return f64(d.ChannelGOut(sm, a, a, b, 4, 1)) }, "must not overlap"},
		{"ChannelGOut g overlaps omega", "ChannelGOut", false, func() error { return f64(d.ChannelGOut(sm, lo, a, mid, 4, 1)) }, "overlap"},

		{"EighSym negative", "EighSym", true, func() error { return d.EighSym(a, b, big, -1) }, "negative"},
		{"EighSym short vals", "EighSym", true, func() error { return d.EighSym(a, big, big, 17) }, "buffer vals"},
		{"EighSym short vecs", "EighSym", true, func() error { return d.EighSym(a, b, big, 5) }, "buffer vecs"},
		{"EighSym vecs = a", "EighSym", false, func() error { return d.EighSym(a, big, big, 4) }, "distinct"},
		{"EighSym vals overlaps vecs", "EighSym", false, func() error { return d.EighSym(mid, lo, b, 4) }, "distinct"},
		{"SpectralCompose short out", "SpectralCompose", true, func() error { return d.SpectralCompose(b, big, a, 5) }, "buffer out"},
		{"SpectralCompose short f", "SpectralCompose", true, func() error { return d.SpectralCompose(a, hi, short3, 4) }, "buffer f"},
		{"SpectralCompose out = vecs", "SpectralCompose", false, func() error { return d.SpectralCompose(a, a, b, 4) }, "must not overlap"},
		{"SpectralCompose out overlaps f", "SpectralCompose", false, func() error { return d.SpectralCompose(lo, b, mid, 4) }, "must not overlap"},

		{"Scal nil", "Scal", false, func() error { return d.Scal(nil, 1) }, "nil"},
		{"Scal freed", "Scal", false, func() error { return d.Scal(freed, 1) }, "was freed"},
		{"Scal view of freed", "Scal", false, func() error { return d.Scal(gone, 1) }, "was freed"},
		{"Axpby unequal", "Axpby", true, func() error { return d.Axpby(a, 1, big, 1) }, "equal lengths"},
		{"Axpby overlap", "Axpby", false, func() error { return d.Axpby(lo, 1, mid, 1) }, "overlap"},
		{"Dot unequal", "Dot", true, func() error { return f64(d.Dot(a, big)) }, "equal lengths"},
		{"Dot foreign", "Dot", false, func() error { return f64(d.Dot(a, foreign{})) }, "not a buffer"},
		{"SqDist unequal", "SqDist", true, func() error { return f64(d.SqDist(big, a)) }, "equal lengths"},
		{"AddDiag negative", "AddDiag", true, func() error { return d.AddDiag(a, -2, 3, 1) }, "negative"},
		{"AddDiag short", "AddDiag", true, func() error { return d.AddDiag(a, 2, 3, 1) }, "buffer x"},
		{"SumDiag negative", "SumDiag", true, func() error { return f64(d.SumDiag(a, 2, -3)) }, "negative"},
		{"SumDiag short", "SumDiag", true, func() error { return f64(d.SumDiag(a, 2, 3)) }, "buffer x"},
		{"MulPattern negative", "MulPattern", true, func() error { return d.MulPattern(big, a, -1, 4) }, "negative"},
		{"MulPattern short x", "MulPattern", true, func() error { return d.MulPattern(a, b, 2, 9) }, "buffer x"},
		{"MulPattern short p", "MulPattern", true, func() error { return d.MulPattern(big, a, 1, 17) }, "buffer p"},
		{"MulPattern p overlaps x", "MulPattern", false, func() error { return d.MulPattern(lo, mid, 2, 8) }, "must not overlap"},
		{"GaussianFill freed", "GaussianFill", false, func() error { return d.GaussianFill(freed, 1, 0, 1) }, "was freed"},
		{"GaussianFill other device", "GaussianFill", false, func() error { return d.GaussianFill(theirs, 1, 0, 1) }, "another rec device"},
		{"GaussianFillAsync freed", "GaussianFillAsync", false, func() error { _, err := pf.GaussianFillAsync(freed, 1, 0, 1); return err }, "was freed"},
		{"GaussianFillAsync nil", "GaussianFillAsync", false, func() error { _, err := pf.GaussianFillAsync(nil, 1, 0, 1); return err }, "nil"},

		{"SoftmaxLossGrad hardmax", "SoftmaxLossGrad", false, func() error {
			return f64(tr.SoftmaxLossGrad(channel.Spec{Kind: channel.KindHardmax, T: 2}, a, b, big, 1, 1))
		}, "no useful gradient"},
		{"SoftmaxLossGrad negative n", "SoftmaxLossGrad", true, func() error { return f64(tr.SoftmaxLossGrad(sm, a, b, big, -1, 1)) }, "n = -1"},
		{"SoftmaxLossGrad T = 0", "SoftmaxLossGrad", true, func() error {
			return f64(tr.SoftmaxLossGrad(channel.Spec{Kind: channel.KindSoftmax, Beta: 1}, a, b, big, 1, 1))
		}, "t = 0"},
		{"SoftmaxLossGrad short gamma", "SoftmaxLossGrad", true, func() error { return f64(tr.SoftmaxLossGrad(sm, a, big, big, 5, 1)) }, "buffer gamma"},
		{"SoftmaxLossGrad short y", "SoftmaxLossGrad", true, func() error { return f64(tr.SoftmaxLossGrad(sm, big, big, a, 5, 1)) }, "buffer y"},
		{"SoftmaxLossGrad overlap", "SoftmaxLossGrad", false, func() error { return f64(tr.SoftmaxLossGrad(sm, lo, mid, a, 4, 1)) }, "overlap"},
		{"AdamStep t = 0", "AdamStep", false, func() error { return tr.AdamStep(a, b, lo, hi, 0.1, 0.9, 0.99, 1e-8, 0) }, "t >= 1"},
		{"AdamStep unequal w g", "AdamStep", true, func() error { return tr.AdamStep(a, big, lo, hi, 0.1, 0.9, 0.99, 1e-8, 1) }, "equal lengths"},
		{"AdamStep unequal m v", "AdamStep", true, func() error { return tr.AdamStep(a, b, big, hi, 0.1, 0.9, 0.99, 1e-8, 1) }, "equal lengths"},
		{"AdamStep m w", "AdamStep", true, func() error { return tr.AdamStep(a, b, big, big, 0.1, 0.9, 0.99, 1e-8, 1) }, "m holds"},
		{"AdamStep overlap", "AdamStep", false, func() error { return tr.AdamStep(a, b, lo, mid, 0.1, 0.9, 0.99, 1e-8, 1) }, "overlap"},
		{"AdamStep freed", "AdamStep", false, func() error { return tr.AdamStep(a, b, freed, hi, 0.1, 0.9, 0.99, 1e-8, 1) }, "was freed"},
		{"QuadFormSum negative", "QuadFormSum", true, func() error { return qf.QuadFormSum(a, b, big, big, 1, 2, -2, 1) }, "negative"},
		{"QuadFormSum short out", "QuadFormSum", true, func() error { return qf.QuadFormSum(a, b, big, big, 1, 2, 5, 1) }, "buffer out"},
		{"QuadFormSum short scratch", "QuadFormSum", true, func() error { return qf.QuadFormSum(b, a, big, short3, 2, 2, 4, 1) }, "buffer scratch"},
		{"QuadFormSum out = scratch", "QuadFormSum", false, func() error { return qf.QuadFormSum(a, b, big, a, 2, 2, 2, 1) }, "distinct"},
		{"QuadFormSum scratch overlaps x", "QuadFormSum", false, func() error { return qf.QuadFormSum(a, b, lo, mid, 2, 2, 4, 1) }, "distinct"},
		{"GemmPrecision undeclared", "GemmPrecision", false, func() error { return pg.GemmPrecision(TF32, false, false, 2, 2, 2, 1, a, b, 0, big) }, "not supported on this device yet"},
		{"GemmPrecision invalid", "GemmPrecision", false, func() error { return pg.GemmPrecision(Precision(9), false, false, 2, 2, 2, 1, a, b, 0, big) }, "not a precision"},
		{"GemmPrecision negative", "GemmPrecision", true, func() error { return pg.GemmPrecision(FP32, false, false, -1, 2, 2, 1, a, b, 0, big) }, "negative"},
		{"GemmPrecision short c", "GemmPrecision", true, func() error { return pg.GemmPrecision(FP32, false, false, 4, 5, 2, 1, a, lo, 0, b) }, "buffer c"},
		{"GemmPrecision overlap", "GemmPrecision", false, func() error { return pg.GemmPrecision(FP32, false, false, 4, 4, 4, 1, lo, b, 0, mid) }, "overlap"},
		{"DeepSample L = 5", "DeepSample", false, func() error { return ds.DeepSample(dOut, dIn, 2, 5, 10, 1, 1, 1, 0, 40) }, "L = 5 layers"},
		{"DeepSample negative", "DeepSample", true, func() error { return ds.DeepSample(dOut, dIn, -1, 3, 10, 1, 1, 1, 0, 40) }, "negative"},
		{"DeepSample one draw", "DeepSample", false, func() error { return ds.DeepSample(dOut, dIn, 2, 3, 1, 1, 1, 1, 0, 40) }, "need >= 2"},
		{"DeepSample NaN beta", "DeepSample", false, func() error { return ds.DeepSample(dOut, dIn, 2, 3, 10, 1, math.NaN(), 1, 0, 40) }, "finite"},
		{"DeepSample odd offset", "DeepSample", false, func() error { return ds.DeepSample(dOut, dIn, 2, 3, 10, 1, 1, 1, 3, 40) }, "even"},
		{"DeepSample short stride", "DeepSample", false, func() error { return ds.DeepSample(dOut, dIn, 2, 3, 10, 1, 1, 1, 0, 38) }, "stride >= 40"},
		{"DeepSample short in", "DeepSample", true, func() error { return ds.DeepSample(dOut, short3, 2, 3, 10, 1, 1, 1, 0, 40) }, "buffer in"},
		{"DeepSample short out", "DeepSample", true, func() error { return ds.DeepSample(dIn, dIn, 2, 3, 10, 1, 1, 1, 0, 40) }, "buffer out"},
		{"DeepSample overlap", "DeepSample", false, func() error {
			return ds.DeepSample(must(View(dBoth, 0, 2*channel.DeepOut(3))), must(View(dBoth, 2*channel.DeepOut(3)-1, 2*channel.DeepIn(3))), 2, 3, 10, 1, 1, 1, 0, 40)
		}, "overlaps"},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		before := len(r.calls)
		err := c.call()
		seen[c.op] = true
		switch {
		case err == nil:
			t.Errorf("%s: no error", c.name)
		case !strings.HasPrefix(err.Error(), "rec "+c.op+": "):
			t.Errorf("%s: error %q does not start with the operation %q", c.name, err, "rec "+c.op)
		case !strings.Contains(err.Error(), c.want):
			t.Errorf("%s: error %q does not mention %q", c.name, err, c.want)
		case c.size && !errors.Is(err, ErrSize):
			t.Errorf("%s: error %q does not wrap ErrSize", c.name, err)
		}
		if len(r.calls) != before {
			t.Errorf("%s: the backend was called (%v) on bad arguments", c.name, r.calls[before:])
		}
	}
	// Every operation of Ops and of the capabilities has cases.
	for _, typ := range []reflect.Type{reflect.TypeFor[Ops](), reflect.TypeFor[Trainer](), reflect.TypeFor[QuadFormSummer](), reflect.TypeFor[DeepSampler](), reflect.TypeFor[PrecisionGemmer]()} {
		for i := 0; i < typ.NumMethod(); i++ {
			if m := typ.Method(i).Name; !seen[m] && m != "Precisions" { // a query: nothing to refuse
				t.Errorf("no bad-argument case for %s", m)
			}
		}
	}
}

// freedView returns a view of a buffer that has been freed.
func freedView(t *testing.T, d *Checked) Buffer {
	t.Helper()
	must := buffers(t)
	b := must(d.Alloc(8))
	v := must(View(b, 2, 4))
	d.Free(b)
	return v
}

// TestGoodArguments: valid arguments, including the overlaps Ops allows, reach the backend,
// once per call, with the backend's buffers of the right lengths.
func TestGoodArguments(t *testing.T) {
	d, r := newRec(t, "rec")
	for _, c := range goodCalls(t, d) {
		before := len(r.calls)
		if err := c.call(); err != nil {
			t.Errorf("%s: %v", c.op, err)
		}
		if got := r.calls[before:]; !slices.Equal(got, []string{c.op}) {
			t.Errorf("%s: the backend saw %v", c.op, got)
		}
	}
	// Copy of a range onto itself does nothing.
	must := buffers(t)
	mid := must(View(must(d.Alloc(32)), 8, 16))
	before := len(r.calls)
	if err := d.Copy(mid, mid); err != nil || len(r.calls) != before {
		t.Errorf("Copy onto itself: %v, backend calls %v", err, r.calls[before:])
	}
}

// opCall is one call of an operation through a front, named as the front names it.
type opCall struct {
	op   string
	call func() error
}

// goodCalls returns a call with good arguments of every operation of d, each calling the
// backend once, two for Gemm, GemmStridedBatched and DeepSample (empty sizes among them).
func goodCalls(t *testing.T, d *Checked) []opCall {
	must := buffers(t)
	a := must(d.Alloc(16))
	b := must(d.Alloc(16))
	big := must(d.Alloc(32))
	lo := must(View(big, 0, 16))
	mid := must(View(big, 8, 16))
	hi := must(View(big, 16, 16))
	tr := d.Capabilities().Trainer
	qf := d.Capabilities().QuadFormSummer
	ds := d.Capabilities().DeepSampler
	pg := d.Capabilities().PrecisionGemmer
	pf := d.Capabilities().Prefetcher
	dBoth := must(d.Alloc(channel.DeepIn(3) + channel.DeepOut(3)))
	sm := channel.Spec{Kind: channel.KindSoftmax, T: 2, Beta: 1}
	f64 := func(_ float64, err error) error { return err }
	return []opCall{
		{"Upload", func() error { return d.Upload(mid, make([]float64, 16)) }},
		{"Download", func() error { return d.Download(make([]float64, 3), hi) }},
		{"Copy", func() error { return d.Copy(hi, lo) }},
		{"Gemm", func() error { return d.Gemm(true, false, 4, 4, 4, 1, lo, lo, 0, hi) }},                                         // A = B
		{"Gemm", func() error { return d.Gemm(false, false, 0, 4, 4, 1, a, b, 0, a) }},                                           // C = A, both empty
		{"GemmStridedBatched", func() error { return d.GemmStridedBatched(false, false, 2, 2, 4, 1, a, 0, b, 8, 0, lo, 4, 2) }},  // A shared
		{"GemmStridedBatched", func() error { return d.GemmStridedBatched(true, true, 4, 4, 4, 1, lo, 0, lo, 0, 0, hi, 16, 0) }}, // no products
		{"TokenDots", func() error { return d.TokenDots(lo, a, b, 2, 2, 4) }},
		{"TokenMix", func() error { return d.TokenMix(hi, lo, a, 2, 2, 4) }},
		{"ChannelOutput", func() error { return d.ChannelOutput(sm, mid, mid, 4) }}, // in place
		{"ChannelGOut", func() error { return f64(d.ChannelGOut(sm, lo, hi, lo, 4, 1)) }},
		{"EighSym", func() error { return d.EighSym(a, lo, hi, 4) }},
		{"SpectralCompose", func() error { return d.SpectralCompose(lo, hi, a, 4) }},
		{"Scal", func() error { return d.Scal(mid, 2) }},
		{"Axpby", func() error { return d.Axpby(mid, 1, mid, 1) }}, // x = y
		{"Dot", func() error { return f64(d.Dot(lo, mid)) }},       // inputs may overlap
		{"SqDist", func() error { return f64(d.SqDist(a, hi)) }},
		{"AddDiag", func() error { return d.AddDiag(hi, 4, 2, 1) }},
		{"SumDiag", func() error { return f64(d.SumDiag(lo, 1, 4)) }},
		{"MulPattern", func() error { return d.MulPattern(lo, hi, 4, 4) }},
		{"GaussianFill", func() error { return d.GaussianFill(mid, 1, 8, 1) }},
		{"GaussianFillAsync", func() error {
			wait, err := pf.GaussianFillAsync(mid, 1, 8, 1)
			if err != nil {
				return err
			}
			return wait()
		}},
		{"SoftmaxLossGrad", func() error { return f64(tr.SoftmaxLossGrad(sm, lo, lo, hi, 4, 1)) }},
		{"AdamStep", func() error { return tr.AdamStep(a, b, lo, hi, 0.1, 0.9, 0.99, 1e-8, 1) }},
		{"QuadFormSum", func() error { return qf.QuadFormSum(a, lo, hi, b, 4, 2, 2, 1) }},
		{"GemmPrecision", func() error { return pg.GemmPrecision(FP32, true, false, 4, 4, 4, 1, lo, lo, 0, hi) }},
		{"DeepSample", func() error { // out and in adjacent views of one buffer
			return ds.DeepSample(must(View(dBoth, 0, channel.DeepOut(3))), must(View(dBoth, channel.DeepOut(3), channel.DeepIn(3))), 1, 3, 10, 1, 1, 1, 2, 40)
		}},
		{"DeepSample", func() error { return ds.DeepSample(a, b, 0, 3, 2, 0, 0, 0, 0, 8) }}, // no tasks
	}
}

// TestObserver: an observer sees every operation that reaches the backend once, under the
// front's name for it, with the backend's call inside its run; its error is the operation's;
// refused operations are not observed; Observe(nil) removes it.
func TestObserver(t *testing.T) {
	d, r := newRec(t, "rec")
	var seen []string
	var inside []string // the backend's calls during each run
	d.Observe(func(op string, run func() error) error {
		seen = append(seen, op)
		before := len(r.calls)
		err := run()
		inside = append(inside, strings.Join(r.calls[before:], ","))
		return err
	})
	for _, c := range goodCalls(t, d) {
		seen, inside = nil, nil
		if err := c.call(); err != nil {
			t.Errorf("%s: %v", c.op, err)
		}
		wantSeen, wantInside := []string{c.op}, []string{c.op}
		if c.op == "GaussianFillAsync" { // its start and its wait, which calls no operation
			wantSeen, wantInside = append(wantSeen, "GaussianFillWait"), append(wantInside, "")
		}
		if !slices.Equal(seen, wantSeen) || !slices.Equal(inside, wantInside) {
			t.Errorf("%s: the observer saw %v, the backend ran %v inside it; want each once", c.op, seen, inside)
		}
	}
	seen = nil
	if err := d.Scal(foreign{}, 1); err == nil || len(seen) != 0 {
		t.Errorf("refused Scal: error %v, observed %v; want an error and nothing observed", err, seen)
	}
	stop := errors.New("stop")
	d.Observe(func(op string, run func() error) error { _ = run(); return stop })
	x, _ := d.Alloc(4)
	if _, err := d.Dot(x, x); err != stop {
		t.Errorf("Dot under an observer that fails: %v, want its error", err)
	}
	d.Observe(nil)
	seen = nil
	if err := d.Scal(x, 1); err != nil || len(seen) != 0 {
		t.Errorf("Scal after Observe(nil): %v, observed %v", err, seen)
	}
}

// TestView: views compose, check their range, share the allocation's life, and freeing one
// does nothing.
func TestView(t *testing.T) {
	must := buffers(t)
	d, r := newRec(t, "rec")
	b := must(d.Alloc(10))
	v := must(View(b, 2, 6))
	w := must(View(v, 1, 3)) // values 3, 4, 5 of b
	if v.Len() != 6 || w.Len() != 3 {
		t.Errorf("Len of views: %d, %d", v.Len(), w.Len())
	}
	fw := w.(*buffer)
	if fw.off != 3 || fw.n != 3 || fw.root != b.(*buffer).root || fw.raw.Len() != 3 {
		t.Errorf("view of a view: off %d n %d raw %d", fw.off, fw.n, fw.raw.Len())
	}
	if mv := MustView(b, 2, 6).(*buffer); mv.off != 2 || mv.n != 6 {
		t.Errorf("MustView: off %d n %d", mv.off, mv.n)
	}
	func() {
		defer func() {
			if r := recover(); r == nil {
				t.Error("MustView past the end did not panic")
			}
		}()
		MustView(b, 8, 6)
	}()
	if e := must(View(b, 10, 0)); e.Len() != 0 {
		t.Errorf("empty view at the end: Len %d", e.Len())
	}
	for _, c := range []struct{ off, n int }{{-1, 2}, {0, -1}, {9, 2}, {11, 0}, {math.MaxInt, 2}} {
		if _, err := View(b, c.off, c.n); err == nil || !errors.Is(err, ErrSize) || !strings.HasPrefix(err.Error(), "rec View: ") {
			t.Errorf("View(%d, %d): %v", c.off, c.n, err)
		}
	}
	if _, err := View(v, 4, 3); err == nil {
		t.Error("View beyond the end of a view succeeded")
	}
	if _, err := View(foreign{}, 0, 1); err == nil {
		t.Error("View of a foreign buffer succeeded")
	}
	if _, err := View(nil, 0, 1); err == nil {
		t.Error("View of nil succeeded")
	}
	d.Free(v) // a view: nothing
	if r.frees != 0 || v.Len() != 6 || b.Len() != 10 {
		t.Errorf("Free of a view: backend frees %d, Len %d %d", r.frees, v.Len(), b.Len())
	}
	if err := d.Scal(w, 2); err != nil {
		t.Errorf("Scal on a view after freeing another view: %v", err)
	}
	d.Free(b)
	d.Free(b)
	if r.frees != 1 || v.Len() != 0 || w.Len() != 0 {
		t.Errorf("Free of the buffer: backend frees %d, view Len %d %d", r.frees, v.Len(), w.Len())
	}
	if err := d.Scal(w, 2); err == nil || !strings.Contains(err.Error(), "was freed") {
		t.Errorf("Scal on a view of a freed buffer: %v", err)
	}
	if _, err := View(b, 0, 1); err == nil || !strings.Contains(err.Error(), "freed") {
		t.Errorf("View of a freed buffer: %v", err)
	}
}

// TestClose: Close closes the backend once; afterwards every operation fails with ErrClosed
// without calling the backend, and Free does nothing.
func TestClose(t *testing.T) {
	must := buffers(t)
	d, r := newRec(t, "rec")
	x := must(d.Alloc(4))
	tr := d.Capabilities().Trainer
	qf := d.Capabilities().QuadFormSummer
	ds := d.Capabilities().DeepSampler
	pg := d.Capabilities().PrecisionGemmer
	pf := d.Capabilities().Prefetcher
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil || r.closes != 1 {
		t.Errorf("second Close: %v, backend closed %d times", err, r.closes)
	}
	before := len(r.calls)
	sm := channel.Spec{Kind: channel.KindSoftmax, T: 2, Beta: 1}
	for op, err := range map[string]error{
		"Alloc":              func() error { _, err := d.Alloc(1); return err }(),
		"Upload":             d.Upload(x, nil),
		"Download":           d.Download(nil, x),
		"Copy":               d.Copy(x, x),
		"Gemm":               d.Gemm(false, false, 0, 0, 0, 1, x, x, 0, x),
		"GemmStridedBatched": d.GemmStridedBatched(false, false, 0, 0, 0, 1, x, 0, x, 0, 0, x, 0, 0),
		"TokenDots":          d.TokenDots(x, x, x, 0, 0, 0),
		"TokenMix":           d.TokenMix(x, x, x, 0, 0, 0),
		"ChannelOutput":      d.ChannelOutput(sm, x, x, 1),
		"ChannelGOut":        func() error { _, err := d.ChannelGOut(sm, x, x, x, 0, 1); return err }(),
		"EighSym":            d.EighSym(x, x, x, 0),
		"SpectralCompose":    d.SpectralCompose(x, x, x, 0),
		"Scal":               d.Scal(x, 1),
		"Axpby":              d.Axpby(x, 1, x, 1),
		"Dot":                func() error { _, err := d.Dot(x, x); return err }(),
		"SqDist":             func() error { _, err := d.SqDist(x, x); return err }(),
		"AddDiag":            d.AddDiag(x, 1, 2, 1),
		"SumDiag":            func() error { _, err := d.SumDiag(x, 1, 2); return err }(),
		"MulPattern":         d.MulPattern(x, x, 0, 0),
		"GaussianFill":       d.GaussianFill(x, 1, 0, 1),
		"SoftmaxLossGrad":    func() error { _, err := tr.SoftmaxLossGrad(sm, x, x, x, 1, 1); return err }(),
		"AdamStep":           tr.AdamStep(x, x, x, x, 0.1, 0.9, 0.99, 1e-8, 1),
		"QuadFormSum":        qf.QuadFormSum(x, x, x, x, 0, 0, 0, 1),
		"DeepSample":         ds.DeepSample(x, x, 0, 3, 2, 1, 1, 1, 0, 8),
		"GemmPrecision":      pg.GemmPrecision(FP32, false, false, 0, 0, 0, 1, x, x, 0, x),
		"GaussianFillAsync":  func() error { _, err := pf.GaussianFillAsync(x, 1, 0, 1); return err }(),
	} {
		if !errors.Is(err, ErrClosed) || !strings.HasPrefix(err.Error(), "rec "+op+": ") {
			t.Errorf("%s after Close: %v", op, err)
		}
	}
	d.Free(x)
	if len(r.calls) != before || r.frees != 0 {
		t.Errorf("the closed backend was called: %v, %d frees", r.calls[before:], r.frees)
	}
}

// TestFillInFlight: while a GaussianFillAsync writes a range, every operation that names a
// buffer overlapping it is refused before the backend sees it, others run; after its wait the
// range is free again, and a second wait returns the first's error. Free of the buffer, and
// Close, wait for the fills in flight first.
func TestFillInFlight(t *testing.T) {
	must := buffers(t)
	d, r := newRec(t, "rec")
	pf := d.Capabilities().Prefetcher
	big := must(d.Alloc(32))
	other := must(d.Alloc(16))
	lo := must(View(big, 0, 16))
	mid := must(View(big, 8, 16))
	hi := must(View(big, 16, 16))
	wait, err := pf.GaussianFillAsync(lo, 1, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	before := len(r.calls)
	for name, err := range map[string]error{
		"Scal of the range":      d.Scal(lo, 2),
		"Scal of an overlap":     d.Scal(mid, 2),
		"Scal of the whole":      d.Scal(big, 2),
		"Copy from it":           d.Copy(other, lo),
		"Dot with it":            func() error { _, err := d.Dot(other, mid); return err }(),
		"a second fill over it":  func() error { _, err := pf.GaussianFillAsync(mid, 1, 8, 1); return err }(),
		"GaussianFill over it":   d.GaussianFill(big, 1, 0, 1),
		"Gemm reading it as b":   d.Gemm(false, false, 2, 2, 2, 1, other, lo, 0, hi),
		"Download while filling": d.Download(make([]float64, 4), lo),
	} {
		if err == nil || !strings.Contains(err.Error(), "being filled by GaussianFillAsync") {
			t.Errorf("%s: %v, want it refused", name, err)
		}
	}
	if got := r.calls[before:]; len(got) != 0 {
		t.Errorf("the backend saw %v while the range was filling", got)
	}
	if err := d.Scal(hi, 2); err != nil {
		t.Errorf("Scal of the other half: %v", err)
	}
	if err := wait(); err != nil || !slices.Equal(r.waits, []string{"wait"}) {
		t.Fatalf("wait: %v, backend waits %v", err, r.waits)
	}
	if err := wait(); err != nil || len(r.waits) != 1 {
		t.Errorf("second wait: %v, backend waits %v; want the first's answer", err, r.waits)
	}
	if err := d.Scal(mid, 2); err != nil {
		t.Errorf("Scal after the wait: %v", err)
	}
	// Free and Close wait first.
	r.waits = nil
	if _, err := pf.GaussianFillAsync(hi, 1, 16, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := pf.GaussianFillAsync(other, 1, 0, 1); err != nil {
		t.Fatal(err)
	}
	d.Free(big)
	if !slices.Equal(r.waits, []string{"wait", "free"}) {
		t.Errorf("Free during a fill: backend calls %v, want the wait before the free", r.waits)
	}
	if err := d.Close(); err != nil || !slices.Equal(r.waits, []string{"wait", "free", "wait", "close"}) {
		t.Errorf("Close during a fill: %v, backend calls %v, want the wait before the close", err, r.waits)
	}
}

// failingFill is a recorder whose fills fail in their wait, or panic there.
type failingFill struct {
	*recorder
	panics bool
}

func (f failingFill) GaussianFillAsync(x Buffer, seed, offset uint64, scale float64) (func() error, error) {
	return func() error {
		if f.panics {
			panic("boom")
		}
		return errors.New("lost")
	}, nil
}

// TestFillErrors: the error of a fill, or a panic in its wait, comes back from the wait, and
// from a second wait after Free or Close waited.
func TestFillErrors(t *testing.T) {
	for _, panics := range []bool{false, true} {
		r := &recorder{name: "rec"}
		fr := failingFill{r, panics}
		r.caps = Caps{Prefetcher: fr}
		d := New(fr)
		x, err := d.Alloc(4)
		if err != nil {
			t.Fatal(err)
		}
		want := "lost"
		if panics {
			want = "rec GaussianFillAsync: panic in the backend: boom"
		}
		wait, err := d.Capabilities().Prefetcher.GaussianFillAsync(x, 1, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		d.Free(x)
		for i := range 2 {
			if err := wait(); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("panics %v, wait %d: %v, want %q", panics, i, err, want)
			}
		}
	}
}

// TestCapabilities: the front exposes exactly the capabilities of its backend, each behind the
// checks, and Names lists what is present.
func TestCapabilities(t *testing.T) {
	r := &recorder{name: "rec"}
	full := allCaps(t, r)
	fields := reflect.TypeFor[Caps]().NumField()
	for mask := 0; mask < 1<<fields; mask++ {
		caps := full
		v := reflect.ValueOf(&caps).Elem()
		var want []string
		for i := 0; i < fields; i++ {
			if mask&(1<<i) == 0 {
				v.Field(i).SetZero()
			} else {
				want = append(want, v.Type().Field(i).Name)
			}
		}
		r.caps = caps
		got := New(r).Capabilities()
		if !slices.Equal(got.Names(), want) {
			t.Errorf("backend with %v: the front has %v", want, got.Names())
		}
		gv := reflect.ValueOf(got)
		for i := 0; i < fields; i++ {
			if f := gv.Field(i); !f.IsNil() && f.Elem().Type() == reflect.TypeOf(r) {
				t.Errorf("capability %s is the backend's own, not behind the checks", gv.Type().Field(i).Name)
			}
		}
	}
	if got := full.Names(); !slices.Equal(got, []string{"Trainer", "QuadFormSummer", "DeepSampler", "PrecisionGemmer", "Prefetcher"}) {
		t.Errorf("Names of every capability: %v", got)
	}
	if got := (Caps{}).Names(); len(got) != 0 {
		t.Errorf("Names of none: %v", got)
	}
}

// TestScratchSizes: the front passes Scratch's work to the backend with negative sizes taken
// as operations not called, and returns the backend's answer; the caller's Products are left as
// they were.
func TestScratchSizes(t *testing.T) {
	d, r := newRec(t, "rec")
	products := [][3]int{{4, -1, 2}}
	w := Work{Eigh: -3, QuadForm: [3]int{5, -2, 7}, Samples: -1, Reduce: 9, Precision: TF32, Products: products}
	if got := d.Scratch(w); got != 8 {
		t.Errorf("Scratch = %d, want the backend's 8", got)
	}
	want := Work{QuadForm: [3]int{5, 0, 7}, Reduce: 9, Precision: TF32, Products: [][3]int{{4, 0, 2}}}
	if !reflect.DeepEqual(r.work, want) {
		t.Errorf("the backend saw %+v, want %+v", r.work, want)
	}
	if products[0] != [3]int{4, -1, 2} {
		t.Errorf("the caller's Products became %v", products)
	}
}

// TestBackendPanic: a panic in the backend comes back as an error naming the operation.
func TestBackendPanic(t *testing.T) {
	must := buffers(t)
	d, _ := newRec(t, "rec")
	x := must(d.Alloc(4))
	p := New(panicky{d.b.(*recorder)})
	y := must(p.Alloc(4))
	if err := p.Scal(y, 2); err == nil || !strings.Contains(err.Error(), "rec Scal: panic in the backend: boom") {
		t.Errorf("panicking Scal: %v", err)
	}
	_ = x
}

// panicky is a recorder whose Scal panics.
type panicky struct{ *recorder }

func (panicky) Scal(x Buffer, alpha float64) error { panic("boom") }

// TestCheckedAllocs: the checks allocate nothing on the way to the backend.
func TestCheckedAllocs(t *testing.T) {
	must := buffers(t)
	d, r := newRec(t, "rec")
	a := must(d.Alloc(16))
	b := must(d.Alloc(16))
	r.calls = make([]string, 0, 4096)
	if n := testing.AllocsPerRun(100, func() {
		_ = d.Gemm(false, false, 4, 4, 4, 1, a, a, 0, b)
		_, _ = d.Dot(a, b)
	}); n != 0 {
		t.Errorf("Gemm and Dot through the front: %v allocations per call", n)
	}
}

// TestCheckedChannelSupport: the front refuses a valid channel its backend does not declare
// (label noise on a backend without it) with an error wrapping channel.ErrUnsupported, before
// the backend is called, and passes it to a backend that declares it.
func TestCheckedChannelSupport(t *testing.T) {
	must := buffers(t)
	noisy := channel.Spec{Kind: channel.KindSoftmax, T: 2, Beta: 1, Noise: 0.01}
	for _, declared := range []bool{false, true} {
		r := &recorder{name: "rec", chans: channel.Support{Noise: declared}}
		d := New(r)
		if got := d.Channels(); got != r.chans {
			t.Errorf("Channels() = %+v, the backend declares %+v", got, r.chans)
		}
		a, b, c := must(d.Alloc(4)), must(d.Alloc(4)), must(d.Alloc(4))
		r.calls = nil
		errOut := d.ChannelOutput(noisy, a, b, 1)
		_, errG := d.ChannelGOut(noisy, a, b, c, 1, 1)
		for _, err := range []error{errOut, errG} {
			if declared && err != nil {
				t.Errorf("declared noise: %v", err)
			}
			if !declared && (!errors.Is(err, channel.ErrUnsupported) || !strings.HasPrefix(err.Error(), "rec Channel")) {
				t.Errorf("undeclared noise: error %v, want one from the front wrapping channel.ErrUnsupported", err)
			}
		}
		if want := map[bool]int{false: 0, true: 2}[declared]; len(r.calls) != want {
			t.Errorf("declared %v: the backend saw %v", declared, r.calls)
		}
	}
}
