package cpu

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aimtheory/aim/device"
)

// Accuracy measure of every test: the norm-wise relative error
// ||got - want||_2 / ||want||_2 (Euclidean norm over all values; absolute when want = 0).
const tol = 1e-12

func relErr(got, want []float64) float64 {
	if len(got) != len(want) {
		return math.Inf(1)
	}
	var num, den float64
	for i := range got {
		e := got[i] - want[i]
		num += e * e
		den += want[i] * want[i]
	}
	if den == 0 {
		return math.Sqrt(num)
	}
	return math.Sqrt(num / den)
}

func relScalar(got, want float64) float64 {
	if want == 0 {
		return math.Abs(got)
	}
	return math.Abs(got-want) / math.Abs(want)
}

func randVec(r *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = r.NormFloat64()
	}
	return v
}

// up allocates a buffer on d holding v.
func up(t testing.TB, d *Device, v []float64) device.Buffer {
	t.Helper()
	b, err := d.Alloc(len(v))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Upload(b, v); err != nil {
		t.Fatal(err)
	}
	return b
}

func down(t testing.TB, d *Device, b device.Buffer) []float64 {
	t.Helper()
	v := make([]float64, b.Len())
	if err := d.Download(v, b); err != nil {
		t.Fatal(err)
	}
	return v
}

// maxErr records the largest error seen per operation (reported with go test -v).
type maxErr struct {
	t   *testing.T
	op  string
	max float64
}

func (m *maxErr) check(err float64, lim float64, what string, args ...any) {
	m.t.Helper()
	if !(err <= lim) {
		m.t.Errorf("%s: relative error %.3g > %.0g at %s", m.op, err, lim, sprint(what, args...))
	}
	m.max = math.Max(m.max, err)
}

func (m *maxErr) report() { m.t.Logf("%s: max relative error %.3g", m.op, m.max) }

func sprint(format string, args ...any) string {
	return strings.TrimSpace(strings.ReplaceAll(fmtSprintf(format, args...), "\n", " "))
}

// ---------------------------------------------------------------------------------------
// Naive references (the "CPU twin" style: plain loops, no cleverness).

func naiveGemm(transA, transB bool, m, n, k int, alpha float64, a, b []float64, beta float64, c []float64) []float64 {
	out := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for l := 0; l < k; l++ {
				var av, bv float64
				if transA {
					av = a[l*m+i]
				} else {
					av = a[i*k+l]
				}
				if transB {
					bv = b[j*k+l]
				} else {
					bv = b[l*n+j]
				}
				s += av * bv
			}
			out[i*n+j] = alpha*s + beta*c[i*n+j]
		}
	}
	return out
}

func TestGemm(t *testing.T) {
	d := New(3)
	r := rand.New(rand.NewPCG(1, 2))
	me := &maxErr{t: t, op: "Gemm"}
	for _, s := range [][3]int{{1, 1, 1}, {7, 5, 3}, {17, 64, 33}, {64, 17, 1}, {3, 200, 64}, {130, 70, 90}, {2100, 40, 30}} {
		m, n, k := s[0], s[1], s[2]
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				a, b, c := randVec(r, m*k), randVec(r, k*n), randVec(r, m*n)
				alpha, beta := 0.7, -1.3
				want := naiveGemm(ta, tb, m, n, k, alpha, a, b, beta, c)
				ab, bb, cb := up(t, d, a), up(t, d, b), up(t, d, c)
				if err := d.Gemm(ta, tb, m, n, k, alpha, ab, bb, beta, cb); err != nil {
					t.Fatal(err)
				}
				me.check(relErr(down(t, d, cb), want), tol, "m=%d n=%d k=%d tA=%v tB=%v", m, n, k, ta, tb)
			}
		}
	}
	// beta = 0 overwrites C, NaNs included.
	m, n, k := 4, 6, 5
	a, b := randVec(r, m*k), randVec(r, k*n)
	c := make([]float64, m*n)
	for i := range c {
		c[i] = math.NaN()
	}
	want := naiveGemm(false, false, m, n, k, 2, a, b, 0, make([]float64, m*n))
	cb := up(t, d, c)
	if err := d.Gemm(false, false, m, n, k, 2, up(t, d, a), up(t, d, b), 0, cb); err != nil {
		t.Fatal(err)
	}
	me.check(relErr(down(t, d, cb), want), tol, "beta=0 over NaN")
	// k = 0: C = beta C.
	c = randVec(r, m*n)
	cb = up(t, d, c)
	e1, _ := d.Alloc(0)
	if err := d.Gemm(true, true, m, n, 0, 2, e1, e1, 0.5, cb); err != nil {
		t.Fatal(err)
	}
	for i := range c {
		c[i] *= 0.5
	}
	me.check(relErr(down(t, d, cb), c), 0, "k=0")
	me.report()
}

