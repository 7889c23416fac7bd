package cpu

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/device"
)

// TestDeterminism: the reductions give identical bits with 1, 3 and 16 workers (fixed-size
// chunks), on sizes that span many chunks.
func TestDeterminism(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	const n = 100003
	x, y := randVec(r, n), randVec(r, n)
	const ns, T = 3001, 3
	m := randSymBatch(r, ns, T, 1)
	omega := randSymBatch(r, ns, T, 1)
	ch := channel.Spec{Kind: channel.KindSoftmax, T: T, Beta: 1}
	hch := channel.Spec{Kind: channel.KindHardmax, T: 2}
	m2 := randSymBatch(r, ns, 2, 1)
	o2 := randSymBatch(r, ns, 2, 1)

	type result [6]float64
	run := func(workers int) result {
		d := New(workers)
		xb, yb, mb, ob := up(t, d, x), up(t, d, y), up(t, d, m), up(t, d, omega)
		var res result
		var err error
		if res[0], err = d.Dot(xb, yb); err != nil {
			t.Fatal(err)
		}
		if res[1], err = d.SqDist(xb, yb); err != nil {
			t.Fatal(err)
		}
		if res[2], err = d.SumDiag(mb, ns, T); err != nil {
			t.Fatal(err)
		}
		yy, _ := d.Alloc(ns * T * T)
		gb, _ := d.Alloc(ns * T * T)
		if err := d.ChannelOutput(ch, yy, mb, ns); err != nil {
			t.Fatal(err)
		}
		if res[3], err = d.ChannelGOut(ch, gb, yy, ob, ns, 0.9); err != nil {
			t.Fatal(err)
		}
		h2, y2, g2 := up(t, d, m2), up(t, d, make([]float64, ns*4)), up(t, d, make([]float64, ns*4))
		if err := d.ChannelOutput(hch, y2, h2, ns); err != nil {
			t.Fatal(err)
		}
		if res[4], err = d.ChannelGOut(hch, g2, y2, up(t, d, o2), ns, 0.9); err != nil {
			t.Fatal(err)
		}
		if res[5], err = d.Dot(gb, gb); err != nil {
			t.Fatal(err)
		}
		return res
	}
	r1 := run(1)
	for _, w := range []int{3, 16} {
		rw := run(w)
		for i := range r1 {
			if math.Float64bits(r1[i]) != math.Float64bits(rw[i]) {
				t.Errorf("reduction %d: workers 1 gives %v, workers %d gives %v", i, r1[i], w, rw[i])
			}
		}
	}
	t.Logf("Dot %v SqDist %v SumDiag %v GOut softmax %v hardmax %v", r1[0], r1[1], r1[2], r1[3], r1[4])
}

// fakeBuf is a buffer of no device.
type fakeBuf struct{}

func (fakeBuf) Len() int { return 1 << 20 }

