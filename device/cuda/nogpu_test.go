package cuda

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aimtheory/aim/channel"
)

// Tests of this file need no GPU: they run everywhere and assert values.

func TestStatusNames(t *testing.T) {
	for _, c := range []struct {
		f    func(int32) string
		code int32
		want string
	}{
		{cuResultName, 0, "CUDA_SUCCESS"},
		{cuResultName, 1, "CUDA_ERROR_INVALID_VALUE"},
		{cuResultName, 2, "CUDA_ERROR_OUT_OF_MEMORY"},
		{cuResultName, 3, "CUDA_ERROR_NOT_INITIALIZED"},
		{cuResultName, 100, "CUDA_ERROR_NO_DEVICE"},
		{cuResultName, 218, "CUDA_ERROR_INVALID_PTX"},
		{cuResultName, 222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"},
		{cuResultName, 700, "CUDA_ERROR_ILLEGAL_ADDRESS"},
		{cuResultName, 719, "CUDA_ERROR_LAUNCH_FAILED"},
		{cuResultName, 999, "CUDA_ERROR_UNKNOWN"},
		{cuResultName, 12345, "unknown CUresult 12345"},
		{cublasStatusName, 0, "CUBLAS_STATUS_SUCCESS"},
		{cublasStatusName, 1, "CUBLAS_STATUS_NOT_INITIALIZED"},
		{cublasStatusName, 3, "CUBLAS_STATUS_ALLOC_FAILED"},
		{cublasStatusName, 7, "CUBLAS_STATUS_INVALID_VALUE"},
		{cublasStatusName, 13, "CUBLAS_STATUS_EXECUTION_FAILED"},
		{cublasStatusName, 15, "CUBLAS_STATUS_NOT_SUPPORTED"},
		{cublasStatusName, 2, "unknown cublasStatus_t 2"},
		{cusolverStatusName, 0, "CUSOLVER_STATUS_SUCCESS"},
		{cusolverStatusName, 3, "CUSOLVER_STATUS_INVALID_VALUE"},
		{cusolverStatusName, 6, "CUSOLVER_STATUS_EXECUTION_FAILED"},
		{cusolverStatusName, 7, "CUSOLVER_STATUS_INTERNAL_ERROR"},
		{cusolverStatusName, 31, "CUSOLVER_STATUS_INVALID_WORKSPACE"},
		{cusolverStatusName, -1, "unknown cusolverStatus_t -1"},
	} {
		if got := c.f(c.code); got != c.want {
			t.Errorf("code %d: got %q, want %q", c.code, got, c.want)
		}
	}
}

func TestStatusErrors(t *testing.T) {
	var noDriver *driverLib // the table decodes when the driver is not loaded
	if err := noDriver.cuErr("cuInit", 0); err != nil {
		t.Errorf("CUDA_SUCCESS gave %v", err)
	}
	if err := cublasErr("cublasDgemm_v2", 0); err != nil {
		t.Errorf("CUBLAS_STATUS_SUCCESS gave %v", err)
	}
	if err := cusolverErr("cusolverDnDsyevd", 0); err != nil {
		t.Errorf("CUSOLVER_STATUS_SUCCESS gave %v", err)
	}
	for _, c := range []struct {
		err  error
		want string
		code int32
	}{
		{noDriver.cuErr("cuInit", 100), "cuInit: CUDA_ERROR_NO_DEVICE (100)", 100},
		{noDriver.cuErr("cuMemAlloc_v2", 2), "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2)", 2},
		{cublasErr("cublasDgemm_v2", 13), "cublasDgemm_v2: CUBLAS_STATUS_EXECUTION_FAILED (13)", 13},
		{cusolverErr("cusolverDnDsyevd", 3), "cusolverDnDsyevd: CUSOLVER_STATUS_INVALID_VALUE (3)", 3},
	} {
		if c.err == nil || c.err.Error() != c.want {
			t.Errorf("got %v, want %q", c.err, c.want)
			continue
		}
		var e *Error
		if !errors.As(c.err, &e) || e.Code != c.code {
			t.Errorf("%v: not an *Error with code %d", c.err, c.code)
		}
	}
}

func TestVersionAndBlocks(t *testing.T) {
	for v, want := range map[int]string{13000: "13.0", 12040: "12.4", 11080: "11.8", 12090: "12.9"} {
		if got := versionString(v); got != want {
			t.Errorf("versionString(%d) = %q, want %q", v, got, want)
		}
	}
	for _, c := range []struct {
		off  uint64
		n    int
		want int64
	}{
		{0, 1, 1}, {1, 1, 1}, {0, 2, 1}, {1, 2, 2}, {0, 3, 2}, {0, 4, 2}, {1, 4, 3}, {6, 10, 5},
		{math.MaxUint64, 1, 1}, {math.MaxUint64, 3, 2}, {math.MaxUint64 - 1, 2, 1},
	} {
		if got := philoxBlocks(c.off, c.n); got != c.want {
			t.Errorf("philoxBlocks(%d, %d) = %d, want %d", c.off, c.n, got, c.want)
		}
	}
}

// touch creates an empty file (and its directory).
func touch(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("not a library"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSearchOrder builds a fake tree of libraries and checks the order of the candidates:
// AIM_CUDA_LIB_DIR (newest soname first), the dynamic loader, LD_LIBRARY_PATH, then the Python
// wheels of the virtual environment, the user's site-packages and a python3 on PATH.
func TestSearchOrder(t *testing.T) {
	root := t.TempDir()
	extra := filepath.Join(root, "extra")
	ld1, ld2 := filepath.Join(root, "ld1"), filepath.Join(root, "ld2")
	venv := filepath.Join(root, "venv")
	home := filepath.Join(root, "home")
	pyPrefix := filepath.Join(root, "py")
	venvLib := filepath.Join(venv, "lib", "python3.11", "site-packages", "nvidia", "cublas", "lib")
	homeLib := filepath.Join(home, ".local", "lib", "python3.12", "site-packages", "nvidia", "cusolver", "lib")
	pyLib := filepath.Join(pyPrefix, "lib", "python3.10", "site-packages", "nvidia", "cublas", "lib")
	jitLib := filepath.Join(pyPrefix, "lib", "python3.10", "site-packages", "nvidia", "nvjitlink", "lib")
	ncclLib := filepath.Join(venv, "lib", "python3.11", "site-packages", "nvidia", "nccl", "lib")
	for _, p := range []string{
		filepath.Join(extra, "libcublas.so.13"), filepath.Join(extra, "libcublas.so.11"),
		filepath.Join(ld2, "libcublas.so.12"), filepath.Join(ld2, "libcusolver.so.11"),
		filepath.Join(venvLib, "libcublas.so.12"), filepath.Join(venvLib, "libcublas.so.13"),
		filepath.Join(homeLib, "libcusolver.so.12"),
		filepath.Join(pyLib, "libcublas.so.11"),
		filepath.Join(jitLib, "libnvJitLink.so.12"),
		filepath.Join(ld1, "libnccl.so.2"), filepath.Join(ncclLib, "libnccl.so.2"),
		filepath.Join(pyPrefix, "bin", "python3"),
	} {
		touch(t, p)
	}
	if err := os.MkdirAll(ld1, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvLibDir, extra)
	t.Setenv("LD_LIBRARY_PATH", ld1+":"+ld2+"::"+ld1)
	t.Setenv("VIRTUAL_ENV", venv)
	t.Setenv("CONDA_PREFIX", "")
	t.Setenv("HOME", home)
	t.Setenv("PATH", filepath.Join(pyPrefix, "bin")+":"+filepath.Join(root, "nopython"))
	env := osEnv()
	if env.libDir != extra {
		t.Fatalf("osEnv did not read %s: %q", EnvLibDir, env.libDir)
	}

	// Only the candidates in the fake tree and the loader's are compared: a machine may have
	// real libraries in /usr/local/cuda or a system site-packages.
	inTree := func(cs []candidate) []candidate {
		var out []candidate
		for _, c := range cs {
			if c.via == viaLoader || strings.HasPrefix(c.path, root) {
				out = append(out, c)
			}
		}
		return out
	}
	gotBlas := inTree(env.candidates(specCublas))
	wantBlas := []candidate{
		{"libcublas.so.13", filepath.Join(extra, "libcublas.so.13"), viaLibDir},
		{"libcublas.so.11", filepath.Join(extra, "libcublas.so.11"), viaLibDir},
		{"libcublas.so.13", "libcublas.so.13", viaLoader},
		{"libcublas.so.12", "libcublas.so.12", viaLoader},
		{"libcublas.so.11", "libcublas.so.11", viaLoader},
		{"libcublas.so.12", filepath.Join(ld2, "libcublas.so.12"), viaLDPath},
		{"libcublas.so.13", filepath.Join(venvLib, "libcublas.so.13"), viaWheel + " (" + filepath.Join(venv, "lib", "python3.11", "site-packages") + ")"},
		{"libcublas.so.12", filepath.Join(venvLib, "libcublas.so.12"), viaWheel + " (" + filepath.Join(venv, "lib", "python3.11", "site-packages") + ")"},
		{"libcublas.so.11", filepath.Join(pyLib, "libcublas.so.11"), viaWheel + " (" + filepath.Join(pyPrefix, "lib", "python3.10", "site-packages") + ")"},
	}
	if !reflect.DeepEqual(gotBlas, wantBlas) {
		t.Errorf("cuBLAS candidates:\n got %v\nwant %v", gotBlas, wantBlas)
	}
	gotSolver := inTree(env.candidates(specCusolver))
	wantSolver := []candidate{
		{"libcusolver.so.12", "libcusolver.so.12", viaLoader},
		{"libcusolver.so.11", "libcusolver.so.11", viaLoader},
		{"libcusolver.so.11", filepath.Join(ld2, "libcusolver.so.11"), viaLDPath},
		{"libcusolver.so.12", filepath.Join(homeLib, "libcusolver.so.12"), viaWheel + " (" + filepath.Join(home, ".local", "lib", "python3.12", "site-packages") + ")"},
	}
	if !reflect.DeepEqual(gotSolver, wantSolver) {
		t.Errorf("cuSOLVER candidates:\n got %v\nwant %v", gotSolver, wantSolver)
	}

	// NCCL: the loader, LD_LIBRARY_PATH, then the nvidia-nccl wheel (site-packages/nvidia/nccl/lib).
	gotNCCL := inTree(env.candidates(specNCCL))
	wantNCCL := []candidate{
		{"libnccl.so.2", "libnccl.so.2", viaLoader},
		{"libnccl.so.2", filepath.Join(ld1, "libnccl.so.2"), viaLDPath},
		{"libnccl.so.2", filepath.Join(ncclLib, "libnccl.so.2"), viaWheel + " (" + filepath.Join(venv, "lib", "python3.11", "site-packages") + ")"},
	}
	if !reflect.DeepEqual(gotNCCL, wantNCCL) {
		t.Errorf("NCCL candidates:\n got %v\nwant %v", gotNCCL, wantNCCL)
	}

	// The directory list: LD_LIBRARY_PATH deduplicated and in order, then the fixed CUDA
	// directories, then the wheels.
	dirs := env.dirs()
	var names []string
	for _, d := range dirs {
		names = append(names, d.dir)
	}
	wantPrefix := []string{ld1, ld2, "/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib", "/usr/lib/x86_64-linux-gnu"}
	if len(names) < len(wantPrefix) || !reflect.DeepEqual(names[:len(wantPrefix)], wantPrefix) {
		t.Errorf("search dirs start %v, want %v", names, wantPrefix)
	}
	for _, w := range []string{venvLib, homeLib, pyLib, jitLib, ncclLib} {
		if !contains(names, w) {
			t.Errorf("wheel dir %s not searched: %v", w, names)
		}
	}
	if i, j := index(names, venvLib), index(names, homeLib); i > j {
		t.Errorf("virtual environment (%d) searched after the user's site-packages (%d)", i, j)
	}

	// Dependencies of a wheel are found in sibling directories. findFile sees only the fake
	// tree here: a machine's real CUDA toolkit (/usr/local/cuda/lib64/libnvJitLink.so.13 on
	// the H200 of the GPU check) comes before the wheels, as it should, and would win.
	inTreeEnv := env
	inTreeEnv.exists = func(p string) bool { return strings.HasPrefix(p, root) && env.exists(p) }
	if got := inTreeEnv.findFile([]string{"libnvJitLink.so.13", "libnvJitLink.so.12"}); got != filepath.Join(jitLib, "libnvJitLink.so.12") {
		t.Errorf("findFile(libnvJitLink) = %q", got)
	}
	if got := inTreeEnv.findFile([]string{"libcublas.so.11"}); got != filepath.Join(extra, "libcublas.so.11") {
		t.Errorf("findFile(libcublas.so.11) = %q, want the AIM_CUDA_LIB_DIR copy", got)
	}

	// Loading: the fake file of AIM_CUDA_LIB_DIR is the first candidate tried; it is not an ELF
	// object, so it fails, and the record says so and names it.
	_, rec := env.loadLib(specCublas, func(uintptr) error { return errors.New("refused by the test") })
	if rec.Error == "" || len(rec.Failed) == 0 || !strings.Contains(rec.Failed[0], filepath.Join(extra, "libcublas.so.13")) {
		t.Errorf("loadLib of a fake library: error %q, failed %q", rec.Error, rec.Failed)
	}
	if rec.Path != "" {
		t.Errorf("loadLib with a refusing use recorded path %q", rec.Path)
	}
}

func contains(s []string, v string) bool { return index(s, v) >= 0 }

func index(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func TestFindMapped(t *testing.T) {
	maps := []byte(`55d0 r-xp 00000000 08:01 1 /usr/bin/aim
7f00 r-xp 00000000 08:01 2 /usr/lib/x86_64-linux-gnu/libcuda.so.580.65.06
7f01 r-xp 00000000 08:01 3 /opt/wheels/nvidia/cublas/lib/libcublasLt.so.13
7f02 r-xp 00000000 08:01 4 /opt/wheels/nvidia/cublas/lib/libcublas.so.13
7f03 rw-p 00000000 00:00 0 [heap]
7f04 r-xp 00000000 08:01 5 /usr/local/cuda/lib64/libcusolver.so.12.0.4
`)
	for _, c := range []struct{ soname, want string }{
		{"libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.580.65.06"},
		{"libcublas.so.13", "/opt/wheels/nvidia/cublas/lib/libcublas.so.13"},
		{"libcusolver.so.12", "/usr/local/cuda/lib64/libcusolver.so.12.0.4"},
		{"libcusolver.so.11", "/usr/local/cuda/lib64/libcusolver.so.12.0.4"}, // stem match, last resort
		{"libnvrtc.so.12", ""},
	} {
		stem := c.soname[:strings.Index(c.soname, ".so")+3]
		if got := findMapped(maps, c.soname, stem); got != c.want {
			t.Errorf("findMapped(%s) = %q, want %q", c.soname, got, c.want)
		}
	}
}

// TestMissingLibcuda: with AIM_LIBCUDA naming a file that does not exist, Probe reports an
// error naming it (and no device), and Open fails with an error naming it, on every machine.
func TestMissingLibcuda(t *testing.T) {
	const bogus = "/nonexistent/libcuda.so.1"
	t.Setenv(EnvLibCUDA, bogus)
	r := Probe()
	if r.Error == "" || !strings.Contains(r.Error, bogus) || !strings.Contains(r.Error, "libcuda") {
		t.Errorf("Probe error %q does not name %s", r.Error, bogus)
	}
	if len(r.Devices) != 0 || r.Driver != "" || r.Usable() {
		t.Errorf("Probe without a driver reported devices %v, driver %q", r.Devices, r.Driver)
	}
	if len(r.Libraries) != 4 || r.Libraries[0].Name != "driver" || r.Libraries[0].Path != "" {
		t.Errorf("Probe libraries: %+v", r.Libraries)
	}
	if !strings.Contains(r.String(), "CUDA not usable") {
		t.Errorf("report text lacks the error:\n%s", r)
	}
	d, err := Open(0)
	if err == nil {
		d.Close()
		t.Fatal("Open succeeded with a nonexistent libcuda")
	}
	if !strings.Contains(err.Error(), bogus) || !strings.HasPrefix(err.Error(), "cuda: ") {
		t.Errorf("Open error %q does not name %s", err, bogus)
	}
	t.Logf("Open: %v", err)
}

// TestProbe checks that Probe never panics and describes this machine consistently: an error
// and no devices without a GPU, else devices with names, memory and a compute capability.
func TestProbe(t *testing.T) {
	r := Probe()
	t.Logf("Probe:\n%s", r)
	if len(r.Libraries) != 4 {
		t.Fatalf("Probe lists %d libraries, want 4 (driver, cuBLAS, cuSOLVER, NCCL)", len(r.Libraries))
	}
	for i, name := range []string{"driver", "cuBLAS", "cuSOLVER", "NCCL"} {
		l := r.Libraries[i]
		if l.Name != name {
			t.Errorf("library %d is %q, want %q", i, l.Name, name)
		}
		if (l.Error == "") == (l.Path == "") {
			t.Errorf("library %s: error %q and path %q (exactly one must be set)", name, l.Error, l.Path)
		}
		if l.Optional != (name == "NCCL") {
			t.Errorf("library %s: Optional = %v", name, l.Optional)
		}
	}
	if n := r.Libraries[3]; n.Error == "" && !strings.HasPrefix(n.Version, "2.") {
		t.Errorf("NCCL found (%s) with version %q, want 2.x", n.Path, n.Version)
	}
	// NCCL's absence never makes a report unusable.
	noNCCL := r
	noNCCL.Libraries = append([]Library(nil), r.Libraries...)
	noNCCL.Libraries[3] = Library{Name: "NCCL", Optional: true, Error: "not found"}
	if noNCCL.Usable() != r.Usable() && r.Libraries[3].Error == "" {
		t.Errorf("a report without NCCL is usable = %v, with it %v", noNCCL.Usable(), r.Usable())
	}
	if !strings.Contains(noNCCL.String(), "NCCL      not found (optional") {
		t.Errorf("report without NCCL:\n%s", noNCCL)
	}
	if r.Error != "" {
		if len(r.Devices) != 0 {
			t.Errorf("Probe failed (%s) yet lists devices %v", r.Error, r.Devices)
		}
		if r.Usable() {
			t.Error("a report with an error is usable")
		}
		if r.Libraries[0].Error == "" && !strings.HasPrefix(r.Error, "cu") && !strings.HasPrefix(r.Error, "no CUDA") {
			t.Errorf("driver loaded but the error %q names no CUDA call", r.Error)
		}
		return
	}
	if len(r.Devices) == 0 {
		t.Fatal("Probe succeeded without devices")
	}
	if r.Driver == "" {
		t.Error("no driver version")
	}
	for _, d := range r.Devices {
		if d.Error != "" {
			t.Errorf("device %d: %s", d.Ordinal, d.Error)
		}
		if d.Name == "" || d.TotalBytes == 0 || d.FreeBytes == 0 || d.FreeBytes > d.TotalBytes || d.CCMajor < 3 || d.SMs < 1 {
			t.Errorf("device %d: implausible report %+v", d.Ordinal, d)
		}
	}
}

// TestNoiseRefused: the noisy softmax has no CUDA kernel; the backend does not declare it
// (Channels, known without a GPU), so the front refuses it before the backend is called, and
// every noiseless channel is declared.
func TestNoiseRefused(t *testing.T) {
	b := &backend{}
	if err := b.Channels().Check(channel.Spec{Kind: channel.KindSoftmax, T: 2, Beta: 1, Noise: 0.01}); !errors.Is(err, channel.ErrUnsupported) {
		t.Errorf("noisy softmax on cuda: Check = %v, want channel.ErrUnsupported", err)
	}
	for _, ch := range []channel.Spec{{Kind: channel.KindSoftmax, T: 3, Beta: 1}, {Kind: channel.KindHardmax, T: 2}, {Kind: channel.KindHardmax, T: 4}} {
		if err := b.Channels().Check(ch); err != nil {
			t.Errorf("%v on cuda: %v", ch, err)
		}
	}
}

// TestRowMajor: the leading dimension of each operand is its stored row length (A is m x k,
// or k x m when transposed; B is k x n, or n x k), at least 1, with the operation that
// transposes it back.
func TestRowMajor(t *testing.T) {
	for _, c := range []struct {
		transA, transB   bool
		m, n, k          int
		ta, lda, tb, ldb int32
	}{
		{false, false, 3, 4, 5, cublasOpN, 5, cublasOpN, 4},
		{true, false, 3, 4, 5, cublasOpT, 3, cublasOpN, 4},
		{false, true, 3, 4, 5, cublasOpN, 5, cublasOpT, 5},
		{true, true, 3, 4, 5, cublasOpT, 3, cublasOpT, 5},
		{false, false, 3, 0, 0, cublasOpN, 1, cublasOpN, 1},
	} {
		ta, lda, tb, ldb := rowMajor(c.transA, c.transB, c.m, c.n, c.k)
		if ta != c.ta || lda != c.lda || tb != c.tb || ldb != c.ldb {
			t.Errorf("rowMajor(%v, %v, %d, %d, %d) = %d, %d, %d, %d; want %d, %d, %d, %d", c.transA, c.transB, c.m, c.n, c.k,
				ta, lda, tb, ldb, c.ta, c.lda, c.tb, c.ldb)
		}
	}
}