// TestGemmStridedBatched: every product of a batch equals the naive one, with packed, shared
// (stride 0) and padded operands, and equals Gemm's bit for bit; C's padding is untouched.
func TestGemmStridedBatched(t *testing.T) {
	d := New(3)
	r := rand.New(rand.NewPCG(7, 8))
	me := &maxErr{t: t, op: "GemmStridedBatched"}
	type shape struct{ m, n, k, batch, sa, sb, sc int }
	for _, s := range []shape{{3, 4, 5, 3, 15, 20, 12}, {40, 20, 20, 4, 0, 400, 800}, {20, 20, 10, 5, 200, 0, 410}, {6, 5, 0, 2, 0, 0, 31}} {
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				m, n, k := s.m, s.n, s.k
				a, b := randVec(r, (s.batch-1)*s.sa+m*k), randVec(r, (s.batch-1)*s.sb+k*n)
				c := randVec(r, (s.batch-1)*s.sc+m*n)
				ab, bb, cb, cg := up(t, d, a), up(t, d, b), up(t, d, c), up(t, d, c)
				if err := d.GemmStridedBatched(ta, tb, m, n, k, 0.7, ab, s.sa, bb, s.sb, -1.3, cb, s.sc, s.batch); err != nil {
					t.Fatal(err)
				}
				got := down(t, d, cb)
				want := slices.Clone(c)
				for p := 0; p < s.batch; p++ {
					copy(want[p*s.sc:], naiveGemm(ta, tb, m, n, k, 0.7, a[p*s.sa:], b[p*s.sb:], -1.3, c[p*s.sc:]))
					view := func(x device.Buffer, off, n int) device.Buffer { v, _ := device.View(x, off, n); return v }
					if err := d.Gemm(ta, tb, m, n, k, 0.7, view(ab, p*s.sa, m*k), view(bb, p*s.sb, k*n), -1.3, view(cg, p*s.sc, m*n)); err != nil {
						t.Fatal(err)
					}
				}
				me.check(relErr(got, want), tol, "%+v tA=%v tB=%v", s, ta, tb)
				if g := down(t, d, cg); !slices.Equal(got, g) {
					t.Errorf("%+v tA=%v tB=%v: the batch differs from one Gemm per product", s, ta, tb)
				}
			}
		}
	}
	me.report()
}

func naiveTokenDots(y, x []float64, n, T, D int) []float64 {
	h := make([]float64, n*T*T)
	for mu := 0; mu < n; mu++ {
		for a := 0; a < T; a++ {
			for b := 0; b < T; b++ {
				var s float64
				for i := 0; i < D; i++ {
					s += y[(mu*T+a)*D+i] * x[(mu*T+b)*D+i]
				}
				h[(mu*T+a)*T+b] = s
			}
		}
	}
	return h
}

func naiveTokenMix(c, x []float64, n, T, D int) []float64 {
	z := make([]float64, n*T*D)
	for mu := 0; mu < n; mu++ {
		for a := 0; a < T; a++ {
			for i := 0; i < D; i++ {
				var s float64
				for b := 0; b < T; b++ {
					s += c[(mu*T+a)*T+b] * x[(mu*T+b)*D+i]
				}
				z[(mu*T+a)*D+i] = s
			}
		}
	}
	return z
}

func TestTokenDotsMix(t *testing.T) {
	d := New(3)
	r := rand.New(rand.NewPCG(3, 4))
	med := &maxErr{t: t, op: "TokenDots"}
	mem := &maxErr{t: t, op: "TokenMix"}
	for _, n := range []int{1, 7, 300} {
		for _, T := range []int{1, 2, 3, 5, 6} {
			for _, D := range []int{1, 17, 64} {
				y, x, c := randVec(r, n*T*D), randVec(r, n*T*D), randVec(r, n*T*T)
				yb, xb, cb := up(t, d, y), up(t, d, x), up(t, d, c)
				hb, _ := d.Alloc(n * T * T)
				if err := d.TokenDots(hb, yb, xb, n, T, D); err != nil {
					t.Fatal(err)
				}
				med.check(relErr(down(t, d, hb), naiveTokenDots(y, x, n, T, D)), tol, "n=%d T=%d D=%d", n, T, D)
				zb := up(t, d, randVec(r, n*T*D)) // garbage in z: must be overwritten
				if err := d.TokenMix(zb, cb, xb, n, T, D); err != nil {
					t.Fatal(err)
				}
				mem.check(relErr(down(t, d, zb), naiveTokenMix(c, x, n, T, D)), tol, "n=%d T=%d D=%d", n, T, D)
			}
		}
	}
	med.report()
	mem.report()
}

