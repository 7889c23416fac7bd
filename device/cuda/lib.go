package cuda

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ebitengine/purego"
)

// Environment variables that steer library discovery.
const (
	// EnvLibDir names an extra directory searched before every other place.
	EnvLibDir = "AIM_CUDA_LIB_DIR"
	// EnvLibCUDA is the exact path of the driver library; when set, nothing else is tried.
	EnvLibCUDA = "AIM_LIBCUDA"
)

// libSpec describes one library: its sonames, newest first, and the libraries it may need
// that a Python wheel keeps in a sibling directory (preloaded when a first dlopen fails).
type libSpec struct {
	name     string   // "driver", "cuBLAS", "cuSOLVER", "NCCL"
	sonames  []string // newest first
	deps     []string // sonames preloaded (RTLD_GLOBAL) from the search directories on failure
	optional bool     // its absence stops nothing (NCCL: sums then go through the host)
}

var (
	specDriver = libSpec{name: "driver", sonames: []string{"libcuda.so.1"}}
	specCublas = libSpec{name: "cuBLAS",
		sonames: []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11"},
		deps:    []string{"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11"}}
	specCusolver = libSpec{name: "cuSOLVER",
		sonames: []string{"libcusolver.so.12", "libcusolver.so.11"},
		deps: []string{"libnvJitLink.so.13", "libnvJitLink.so.12", "libcusparse.so.12", "libcusparse.so.11",
			"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11",
			"libcublas.so.13", "libcublas.so.12", "libcublas.so.11"}}
	// specNCCL is NCCL 2 (one soname since 2.0; pip's nvidia-nccl-cu12 / -cu13 wheels put it in
	// site-packages/nvidia/nccl/lib, which dirs() searches with the other wheels). It is optional:
	// Open never loads it, NewNCCL does.
	specNCCL = libSpec{name: "NCCL", sonames: []string{"libnccl.so.2"}, optional: true}
)

// Library says where a CUDA library was found (or why not).
type Library struct {
	Name     string   // "driver", "cuBLAS", "cuSOLVER", "NCCL"
	Soname   string   // e.g. "libcublas.so.13"; empty when not found
	Path     string   // the file loaded (resolved through /proc/self/maps for loader finds)
	Via      string   // how: "AIM_LIBCUDA", "AIM_CUDA_LIB_DIR", "dynamic loader", "LD_LIBRARY_PATH", a wheel, ...
	Version  string   // the library's own version where it reports one without a GPU (NCCL: "2.21.5")
	Optional bool     // not needed by Open (NCCL): its absence leaves the GPU usable
	Failed   []string // candidates that exist but did not load or bind, with the reason
	Error    string   // why none was usable; empty when found
}

// String is one line for `aim device`: where the library was found, or why it is not usable
// (for an optional library, what its absence means).
func (l Library) String() string {
	if l.Error != "" {
		if l.Optional {
			return fmt.Sprintf("%-8s  not found (optional: multi-GPU sums go through the host): %s", l.Name, l.Error)
		}
		return fmt.Sprintf("%-8s  not usable: %s", l.Name, l.Error)
	}
	v := ""
	if l.Version != "" {
		v = " " + l.Version
	}
	return fmt.Sprintf("%-8s  %s%s  %s  (via %s)", l.Name, l.Soname, v, l.Path, l.Via)
}

// searchDir is a directory of the search path and the reason it is searched.
type searchDir struct {
	dir, via string
}

// searchEnv is everything the search order depends on, so that tests can fake it.
type searchEnv struct {
	libDir     string // AIM_CUDA_LIB_DIR
	ldPath     string // LD_LIBRARY_PATH
	home       string
	virtualEnv string // VIRTUAL_ENV
	conda      string // CONDA_PREFIX
	path       string // PATH
	glob       func(pattern string) ([]string, error)
	exists     func(path string) bool
}

// osEnv returns the search environment of this process.
func osEnv() searchEnv {
	home, _ := os.UserHomeDir()
	return searchEnv{
		libDir:     os.Getenv(EnvLibDir),
		ldPath:     os.Getenv("LD_LIBRARY_PATH"),
		home:       home,
		virtualEnv: os.Getenv("VIRTUAL_ENV"),
		conda:      os.Getenv("CONDA_PREFIX"),
		path:       os.Getenv("PATH"),
		glob:       filepath.Glob,
		exists: func(p string) bool {
			st, err := os.Stat(p)
			return err == nil && !st.IsDir()
		},
	}
}

