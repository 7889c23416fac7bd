package cuda

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
)

// TestGPUViews runs operations on views at odd offsets (a device pointer plus 8 bytes per value)
// on the GPU and on the CPU, and compares the whole buffers: inside the views to 1e-12 (bit
// for bit for Copy and GaussianFill), outside them bit for bit.
func TestGPUViews(t *testing.T) { onTargets(t, testGPUViews) }

func testGPUViews(t *testing.T, g target) {
	c := cpu.New(0)
	r := rand.New(rand.NewPCG(41, 42))
	view := func(p pair, off, n int) pair {
		t.Helper()
		vc, err := device.View(p.c, off, n)
		if err != nil {
			t.Fatal(err)
		}
		vg, err := device.View(p.g, off, n)
		if err != nil {
			t.Fatal(err)
		}
		return pair{vc, vg}
	}
	// same compares the buffers of p: the view [off, off+n) exactly or to tol, the rest
	// exactly (the CPU leaves it unchanged: cpu's TestViews).
	same := func(op string, p pair, off, n int, exact bool) {
		t.Helper()
		got, want := down(t, g, p.g), down(t, c, p.c)
		for i := range got {
			if (exact || i < off || i >= off+n) && math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Errorf("%s on views: value %d (view [%d, %d)) is %v on the GPU, %v on the CPU", op, i, off, off+n, got[i], want[i])
				return
			}
		}
		if e := relErr(got[off:off+n], want[off:off+n]); !(e <= tol) {
			t.Errorf("%s on views: relative error %.3g > %.0e", op, e, tol)
		}
	}
	var bufs []pair
	mk := func(n int) pair {
		p := both(t, c, g, randVec(r, n))
		bufs = append(bufs, p)
		return p
	}
	defer func() {
		for _, p := range bufs {
			p.free(c, g)
		}
	}()

	const m, n, k = 33, 17, 29
	a, b, cm := mk(3+m*k+5), mk(7+n*k), mk(1+m*n+9)
	av, bv, cv := view(a, 3, m*k), view(b, 7, n*k), view(cm, 1, m*n)
	_ = c.Gemm(false, true, m, n, k, 0.7, av.c, bv.c, -0.3, cv.c)
	if err := g.Gemm(false, true, m, n, k, 0.7, av.g, bv.g, -0.3, cv.g); err != nil {
		t.Fatal(err)
	}
	same("Gemm", cm, 1, m*n, false)

	const N, T, D = 37, 3, 50
	y, x, h := mk(5+N*T*D), mk(1+N*T*D+3), mk(9+N*T*T+1)
	yv, xv, hv := view(y, 5, N*T*D), view(x, 1, N*T*D), view(h, 9, N*T*T)
	_ = c.TokenDots(hv.c, yv.c, xv.c, N, T, D)
	if err := g.TokenDots(hv.g, yv.g, xv.g, N, T, D); err != nil {
		t.Fatal(err)
	}
	same("TokenDots", h, 9, N*T*T, false)
	z := mk(2 + N*T*D)
	zv := view(z, 2, N*T*D)
	_ = c.TokenMix(zv.c, hv.c, xv.c, N, T, D)
	if err := g.TokenMix(zv.g, hv.g, xv.g, N, T, D); err != nil {
		t.Fatal(err)
	}
	same("TokenMix", z, 2, N*T*D, false)

	const L = 3*4096 + 77
	u, v := mk(11+L), mk(3+L+4)
	uv, vv := view(u, 11, L), view(v, 3, L)
	_ = c.Axpby(vv.c, 1.5, uv.c, -0.5)
	if err := g.Axpby(vv.g, 1.5, uv.g, -0.5); err != nil {
		t.Fatal(err)
	}
	same("Axpby", v, 3, L, false)
	dc, _ := c.Dot(uv.c, vv.c)
	dg, err := g.Dot(uv.g, vv.g)
	if err != nil {
		t.Fatal(err)
	}
	if e := relScalar(dg, dc); !(e <= tol) {
		t.Errorf("Dot on views: %v on the GPU, %v on the CPU", dg, dc)
	}
	w := mk(5 + L)
	wv := view(w, 5, L)
	_ = c.Copy(wv.c, uv.c)
	if err := g.Copy(wv.g, uv.g); err != nil {
		t.Fatal(err)
	}
	same("Copy", w, 5, L, true)
	f := mk(4097 + L + 1)
	fv := view(f, 4097, L)
	_ = c.GaussianFill(fv.c, 77, 1<<52+4097, 0.25)
	if err := g.GaussianFill(fv.g, 77, 1<<52+4097, 0.25); err != nil {
		t.Fatal(err)
	}
	same("GaussianFill", f, 4097, L, true)
}