func naiveSpectral(o, f []float64, D int) []float64 {
	out := make([]float64, D*D)
	for i := 0; i < D; i++ {
		for j := 0; j < D; j++ {
			var s float64
			for k := 0; k < D; k++ {
				s += o[i*D+k] * f[k] * o[j*D+k]
			}
			out[i*D+j] = s
		}
	}
	return out
}

func TestSpectralCompose(t *testing.T) {
	d := New(2)
	r := rand.New(rand.NewPCG(5, 6))
	me := &maxErr{t: t, op: "SpectralCompose"}
	for _, D := range []int{1, 17, 64, 130} {
		o, f := randVec(r, D*D), randVec(r, D)
		ob, fb := up(t, d, o), up(t, d, f)
		out, _ := d.Alloc(D * D)
		for rep := 0; rep < 2; rep++ { // the scratch buffer is reused
			if err := d.SpectralCompose(out, ob, fb, D); err != nil {
				t.Fatal(err)
			}
			me.check(relErr(down(t, d, out), naiveSpectral(o, f, D)), tol, "D=%d", D)
		}
	}
	me.report()
}

func randSym(r *rand.Rand, D int) []float64 {
	a := make([]float64, D*D)
	for i := 0; i < D; i++ {
		for j := i; j < D; j++ {
			v := r.NormFloat64()
			a[i*D+j], a[j*D+i] = v, v
		}
	}
	return a
}

