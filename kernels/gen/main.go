// Command gen compiles the CUDA C sources kernels/*.cu to PTX (kernels/<name>.ptx) with NVRTC,
// which it loads at run time through github.com/ebitengine/purego: it builds with
// CGO_ENABLED=0 and needs no CUDA toolkit, only the NVRTC shared library (Debian: libnvrtc11.2;
// pip: nvidia-cuda-nvrtc-cu12; or a CUDA toolkit under /usr/local/cuda).
//
// Usage, from the repository root:
//
//	go run ./kernels/gen                 regenerate kernels/*.ptx (files are rewritten only if changed)
//	go run ./kernels/gen -check          regenerate in memory; exit 1 listing the .ptx that differ (CI)
//	go run ./kernels/gen -dir path       the folder of the .cu files (default "kernels")
//	go run ./kernels/gen -lib /x/libnvrtc.so.11.2   use this library, no search
//
// AIM_NVRTC, when set, is the default of -lib; AIM_NVRTC=none makes the generator behave as on
// a machine without NVRTC (exit 3), which is how CI exercises that path on a machine that has it.
//
// Every source is compiled twice and the two PTX texts must be identical (-twice=false skips
// this): NVRTC 11.8 was seen to number registers differently from run to run in one function
// of channel.cu, which would make the CI check flaky.
//
// Every file is compiled with --gpu-architecture=compute_80 --fmad=false --std=c++14.
// --fmad=false keeps every double product and sum a separately rounded IEEE operation
// (mul.rn.f64 / add.rn.f64 in the PTX, which the driver's JIT may not contract into FMAs), so
// gaussian_fill reproduces device.NormalAt bit for bit and the element-wise kernels match their
// CPU twins exactly. The output is deterministic for a given NVRTC release; the PTX header
// names the release ("Cuda compilation tools, release 11.8"), and the committed PTX is made with
// NVRTC 11.8 (PTX ISA .version 7.8, which drivers >= 520 load).
//
// Exit status: 0 success; 1 -check found differences; 2 usage, I/O or compilation errors
// (the NVRTC log is printed); 3 no NVRTC library found; 4 -check with an NVRTC release other
// than the one named in the committed PTX headers (the comparison would be meaningless).
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Options are the NVRTC options of every kernel file.
var Options = []string{
	"--gpu-architecture=compute_80",
	"--fmad=false",
	"--std=c++14",
}

// Exit statuses.
const (
	exitOK       = 0
	exitDiffer   = 1
	exitError    = 2
	exitNoNVRTC  = 3
	exitRelease  = 4
	nvrtcSuccess = 0
)

func main() {
	dir := flag.String("dir", "kernels", "folder holding the *.cu sources; the .ptx are written beside them")
	check := flag.Bool("check", false, "compile in memory and exit 1 listing the .ptx files that differ from the sources")
	lib := flag.String("lib", os.Getenv("AIM_NVRTC"), "path of the NVRTC library to use, or none (default: $AIM_NVRTC, else search libnvrtc.so.13, .12, .11.2)")
	werror := flag.Bool("werror", true, "treat NVRTC warnings as errors")
	twice := flag.Bool("twice", true, "compile every source twice and fail if NVRTC's output differs (nondeterminism guard)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: gen [-dir kernels] [-check] [-lib path] [-werror=false]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 0 {
		flag.Usage()
		os.Exit(exitError)
	}
	os.Exit(run(*dir, *check, *lib, *werror, *twice))
}

