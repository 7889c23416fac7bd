// Package codecheck holds the rules the module's own source is tested against. Table is the
// layering of its packages: a package may import the packages of its own unit and of the
// layers below, never one above and never another unit of its own layer, and no package
// imports a package that (directly or through others) imports the package of a folder above
// it. Check applies those rules to the imports ReadImports parses from the non-test .go files;
// the package's tests run it over the module and also hold every comment and string of the
// non-test files free of issue and task numbers, dates and the history of the work, so that
// they speak of the code.
package codecheck

import (
	"bufio"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// A Layer is a set of units, each a package path relative to the module: "x" is the package x
// alone, "x/..." is x and every package in the folders below it.
type Layer struct {
	Name  string
	Units []string
	Job   string // what the layer's packages do
}

// Table is the module's layers, bottom first. A package belongs to the unit whose pattern
// matches it most closely (cmd/aim/internal/job is in "cmd/aim/internal/...", not "cmd/...").
var Table = []Layer{
	{"internal", []string{"internal/..."}, "the parallel map-reduce, the small SPD solves and these source checks, on the standard library and gonum"},
	{"kernels", []string{"kernels/..."}, "the CUDA sources with their PTX, the NVRTC generator and the host emulator"},
	{"channel", []string{"channel/..."}, "the per-sample channel math, the Go twins of the kernels"},
	{"device", []string{"device"}, "the Device and Backend interfaces, the checked front, device groups"},
	// The engine is a unit of the backends' layer: it is written on package device alone and
	// never imports a backend, and no backend imports it.
	{"on device", []string{"cpu/...", "device/cuda/...", "engine/..."}, "the CPU and CUDA backends, and the theory and algorithms on package device"},
	{"backend", []string{"backend/..."}, "selection of a backend by --device name, the one package that imports both"},
	{"jobs", []string{"cmd/aim/internal/..."}, "the jobs' shared core (package job: configuration, outputs, manifests, devices) and the command line's tables, figures and sweeps"},
	// The jobs of each model are a unit of their own on the shared core: neither imports the other.
	{"model jobs", []string{"cmd/aim/internal/job/aimjob/...", "cmd/aim/internal/job/smijob/..."}, "the AIM jobs (se, amp, gd, thresholds) and the SMI jobs (smi se, thresholds, amp, sgd)"},
	{"bench job", []string{"cmd/aim/internal/job/benchjob/..."}, "aim bench, on the AIM jobs' memory model and token plans"},
	{"commands", []string{"cmd/...", "bench/..."}, "the aim command and the benchmarks"},
}

// Lookup returns the layer (an index into Table) and the unit of the package at path rel
// (relative to the module), or ok false when no unit matches it.
func Lookup(rel string) (layer int, unit string, ok bool) {
	best := -1
	for i, l := range Table {
		for _, u := range l.Units {
			base, tree := strings.CutSuffix(u, "/...")
			if !(rel == base || tree && strings.HasPrefix(rel, base+"/")) {
				continue
			}
			if len(u) > best {
				best, layer, unit, ok = len(u), i, u, true
			}
		}
	}
	return layer, unit, ok
}

// An Import is one import of a package of the module by a non-test file of the module.
type Import struct {
	File string // the file, relative to the module root
	Line int
	From string // the importing package, relative to the module ("cmd/aim")
	To   string // the imported package, relative to the module
}

// ModuleRoot returns the folder of the go.mod at or above dir and the module path it declares.
func ModuleRoot(dir string) (root, module string, err error) {
	dir, err = filepath.Abs(dir)
	if err != nil {
		return "", "", err
	}
	for {
		f, err := os.Open(filepath.Join(dir, "go.mod"))
		if err == nil {
			defer f.Close()
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if m, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
					return dir, strings.Trim(strings.TrimSpace(m), `"`), nil
				}
			}
			return "", "", fmt.Errorf("%s: no module line", f.Name())
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", "", errors.New("no go.mod at or above the working directory")
		}
		dir = up
	}
}

