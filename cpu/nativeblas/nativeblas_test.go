package nativeblas

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"
)

// lib returns the OpenBLAS/MKL library or skips the test, saying why.
func lib(t testing.TB) *Lib {
	t.Helper()
	l, err := Load(Auto)
	if err != nil {
		t.Skipf("no optimised BLAS on this machine (install libopenblas0): %v", err)
	}
	return l
}

func randVec(r *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = r.NormFloat64()
	}
	return v
}

// relErr returns max |got - want| / max |want| over the indices where keep is true.
func relErr(got, want []float64, keep func(i int) bool) float64 {
	var num, den float64
	for i := range want {
		if keep != nil && !keep(i) {
			continue
		}
		num = max(num, math.Abs(got[i]-want[i]))
		den = max(den, math.Abs(want[i]))
	}
	return num / den
}

// TestDgemm compares the row-major Dgemm with a naive triple loop for every transpose pair,
// padded row strides, beta 0 and non-zero: relative error under 1e-13.
func TestDgemm(t *testing.T) {
	l := lib(t)
	r := rand.New(rand.NewPCG(1, 2))
	for _, sz := range [][3]int{{1, 1, 1}, {3, 5, 7}, {37, 29, 41}, {130, 70, 90}} {
		m, n, k := sz[0], sz[1], sz[2]
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				for _, beta := range []float64{0, 0.5} {
					ar, ac, br, bc := m, k, k, n
					if ta {
						ar, ac = k, m
					}
					if tb {
						br, bc = n, k
					}
					lda, ldb, ldc := ac+2, bc+1, n+3
					a, b := randVec(r, (ar-1)*lda+ac), randVec(r, (br-1)*ldb+bc)
					c := randVec(r, (m-1)*ldc+n)
					want := append([]float64(nil), c...)
					for i := 0; i < m; i++ {
						for j := 0; j < n; j++ {
							var s float64
							for p := 0; p < k; p++ {
								var av, bv float64
								if ta {
									av = a[p*lda+i]
								} else {
									av = a[i*lda+p]
								}
								if tb {
									bv = b[j*ldb+p]
								} else {
									bv = b[p*ldb+j]
								}
								s += av * bv
							}
							want[i*ldc+j] = 1.5*s + beta*c[i*ldc+j]
						}
					}
					if beta == 0 {
						for i := range c {
							c[i] = math.NaN() // beta = 0 must overwrite
						}
						for i := 0; i < m; i++ {
							for j := n; j < ldc && i*ldc+j < len(c); j++ {
								c[i*ldc+j], want[i*ldc+j] = 7, 7 // padding is untouched
							}
						}
					}
					if err := l.Dgemm(ta, tb, m, n, k, 1.5, a, lda, b, ldb, beta, c, ldc); err != nil {
						t.Fatal(err)
					}
					if e := relErr(c, want, nil); !(e < 1e-13) {
						t.Errorf("m,n,k = %d,%d,%d transA %v transB %v beta %g: relative error %.3g", m, n, k, ta, tb, beta, e)
					}
				}
			}
		}
	}
	if err := l.Dgemm(false, false, 2, 2, 2, 1, make([]float64, 3), 2, make([]float64, 4), 2, 0, make([]float64, 4), 2); err == nil {
		t.Error("Dgemm accepted an A of 3 values for 2 x 2")
	}
}

