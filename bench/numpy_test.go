package bench

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/aim/amp"
)

// The NumPy comparison (bench/gamp_rie_numpy.py): the same GAMP-RIE iteration written with
// NumPy and its BLAS (OpenBLAS on Debian), timed in the same run as aim, interleaved round by
// round so that a load that comes and goes on the machine hits both alike.

// numpyScript is the path of the NumPy implementation, relative to this package.
const numpyScript = "gamp_rie_numpy.py"

// pythonWithNumPy returns a Python interpreter that imports numpy: $AIM_PYTHON, else python3 on
// PATH, else /usr/bin/python3 (Debian's python3-numpy); an error says what was tried.
func pythonWithNumPy() (string, error) {
	var tried []string
	for _, p := range []string{os.Getenv("AIM_PYTHON"), "python3", "/usr/bin/python3"} {
		if p == "" {
			continue
		}
		if out, err := exec.Command(p, "-c", "import numpy").CombinedOutput(); err == nil {
			return p, nil
		} else {
			tried = append(tried, fmt.Sprintf("%s: %v %s", p, err, strings.TrimSpace(lastLine(string(out)))))
		}
	}
	return "", fmt.Errorf("no Python with numpy (set AIM_PYTHON, or apt-get install python3-numpy): %s", strings.Join(tried, "; "))
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// numpyResult is the JSON line of the script.
type numpyResult struct {
	BLAS           string    `json:"blas"`
	Core           string    `json:"core"`
	Threads        int       `json:"threads"`
	SecondsPerIter float64   `json:"seconds_per_iter"`
	Errors         []float64 `json:"errors"`
	Deltas         []float64 `json:"deltas"`
	Seconds        float64   `json:"seconds"` // --eigh
}

// runNumPy runs the script with args, under the OpenBLAS core type and thread count of lib (so
// that NumPy's OpenBLAS runs the kernels and threads aim's does), and decodes its JSON line.
func runNumPy(tb testing.TB, python string, dev *cpu.Device, args ...string) numpyResult {
	tb.Helper()
	cmd := exec.Command(python, append([]string{numpyScript}, args...)...)
	cmd.Env = os.Environ()
	if info := dev.BLAS(); info.Native && info.Lib.Core != "" {
		if os.Getenv("OPENBLAS_CORETYPE") == "" {
			cmd.Env = append(cmd.Env, "OPENBLAS_CORETYPE="+info.Lib.Core)
		}
		if info.Threads > 0 {
			cmd.Env = append(cmd.Env, "OPENBLAS_NUM_THREADS="+strconv.Itoa(info.Threads))
		}
	}
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		tb.Fatalf("%s %v: %v\n%s", python, args, err, msg)
	}
	var r numpyResult
	if err := json.Unmarshal([]byte(lastLine(string(out))), &r); err != nil {
		tb.Fatalf("numpy output %q: %v", out, err)
	}
	return r
}

// writeData writes S, X and y of data as little-endian float64, the format of --data.
func writeData(tb testing.TB, dev device.Device, data *aim.Data, path string) {
	tb.Helper()
	p := data.P
	D, N, T := p.D, p.N(), p.T()
	var all []float64
	for _, part := range []struct {
		b device.Buffer
		n int
	}{{data.S, D * D}, {data.X, N * T * D}, {data.Y, N * T * T}} {
		v := make([]float64, part.n)
		if err := dev.Download(v, part.b); err != nil {
			tb.Fatal(err)
		}
		all = append(all, v...)
	}
	buf := make([]byte, 8*len(all))
	for i, v := range all {
		binary.LittleEndian.PutUint64(buf[8*i:], math.Float64bits(v))
	}
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// TestNumPyMatchesAIM proves that the NumPy script runs the same iteration as aim: on aim's
// data (written to a file), from the same start, the error ||S-hat - S||^2/D and Delta of every
// iteration agree to 1e-8 relative, for softmax T = 2 and T = 3, with the script's plain
// (dgemm) back-projection and with its --symmetric (dsyrk) one. (They differ by rounding, and by
// the mmse integral: adaptive Gauss-Kronrod in Go, Gauss-Legendre in the script.)
func TestNumPyMatchesAIM(t *testing.T) {
	python, err := pythonWithNumPy()
	if err != nil {
		t.Skip(err)
	}
	dev := cpu.New(0)
	for _, p := range []aim.Params{
		{D: 50, Alpha: 0.2, Rho: 0.5, Channel: channel.Spec{Kind: channel.KindSoftmax, T: 2, Beta: 1}, Seed: 7},
		{D: 40, Alpha: 0.08, Rho: 0.3, Channel: channel.Spec{Kind: channel.KindSoftmax, T: 3, Beta: 1.5}, Seed: 8},
	} {
		const iters = 15
		data, err := aim.Generate(dev, p)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "data.f64")
		writeData(t, dev, data, path)
		o := amp.DefaultOptions()
		o.MaxIter, o.Tol = iters, 1e-300
		res, err := amp.Run(dev, data, o)
		data.Free(dev)
		if err != nil {
			t.Fatal(err)
		}
		for _, variant := range []string{"--symmetric=false", "--symmetric"} {
			args := []string{"--data", path, "--D", strconv.Itoa(p.D), "--alpha", num(p.Alpha), "--rho", num(p.Rho),
				"--T", strconv.Itoa(p.T()), "--beta", num(p.Channel.Beta), "--iters", strconv.Itoa(iters)}
			if variant == "--symmetric" {
				args = append(args, variant)
			}
			np := runNumPy(t, python, dev, args...)
			if len(np.Errors) != len(res.Trace) {
				t.Fatalf("T = %d %s: numpy ran %d iterations, aim %d", p.T(), variant, len(np.Errors), len(res.Trace))
			}
			var worst float64
			for k, it := range res.Trace {
				worst = math.Max(worst, math.Abs(np.Errors[k]-it.Error)/it.Error)
				worst = math.Max(worst, math.Abs(np.Deltas[k]-it.Delta)/it.Delta)
			}
			if !(worst < 1e-8) {
				t.Errorf("T = %d %s: numpy and aim differ by %.3g relative (errors %v vs last aim %v)", p.T(), variant, worst, np.Errors, res.Trace[len(res.Trace)-1])
			}
			t.Logf("T = %d, D = %d %s: %d iterations, final error %.10g (aim) %.10g (numpy), worst relative difference %.2g",
				p.T(), p.D, variant, iters, res.Error, np.Errors[iters-1], worst)
		}
	}
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// envInts reads a comma-separated list of integers from the environment, or returns def.
func envInts(tb testing.TB, name string, def []int) []int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			tb.Fatalf("%s=%q: %v", name, s, err)
		}
		out = append(out, v)
	}
	return out
}

