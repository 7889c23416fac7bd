package kernels

import (
	"bytes"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/integrate/quad"
)

// signatures are the PTX parameter types of every kernel, from the C signatures of the launch
// contract (launch.go): pointers, long long and unsigned long long are u64, int u32, double
// f64. device/cuda passes arguments of exactly these sizes.
var signatures = map[string]string{
	"token_dots":        "u64 u64 u64 u64 u32 u32",
	"token_mix":         "u64 u64 u64 u64 u32 u32",
	"scal":              "u64 u64 f64",
	"axpby":             "u64 f64 u64 f64 u64",
	"add_diag":          "u64 u64 u32 f64",
	"mul_pattern":       "u64 u64 u64 u32",
	"scale_columns":     "u64 u64 u64 u32",
	"dot_partial":       "u64 u64 u64 u64",
	"sqdist_partial":    "u64 u64 u64 u64",
	"sumdiag_partial":   "u64 u64 u64 u32",
	"softmax_output":    "u64 u64 u64 u32 f64",
	"hardmax_output":    "u64 u64 u64 u32",
	"softmax_gout":      "u64 u64 u64 u64 u64 u32 f64 f64",
	"hardmax_gout":      "u64 u64 u64 u64 u64 f64 u32",
	"hardmaxt_gout":     "u64 u64 u64 u64 u64 u32 f64 u32 u32 f64",
	"gaussian_fill":     "u64 u64 u64 u64 f64",
	"softmax_loss_grad": "u64 u64 u64 u64 u64 u32 f64 f64",
	"adam_step":         "u64 u64 u64 u64 u64 f64 f64 f64 f64 f64 f64",
	"deep_sample":       "u64 u64 u64 u32 u32 f64 f64 u64 u64 u64",
	"deep_sample_warp":  "u64 u64 u64 u32 u32 f64 f64 u64 u64 u64",
	"to_f32":            "u64 u64 u64 u32",
	"split_bf16":        "u64 u64 u64 u64",
	"from_f32":          "u64 u64 u64 f64 f64",
}

var entryRE = regexp.MustCompile(`(?m)^\.visible \.entry ([A-Za-z_][A-Za-z0-9_]*)\(\s*\n((?:\s*\.param [^\n]*\n)*)\s*\)`)
var paramRE = regexp.MustCompile(`\.param \.([a-z0-9]+) `)

// entries returns the parameter types of every .entry of a PTX text.
func entries(ptx []byte) map[string][]string {
	out := map[string][]string{}
	for _, m := range entryRE.FindAllSubmatch(ptx, -1) {
		var types []string
		for _, p := range paramRE.FindAllSubmatch(m[2], -1) {
			types = append(types, string(p[1]))
		}
		out[string(m[1])] = types
	}
	return out
}

func TestKernelsInPTX(t *testing.T) {
	ptx := PTX()
	if len(ptx) == 0 {
		t.Fatal("no PTX embedded")
	}
	found := map[string]bool{}
	for mod, text := range ptx {
		for name := range entries(text) {
			if found[name] {
				t.Errorf("kernel %s defined twice", name)
			}
			found[name] = true
			if m, ok := KernelModule(name); !ok || m != mod {
				t.Errorf("module %s defines kernel %s, which KernelModule maps to %q (%v)", mod, name, m, ok)
			}
		}
	}
	if len(Kernels()) != len(signatures) {
		t.Errorf("Kernels() has %d names, the test's signature table %d", len(Kernels()), len(signatures))
	}
	for _, name := range Kernels() {
		mod, _ := KernelModule(name)
		text, ok := ptx[mod]
		if !ok {
			t.Errorf("kernel %s: module %s not embedded", name, mod)
			continue
		}
		types, ok := entries(text)[name]
		if !ok {
			t.Errorf("kernel %s: no `.visible .entry %s(` in %s.ptx", name, name, mod)
			continue
		}
		n, _ := KernelParams(name)
		if len(types) != n {
			t.Errorf("kernel %s: %d .param lines in %s.ptx, KernelParams says %d", name, len(types), mod, n)
		}
		if got, want := strings.Join(types, " "), signatures[name]; got != want {
			t.Errorf("kernel %s: parameter types %q, want %q", name, got, want)
		}
	}
	if _, ok := KernelModule("no_such_kernel"); ok {
		t.Error("KernelModule accepts an unknown name")
	}
}

func TestPTXHeader(t *testing.T) {
	for mod, text := range PTX() {
		if !bytes.Contains(text, []byte("\n.target sm_80\n")) {
			t.Errorf("%s.ptx: no `.target sm_80`", mod)
		}
		if !regexp.MustCompile(`\n\.version \d+\.\d+\n`).Match(text) {
			t.Errorf("%s.ptx: no .version line", mod)
		}
		if !bytes.Contains(text, []byte("\n.address_size 64\n")) {
			t.Errorf("%s.ptx: no `.address_size 64`", mod)
		}
		if bytes.IndexByte(text, 0) >= 0 {
			t.Errorf("%s.ptx: contains a NUL byte", mod)
		}
	}
	mods := Modules()
	if !sort.StringsAreSorted(mods) {
		t.Errorf("Modules() not sorted: %v", mods)
	}
	// Every source has its PTX and every PTX its source.
	srcs, _ := filepath.Glob("*.cu")
	var names []string
	for _, s := range srcs {
		names = append(names, strings.TrimSuffix(s, ".cu"))
	}
	sort.Strings(names)
	if strings.Join(names, ",") != strings.Join(mods, ",") {
		t.Errorf("sources %v, embedded modules %v", names, mods)
	}
}