// TestSgemm compares the row-major Sgemm with a float64 triple loop on the same float32 inputs,
// for every transpose pair and padded strides: the float32 accumulation is within
// 2^-24 k (sum |a||b|) of the exact product, checked as a relative error under k 2^-23.
func TestSgemm(t *testing.T) {
	l := lib(t)
	if !l.HasSgemm() {
		t.Skip("the library has no sgemm_")
	}
	r := rand.New(rand.NewPCG(5, 6))
	r32 := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	for _, sz := range [][3]int{{1, 1, 1}, {3, 5, 7}, {37, 29, 41}} {
		m, n, k := sz[0], sz[1], sz[2]
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				ar, ac, br, bc := m, k, k, n
				if ta {
					ar, ac = k, m
				}
				if tb {
					br, bc = n, k
				}
				lda, ldb, ldc := ac+2, bc+1, n+3
				a, b := r32((ar-1)*lda+ac), r32((br-1)*ldb+bc)
				c := r32((m-1)*ldc + n)
				want, got := make([]float64, len(c)), make([]float64, len(c))
				for i := 0; i < m; i++ {
					for j := 0; j < n; j++ {
						var s float64
						for p := 0; p < k; p++ {
							var av, bv float32
							if ta {
								av = a[p*lda+i]
							} else {
								av = a[i*lda+p]
							}
							if tb {
								bv = b[j*ldb+p]
							} else {
								bv = b[p*ldb+j]
							}
							s += float64(av) * float64(bv)
						}
						want[i*ldc+j] = 1.5*s + 0.5*float64(c[i*ldc+j])
					}
				}
				if err := l.Sgemm(ta, tb, m, n, k, 1.5, a, lda, b, ldb, 0.5, c, ldc); err != nil {
					t.Fatal(err)
				}
				for i := 0; i < m; i++ {
					for j := 0; j < n; j++ {
						got[i*ldc+j] = float64(c[i*ldc+j])
					}
				}
				if e := relErr(got, want, func(i int) bool { return i%ldc < n }); !(e < float64(k)*0x1p-23) {
					t.Errorf("m,n,k = %d,%d,%d transA %v transB %v: relative error %.3g", m, n, k, ta, tb, e)
				}
			}
		}
	}
}

// TestDsyrk compares both triangles and both forms of the row-major Dsyrk with the full product
// A A^T or A^T A: relative error under 1e-13 on the written triangle, the other one untouched.
func TestDsyrk(t *testing.T) {
	l := lib(t)
	r := rand.New(rand.NewPCG(3, 4))
	for _, sz := range [][2]int{{1, 1}, {5, 3}, {64, 200}, {101, 37}} {
		n, k := sz[0], sz[1]
		for _, upper := range []bool{true, false} {
			for _, trans := range []bool{false, true} {
				ar, ac := n, k
				if trans {
					ar, ac = k, n
				}
				lda, ldc := ac+1, n+2
				a := randVec(r, (ar-1)*lda+ac)
				c := randVec(r, (n-1)*ldc+n)
				orig := append([]float64(nil), c...)
				want := append([]float64(nil), c...)
				for i := 0; i < n; i++ {
					for j := 0; j < n; j++ {
						var s float64
						for p := 0; p < k; p++ {
							if trans {
								s += a[p*lda+i] * a[p*lda+j]
							} else {
								s += a[i*lda+p] * a[j*lda+p]
							}
						}
						want[i*ldc+j] = -0.5*s + 2*c[i*ldc+j]
					}
				}
				if err := l.Dsyrk(upper, trans, n, k, -0.5, a, lda, 2, c, ldc); err != nil {
					t.Fatal(err)
				}
				inTri := func(idx int) bool {
					i, j := idx/ldc, idx%ldc
					return j < n && ((upper && j >= i) || (!upper && j <= i))
				}
				if e := relErr(c, want, inTri); !(e < 1e-13) {
					t.Errorf("n %d k %d upper %v trans %v: relative error %.3g", n, k, upper, trans, e)
				}
				for idx := range c {
					if !inTri(idx) && c[idx] != orig[idx] {
						t.Errorf("n %d k %d upper %v trans %v: wrote outside the triangle at %d", n, k, upper, trans, idx)
						break
					}
				}
			}
		}
	}
}