// GoFiles returns the module's non-test .go files, relative to root and sorted, leaving out
// testdata, vendor, folders whose names start with "." or "_", and nested modules.
func GoFiles(root string) ([]string, error) {
	return Files(root, func(name string) bool {
		return name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
	}, func(name string) bool {
		return strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go")
	})
}

// Files returns the regular files below root whose names keep accepts, relative to root
// (slash-separated) and sorted, leaving out the folders whose names skip accepts and nested
// modules.
func Files(root string, skip, keep func(name string) bool) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path == root {
				return nil
			}
			if skip(name) {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if keep(name) && d.Type().IsRegular() {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

// ReadImports parses the imports of every non-test .go file of the module at root (module
// path module) and returns those of the module's own packages, in file order.
func ReadImports(root, module string) ([]Import, error) {
	files, err := GoFiles(root)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var out []Import
	for _, file := range files {
		f, err := parser.ParseFile(fset, filepath.Join(root, file), nil, parser.ImportsOnly)
		if err != nil {
			return nil, err
		}
		from := filepath.ToSlash(filepath.Dir(file))
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return nil, fmt.Errorf("%s: import %s: %v", file, imp.Path.Value, err)
			}
			to, ok := strings.CutPrefix(p, module+"/")
			if !ok {
				continue
			}
			out = append(out, Import{File: file, Line: fset.Position(imp.Pos()).Line, From: from, To: to})
		}
	}
	return out, nil
}

// Check returns a sentence for each import that breaks the layering, naming the file, the line
// and the import: a package in no layer of Table, an import of a higher layer or of another
// unit of the same layer, and an import of a package that reaches (through the imports given)
// the package of a folder above the importer, as device/x importing cpu, which imports device.
func Check(imports []Import) []string {
	var bad []string
	unplaced := map[string]bool{}
	graph := map[string][]string{}
	for _, im := range imports {
		if !slices.Contains(graph[im.From], im.To) {
			graph[im.From] = append(graph[im.From], im.To)
		}
	}
	for _, im := range imports {
		lf, uf, okf := Lookup(im.From)
		lt, ut, okt := Lookup(im.To)
		switch {
		case !okf:
			if !unplaced[im.From] {
				unplaced[im.From] = true
				bad = append(bad, fmt.Sprintf("%s: package %s is in no layer of codecheck.Table", im.File, im.From))
			}
		case !okt:
			if !unplaced[im.To] {
				unplaced[im.To] = true
				bad = append(bad, fmt.Sprintf("%s:%d: imports %s, which is in no layer of codecheck.Table", im.File, im.Line, im.To))
			}
		case lt > lf:
			bad = append(bad, fmt.Sprintf("%s:%d: %s (layer %s) imports %s of the higher layer %s", im.File, im.Line, im.From, Table[lf].Name, im.To, Table[lt].Name))
		case lt == lf && ut != uf:
			bad = append(bad, fmt.Sprintf("%s:%d: %s (%s) imports %s (%s), another unit of the same layer %s", im.File, im.Line, im.From, uf, im.To, ut, Table[lf].Name))
		}
		for a := parent(im.From); a != ""; a = parent(a) {
			if im.To == a || strings.HasPrefix(im.To, a+"/") {
				continue
			}
			if via := path(graph, im.To, a); via != nil {
				bad = append(bad, fmt.Sprintf("%s:%d: %s imports %s, which imports %s, the package of a folder above it (%s)", im.File, im.Line, im.From, im.To, a, strings.Join(via, " -> ")))
			}
		}
	}
	return bad
}

// parent returns the folder above rel ("" at the top).
func parent(rel string) string {
	if i := strings.LastIndex(rel, "/"); i >= 0 {
		return rel[:i]
	}
	return ""
}

// path returns a chain of imports from one package to another (from first, to last), or nil
// when from does not reach to.
func path(graph map[string][]string, from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == to {
			var chain []string
			for q := to; q != ""; q = prev[q] {
				chain = append(chain, q)
			}
			slices.Reverse(chain)
			return chain
		}
		for _, q := range graph[p] {
			if _, seen := prev[q]; !seen {
				prev[q] = p
				queue = append(queue, q)
			}
		}
	}
	return nil
}