func TestErrors(t *testing.T) {
	d := New(2)
	other := New(2)
	expect := func(what string, err error, subs ...string) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: no error", what)
			return
		}
		for _, s := range subs {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: error %q does not mention %q", what, err, s)
			}
		}
	}
	ok := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}

	// Alloc.
	_, err := d.Alloc(1 << 60)
	expect("Alloc(1<<60)", err, "cpu Alloc", "bytes", "available")
	_, err = d.Alloc(math.MaxInt)
	expect("Alloc(MaxInt)", err, "cpu Alloc", "bytes")
	_, err = d.Alloc(-1)
	expect("Alloc(-1)", err, "cpu Alloc", "negative")
	b0, err := d.Alloc(0)
	ok("Alloc(0)", err)
	if b0.Len() != 0 {
		t.Errorf("Alloc(0).Len() = %d", b0.Len())
	}

	a, _ := d.Alloc(16)
	b, _ := d.Alloc(16)
	foreign := fakeBuf{}
	theirs, _ := other.Alloc(16)
	freed, _ := d.Alloc(16)
	d.Free(freed)
	d.Free(freed)   // double free: no-op
	d.Free(foreign) // foreign: no-op
	if freed.Len() != 0 {
		t.Errorf("freed buffer Len = %d", freed.Len())
	}

	expect("Dot foreign", func() error { _, err := d.Dot(a, foreign); return err }(), "cpu Dot", "not a buffer of the cpu device")
	expect("Dot other device", func() error { _, err := d.Dot(theirs, a); return err }(), "cpu Dot", "another cpu device")
	expect("Dot freed", func() error { _, err := d.Dot(a, freed); return err }(), "cpu Dot", "freed")
	expect("Scal nil", d.Scal(nil, 1), "cpu Scal", "nil")
	expect("Upload freed", d.Upload(freed, []float64{1}), "cpu Upload", "freed")
	expect("Download freed", d.Download(make([]float64, 1), freed), "cpu Download", "freed")
	expect("Copy foreign", d.Copy(a, foreign), "cpu Copy")
	expect("Gemm freed", d.Gemm(false, false, 2, 2, 2, 1, a, freed, 0, b), "cpu Gemm", "freed")

	// Short buffers: errors wrap device.ErrSize and name the op and the buffer.
	short := func(what string, err error, subs ...string) {
		t.Helper()
		expect(what, err, subs...)
		if err != nil && !errors.Is(err, device.ErrSize) {
			t.Errorf("%s: %v does not wrap device.ErrSize", what, err)
		}
	}
	short("Upload", d.Upload(a, make([]float64, 17)), "cpu Upload", "dst")
	short("Download", d.Download(make([]float64, 17), a), "cpu Download", "src")
	big, _ := d.Alloc(32)
	short("Copy", d.Copy(a, big), "cpu Copy", "dst")
	short("Gemm a", d.Gemm(false, false, 4, 4, 5, 1, a, big, 0, b), "cpu Gemm", "buffer a")
	short("Gemm c", d.Gemm(false, false, 5, 4, 2, 1, a, a, 0, b), "cpu Gemm", "buffer c")
	short("Gemm negative", d.Gemm(false, false, -1, 4, 2, 1, a, big, 0, b), "cpu Gemm")
	short("TokenDots", d.TokenDots(b, a, big, 1, 3, 6), "cpu TokenDots", "buffer y")
	short("TokenMix", d.TokenMix(big, a, big, 2, 3, 5), "cpu TokenMix", "buffer c")
	ch := channel.Spec{Kind: channel.KindSoftmax, T: 3, Beta: 1}
	short("ChannelOutput", d.ChannelOutput(ch, big, a, 2), "cpu ChannelOutput", "buffer h")
	short("ChannelGOut", func() error { _, err := d.ChannelGOut(ch, big, big, a, 2, 1); return err }(), "cpu ChannelGOut", "buffer omega")
	short("EighSym", d.EighSym(a, b, big, 5), "cpu EighSym", "buffer vecs")
	short("SpectralCompose", d.SpectralCompose(b, big, a, 5), "cpu SpectralCompose", "buffer out")
	short("Axpby", d.Axpby(a, 1, big, 1), "cpu Axpby")
	short("Dot", func() error { _, err := d.Dot(a, big); return err }(), "cpu Dot")
	short("SqDist", func() error { _, err := d.SqDist(big, a); return err }(), "cpu SqDist")
	short("AddDiag", d.AddDiag(a, 2, 3, 1), "cpu AddDiag")
	short("SumDiag", func() error { _, err := d.SumDiag(a, 2, 3); return err }(), "cpu SumDiag")
	short("MulPattern", d.MulPattern(big, a, 1, 17), "cpu MulPattern", "buffer p")

	// Channel parameters.
	expect("hardmax T=7", d.ChannelOutput(channel.Spec{Kind: channel.KindHardmax, T: 7}, big, big, 1), "cpu ChannelOutput", "need 2 <= T <= 6")
	expect("softmax beta=0", d.ChannelOutput(channel.Spec{Kind: channel.KindSoftmax, T: 2}, big, big, 1), "cpu ChannelOutput", "beta")
	expect("unknown channel", d.ChannelOutput(channel.Spec{Kind: 7, T: 2}, big, big, 1), "cpu ChannelOutput", "channel(7)")
	expect("GOut V=0", func() error { _, err := d.ChannelGOut(ch, big, b, a, 1, 0); return err }(), "cpu ChannelGOut", "V")

	// Aliasing of outputs and inputs.
	expect("Gemm alias", d.Gemm(false, false, 4, 4, 4, 1, a, b, 0, a), "cpu Gemm", "must not")
	expect("TokenMix alias", d.TokenMix(big, a, big, 1, 4, 8), "cpu TokenMix", "must not")
	expect("EighSym alias", d.EighSym(a, big, big, 4), "cpu EighSym", "distinct")
	expect("SpectralCompose alias", d.SpectralCompose(a, a, b, 4), "cpu SpectralCompose", "must not")

	// Empty sizes are fine.
	e1, _ := d.Alloc(0)
	e2, _ := d.Alloc(0)
	ok("Gemm m=0", d.Gemm(false, true, 0, 4, 4, 1, b0, a, 0, e1))
	ok("EighSym d=0", d.EighSym(b0, b, a, 0))
	ok("TokenDots n=0", d.TokenDots(b0, e1, e2, 0, 3, 5))
}