// TestDsyevd checks the eigendecomposition of random symmetric matrices: A O = O diag(w) and
// O^T O = I to 1e-12 relative, eigenvalues ascending and equal to gonum's EigenSym to 1e-12.
func TestDsyevd(t *testing.T) {
	l := lib(t)
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 2, 7, 60, 250} {
		a := make([]float64, n*n)
		for i := 0; i < n; i++ {
			for j := i; j < n; j++ {
				v := r.NormFloat64()
				a[i*n+j], a[j*n+i] = v, v
			}
		}
		o := append([]float64(nil), a...)
		for i := 0; i < n; i++ { // junk in the lower triangle: only the upper one is read
			for j := 0; j < i; j++ {
				o[i*n+j] = 1e3
			}
		}
		w := make([]float64, n)
		lw, liw := DsyevdWork(n)
		if err := l.Dsyevd(n, o, n, w, make([]float64, lw), make([]int32, liw)); err != nil {
			t.Fatal(err)
		}
		var es mat.EigenSym
		if !es.Factorize(mat.NewSymDense(n, append([]float64(nil), a...)), false) {
			t.Fatal("gonum EigenSym failed")
		}
		if e := relErr(w, es.Values(nil), nil); !(e < 1e-12) {
			t.Errorf("n = %d: eigenvalues differ from gonum's by %.3g relative", n, e)
		}
		for k := 1; k < n; k++ {
			if w[k] < w[k-1] {
				t.Fatalf("n = %d: eigenvalues not ascending at %d", n, k)
			}
		}
		A, O := mat.NewDense(n, n, a), mat.NewDense(n, n, o)
		var ao, od, oto mat.Dense
		ao.Mul(A, O)
		od.Mul(O, mat.NewDiagDense(n, w))
		oto.Mul(O.T(), O)
		scale := math.Max(math.Abs(w[0]), math.Abs(w[n-1]))
		if e := mat.Norm(subDense(&ao, &od), math.Inf(1)) / scale; !(e < 1e-12*float64(n)) {
			t.Errorf("n = %d: |A O - O diag(w)| / |w| = %.3g", n, e)
		}
		if e := mat.Norm(subDense(&oto, eye(n)), math.Inf(1)); !(e < 1e-12*float64(n)) {
			t.Errorf("n = %d: |O^T O - I| = %.3g", n, e)
		}
	}
}

func subDense(a, b mat.Matrix) *mat.Dense {
	var d mat.Dense
	d.Sub(a, b)
	return &d
}

func eye(n int) *mat.Dense {
	d := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		d.Set(i, i, 1)
	}
	return d
}

// TestThreads sets the library's thread count and reads it back.
func TestThreads(t *testing.T) {
	l := lib(t)
	if !l.CanSetThreads() {
		t.Skipf("%s cannot set its thread count", l.Info().Provider)
	}
	defer l.SetThreads(runtime.GOMAXPROCS(0))
	for _, n := range []int{1, 2, 1} {
		l.SetThreads(n)
		if got := l.Threads(); got != n {
			t.Errorf("SetThreads(%d): Threads() = %d", n, got)
		}
	}
}

// TestHold: holds at one count share the library, a hold at another count waits until every
// one of them is released (the count never changes under a held call), and then sets it.
func TestHold(t *testing.T) {
	l := lib(t)
	if !l.CanSetThreads() {
		t.Skipf("%s cannot set its thread count", l.Info().Provider)
	}
	defer l.SetThreads(runtime.GOMAXPROCS(0))
	r1 := l.Hold(1)
	r2 := l.Hold(1) // shares
	got := make(chan int)
	go func() {
		release := l.Hold(2)
		got <- l.Threads()
		release()
	}()
	select {
	case n := <-got:
		t.Fatalf("Hold(2) went through while two holds at 1 were in flight (threads %d)", n)
	case <-time.After(50 * time.Millisecond):
	}
	if n := l.Threads(); n != 1 {
		t.Errorf("threads %d under the holds at 1", n)
	}
	r1()
	r1() // a second release of one hold does nothing
	select {
	case n := <-got:
		t.Fatalf("Hold(2) went through with a hold at 1 in flight (threads %d)", n)
	case <-time.After(50 * time.Millisecond):
	}
	r2()
	if n := <-got; n != 2 {
		t.Errorf("Hold(2): threads %d", n)
	}
}