// Via names of the search places.
const (
	viaLibDir  = EnvLibDir
	viaLoader  = "dynamic loader"
	viaLDPath  = "LD_LIBRARY_PATH"
	viaCUDA    = "CUDA toolkit"
	viaSystem  = "system library directory"
	viaWheel   = "Python wheel"
	viaEnvPath = EnvLibCUDA
)

// dirs returns the directories searched after the dynamic loader, in order, without
// duplicates: LD_LIBRARY_PATH, the CUDA toolkit, the system directory, then the lib
// directories of NVIDIA's Python wheels (site-packages/nvidia/*/lib) under the usual prefixes.
// AIM_CUDA_LIB_DIR is not among them: it is searched before the loader (see candidates).
func (e searchEnv) dirs() []searchDir {
	var out []searchDir
	seen := map[string]bool{}
	add := func(dir, via string) {
		if dir == "" {
			return
		}
		dir = filepath.Clean(dir)
		if seen[dir] {
			return
		}
		seen[dir] = true
		out = append(out, searchDir{dir, via})
	}
	for _, d := range filepath.SplitList(e.ldPath) {
		add(d, viaLDPath)
	}
	add("/usr/local/cuda/lib64", viaCUDA)
	add("/usr/local/cuda/targets/x86_64-linux/lib", viaCUDA)
	add("/usr/lib/x86_64-linux-gnu", viaSystem)
	for _, sp := range e.sitePackages() {
		if e.glob == nil {
			break
		}
		libs, _ := e.glob(filepath.Join(sp, "nvidia", "*", "lib"))
		sort.Strings(libs)
		for _, l := range libs {
			add(l, viaWheel+" ("+sp+")")
		}
	}
	return out
}