func run(dir string, check bool, lib string, werror, twice bool) int {
	sources, err := filepath.Glob(filepath.Join(dir, "*.cu"))
	if err != nil || len(sources) == 0 {
		fmt.Fprintf(os.Stderr, "gen: no .cu files in %s\n", dir)
		return exitError
	}
	sort.Strings(sources)
	headers, err := readHeaders(dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "gen: %v\n", err)
		return exitError
	}

	nv, err := loadNVRTC(lib)
	if err != nil {
		fmt.Fprintf(os.Stderr, "gen: %v\n", err)
		return exitNoNVRTC
	}
	fmt.Fprintf(os.Stderr, "gen: NVRTC %d.%d from %s\n", nv.major, nv.minor, nv.path)
	if check {
		have := fmt.Sprintf("%d.%d", nv.major, nv.minor)
		for _, src := range sources {
			old, err := os.ReadFile(strings.TrimSuffix(src, ".cu") + ".ptx")
			if err != nil {
				continue // reported as differing below
			}
			if rel := ptxRelease(old); rel != "" && rel != have {
				fmt.Fprintf(os.Stderr, "gen: %s.ptx was made by NVRTC %s, this is NVRTC %s: cannot check (use -lib to pick NVRTC %s)\n",
					strings.TrimSuffix(src, ".cu"), rel, have, rel)
				return exitRelease
			}
		}
	}

	var differ []string
	failed := false
	want := map[string]bool{}
	for _, src := range sources {
		name := strings.TrimSuffix(filepath.Base(src), ".cu")
		ptxPath := filepath.Join(dir, name+".ptx")
		want[ptxPath] = true
		text, err := os.ReadFile(src)
		if err != nil {
			fmt.Fprintf(os.Stderr, "gen: %v\n", err)
			failed = true
			continue
		}
		ptx, warnings, err := nv.compile(filepath.Base(src), text, headers)
		if warnings != "" {
			fmt.Fprintf(os.Stderr, "gen: %s: NVRTC log:\n%s\n", src, warnings)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "gen: %s: %v\n", src, err)
			failed = true
			continue
		}
		if warnings != "" && werror {
			fmt.Fprintf(os.Stderr, "gen: %s: warnings are errors (-werror=false to accept them)\n", src)
			failed = true
			continue
		}
		if twice {
			again, _, err := nv.compile(filepath.Base(src), text, headers)
			if err != nil || !bytes.Equal(again, ptx) {
				fmt.Fprintf(os.Stderr, "gen: %s: NVRTC gave different PTX on a second compilation: the output is not "+
					"deterministic (NVRTC 11.8 numbers registers differently from run to run for some control flow; "+
					"marking the function involved __noinline__ has cured it before)\n", src)
				failed = true
				continue
			}
		}
		old, err := os.ReadFile(ptxPath)
		same := err == nil && bytes.Equal(old, ptx)
		switch {
		case same:
			fmt.Fprintf(os.Stderr, "gen: %s: up to date (%d bytes)\n", ptxPath, len(ptx))
		case check:
			differ = append(differ, ptxPath)
		default:
			if err := writeFile(ptxPath, ptx); err != nil {
				fmt.Fprintf(os.Stderr, "gen: %v\n", err)
				failed = true
				continue
			}
			fmt.Fprintf(os.Stderr, "gen: wrote %s (%d bytes)\n", ptxPath, len(ptx))
		}
	}
	// A .ptx without a source is stale: go:embed would still ship it.
	if all, err := filepath.Glob(filepath.Join(dir, "*.ptx")); err == nil {
		for _, p := range all {
			if !want[p] {
				fmt.Fprintf(os.Stderr, "gen: %s has no source %s.cu: delete it\n", p, strings.TrimSuffix(filepath.Base(p), ".ptx"))
				differ = append(differ, p)
			}
		}
	}
	if failed {
		return exitError
	}
	if len(differ) > 0 {
		if check {
			fmt.Fprintf(os.Stderr, "gen: these PTX files differ from what NVRTC %d.%d makes of the sources (run `go run ./kernels/gen`):\n", nv.major, nv.minor)
		}
		for _, p := range differ {
			fmt.Println(p)
		}
		return exitDiffer
	}
	return exitOK
}

// ptxRelease returns the CUDA release named in a PTX header ("// Cuda compilation tools,
// release 11.8, V11.8.89" gives "11.8"), or "" if there is none.
func ptxRelease(ptx []byte) string {
	const key = "Cuda compilation tools, release "
	i := bytes.Index(ptx, []byte(key))
	if i < 0 {
		return ""
	}
	rest := ptx[i+len(key):]
	if j := bytes.IndexAny(rest, ",\n"); j >= 0 {
		return string(rest[:j])
	}
	return ""
}

// writeFile writes data to a temporary file beside path and renames it over path.
func writeFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// nvrtc holds the NVRTC entry points.
type nvrtc struct {
	path         string
	major, minor int32

	version        func(major, minor *int32) int32
	errorString    func(r int32) string
	createProgram  func(prog *uintptr, src, name *byte, numHeaders int32, headers, includeNames unsafe.Pointer) int32
	compileProgram func(prog uintptr, numOptions int32, options unsafe.Pointer) int32
	logSize        func(prog uintptr, size *uint64) int32
	getLog         func(prog uintptr, log *byte) int32
	ptxSize        func(prog uintptr, size *uint64) int32
	getPTX         func(prog uintptr, ptx *byte) int32
	destroyProgram func(prog *uintptr) int32
}

