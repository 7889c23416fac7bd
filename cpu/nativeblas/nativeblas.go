// Package nativeblas binds an optimised BLAS and LAPACK (OpenBLAS, Intel MKL, or any library
// with the Fortran symbols) at run time with purego, so that the CPU backend multiplies and
// diagonalises at the library's speed while the binary stays CGO_ENABLED=0. It binds only what
// the engine uses: dgemm_, dsyrk_ and dsyevd_, called through their Fortran interface (every
// argument a pointer, 32-bit integers: the LP64 builds Debian and MKL ship), plus the
// provider's thread-count and identification functions where it has them.
//
// The wrappers take row-major, packed-or-strided matrices, like the rest of the engine, and
// map them onto the column-major Fortran calls.
//
// OpenBLAS kernel selection. A DYNAMIC_ARCH OpenBLAS picks its kernels from CPUID when it is
// loaded, and some versions misdetect newer processors (OpenBLAS 0.3.21 takes some AVX-512
// Xeons for a Prescott and runs several times slower). Before loading OpenBLAS, Load therefore
// sets OPENBLAS_CORETYPE to the core type that fits the CPU flags of /proc/cpuinfo
// (CPU.BestCore), unless the user has set OPENBLAS_CORETYPE; after loading it reads the core
// OpenBLAS chose and, where that core runs older kernels than the CPU supports, says in
// Info.Warning exactly what to set.
//
// Libraries are loaded once per process and cached; the thread count of a library is a
// process-wide setting of that library.
package nativeblas

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ebitengine/purego"
)

// Names of the choices Load accepts besides a library path.
const (
	Auto     = "auto"     // OpenBLAS, else MKL
	OpenBLAS = "openblas" // libopenblas.so.0 (Debian: libopenblas0)
	MKL      = "mkl"      // libmkl_rt.so
)

// ErrNotFound is wrapped by Load's error when no candidate library could be loaded.
var ErrNotFound = errors.New("no optimised BLAS/LAPACK library found")

// Info describes a loaded library for humans and manifests.
type Info struct {
	Provider string // "OpenBLAS", "MKL", or "BLAS" for another provider of the Fortran symbols
	Version  string // the provider's own description (openblas_get_config, MKL's version string)
	Soname   string // the name asked of the loader ("libopenblas.so.0") or the path given
	Path     string // the file mapped into the process (dgemm_'s), when it can be found
	LAPACK   string // the file dsyevd_ came from when another library than Path provided it
	Core     string // OpenBLAS: the kernel set in use (openblas_get_corename), e.g. "SkylakeX"
	CoreNote string // OpenBLAS: how the core was chosen
	Warning  string // set when the library runs older kernels than the CPU supports, with the fix
}

// String is one line for `aim device`: provider, version, core and path.
func (i Info) String() string {
	var b strings.Builder
	b.WriteString(i.Provider)
	if i.Version != "" {
		fmt.Fprintf(&b, " (%s)", i.Version)
	}
	if i.Core != "" {
		fmt.Fprintf(&b, ", core %s", i.Core)
		if i.CoreNote != "" {
			fmt.Fprintf(&b, " (%s)", i.CoreNote)
		}
	}
	p := i.Path
	if p == "" {
		p = i.Soname
	}
	fmt.Fprintf(&b, ", %s", p)
	if i.LAPACK != "" {
		fmt.Fprintf(&b, " + %s", i.LAPACK)
	}
	if i.Warning != "" {
		fmt.Fprintf(&b, "; WARNING: %s", i.Warning)
	}
	return b.String()
}

// Lib is a loaded BLAS/LAPACK library. Its methods are safe for concurrent use (the libraries
// are thread-safe); the thread count is shared by every user of the library in the process.
type Lib struct {
	info Info

	dgemm, dsyrk, dsyevd uintptr // Fortran entry points
	sgemm                uintptr // sgemm_, 0 when the library has none (then HasSgemm is false)

	setThreads func(n int32) // nil when the provider has no such function
	getThreads func() int32  // likewise
	threads    atomic.Int32  // the count last set (0: never)
	threadsMu  sync.Mutex    // guards the count and the holds
	released   *sync.Cond    // on threadsMu: the last hold was released
	holders    int           // holds in flight, all at the count threads
}