// sitePackages returns the site-packages and dist-packages directories where pip may have put
// NVIDIA's wheels, most specific first: the virtual environment, conda, the user's, the
// prefix of every python3 on PATH, then the system's.
func (e searchEnv) sitePackages() []string {
	var pats []string
	for _, prefix := range []string{e.virtualEnv, e.conda} {
		if prefix != "" {
			pats = append(pats, filepath.Join(prefix, "lib", "python3*", "site-packages"))
		}
	}
	if e.home != "" {
		pats = append(pats, filepath.Join(e.home, ".local", "lib", "python3*", "site-packages"))
	}
	for _, d := range filepath.SplitList(e.path) {
		if d == "" || e.exists == nil {
			continue
		}
		if e.exists(filepath.Join(d, "python3")) {
			prefix := filepath.Dir(filepath.Clean(d))
			pats = append(pats,
				filepath.Join(prefix, "lib", "python3*", "site-packages"),
				filepath.Join(prefix, "lib", "python3*", "dist-packages"))
		}
	}
	pats = append(pats,
		"/usr/local/lib/python3*/dist-packages",
		"/usr/local/lib/python3*/site-packages",
		"/usr/lib/python3/dist-packages",
		"/usr/lib/python3*/site-packages",
		"/usr/lib/python3*/dist-packages")
	var out []string
	seen := map[string]bool{}
	for _, p := range pats {
		var matches []string
		if e.glob != nil {
			matches, _ = e.glob(p)
		}
		sort.Sort(sort.Reverse(sort.StringSlice(matches))) // python3.12 before python3.11
		for _, m := range matches {
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	return out
}

// candidate is one attempt to load a library: a path (absolute, or a bare soname for the
// dynamic loader) and how it was found.
type candidate struct {
	soname, path, via string
}

// candidates returns the attempts for spec, in order: every soname in AIM_CUDA_LIB_DIR (newest
// first), every soname through the dynamic loader, then every existing file in the
// directories of dirs(), directory by directory. Files that do not exist are left out; loader
// attempts are always listed.
func (e searchEnv) candidates(spec libSpec) []candidate {
	var out []candidate
	seen := map[string]bool{}
	addFile := func(dir, so, via string) {
		p := filepath.Join(dir, so)
		if seen[p] || e.exists == nil || !e.exists(p) {
			return
		}
		seen[p] = true
		out = append(out, candidate{so, p, via})
	}
	if e.libDir != "" {
		for _, so := range spec.sonames {
			addFile(e.libDir, so, viaLibDir)
		}
	}
	for _, so := range spec.sonames {
		out = append(out, candidate{so, so, viaLoader})
	}
	for _, d := range e.dirs() {
		for _, so := range spec.sonames {
			addFile(d.dir, so, d.via)
		}
	}
	return out
}

// findFile returns the first existing file named one of sonames in AIM_CUDA_LIB_DIR or the
// search directories, or "" (the dependencies of a wheel).
func (e searchEnv) findFile(sonames []string) string {
	dirs := e.dirs()
	if e.libDir != "" {
		dirs = append([]searchDir{{e.libDir, viaLibDir}}, dirs...)
	}
	for _, so := range sonames {
		for _, d := range dirs {
			p := filepath.Join(d.dir, so)
			if e.exists != nil && e.exists(p) {
				return p
			}
		}
	}
	return ""
}

// dlopen loads a library with RTLD_NOW | RTLD_GLOBAL (GLOBAL so that cuSOLVER finds the
// cuBLAS already loaded).
func dlopen(path string) (uintptr, error) {
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return 0, fmt.Errorf("dlopen: %v", err) // dlerror names the file
	}
	return h, nil
}

// loadLib tries the candidates of spec in order and returns the handle of the first one that
// loads and for which use (binding symbols, creating a handle) succeeds, with the record of
// the search. When a candidate fails to load, the dependencies of spec are preloaded from the
// search directories and it is tried once more.
func (e searchEnv) loadLib(spec libSpec, use func(h uintptr) error) (uintptr, Library) {
	rec := Library{Name: spec.name, Optional: spec.optional}
	depsLoaded := false
	for _, c := range e.candidates(spec) {
		h, err := dlopen(c.path)
		if err != nil && !depsLoaded && len(spec.deps) > 0 && c.via != viaLoader {
			depsLoaded = true
			for _, dep := range spec.deps {
				if p := e.findFile([]string{dep}); p != "" {
					_, _ = dlopen(p) // best effort; the retry says what is missing
				}
			}
			h, err = dlopen(c.path)
		}
		if err != nil {
			if c.via != viaLoader || !strings.Contains(err.Error(), "No such file") &&
				!strings.Contains(err.Error(), "cannot open shared object file") {
				rec.Failed = append(rec.Failed, err.Error())
			}
			continue
		}
		if err := use(h); err != nil {
			rec.Failed = append(rec.Failed, fmt.Sprintf("%s: %v", c.path, err))
			continue
		}
		rec.Soname, rec.Path, rec.Via = c.soname, c.path, c.via
		if c.via == viaLoader {
			if p := mappedPath(c.soname); p != "" {
				rec.Path = p
			}
		}
		return h, rec
	}
	rec.Error = fmt.Sprintf("none of %s found or usable", strings.Join(spec.sonames, ", "))
	if len(rec.Failed) > 0 {
		rec.Error += " (" + strings.Join(rec.Failed, "; ") + ")"
	} else {
		rec.Error += fmt.Sprintf(" by the dynamic loader, in %s or in the CUDA, system and Python wheel directories", EnvLibDir)
	}
	return 0, rec
}

// loadDriver loads libcuda: from AIM_LIBCUDA alone when it is set, else by the search.
func (e searchEnv) loadDriver(libcuda string, use func(h uintptr) error) (uintptr, Library) {
	if libcuda == "" {
		return e.loadLib(specDriver, use)
	}
	rec := Library{Name: specDriver.name}
	h, err := dlopen(libcuda)
	if err == nil {
		err = use(h)
	}
	if err != nil {
		rec.Error = fmt.Sprintf("%s=%s: %v", EnvLibCUDA, libcuda, err)
		rec.Failed = []string{err.Error()}
		return 0, rec
	}
	rec.Soname, rec.Path, rec.Via = filepath.Base(libcuda), libcuda, viaEnvPath
	return h, rec
}

// mappedPath returns the file that the process mapped for a library loaded by soname (the
// loader resolves links: libcuda.so.1 -> libcuda.so.580.65.06), or "".
func mappedPath(soname string) string {
	raw, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return ""
	}
	stem := soname
	if i := strings.Index(stem, ".so"); i >= 0 {
		stem = stem[:i+3]
	}
	return findMapped(raw, soname, stem)
}

// findMapped scans a /proc/self/maps text for the mapped file of a library loaded by soname:
// the file named soname, else one named soname + ".*" (libcublas.so.13.0.2), else one named
// stem + ".*" (libcuda.so.580.65.06 for libcuda.so.1); "" when none is mapped.
func findMapped(maps []byte, soname, stem string) string {
	var near, loose string
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || !strings.HasPrefix(f[5], "/") {
			continue
		}
		p := strings.Join(f[5:], " ")
		base := filepath.Base(p)
		switch {
		case base == soname:
			return p
		case near == "" && strings.HasPrefix(base, soname+"."):
			near = p
		case loose == "" && strings.HasPrefix(base, stem+"."):
			loose = p
		}
	}
	if near != "" {
		return near
	}
	return loose
}