// TestNoContraction checks that every double add, sub and mul in the PTX carries a rounding
// modifier (.rn): the driver's JIT may fuse an unmodified mul.f64 and add.f64 into an FMA,
// which would break the bit-exact Gaussian stream and the CPU-identical element-wise results.
func TestNoContraction(t *testing.T) {
	re := regexp.MustCompile(`(?m)^\s*(add|sub|mul|fma|mad)\.f64\s`)
	for mod, text := range PTX() {
		if m := re.Find(text); m != nil {
			t.Errorf("%s.ptx: contractible instruction %q (compile with --fmad=false)", mod, strings.TrimSpace(string(m)))
		}
	}
}

// TestDecimalConstants checks the constants written as `<decimal> // <hex float>` in the
// sources and headers: the decimal must be the hex float exactly.
func TestDecimalConstants(t *testing.T) {
	re := regexp.MustCompile(`(-?[0-9][0-9.e+-]*)\)?\s*//\s*(-?0x[0-9a-fA-F.]+p[+-]?[0-9]+)`)
	srcs, _ := filepath.Glob("*.cu")
	headers, _ := filepath.Glob("*.cuh")
	srcs = append(srcs, headers...)
	n := 0
	for _, s := range srcs {
		text, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllSubmatch(text, -1) {
			d, err1 := strconv.ParseFloat(string(m[1]), 64)
			h, err2 := strconv.ParseFloat(string(m[2]), 64)
			if err1 != nil || err2 != nil || d != h {
				t.Errorf("%s: %s is %v, its comment says %s = %v", s, m[1], d, m[2], h)
			}
			n++
		}
	}
	if n < 32 { // 26 in normal.cuh, 3 in channel.cu, 3 in deep.cu
		t.Errorf("only %d annotated constants found", n)
	}
}

// TestGaussLegendre checks channel.cu's Gauss-Legendre rules against gonum's, which
// channel/bvn.go uses, bit for bit.
func TestGaussLegendre(t *testing.T) {
	text, err := os.ReadFile("channel.cu")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{6, 12, 20} {
		x := make([]float64, n)
		w := make([]float64, n)
		quad.Legendre{}.FixedLocations(x, w, -1, 1)
		for _, arr := range []struct {
			name string
			want []float64
		}{{"gl" + strconv.Itoa(n) + "x", x}, {"gl" + strconv.Itoa(n) + "w", w}} {
			re := regexp.MustCompile(`__constant__ double ` + arr.name + `\[` + strconv.Itoa(n) + `\] = \{([^}]*)\};`)
			m := re.FindSubmatch(text)
			if m == nil {
				t.Errorf("channel.cu: no array %s[%d]", arr.name, n)
				continue
			}
			fields := strings.Split(string(m[1]), ",")
			if len(fields) != n {
				t.Errorf("%s: %d values", arr.name, len(fields))
				continue
			}
			for i, f := range fields {
				v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
				if err != nil || math.Float64bits(v) != math.Float64bits(arr.want[i]) {
					t.Errorf("%s[%d] = %s, gonum has %v", arr.name, i, f, arr.want[i])
				}
			}
		}
	}
}

// TestRegenerate compiles the sources again with NVRTC (the generator ./gen, built into a
// temporary folder and run as a binary with -check, because `go run` replaces the program's exit
// status by 1) and requires byte-identical PTX. Without NVRTC (exit 3), or with an NVRTC release
// other than the one that made the committed PTX (exit 4), it skips, except under CI=true, where
// it fails. AIM_NVRTC passes through to the generator (AIM_NVRTC=none: as if no NVRTC).
func TestRegenerate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: not regenerating the PTX")
	}
	skip := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf(format+" (CI=true: this check is required)", args...)
		}
		t.Skipf(format, args...)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(goBin); err != nil {
			skip("no go command to build ./gen")
		}
	}
	gen := filepath.Join(t.TempDir(), "gen")
	build := exec.Command(goBin, "build", "-o", gen, "./gen")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./gen: %v\n%s", err, out)
	}
	cmd := exec.Command(gen, "-dir", ".", "-check")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		t.Logf("gen -check:\n%s", out)
	case errors.As(err, &exit) && exit.ExitCode() == 3:
		skip("NVRTC not found, cannot regenerate the PTX:\n%s", out)
	case errors.As(err, &exit) && exit.ExitCode() == 4:
		skip("other NVRTC release than the committed PTX's:\n%s", out)
	default:
		t.Fatalf("gen -check: %v\n%s", err, out)
	}
}