// Info describes the library.
func (l *Lib) Info() Info { return l.info }

// CanSetThreads reports whether the library's thread count can be set (OpenBLAS and MKL can).
func (l *Lib) CanSetThreads() bool { return l.setThreads != nil }

// SetThreads sets the number of threads the library's routines use, for the whole process,
// once no Hold at another count is in flight. It does nothing when n < 1 or when the provider
// has no such function (CanSetThreads).
func (l *Lib) SetThreads(n int) { l.Hold(n)() }

// Hold makes the library's routines run on n threads until release is called. The thread
// count is one setting of the whole process, and OpenBLAS's results can depend on it, so
// several devices (a sweep's concurrent runs, a group's members) must not change it under
// each other's calls: holds at the same n share the library, and a hold at another n waits
// until they have all been released. A goroutine must not ask for a second hold at another n
// while it holds one. n < 1, or a library whose count cannot be set (CanSetThreads), holds
// nothing.
func (l *Lib) Hold(n int) (release func()) {
	if n < 1 || l.setThreads == nil {
		return func() {}
	}
	l.threadsMu.Lock()
	if l.released == nil {
		l.released = sync.NewCond(&l.threadsMu)
	}
	for l.holders > 0 && int(l.threads.Load()) != n {
		l.released.Wait()
	}
	if int(l.threads.Load()) != n {
		l.setThreads(int32(n))
		l.threads.Store(int32(n))
	}
	l.holders++
	l.threadsMu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			l.threadsMu.Lock()
			if l.holders--; l.holders == 0 {
				l.released.Broadcast()
			}
			l.threadsMu.Unlock()
		})
	}
}

// Threads returns the number of threads the library's routines use now, as the library reports
// it; 0 when it cannot say.
func (l *Lib) Threads() int {
	if l.getThreads == nil {
		return int(l.threads.Load())
	}
	return int(l.getThreads())
}

// The cache of loaded libraries, by candidate (soname or path). Loading is attempted once per
// candidate and process; the outcome, library or error, is kept.
var cache = struct {
	sync.Mutex
	m map[string]loadResult
}{m: map[string]loadResult{}}

type loadResult struct {
	lib *Lib
	err error
}

// candidate is one library to try.
type candidate struct {
	provider string   // "OpenBLAS", "MKL", "BLAS"
	sonames  []string // tried in order
}

var (
	candOpenBLAS = candidate{"OpenBLAS", []string{"libopenblas.so.0", "libopenblas.so", "libopenblas.dylib"}}
	candMKL      = candidate{"MKL", []string{"libmkl_rt.so.2", "libmkl_rt.so.1", "libmkl_rt.so", "libmkl_rt.dylib"}}
)

// Load returns the library named by choice: Auto (OpenBLAS, else MKL), OpenBLAS, MKL, or the
// path of a library file that exports dgemm_, dsyrk_ and dsyevd_ (LAPACK may come from
// liblapack.so.3 when the file lacks dsyevd_). It returns an error wrapping ErrNotFound, with
// every reason, when nothing usable is found. Successful and failed loads are cached.
func Load(choice string) (*Lib, error) {
	var cands []candidate
	switch strings.ToLower(choice) {
	case "", Auto:
		cands = []candidate{candOpenBLAS, candMKL}
	case OpenBLAS:
		cands = []candidate{candOpenBLAS}
	case MKL:
		cands = []candidate{candMKL}
	default:
		if !strings.ContainsRune(choice, os.PathSeparator) {
			return nil, fmt.Errorf("BLAS %q: want auto, openblas, mkl, gonum or the path of a library", choice)
		}
		cands = []candidate{{"", []string{choice}}}
	}
	var reasons []string
	for _, c := range cands {
		for _, so := range c.sonames {
			l, err := loadCached(c.provider, so)
			if err == nil {
				return l, nil
			}
			reasons = append(reasons, err.Error())
		}
	}
	return nil, fmt.Errorf("%w (%s)", ErrNotFound, strings.Join(reasons, "; "))
}