// benchSetup opens what the NumPy comparisons need: a Python with NumPy, aim's CPU device on
// the native BLAS and on gonum, whether to time gonum too (AIM_BENCH_GONUM=1), and the rounds
// (AIM_BENCH_ROUNDS, default 3). It skips without NumPy or a native BLAS.
func benchSetup(b *testing.B) (python string, native, gonum *cpu.Device, withGonum bool, rounds int) {
	python, err := pythonWithNumPy()
	if err != nil {
		b.Skip(err)
	}
	native, err = cpu.Open(cpu.Options{BLAS: "auto"})
	if err != nil {
		b.Skipf("no native BLAS for aim: %v", err)
	}
	if !native.BLAS().Native {
		b.Skipf("no native BLAS for aim (install libopenblas0): %s", native.BLAS().Note)
	}
	if gonum, err = cpu.Open(cpu.Options{BLAS: cpu.GonumBLAS}); err != nil {
		b.Fatal(err)
	}
	rounds = 3
	if v := envInts(b, "AIM_BENCH_ROUNDS", nil); len(v) == 1 && v[0] > 0 {
		rounds = v[0]
	}
	return python, native, gonum, os.Getenv("AIM_BENCH_GONUM") == "1", rounds
}

// BenchmarkCPUvsNumPy times one GAMP-RIE iteration (softmax T = 2, alpha = 0.2, rho = 0.5) at
// D = 200 and 400 with aim's CPU backend on the native BLAS, with the NumPy script under the
// same OpenBLAS core type and thread count (its plain dgemm back-projection, and --symmetric,
// the dsyrk one aim uses), and (AIM_BENCH_GONUM=1) with aim on gonum; they alternate in
// AIM_BENCH_ROUNDS rounds (default 3; gonum in three at most) and each figure is the median over
// rounds of the seconds per iteration after the first (5 iterations are timed). It reports s/iter
// of each, and ratio = aim / NumPy and ratio-sym = aim / NumPy --symmetric as the medians of the
// rounds' ratios (each round's pair runs back to back, so a changing load cancels).
// AIM_BENCH_D overrides the sizes (comma-separated).
func BenchmarkCPUvsNumPy(b *testing.B) {
	python, native, gonum, withGonum, rounds := benchSetup(b)
	b.Logf("aim: %s", native.BLAS())
	for _, D := range envInts(b, "AIM_BENCH_D", []int{200, 400}) {
		b.Run(fmt.Sprintf("D=%d", D), func(b *testing.B) {
			p := aim.Params{D: D, Alpha: 0.2, Rho: 0.5, Channel: channel.Spec{Kind: channel.KindSoftmax, T: 2, Beta: 1}, Seed: 1}
			iters := 5
			for b.Loop() {
				var aimS, npS, symS, goS, ratios, ratiosSym []float64
				var core string
				for r := 0; r < rounds; r++ {
					aimS = append(aimS, timeIterations(b, native, p, iters))
					np := runNumPy(b, python, native, "--D", strconv.Itoa(D), "--iters", strconv.Itoa(iters+1))
					npS = append(npS, np.SecondsPerIter)
					core = fmt.Sprintf("%s, %d threads", np.Core, np.Threads)
					symS = append(symS, runNumPy(b, python, native, "--D", strconv.Itoa(D), "--iters", strconv.Itoa(iters+1), "--symmetric").SecondsPerIter)
					ratios = append(ratios, aimS[r]/npS[r])
					ratiosSym = append(ratiosSym, aimS[r]/symS[r])
					if withGonum && r < 3 { // gonum is slow: three rounds at most
						goS = append(goS, timeIterations(b, gonum, p, 1))
					}
				}
				a, n, sy := median(aimS), median(npS), median(symS)
				ra, rs := median(ratios), median(ratiosSym)
				b.ReportMetric(a, "aim-s/iter")
				b.ReportMetric(n, "numpy-s/iter")
				b.ReportMetric(sy, "numpy-sym-s/iter")
				b.ReportMetric(ra, "ratio")
				b.ReportMetric(rs, "ratio-sym")
				line := fmt.Sprintf("D = %d: aim (%s) %.4f s/iter, NumPy (OpenBLAS %s) %.4f s/iter, NumPy --symmetric %.4f s/iter (medians over %d rounds); "+
					"ratio aim/NumPy (median of the rounds' ratios) %.3f, aim/NumPy --symmetric %.3f; rounds: aim %s numpy %s numpy-sym %s ratio %s",
					D, native.BLAS().Lib.Provider, a, core, n, sy, rounds, ra, rs, fmtList(aimS), fmtList(npS), fmtList(symS), fmtList(ratios))
				if withGonum {
					g := median(goS)
					b.ReportMetric(g, "gonum-s/iter")
					line += fmt.Sprintf("; aim on gonum %.4f s/iter (%.2f x NumPy) %s", g, g/n, fmtList(goS))
				}
				b.Log(line)
			}
		})
	}
}