func frob(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

// jacobiEig returns the eigenvalues of the symmetric D x D matrix a, sorted ascending, by the
// cyclic Jacobi method (plain textbook version).
func jacobiEig(a []float64, D int) []float64 {
	m := append([]float64(nil), a...)
	for sweep := 0; sweep < 100; sweep++ {
		var off float64
		for p := 0; p < D; p++ {
			for q := p + 1; q < D; q++ {
				off += m[p*D+q] * m[p*D+q]
			}
		}
		if off < 1e-30*frob(m)*frob(m) {
			break
		}
		for p := 0; p < D; p++ {
			for q := p + 1; q < D; q++ {
				apq := m[p*D+q]
				if apq == 0 {
					continue
				}
				theta := (m[q*D+q] - m[p*D+p]) / (2 * apq)
				tt := math.Copysign(1, theta) / (math.Abs(theta) + math.Sqrt(theta*theta+1))
				c := 1 / math.Sqrt(tt*tt+1)
				s := tt * c
				for k := 0; k < D; k++ { // columns p, q
					mkp, mkq := m[k*D+p], m[k*D+q]
					m[k*D+p] = c*mkp - s*mkq
					m[k*D+q] = s*mkp + c*mkq
				}
				for k := 0; k < D; k++ { // rows p, q
					mpk, mqk := m[p*D+k], m[q*D+k]
					m[p*D+k] = c*mpk - s*mqk
					m[q*D+k] = s*mpk + c*mqk
				}
			}
		}
	}
	ev := make([]float64, D)
	for i := range ev {
		ev[i] = m[i*D+i]
	}
	sort.Float64s(ev)
	return ev
}

func TestEighSym(t *testing.T) {
	d := New(2)
	r := rand.New(rand.NewPCG(7, 8))
	res := &maxErr{t: t, op: "EighSym residual ||AO - O diag(lambda)||_F/||A||_F"}
	orth := &maxErr{t: t, op: "EighSym orthogonality ||O^T O - I||_F/sqrt(D)"}
	for _, D := range []int{5, 64, 200} {
		a := randSym(r, D)
		ab := up(t, d, a)
		vals, _ := d.Alloc(D)
		vecs, _ := d.Alloc(D * D)
		if err := d.EighSym(vals, vecs, ab, D); err != nil {
			t.Fatal(err)
		}
		lam, o := down(t, d, vals), down(t, d, vecs)
		if got := down(t, d, ab); relErr(got, a) != 0 {
			t.Errorf("EighSym changed A at D=%d", D)
		}
		for k := 1; k < D; k++ {
			if lam[k] < lam[k-1] {
				t.Errorf("D=%d: eigenvalues not ascending at %d: %g < %g", D, k, lam[k], lam[k-1])
			}
		}
		diff := make([]float64, D*D)
		gram := make([]float64, D*D)
		for i := 0; i < D; i++ {
			for k := 0; k < D; k++ {
				var s float64
				for j := 0; j < D; j++ {
					s += a[i*D+j] * o[j*D+k]
				}
				diff[i*D+k] = s - o[i*D+k]*lam[k]
			}
		}
		for k := 0; k < D; k++ {
			for l := 0; l < D; l++ {
				var s float64
				for i := 0; i < D; i++ {
					s += o[i*D+k] * o[i*D+l]
				}
				if k == l {
					s--
				}
				gram[k*D+l] = s
			}
		}
		res.check(frob(diff)/frob(a), 1e-10, "D=%d", D)
		orth.check(frob(gram)/math.Sqrt(float64(D)), 1e-10, "D=%d", D)
	}
	res.report()
	orth.report()

	// Eigenvalues against the naive Jacobi routine.
	me := &maxErr{t: t, op: "EighSym eigenvalues vs Jacobi"}
	const D = 20
	for rep := 0; rep < 3; rep++ {
		a := randSym(r, D)
		vals, _ := d.Alloc(D)
		vecs, _ := d.Alloc(D * D)
		if err := d.EighSym(vals, vecs, up(t, d, a), D); err != nil {
			t.Fatal(err)
		}
		me.check(relErr(down(t, d, vals), jacobiEig(a, D)), 1e-12, "D=%d rep=%d", D, rep)
	}
	me.report()
}

func TestSmallOps(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	d := New(3)
	errs := map[string]*maxErr{}
	chk := func(op string, e float64, what string, args ...any) {
		if errs[op] == nil {
			errs[op] = &maxErr{t: t, op: op}
		}
		errs[op].check(e, tol, what, args...)
	}
	for _, n := range []int{0, 1, 7, 300, 4096, 20001} {
		x, y := randVec(r, n), randVec(r, n)
		xb, yb := up(t, d, x), up(t, d, y)

		want := make([]float64, n)
		for i := range x {
			want[i] = -0.3 * x[i]
		}
		if err := d.Scal(xb, -0.3); err != nil {
			t.Fatal(err)
		}
		chk("Scal", relErr(down(t, d, xb), want), "n=%d", n)
		_ = d.Upload(xb, x)

		for i := range x {
			want[i] = 1.7*x[i] - 0.4*y[i]
		}
		if err := d.Axpby(yb, 1.7, xb, -0.4); err != nil {
			t.Fatal(err)
		}
		chk("Axpby", relErr(down(t, d, yb), want), "n=%d", n)
		_ = d.Upload(yb, y)

		// References summed with Neumaier compensation (the naive sum's own rounding would
		// dominate at n = 20001); the scale of a dot product's rounding is sum |x_i y_i|.
		var dk, sk, ak neumaier
		for i := range x {
			dk.add(x[i] * y[i])
			sk.add((x[i] - y[i]) * (x[i] - y[i]))
			ak.add(math.Abs(x[i] * y[i]))
		}
		dot, sq, absdot := dk.sum(), sk.sum(), ak.sum()
		got, err := d.Dot(xb, yb)
		if err != nil {
			t.Fatal(err)
		}
		chk("Dot (|err| / sum |x_i y_i|)", relScalar(got, dot)*math.Abs(dot)/math.Max(absdot, 1e-300), "n=%d", n)
		got, err = d.SqDist(xb, yb)
		if err != nil {
			t.Fatal(err)
		}
		chk("SqDist", relScalar(got, sq), "n=%d", n)
	}
	for _, n := range []int{1, 7, 300, 3000} {
		for _, T := range []int{1, 2, 3, 5} {
			x := randVec(r, n*T*T)
			xb := up(t, d, x)
			var tk, ak neumaier
			for mu := 0; mu < n; mu++ {
				for a := 0; a < T; a++ {
					tk.add(x[(mu*T+a)*T+a])
					ak.add(math.Abs(x[(mu*T+a)*T+a]))
				}
			}
			tr, abstr := tk.sum(), ak.sum()
			got, err := d.SumDiag(xb, n, T)
			if err != nil {
				t.Fatal(err)
			}
			chk("SumDiag (|err| / sum |x_aa|)", math.Abs(got-tr)/abstr, "n=%d T=%d", n, T)
			want := append([]float64(nil), x...)
			for mu := 0; mu < n; mu++ {
				for a := 0; a < T; a++ {
					want[(mu*T+a)*T+a] += 0.25
				}
			}
			if err := d.AddDiag(xb, n, T, 0.25); err != nil {
				t.Fatal(err)
			}
			chk("AddDiag", relErr(down(t, d, xb), want), "n=%d T=%d", n, T)

			m := T * T
			p := randVec(r, m)
			_ = d.Upload(xb, x)
			for mu := 0; mu < n; mu++ {
				for k := 0; k < m; k++ {
					want[mu*m+k] = x[mu*m+k] * p[k]
				}
			}
			if err := d.MulPattern(xb, up(t, d, p), n, m); err != nil {
				t.Fatal(err)
			}
			chk("MulPattern", relErr(down(t, d, xb), want), "n=%d m=%d", n, m)
		}
	}
	for _, op := range []string{"Scal", "Axpby", "Dot (|err| / sum |x_i y_i|)", "SqDist", "SumDiag (|err| / sum |x_aa|)", "AddDiag", "MulPattern"} {
		errs[op].report()
	}

	// Copy, Upload, Download of partial ranges.
	src := up(t, d, []float64{1, 2, 3})
	dst := up(t, d, []float64{9, 9, 9, 9, 9})
	if err := d.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if got := down(t, d, dst); relErr(got, []float64{1, 2, 3, 9, 9}) != 0 {
		t.Errorf("Copy: got %v", got)
	}
	two := make([]float64, 2)
	if err := d.Download(two, dst); err != nil || two[0] != 1 || two[1] != 2 {
		t.Errorf("Download prefix: %v %v", two, err)
	}
}

func TestInfo(t *testing.T) {
	d := New(3)
	in := d.Info()
	lib := "gonum v0.17 (pure Go BLAS/LAPACK)"
	if d.BLAS().Native {
		lib = d.BLAS().Lib.Provider
	}
	if in.Name != "cpu" || !strings.Contains(in.Description, "3 goroutines") || !strings.Contains(in.Description, lib) {
		t.Errorf("Info = %+v, want 3 goroutines and %s", in, lib)
	}
	if in.FreeBytes > in.TotalBytes {
		t.Errorf("FreeBytes %d > TotalBytes %d", in.FreeBytes, in.TotalBytes)
	}
	if _, _, err := readMeminfo("/proc/meminfo"); err == nil && (in.TotalBytes < 1<<20 || in.FreeBytes == 0) {
		t.Errorf("implausible memory from /proc/meminfo: %+v", in)
	}
	total, avail, err := readMeminfo(writeTemp(t, "MemTotal:       16000000 kB\nMemFree:   100 kB\nMemAvailable:    8000000 kB\n"))
	if err != nil || total != 16000000*1024 || avail != 8000000*1024 {
		t.Errorf("readMeminfo: %d %d %v", total, avail, err)
	}
	if _, _, err := readMeminfo(writeTemp(t, "MemTotal: 5 kB\n")); err == nil {
		t.Errorf("readMeminfo without MemAvailable: no error")
	}
	if New(0).Workers() < 1 {
		t.Errorf("New(0) has no workers")
	}
	t.Logf("%+v", in)
}

// TestAllocReclaims: a large buffer allocated after large ones were freed reuses their memory,
// as the memory plans assume, rather than waiting beside them for Go's next collection (which
// comes when the heap has doubled since the last, the last one having seen them live).
func TestAllocReclaims(t *testing.T) {
	d := New(1)
	const n = 2 * reclaimBytes / 8 // 128 MiB of values
	inUse := func() uint64 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse
	}
	runtime.GC()
	base := inUse()
	a, err := d.Alloc(n) // a job's first run
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC() // a collection during the run: the next is due at twice its heap
	d.Free(a)
	b, err := d.Alloc(n) // the next run
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(b)
	if grew, one := inUse()-base, uint64(8*n); grew > one+one/4 {
		t.Errorf("the heap in use grew by %s for one buffer of %s", device.Bytes(grew), device.Bytes(one))
	}
}