func loadCached(provider, soname string) (*Lib, error) {
	cache.Lock()
	defer cache.Unlock()
	if r, ok := cache.m[soname]; ok {
		return r.lib, r.err
	}
	cpu, cpuOK := ReadCPU()
	l, err := load(provider, soname, cpu, cpuOK)
	cache.m[soname] = loadResult{l, err}
	return l, err
}

// load dlopens one library and binds it; cpu (when cpuOK) decides OpenBLAS's core type.
func load(provider, soname string, cpu CPU, cpuOK bool) (*Lib, error) {
	mayBeOpenBLAS := provider == "OpenBLAS" || (provider == "" && strings.Contains(strings.ToLower(filepath.Base(soname)), "openblas"))
	coreNote := ""
	if mayBeOpenBLAS {
		coreNote = "OpenBLAS's own detection"
		if user, set := os.LookupEnv("OPENBLAS_CORETYPE"); set {
			coreNote = "OPENBLAS_CORETYPE=" + user + " from the environment"
		} else if core, why := cpu.BestCore(); cpuOK && core != "" {
			// OpenBLAS reads OPENBLAS_CORETYPE when it is loaded (the library constructor);
			// os.Setenv reaches the C environment (purego's runtime hook), and the variable is
			// removed again once the library is loaded.
			if err := os.Setenv("OPENBLAS_CORETYPE", core); err == nil {
				defer os.Unsetenv("OPENBLAS_CORETYPE")
				coreNote = "selected by aim from the CPU flags " + why
			}
		}
	}
	h, err := purego.Dlopen(soname, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, err // dlerror's text names the file
	}
	l := &Lib{info: Info{Provider: provider, Soname: soname}}
	sym := func(name string) uintptr {
		p, err := purego.Dlsym(h, name)
		if err != nil {
			return 0
		}
		return p
	}
	if l.dgemm, l.dsyrk = sym("dgemm_"), sym("dsyrk_"); l.dgemm == 0 || l.dsyrk == 0 {
		return nil, fmt.Errorf("%s: no dgemm_/dsyrk_ (not a BLAS library)", soname)
	}
	l.sgemm = sym("sgemm_") // optional: the reduced-precision products fall back without it
	if l.dsyevd = sym("dsyevd_"); l.dsyevd == 0 {
		// A plain BLAS: take LAPACK from the system's liblapack.so.3.
		lh, err := purego.Dlopen("liblapack.so.3", purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			return nil, fmt.Errorf("%s: no dsyevd_, and liblapack.so.3: %v", soname, err)
		}
		p, err := purego.Dlsym(lh, "dsyevd_")
		if err != nil || p == 0 {
			return nil, fmt.Errorf("%s: no dsyevd_ in it or in liblapack.so.3", soname)
		}
		l.dsyevd = p
		l.info.LAPACK = mappedFile(p)
	}
	l.info.Path = mappedFile(l.dgemm)

	// Identify the provider by its own functions.
	switch {
	case sym("openblas_get_config") != 0:
		l.info.Provider = "OpenBLAS"
		var cfg, corename func() string
		purego.RegisterLibFunc(&cfg, h, "openblas_get_config")
		l.info.Version = strings.TrimSpace(cfg())
		if sym("openblas_get_corename") != 0 {
			purego.RegisterLibFunc(&corename, h, "openblas_get_corename")
			l.info.Core = corename()
			l.info.CoreNote = coreNote
			if cpuOK && cpu.Underuses(l.info.Core) {
				best, why := cpu.BestCore()
				l.info.Warning = fmt.Sprintf("OpenBLAS uses the %s kernels on a CPU with %s; run with OPENBLAS_CORETYPE=%s for its fast kernels",
					l.info.Core, why, best)
			}
		}
		if sym("openblas_set_num_threads") != 0 && sym("openblas_get_num_threads") != 0 {
			purego.RegisterLibFunc(&l.setThreads, h, "openblas_set_num_threads")
			purego.RegisterLibFunc(&l.getThreads, h, "openblas_get_num_threads")
		}
	case sym("MKL_Get_Max_Threads") != 0:
		l.info.Provider = "MKL"
		if sym("MKL_Get_Version_String") != 0 {
			var ver func(buf *byte, n int32)
			purego.RegisterLibFunc(&ver, h, "MKL_Get_Version_String")
			buf := make([]byte, 256)
			ver(&buf[0], int32(len(buf)))
			l.info.Version = strings.TrimSpace(string(bytes.TrimRight(buf, "\x00")))
		}
		if sym("MKL_Set_Num_Threads") != 0 {
			purego.RegisterLibFunc(&l.setThreads, h, "MKL_Set_Num_Threads")
			purego.RegisterLibFunc(&l.getThreads, h, "MKL_Get_Max_Threads")
		}
	case sym("bli_info_get_version_str") != 0:
		l.info.Provider = "BLIS"
		var ver func() string
		purego.RegisterLibFunc(&ver, h, "bli_info_get_version_str")
		l.info.Version = ver()
		if sym("bli_thread_set_num_threads") != 0 && sym("bli_thread_get_num_threads") != 0 {
			var set func(n int64)
			var get func() int64
			purego.RegisterLibFunc(&set, h, "bli_thread_set_num_threads")
			purego.RegisterLibFunc(&get, h, "bli_thread_get_num_threads")
			l.setThreads = func(n int32) { set(int64(n)) }
			l.getThreads = func() int32 { return int32(get()) }
		}
	default:
		if l.info.Provider == "" {
			l.info.Provider = "BLAS"
		}
	}
	if err := l.selfTest(); err != nil {
		return nil, fmt.Errorf("%s: %w", soname, err)
	}
	return l, nil
}