func fmtList(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatFloat(x, 'f', 4, 64)
	}
	return "[" + strings.Join(s, " ") + "]"
}

// BenchmarkEighVsNumPy times the eigendecomposition (with vectors) of a random symmetric
// 1000 x 1000 matrix: aim's EighSym on the native library (LAPACK dsyevd), numpy.linalg.eigh
// (dsyevd through NumPy), and with AIM_BENCH_GONUM=1 aim on gonum (Dsyev, two rounds at most),
// alternating, medians of AIM_BENCH_ROUNDS rounds of 3. It reports s/op of each and ratio = aim
// / NumPy, the median of the rounds' ratios.
func BenchmarkEighVsNumPy(b *testing.B) {
	python, native, gonum, withGonum, rounds := benchSetup(b)
	const D = 1000
	r := rand.New(rand.NewPCG(1, 2))
	a := make([]float64, D*D)
	for i := 0; i < D; i++ {
		for j := i; j < D; j++ {
			v := r.NormFloat64()
			a[i*D+j], a[j*D+i] = v, v
		}
	}
	timeEigh := func(dev *cpu.Device, reps int) float64 {
		bufs, err := device.AllocAll(dev, D*D, D, D*D)
		if err != nil {
			b.Fatal(err)
		}
		defer device.FreeAll(dev, bufs...)
		if err := dev.Upload(bufs[0], a); err != nil {
			b.Fatal(err)
		}
		var ts []float64
		for k := 0; k < reps+1; k++ { // the first is warm-up
			start := time.Now()
			if err := dev.EighSym(bufs[1], bufs[2], bufs[0], D); err != nil {
				b.Fatal(err)
			}
			if k > 0 {
				ts = append(ts, time.Since(start).Seconds())
			}
		}
		return median(ts)
	}
	for b.Loop() {
		var aimS, npS, goS, ratios []float64
		for k := 0; k < rounds; k++ {
			aimS = append(aimS, timeEigh(native, 3))
			npS = append(npS, runNumPy(b, python, native, "--eigh", strconv.Itoa(D), "--reps", "3").Seconds)
			ratios = append(ratios, aimS[k]/npS[k])
			if withGonum && k < 2 {
				goS = append(goS, timeEigh(gonum, 1))
			}
		}
		x, n, ra := median(aimS), median(npS), median(ratios)
		b.ReportMetric(x, "aim-s/op")
		b.ReportMetric(n, "numpy-s/op")
		b.ReportMetric(ra, "ratio")
		line := fmt.Sprintf("EigenSym D = %d: aim %.4f s, numpy.linalg.eigh %.4f s (medians), ratio %.3f (median of the rounds' ratios); rounds aim %s numpy %s ratio %s (%d threads)",
			D, x, n, ra, fmtList(aimS), fmtList(npS), fmtList(ratios), runtime.GOMAXPROCS(0))
		if withGonum {
			g := median(goS)
			b.ReportMetric(g, "gonum-s/op")
			line += fmt.Sprintf("; gonum %.3f s (ratio %.2f)", g, g/n)
		}
		b.Log(line)
	}
}