// sonames are the NVRTC libraries tried, newest first.
var sonames = []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"}

// candidates lists the places to try: each soname through the dynamic loader's own search
// (LD_LIBRARY_PATH, the ld.so cache), then in the folders where pip wheels and the CUDA
// toolkit put it.
func candidates() []string {
	var dirs []string
	var globs []string
	if v := os.Getenv("VIRTUAL_ENV"); v != "" {
		globs = append(globs, filepath.Join(v, "lib", "python3*", "site-packages"))
	}
	if h, err := os.UserHomeDir(); err == nil {
		globs = append(globs, filepath.Join(h, ".local", "lib", "python3*", "site-packages"))
	}
	globs = append(globs,
		"/usr/local/lib/python3*/site-packages", "/usr/local/lib/python3*/dist-packages",
		"/usr/lib/python3*/site-packages", "/usr/lib/python3/dist-packages",
		"/opt/conda/lib/python3*/site-packages")
	for _, g := range globs {
		m, _ := filepath.Glob(g)
		for _, sp := range m {
			dirs = append(dirs, filepath.Join(sp, "nvidia", "cuda_nvrtc", "lib"), filepath.Join(sp, "nvidia", "cu13", "lib"))
		}
	}
	if v := os.Getenv("CUDA_HOME"); v != "" {
		dirs = append(dirs, filepath.Join(v, "lib64"))
	}
	dirs = append(dirs, "/usr/local/cuda/lib64")
	var out []string
	for _, so := range sonames {
		out = append(out, so)
		for _, d := range dirs {
			out = append(out, filepath.Join(d, so))
		}
	}
	return out
}

func loadNVRTC(lib string) (*nvrtc, error) {
	var tried []string
	var handle uintptr
	path := lib
	if lib == "none" {
		return nil, errors.New("no NVRTC library: -lib none (or AIM_NVRTC=none) asked for none")
	}
	if lib != "" {
		h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			return nil, fmt.Errorf("cannot load NVRTC from -lib %s: %v", lib, err)
		}
		handle = h
	} else {
		for _, c := range candidates() {
			if strings.Contains(c, "/") {
				if _, err := os.Stat(c); err != nil {
					continue
				}
			}
			h, err := purego.Dlopen(c, purego.RTLD_NOW|purego.RTLD_GLOBAL)
			if err != nil {
				tried = append(tried, c)
				continue
			}
			handle, path = h, c
			break
		}
		if handle == 0 {
			return nil, errors.New("no NVRTC library found (tried " + strings.Join(sonames, ", ") +
				" through the dynamic loader, pip's site-packages/nvidia/cuda_nvrtc/lib and /usr/local/cuda/lib64). " +
				"Install one, e.g. on Debian 12 the non-free package libnvrtc11.2 (see docs/gpu.md), " +
				"or pass -lib /path/to/libnvrtc.so")
		}
	}
	nv := &nvrtc{path: path}
	for _, f := range []struct {
		fp   any
		name string
	}{
		{&nv.version, "nvrtcVersion"},
		{&nv.errorString, "nvrtcGetErrorString"},
		{&nv.createProgram, "nvrtcCreateProgram"},
		{&nv.compileProgram, "nvrtcCompileProgram"},
		{&nv.logSize, "nvrtcGetProgramLogSize"},
		{&nv.getLog, "nvrtcGetProgramLog"},
		{&nv.ptxSize, "nvrtcGetPTXSize"},
		{&nv.getPTX, "nvrtcGetPTX"},
		{&nv.destroyProgram, "nvrtcDestroyProgram"},
	} {
		if _, err := purego.Dlsym(handle, f.name); err != nil {
			return nil, fmt.Errorf("%s: no symbol %s: %v", path, f.name, err)
		}
		purego.RegisterLibFunc(f.fp, handle, f.name)
	}
	if r := nv.version(&nv.major, &nv.minor); r != nvrtcSuccess {
		return nil, fmt.Errorf("%s: nvrtcVersion: %s", path, nv.errorString(r))
	}
	return nv, nil
}