// TestLoadErrors: a missing file, a library without BLAS symbols and an unknown name are
// errors that say so.
func TestLoadErrors(t *testing.T) {
	if _, err := Load("/nonexistent/libopenblas.so.0"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load(missing file) = %v, want ErrNotFound", err)
	}
	if _, err := Load("bogus"); err == nil || !strings.Contains(err.Error(), "want auto, openblas, mkl") {
		t.Errorf("Load(bogus) = %v", err)
	}
	for _, libc := range []string{"/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6"} {
		if _, err := os.Stat(libc); err == nil {
			if _, err := Load(libc); err == nil || !strings.Contains(err.Error(), "not a BLAS library") {
				t.Errorf("Load(libc) = %v, want 'not a BLAS library'", err)
			}
			break
		}
	}
}

// TestInfo checks what Load reports about OpenBLAS: the provider, a mapped file, and a core
// type at least as good as the CPU supports.
func TestInfo(t *testing.T) {
	l := lib(t)
	info := l.Info()
	if info.Provider != "OpenBLAS" {
		t.Skipf("provider %s, not OpenBLAS", info.Provider)
	}
	if !strings.HasPrefix(info.Path, "/") || !strings.Contains(info.Version, "OpenBLAS") {
		t.Errorf("info %+v: want an absolute path and the OpenBLAS config", info)
	}
	if cpu, ok := ReadCPU(); ok && os.Getenv("OPENBLAS_CORETYPE") == "" {
		if best, _ := cpu.BestCore(); best != "" && !strings.EqualFold(info.Core, best) {
			t.Errorf("core %q, want %q (the CPU's best): %+v", info.Core, best, info)
		}
		if info.Warning != "" {
			t.Errorf("unexpected warning %q", info.Warning)
		}
	}
	t.Log(info)
}

// TestCoreFromEnvironment loads OpenBLAS in a child process with OPENBLAS_CORETYPE=Prescott
// (a misdetected core): the core must be Prescott, the note must say it came from the
// environment, and on an AVX2 or AVX-512 CPU the warning must name the variable to set.
func TestCoreFromEnvironment(t *testing.T) {
	if os.Getenv("NATIVEBLAS_CHILD") == "1" {
		l, err := Load(OpenBLAS)
		if err != nil {
			fmt.Println("CHILD-SKIP", err)
			return
		}
		i := l.Info()
		fmt.Printf("CHILD core=%s\nCHILD note=%s\nCHILD warning=%s\n", i.Core, i.CoreNote, i.Warning)
		return
	}
	if _, err := Load(OpenBLAS); err != nil {
		t.Skipf("no OpenBLAS: %v", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCoreFromEnvironment$", "-test.v")
	cmd.Env = append(os.Environ(), "NATIVEBLAS_CHILD=1", "OPENBLAS_CORETYPE=Prescott")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	s := string(out)
	if !strings.Contains(s, "CHILD core=Prescott") || !strings.Contains(s, "OPENBLAS_CORETYPE=Prescott from the environment") {
		t.Fatalf("child output:\n%s", s)
	}
	cpu, _ := ReadCPU()
	if best, _ := cpu.BestCore(); best != "" && !strings.Contains(s, "run with OPENBLAS_CORETYPE="+best) {
		t.Errorf("no warning naming OPENBLAS_CORETYPE=%s:\n%s", best, s)
	}
}

// TestCoreSelectedBeforeLoading proves that aim's choice reaches OpenBLAS: a child process
// loads OpenBLAS as if on a CPU whose best core differs from the real one (Haswell on an AMD
// machine, Zen on others), without OPENBLAS_CORETYPE set, and OpenBLAS must report that core.
func TestCoreSelectedBeforeLoading(t *testing.T) {
	if os.Getenv("NATIVEBLAS_CHILD") == "select" {
		real, _ := ReadCPU()
		fake := CPU{Vendor: "AuthenticAMD", Flags: map[string]bool{"avx2": true, "fma": true}}
		if real.Vendor == "AuthenticAMD" {
			fake.Vendor = "GenuineIntel"
		}
		l, err := load("OpenBLAS", "libopenblas.so.0", fake, true)
		if err != nil {
			fmt.Println("CHILD-SKIP", err)
			return
		}
		best, _ := fake.BestCore()
		_, stillSet := os.LookupEnv("OPENBLAS_CORETYPE")
		fmt.Printf("CHILD want=%s core=%s note=%s envLeft=%v\n", best, l.Info().Core, l.Info().CoreNote, stillSet)
		return
	}
	if _, err := Load(OpenBLAS); err != nil {
		t.Skipf("no OpenBLAS: %v", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCoreSelectedBeforeLoading$", "-test.v")
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "OPENBLAS_CORETYPE=") {
			env = append(env, e)
		}
	}
	cmd.Env = append(env, "NATIVEBLAS_CHILD=select")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var want, core, note, left string
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "CHILD "); ok {
			f := strings.Fields(rest)
			want, core = strings.TrimPrefix(f[0], "want="), strings.TrimPrefix(f[1], "core=")
			note, left = rest, f[len(f)-1]
		}
	}
	if want == "" || !strings.EqualFold(core, want) || !strings.Contains(note, "selected by aim") || left != "envLeft=false" {
		t.Errorf("core %q, want %q selected by aim and the variable removed afterwards; child output:\n%s", core, want, out)
	}
}