// TestPanicBecomesError: a panic inside a parallel body is returned as an error naming the op.
func TestPanicBecomesError(t *testing.T) {
	for _, w := range []int{1, 4} {
		d := New(w)
		err := d.b.forChunks("cpu Test", 10, same(func(c int) {
			if c == 7 {
				panic(fmt.Sprintf("boom at %d", c))
			}
		}))
		if err == nil || !strings.Contains(err.Error(), "cpu Test: panic in chunk 7: boom at 7") {
			t.Errorf("workers %d: got %v", w, err)
		}
	}
}

// generatorReady reports whether device.FillNormals is the real generator (not the
// placeholder that panics).
func generatorReady() (ready bool, msg string) {
	defer func() {
		if r := recover(); r != nil {
			ready, msg = false, fmt.Sprint(r)
		}
	}()
	device.FillNormals(make([]float64, 1), 1, 0)
	return true, ""
}

// TestGaussianFill: the values are exactly scale * FillNormals(seed, offset) over the whole
// buffer, whatever the worker count and chunking, and look standard normal.
func TestGaussianFill(t *testing.T) {
	if ready, msg := generatorReady(); !ready {
		// The placeholder panics: the device must turn that into an error, not crash.
		d := New(3)
		x, _ := d.Alloc(10000)
		err := d.GaussianFill(x, 1, 0, 1)
		if err == nil || !strings.Contains(err.Error(), "cpu GaussianFill") {
			t.Errorf("GaussianFill with the placeholder generator: got %v, want an error", err)
		}
		t.Skipf("device.FillNormals is not implemented yet (%s): GaussianFill not checked", msg)
	}
	const n = 3*chunkElems + 123
	const seed, offset, scale = 0x5eed, 987654321, 0.37
	want := make([]float64, n)
	device.FillNormals(want, seed, offset)
	for i := range want {
		want[i] *= scale
	}
	for _, w := range []int{1, 3, 16} {
		d := New(w)
		x, _ := d.Alloc(n)
		if err := d.GaussianFill(x, seed, offset, scale); err != nil {
			t.Fatal(err)
		}
		got := down(t, d, x)
		for i := range got {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Fatalf("workers %d: x[%d] = %v, want %v", w, i, got[i], want[i])
			}
		}
		// A buffer filled from offset+5 is the same stream shifted by 5.
		y, _ := d.Alloc(n - 5)
		if err := d.GaussianFill(y, seed, offset+5, scale); err != nil {
			t.Fatal(err)
		}
		if gy := down(t, d, y); math.Float64bits(gy[0]) != math.Float64bits(want[5]) || math.Float64bits(gy[n-6]) != math.Float64bits(want[n-1]) {
			t.Errorf("workers %d: offset+5 stream is not the shifted stream", w)
		}
	}
	// Moments of the standard normal (n = 12411: standard errors 0.009 and 0.013).
	var m1, m2 float64
	for _, v := range want {
		m1 += v / scale
		m2 += (v / scale) * (v / scale)
	}
	m1 /= n
	m2 /= n
	if math.Abs(m1) > 0.05 || math.Abs(m2-1) > 0.07 {
		t.Errorf("mean %v, second moment %v: not standard normal", m1, m2)
	}
}
