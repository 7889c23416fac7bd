package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/aimtheory/aim/device"
)

// region is a view [off, off+n) of a buffer of off+n+tail random values, beside a buffer that
// holds a copy of the view's values.
type region struct {
	whole, view, copy device.Buffer
	host              []float64 // the whole buffer's values before the operation
	off, n            int
}

func newRegion(t *testing.T, d *Device, r *rand.Rand, off, n, tail int) region {
	t.Helper()
	host := randVec(r, off+n+tail)
	whole := up(t, d, host)
	view, err := device.View(whole, off, n)
	if err != nil {
		t.Fatal(err)
	}
	return region{whole: whole, view: view, copy: up(t, d, host[off:off+n]), host: host, off: off, n: n}
}

// check asserts that the view's values are bit for bit those of the copy, and that the rest
// of the buffer is unchanged.
func (g region) check(t *testing.T, d *Device, what string) {
	t.Helper()
	got, want := down(t, d, g.whole), down(t, d, g.copy)
	for i, v := range got {
		w := g.host[i]
		if i >= g.off && i < g.off+g.n {
			w = want[i-g.off]
		}
		if math.Float64bits(v) != math.Float64bits(w) {
			inside := i >= g.off && i < g.off+g.n
			t.Fatalf("%s: value %d (inside the view: %v) is %v, want %v", what, i, inside, v, w)
		}
	}
}

// TestViews: every operation on views at nonzero offsets gives bit for bit what it gives on
// copies of the views' values, and writes exactly the view's range of its output; on 1 and 3
// workers.
func TestViews(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, w := range []int{1, 3} {
		d := New(w)
		const m, n, k = 7, 5, 6
		// Gemm with transposed B: A m x k, B n x k, C m x n.
		a, b, c := newRegion(t, d, r, 3, m*k, 4), newRegion(t, d, r, 11, n*k, 2), newRegion(t, d, r, 5, m*n, 9)
		if err := d.Gemm(false, true, m, n, k, 0.7, a.view, b.view, -0.3, c.view); err != nil {
			t.Fatal(err)
		}
		if err := d.Gemm(false, true, m, n, k, 0.7, a.copy, b.copy, -0.3, c.copy); err != nil {
			t.Fatal(err)
		}
		c.check(t, d, "Gemm")

		const N, T, D = 9, 3, 13
		y, x, h := newRegion(t, d, r, 17, N*T*D, 3), newRegion(t, d, r, 1, N*T*D, 0), newRegion(t, d, r, 6, N*T*T, 5)
		if err := d.TokenDots(h.view, y.view, x.view, N, T, D); err != nil {
			t.Fatal(err)
		}
		if err := d.TokenDots(h.copy, y.copy, x.copy, N, T, D); err != nil {
			t.Fatal(err)
		}
		h.check(t, d, "TokenDots")
		cm, z := newRegion(t, d, r, 4, N*T*T, 1), newRegion(t, d, r, 8, N*T*D, 8)
		if err := d.TokenMix(z.view, cm.view, x.view, N, T, D); err != nil {
			t.Fatal(err)
		}
		if err := d.TokenMix(z.copy, cm.copy, x.copy, N, T, D); err != nil {
			t.Fatal(err)
		}
		z.check(t, d, "TokenMix")

		const L = 3*chunkElems + 77 // several reduction chunks
		u, v := newRegion(t, d, r, 1000, L, 13), newRegion(t, d, r, 5, L, 0)
		if err := d.Axpby(v.view, 1.5, u.view, -0.5); err != nil {
			t.Fatal(err)
		}
		if err := d.Axpby(v.copy, 1.5, u.copy, -0.5); err != nil {
			t.Fatal(err)
		}
		v.check(t, d, "Axpby")
		dv, err := d.Dot(u.view, v.view)
		if err != nil {
			t.Fatal(err)
		}
		dc, err := d.Dot(u.copy, v.copy)
		if err != nil {
			t.Fatal(err)
		}
		if math.Float64bits(dv) != math.Float64bits(dc) {
			t.Errorf("workers %d: Dot on views %v, on copies %v", w, dv, dc)
		}
		if err := d.Scal(u.view, 3); err != nil {
			t.Fatal(err)
		}
		if err := d.Scal(u.copy, 3); err != nil {
			t.Fatal(err)
		}
		u.check(t, d, "Scal")

		src, dst := newRegion(t, d, r, 21, 100, 3), newRegion(t, d, r, 2, 100, 40)
		if err := d.Copy(dst.view, src.view); err != nil {
			t.Fatal(err)
		}
		if err := d.Copy(dst.copy, src.copy); err != nil {
			t.Fatal(err)
		}
		dst.check(t, d, "Copy")

		// GaussianFill on a view at offset o from stream offset base + o writes what a fill of
		// the whole buffer from base writes there, and nothing outside the view.
		const seed, base, scale = 77, 1<<52 + 3, 0.25
		g := newRegion(t, d, r, 4097, L, 100)
		if err := d.GaussianFill(g.view, seed, base+uint64(g.off), scale); err != nil {
			t.Fatal(err)
		}
		all, _ := d.Alloc(g.off + g.n + 100)
		if err := d.GaussianFill(all, seed, base, scale); err != nil {
			t.Fatal(err)
		}
		if err := d.Copy(g.copy, must(device.View(all, g.off, g.n))); err != nil {
			t.Fatal(err)
		}
		g.check(t, d, "GaussianFill")
	}
}

// must returns the view, panicking on an error (inside expressions of the tests).
func must(b device.Buffer, err error) device.Buffer {
	if err != nil {
		panic(err)
	}
	return b
}

// TestChunkedTokens: the forward H = X S X^T computed chunk by chunk of samples through views
// is bit for bit the whole computation: what streaming needs.
func TestChunkedTokens(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	d := New(3)
	const N, T, D, chunk = 50, 2, 17, 16
	x := up(t, d, randVec(r, N*T*D))
	s := up(t, d, randVec(r, D*D))
	y, _ := d.Alloc(N * T * D)
	hWhole, _ := d.Alloc(N * T * T)
	hChunks, _ := d.Alloc(N * T * T)
	if err := d.Gemm(false, false, N*T, D, D, 1, x, s, 0, y); err != nil {
		t.Fatal(err)
	}
	if err := d.TokenDots(hWhole, y, x, N, T, D); err != nil {
		t.Fatal(err)
	}
	yc, _ := d.Alloc(chunk * T * D)
	for lo := 0; lo < N; lo += chunk {
		nc := min(chunk, N-lo)
		xv := must(device.View(x, lo*T*D, nc*T*D))
		yv := must(device.View(yc, 0, nc*T*D))
		if err := d.Gemm(false, false, nc*T, D, D, 1, xv, s, 0, yv); err != nil {
			t.Fatal(err)
		}
		if err := d.TokenDots(must(device.View(hChunks, lo*T*T, nc*T*T)), yv, xv, nc, T, D); err != nil {
			t.Fatal(err)
		}
	}
	hw, hc := down(t, d, hWhole), down(t, d, hChunks)
	for i := range hw {
		if math.Float64bits(hw[i]) != math.Float64bits(hc[i]) {
			t.Fatalf("H[%d]: whole %v, chunked %v", i, hw[i], hc[i])
		}
	}
}

// TestCloseCPU: Close is harmless and idempotent; afterwards operations refuse to run.
func TestCloseCPU(t *testing.T) {
	d := New(2)
	x := up(t, d, []float64{1, 2})
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := d.Scal(x, 2); err == nil {
		t.Error("Scal after Close succeeded")
	}
	d.Free(x)
}