// TestBestCore maps CPU flag sets to OpenBLAS core types, and flags the misdetections.
func TestBestCore(t *testing.T) {
	avx512 := "fpu sse2 avx avx2 fma avx512f avx512cd avx512bw avx512dq avx512vl"
	for _, c := range []struct {
		vendor, flags, want string
		under, notUnder     []string
	}{
		{"GenuineIntel", avx512, "SkylakeX", []string{"Prescott", "Haswell", "Sandybridge"}, []string{"SkylakeX", "Cooperlake", "SAPPHIRERAPIDS"}},
		{"AuthenticAMD", avx512, "SkylakeX", []string{"Zen"}, []string{"Cooperlake"}},
		{"AuthenticAMD", "sse2 avx avx2 fma", "Zen", []string{"Prescott", "Barcelona"}, []string{"Zen", "Haswell", "SkylakeX"}},
		{"GenuineIntel", "sse2 avx avx2 fma", "Haswell", []string{"Nehalem", "Sandybridge"}, []string{"Haswell"}},
		{"GenuineIntel", "sse2 avx", "", nil, []string{"Sandybridge", "Prescott"}},
		{"GenuineIntel", "sse2 avx avx2 fma avx512f", "Haswell", []string{"Core2"}, []string{"Haswell"}}, // AVX-512F alone is not SkylakeX
	} {
		text := fmt.Sprintf("processor\t: 0\nvendor_id\t: %s\nmodel name\t: test\nflags\t\t: %s\n\nprocessor\t: 1\nflags\t\t: avx512f\n", c.vendor, c.flags)
		cpu := ParseCPUInfo(text)
		if got, _ := cpu.BestCore(); got != c.want {
			t.Errorf("%s %q: BestCore = %q, want %q", c.vendor, c.flags, got, c.want)
		}
		for _, core := range c.under {
			if !cpu.Underuses(core) {
				t.Errorf("%s %q: %s should underuse the CPU", c.vendor, c.flags, core)
			}
		}
		for _, core := range c.notUnder {
			if cpu.Underuses(core) {
				t.Errorf("%s %q: %s should not underuse the CPU", c.vendor, c.flags, core)
			}
		}
	}
}

// TestFindMapping finds the file whose mapping holds an address.
func TestFindMapping(t *testing.T) {
	maps := "00400000-00452000 r-xp 00000000 08:02 173521 /usr/bin/aim\n" +
		"7f0000000000-7f0000100000 r-xp 00000000 08:02 1 /usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblasp-r0.3.21.so\n" +
		"7f0000100000-7f0000200000 rw-p 00000000 00:00 0 \n"
	for _, c := range []struct {
		addr uint64
		want string
	}{{0x7f0000000010, "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblasp-r0.3.21.so"}, {0x400000, "/usr/bin/aim"}, {0x7f0000100010, ""}, {1, ""}} {
		if got := findMapping([]byte(maps), c.addr); got != c.want {
			t.Errorf("findMapping(%#x) = %q, want %q", c.addr, got, c.want)
		}
	}
}