// selfTest runs a 2 x 2 product and eigendecomposition with known answers, so that a library
// with an incompatible interface (64-bit integers, say) is refused instead of trusted.
func (l *Lib) selfTest() error {
	a := []float64{1, 2, 3, 4}
	b := []float64{5, 6, 7, 8}
	c := make([]float64, 4)
	if err := l.Dgemm(false, false, 2, 2, 2, 1, a, 2, b, 2, 0, c, 2); err != nil {
		return err
	}
	if c[0] != 19 || c[1] != 22 || c[2] != 43 || c[3] != 50 {
		return fmt.Errorf("self-test: dgemm gave %v, want [19 22 43 50] (an ILP64 library?)", c)
	}
	s := []float64{2, 1, 1, 2}
	w := make([]float64, 2)
	if err := l.Dsyevd(2, s, 2, w, nil, nil); err != nil {
		return fmt.Errorf("self-test: %w", err)
	}
	if d0, d1 := w[0]-1, w[1]-3; d0*d0+d1*d1 > 1e-24 {
		return fmt.Errorf("self-test: dsyevd gave eigenvalues %v, want [1 3]", w)
	}
	return nil
}

// mappedFile returns the file mapped at address addr in this process (/proc/self/maps), or ""
// where that cannot be read.
func mappedFile(addr uintptr) string {
	raw, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return ""
	}
	return findMapping(raw, uint64(addr))
}

// findMapping scans a /proc/self/maps text for the mapping that contains addr and returns its
// file, or "".
func findMapping(maps []byte, addr uint64) string {
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || !strings.HasPrefix(f[5], "/") {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		l, err1 := strconv.ParseUint(lo, 16, 64)
		h, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 == nil && err2 == nil && l <= addr && addr < h {
			return strings.Join(f[5:], " ")
		}
	}
	return ""
}