// cstr returns s as a NUL-terminated byte slice.
func cstr(s string) []byte { return append([]byte(s), 0) }

// header is a kernels/*.cuh file that the sources may #include by its base name.
type header struct{ name, text string }

// readHeaders reads the *.cuh files of dir, sorted by name.
func readHeaders(dir string) ([]header, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.cuh"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var hs []header
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		hs = append(hs, header{filepath.Base(p), string(b)})
	}
	return hs, nil
}

// compile returns the PTX (without its trailing NUL) of one source and the NVRTC log, if any.
// The headers are handed to NVRTC by name, so `#include "common.cuh"` needs no include path.
func (nv *nvrtc) compile(name string, src []byte, headers []header) (ptx []byte, log string, err error) {
	csrc, cname := cstr(string(src)), cstr(name)
	var hText, hName [][]byte
	var hTextPtr, hNamePtr []*byte
	for _, h := range headers {
		hText, hName = append(hText, cstr(h.text)), append(hName, cstr(h.name))
	}
	for i := range hText {
		hTextPtr, hNamePtr = append(hTextPtr, &hText[i][0]), append(hNamePtr, &hName[i][0])
	}
	var hp, np unsafe.Pointer
	if len(hTextPtr) > 0 {
		hp, np = unsafe.Pointer(&hTextPtr[0]), unsafe.Pointer(&hNamePtr[0])
	}
	var prog uintptr
	r := nv.createProgram(&prog, &csrc[0], &cname[0], int32(len(headers)), hp, np)
	runtime.KeepAlive(hText)
	runtime.KeepAlive(hName)
	runtime.KeepAlive(hTextPtr)
	runtime.KeepAlive(hNamePtr)
	if r != nvrtcSuccess {
		return nil, "", fmt.Errorf("nvrtcCreateProgram: %s", nv.errorString(r))
	}
	defer nv.destroyProgram(&prog)
	opts := make([][]byte, len(Options))
	ptrs := make([]*byte, len(Options))
	for i, o := range Options {
		opts[i] = cstr(o)
		ptrs[i] = &opts[i][0]
	}
	rc := nv.compileProgram(prog, int32(len(ptrs)), unsafe.Pointer(&ptrs[0]))
	runtime.KeepAlive(opts)
	runtime.KeepAlive(ptrs)
	runtime.KeepAlive(csrc)
	runtime.KeepAlive(cname)

	var n uint64
	if r := nv.logSize(prog, &n); r == nvrtcSuccess && n > 1 {
		buf := make([]byte, n)
		if nv.getLog(prog, &buf[0]) == nvrtcSuccess {
			log = strings.TrimRight(string(bytes.TrimRight(buf, "\x00")), "\n")
		}
	}
	if rc != nvrtcSuccess {
		return nil, log, fmt.Errorf("nvrtcCompileProgram (%s): %s", strings.Join(Options, " "), nv.errorString(rc))
	}
	if r := nv.ptxSize(prog, &n); r != nvrtcSuccess {
		return nil, log, fmt.Errorf("nvrtcGetPTXSize: %s", nv.errorString(r))
	}
	if n == 0 {
		return nil, log, errors.New("nvrtcGetPTXSize: empty PTX")
	}
	buf := make([]byte, n)
	if r := nv.getPTX(prog, &buf[0]); r != nvrtcSuccess {
		return nil, log, fmt.Errorf("nvrtcGetPTX: %s", nv.errorString(r))
	}
	return renumberCallseq(bytes.TrimRight(buf, "\x00")), log, nil
}

var callseqRE = regexp.MustCompile(`// callseq [0-9]+`)

// renumberCallseq makes the "// callseq N" comments of a PTX text start at 0. NVRTC numbers
// them with a counter that lives as long as the process, so without this a file's PTX would
// depend on what was compiled before it in the same process; renumbered, it is what a fresh
// process (and nvcc -ptx) writes.
func renumberCallseq(ptx []byte) []byte {
	first := -1
	return callseqRE.ReplaceAllFunc(ptx, func(m []byte) []byte {
		n, err := strconv.Atoi(string(m[len("// callseq "):]))
		if err != nil {
			return m
		}
		if first < 0 {
			first = n
		}
		return []byte("// callseq " + strconv.Itoa(n-first))
	})
}
