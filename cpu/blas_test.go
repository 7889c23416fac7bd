package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aimtheory/aim/cpu/nativeblas"
	"github.com/aimtheory/aim/device"
)

// gonumAndNative opens one device on each path, or skips (saying why) when no native library
// is installed.
func gonumAndNative(t *testing.T, workers int) (g, n *Device) {
	t.Helper()
	g, err := Open(Options{Workers: workers, BLAS: GonumBLAS})
	if err != nil {
		t.Fatal(err)
	}
	n, err = Open(Options{Workers: workers, BLAS: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	if !n.BLAS().Native {
		t.Skipf("no OpenBLAS or MKL on this machine (%s): nothing to compare gonum with", n.BLAS().Note)
	}
	return g, n
}

// TestBLASChoice: the choice is per device, from Options or from AIM_BLAS at open time; gonum
// is used and reported when asked for or when nothing else loads; a library asked for by name
// that does not load is an error of Open, and New falls back to gonum saying why.
func TestBLASChoice(t *testing.T) {
	g, err := Open(Options{Workers: 2, BLAS: GonumBLAS})
	if err != nil || g.BLAS().Native || !strings.Contains(g.Info().Description, "gonum v0.17") ||
		!strings.Contains(g.BLAS().String(), "chosen by the device options") {
		t.Errorf("gonum device: %v %+v %q", err, g.BLAS(), g.Info().Description)
	}
	if _, err := Open(Options{BLAS: "/nonexistent/libopenblas.so.0"}); err == nil || !strings.Contains(err.Error(), "/nonexistent/libopenblas.so.0") {
		t.Errorf("Open(missing library) = %v, want an error naming it", err)
	}
	if _, err := Open(Options{BLAS: "fortran77"}); err == nil {
		t.Error("Open(BLAS fortran77) succeeded")
	}

	t.Setenv(EnvBLAS, "gonum")
	if d := New(2); d.BLAS().Native || !strings.Contains(d.BLAS().Note, "AIM_BLAS=gonum") {
		t.Errorf("AIM_BLAS=gonum: %+v", d.BLAS())
	}
	// Options win over the environment.
	if d, err := Open(Options{BLAS: "auto"}); err != nil || d.BLAS().Source != "Options" {
		t.Errorf("Options.BLAS = auto under AIM_BLAS=gonum: %v %+v", err, d.BLAS())
	}
	t.Setenv(EnvBLAS, "/nonexistent/libblas.so")
	if d := New(2); d.BLAS().Native || !strings.Contains(d.BLAS().Note, "/nonexistent/libblas.so") {
		t.Errorf("AIM_BLAS=missing: New gave %+v, want gonum and the reason", d.BLAS())
	}
	if _, err := Open(Options{}); err == nil || !strings.Contains(err.Error(), "AIM_BLAS=/nonexistent/libblas.so") {
		t.Errorf("Open under AIM_BLAS=missing: %v", err)
	}

	t.Setenv(EnvBLAS, "")
	d := New(2)
	if d.BLAS().Native {
		if !strings.Contains(d.Info().Description, d.BLAS().Lib.Provider) || d.BLAS().Lib.Path == "" {
			t.Errorf("native device: %+v %q", d.BLAS(), d.Info().Description)
		}
	} else if !strings.Contains(d.BLAS().Note, "no OpenBLAS or MKL found") {
		t.Errorf("auto without a library: %+v, want the reason", d.BLAS())
	}
	t.Logf("auto: %s", d.BLAS())
}

// TestNoLibraryFallsBack: where no library is found (a loader that finds nothing stands in for
// a machine without OpenBLAS), auto gives a working gonum device that says so, and a library
// asked for by name is an error that says which.
func TestNoLibraryFallsBack(t *testing.T) {
	none := func(choice string) (*nativeblas.Lib, error) {
		return nil, fmt.Errorf("%w (libopenblas.so.0: cannot open shared object file)", nativeblas.ErrNotFound)
	}
	d, err := open(Options{Workers: 2, BLAS: "auto"}, none)
	if err != nil {
		t.Fatal(err)
	}
	b := d.BLAS()
	if b.Native || !strings.Contains(b.Note, "no OpenBLAS or MKL found") || !strings.Contains(b.String(), "gonum v0.17") ||
		!strings.Contains(d.Info().Description, "gonum v0.17 (pure Go BLAS/LAPACK), no optimised BLAS found") {
		t.Errorf("fallback: %+v, %q", b, d.Info().Description)
	}
	// It computes: a Gemm and an EighSym on the fallback device match the naive references.
	r := rand.New(rand.NewPCG(21, 22))
	a, bm := randVec(r, 6*4), randVec(r, 4*5)
	c := d.mustAlloc(t, 6*5)
	if err := d.Gemm(false, false, 6, 5, 4, 1, up(t, d, a), up(t, d, bm), 0, c); err != nil {
		t.Fatal(err)
	}
	if e := relErr(down(t, d, c), naiveGemm(false, false, 6, 5, 4, 1, a, bm, 0, make([]float64, 30))); !(e < tol) {
		t.Errorf("fallback Gemm: relative error %.3g", e)
	}
	s := randSym(r, 8)
	vals, vecs := d.mustAlloc(t, 8), d.mustAlloc(t, 64)
	if err := d.EighSym(vals, vecs, up(t, d, s), 8); err != nil {
		t.Fatal(err)
	}
	if e := relErr(down(t, d, vals), jacobiEig(s, 8)); !(e < tol) {
		t.Errorf("fallback EighSym: relative error %.3g", e)
	}
	if _, err := open(Options{BLAS: "openblas"}, none); err == nil || !strings.Contains(err.Error(), `BLAS "openblas"`) {
		t.Errorf("openblas without a library: %v", err)
	}
}

// TestThreadsOption: a device sets the library's thread count it was opened with, and sets it
// again before its calls when another device changed it.
func TestThreadsOption(t *testing.T) {
	_, n := gonumAndNative(t, 2)
	lib := n.BLAS().lib
	if !lib.CanSetThreads() {
		t.Skipf("%s cannot set its thread count", n.BLAS().Lib.Provider)
	}
	one, err := Open(Options{BLAS: "auto", Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	if one.BLAS().Threads != 1 || lib.Threads() != 1 {
		t.Fatalf("Threads 1: device says %d, library %d", one.BLAS().Threads, lib.Threads())
	}
	two, err := Open(Options{BLAS: "auto", Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	if lib.Threads() != 2 {
		t.Fatalf("Threads 2: library %d", lib.Threads())
	}
	r := rand.New(rand.NewPCG(9, 9))
	a := up(t, one, randVec(r, 16))
	c, _ := one.Alloc(16)
	if err := one.Gemm(false, false, 4, 4, 4, 1, a, a, 0, c); err != nil {
		t.Fatal(err)
	}
	if lib.Threads() != 1 {
		t.Errorf("after a Gemm on the 1-thread device the library runs %d threads", lib.Threads())
	}
	_ = two
}

// TestNativeMatchesGonum runs every operation that has a native path on both paths with the
// same random inputs: Gemm and SpectralCompose agree to 1e-13 relative (norm-wise), EighSym's
// eigenvalues to 1e-12 and its eigenvectors up to sign to 1e-10, and the native SpectralCompose
// is exactly symmetric.
func TestNativeMatchesGonum(t *testing.T) {
	g, n := gonumAndNative(t, 2)
	r := rand.New(rand.NewPCG(11, 12))
	for _, sz := range [][3]int{{1, 1, 1}, {7, 5, 3}, {300, 120, 200}, {1000, 64, 33}, {2100, 40, 30}} {
		m, nn, k := sz[0], sz[1], sz[2]
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				a, b, c := randVec(r, m*k), randVec(r, k*nn), randVec(r, m*nn)
				var got [2][]float64
				for i, d := range []*Device{g, n} {
					cb := up(t, d, c)
					if err := d.Gemm(ta, tb, m, nn, k, 0.7, up(t, d, a), up(t, d, b), -1.3, cb); err != nil {
						t.Fatal(err)
					}
					got[i] = down(t, d, cb)
				}
				if e := relErr(got[1], got[0]); !(e < 1e-13) {
					t.Errorf("Gemm %v transA %v transB %v: native vs gonum %.3g", sz, ta, tb, e)
				}
			}
		}
	}
	for _, D := range []int{1, 2, 9, 64, 300} {
		a := randSym(r, D)
		var vals, vecs [2][]float64
		for i, d := range []*Device{g, n} {
			vb, ob := d.mustAlloc(t, D), d.mustAlloc(t, D*D)
			if err := d.EighSym(vb, ob, up(t, d, a), D); err != nil {
				t.Fatal(err)
			}
			vals[i], vecs[i] = down(t, d, vb), down(t, d, ob)
		}
		if e := relErr(vals[1], vals[0]); !(e < 1e-12) {
			t.Errorf("EighSym D=%d: eigenvalues native vs gonum %.3g", D, e)
		}
		// Random eigenvalues are simple: the vectors agree up to sign.
		var worst float64
		for k := 0; k < D; k++ {
			var dot float64
			for i := 0; i < D; i++ {
				dot += vecs[0][i*D+k] * vecs[1][i*D+k]
			}
			s := math.Copysign(1, dot)
			for i := 0; i < D; i++ {
				worst = math.Max(worst, math.Abs(vecs[1][i*D+k]-s*vecs[0][i*D+k]))
			}
		}
		if !(worst < 1e-10) {
			t.Errorf("EighSym D=%d: eigenvectors differ by %.3g beyond sign", D, worst)
		}
		// SpectralCompose with f of both signs and some zeros.
		f := randVec(r, D)
		for i := 0; i < D; i += 5 {
			f[i] = 0
		}
		var out [2][]float64
		for i, d := range []*Device{g, n} {
			ob := d.mustAlloc(t, D*D)
			if err := d.SpectralCompose(ob, up(t, d, vecs[0]), up(t, d, f), D); err != nil {
				t.Fatal(err)
			}
			out[i] = down(t, d, ob)
		}
		if e := relErr(out[1], out[0]); !(e < 1e-13) {
			t.Errorf("SpectralCompose D=%d: native vs gonum %.3g", D, e)
		}
		if e := relErr(out[1], naiveSpectral(vecs[0], f, D)); !(e < tol) {
			t.Errorf("SpectralCompose D=%d: native vs naive %.3g", D, e)
		}
		for i := 0; i < D; i++ {
			for j := 0; j < i; j++ {
				if out[1][i*D+j] != out[1][j*D+i] {
					t.Fatalf("SpectralCompose D=%d: native result not symmetric at (%d, %d)", D, i, j)
				}
			}
		}
	}
	// All-positive and all-negative spectra (one dsyrk only), and a NaN.
	const D = 40
	o := randVec(r, D*D)
	for _, sign := range []float64{1, -1} {
		f := randVec(r, D)
		for i := range f {
			f[i] = sign * math.Abs(f[i])
		}
		ob := n.mustAlloc(t, D*D)
		if err := n.SpectralCompose(ob, up(t, n, o), up(t, n, f), D); err != nil {
			t.Fatal(err)
		}
		if e := relErr(down(t, n, ob), naiveSpectral(o, f, D)); !(e < tol) {
			t.Errorf("SpectralCompose sign %g: native vs naive %.3g", sign, e)
		}
	}
	f := randVec(r, D)
	f[3] = math.NaN()
	ob := n.mustAlloc(t, D*D)
	if err := n.SpectralCompose(ob, up(t, n, o), up(t, n, f), D); err != nil || !math.IsNaN(down(t, n, ob)[0]) {
		t.Errorf("SpectralCompose with a NaN in f: %v, want NaN out", err)
	}
}

func (d *Device) mustAlloc(t testing.TB, n int) device.Buffer {
	t.Helper()
	b, err := d.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// naiveQuadForm returns alpha sum_mu X_mu^T C_mu X_mu by plain loops.
func naiveQuadForm(c, x []float64, n, t, d int, alpha float64) []float64 {
	out := make([]float64, d*d)
	for mu := 0; mu < n; mu++ {
		cm, xm := c[mu*t*t:(mu+1)*t*t], x[mu*t*d:(mu+1)*t*d]
		for a := 0; a < t; a++ {
			for b := 0; b < t; b++ {
				w := alpha * cm[a*t+b]
				for i := 0; i < d; i++ {
					for j := 0; j < d; j++ {
						out[i*d+j] += w * xm[a*d+i] * xm[b*d+j]
					}
				}
			}
		}
	}
	return out
}

// TestQuadFormSum compares QuadFormSum on both paths with plain loops, for T = 1 to 4,
// symmetric C of mixed inertia, singular ones (a zero eigenvalue), worker counts 1 and 3, and
// (T = 2, D = 70) enough samples for several groups of chunks:
// relative error under 1e-12, and the native result bit-for-bit the same for 1 and 3 workers.
func TestQuadFormSum(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	devs := []*Device{}
	for _, w := range []int{1, 3} {
		g, err := Open(Options{Workers: w, BLAS: GonumBLAS})
		if err != nil {
			t.Fatal(err)
		}
		devs = append(devs, g)
		if nd, err := Open(Options{Workers: w}); err == nil && nd.BLAS().Native {
			devs = append(devs, nd)
		}
	}
	if len(devs) == 2 {
		t.Logf("no native library: only the gonum path is checked")
	}
	me := &maxErr{t: t, op: "QuadFormSum"}
	for _, T := range []int{1, 2, 3, 4} {
		for _, D := range []int{1, 13, 70} {
			n := 300
			if T == 2 && D == 70 {
				n = 3000 // 4 chunks, each its own group, on the native path
			}
			c := make([]float64, n*T*T)
			for mu := 0; mu < n; mu++ {
				for a := 0; a < T; a++ {
					for b := a; b < T; b++ {
						v := r.NormFloat64()
						c[mu*T*T+a*T+b], c[mu*T*T+b*T+a] = v, v
					}
				}
				switch mu % 7 {
				case 3: // rank one: u u^T, a zero eigenvalue for T >= 2
					for a := 0; a < T; a++ {
						for b := 0; b < T; b++ {
							c[mu*T*T+a*T+b] = float64(a+1) * float64(b+1) / 3
						}
					}
				case 5: // diagonal
					for a := 0; a < T; a++ {
						for b := 0; b < T; b++ {
							if a != b {
								c[mu*T*T+a*T+b] = 0
							}
						}
					}
				}
			}
			x := randVec(r, n*T*D)
			want := naiveQuadForm(c, x, n, T, D, 0.37)
			var nativeOut [][]float64
			for _, d := range devs {
				out, scr := d.mustAlloc(t, D*D), d.mustAlloc(t, n*T*D)
				if err := d.Capabilities().QuadFormSummer.QuadFormSum(out, up(t, d, c), up(t, d, x), scr, n, T, D, 0.37); err != nil {
					t.Fatal(err)
				}
				got := down(t, d, out)
				me.check(relErr(got, want), tol, "T=%d D=%d %s workers %d", T, D, d.BLAS().Lib.Provider, d.Workers())
				if d.BLAS().Native {
					nativeOut = append(nativeOut, got)
				}
			}
			if len(nativeOut) == 2 {
				for i := range nativeOut[0] {
					if math.Float64bits(nativeOut[0][i]) != math.Float64bits(nativeOut[1][i]) {
						t.Fatalf("T=%d D=%d: native QuadFormSum differs between 1 and 3 workers at %d", T, D, i)
					}
				}
			}
		}
	}
	me.report()
	d := devs[len(devs)-1]
	out := d.mustAlloc(t, 4)
	cb, xb := up(t, d, []float64{1, 2, 2, 1, 1, 0, 0, 1}), up(t, d, randVec(r, 8))
	if err := d.Capabilities().QuadFormSummer.QuadFormSum(out, cb, xb, out, 2, 2, 2, 1); err == nil {
		t.Error("QuadFormSum accepted out = scratch")
	}
	if err := d.Capabilities().QuadFormSummer.QuadFormSum(out, cb, xb, d.mustAlloc(t, 7), 2, 2, 2, 1); err == nil {
		t.Error("QuadFormSum accepted a short scratch")
	}
}

// TestSymEig checks the small eigendecompositions of QuadFormSum: sum_k s_k u_k u_k^T
// reproduces C to 1e-14 and the u_k are orthonormal, for T = 1 to 5.
func TestSymEig(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for T := 1; T <= 5; T++ {
		e := newSymEig(T)
		for rep := 0; rep < 200; rep++ {
			c := make([]float64, T*T)
			for a := 0; a < T; a++ {
				for b := a; b < T; b++ {
					v := r.NormFloat64()
					if rep%4 == 1 && a != b {
						v *= 1e-9 // nearly diagonal
					}
					c[a*T+b], c[b*T+a] = v, v
				}
			}
			e.decompose(c)
			var worst float64
			for a := 0; a < T; a++ {
				for b := 0; b < T; b++ {
					var s, g float64
					for k := 0; k < T; k++ {
						s += e.vals[k] * e.vecs[k*T+a] * e.vecs[k*T+b]
						g += e.vecs[a*T+k] * e.vecs[b*T+k]
					}
					if a == b {
						g--
					}
					worst = math.Max(worst, math.Max(math.Abs(s-c[a*T+b]), math.Abs(g)))
				}
			}
			if !(worst < 1e-14*float64(T)*4) {
				t.Fatalf("T=%d rep %d: error %.3g", T, rep, worst)
			}
		}
	}
}
