package sweep

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/aimtheory/aim/backend"
	"github.com/aimtheory/aim/cmd/aim/internal/grid"
)

// Spec is a sweep file: the job, where its results go, the seeds, and the grid of parameters.
//
//	job = "amp"                 # the command each run is: se, amp, gd, smi-se, smi-amp, smi-sgd
//	out = "results/sweep-amp"   # the output folder
//	seeds = 4                   # runs per point, with seeds seed, seed+1, ... (simulations)
//	seed = 1
//	device = "cpu"              # simulations: auto, cpu, cuda, cuda:0,1, cuda:all, cpu:K
//	parallel = 1                # runs in flight at once
//	workers = 0                 # CPU goroutines per run (0: all cores)
//	threads = 0                 # amp and gd: threads of the CPU's BLAS library (0: all cores)
//	trace = false               # amp and gd: also keep each run's trace, joined in <out>/trace.csv
//
//	[grid]                      # the command's flags: a value, a list, or a range "a:b:n[:log]"
//	rho = [0.2, 0.5, 1]
//	alpha = "0.05:0.15:3"
//	D = 100
type Spec struct {
	Job      string
	Out      string
	Seed     uint64
	Seeds    int
	Device   string
	Parallel int
	Workers  int
	Threads  int
	Trace    bool // each run also writes its trace (every iteration, or every trace-every steps)
	Grid     []Axis
	Lines    map[string]int // the line of each root key, and "[grid]" for the table
	seedsSet bool
}

// Axis is one parameter of the grid: the flag it sets and its values in the flag's text form,
// in file order.
type Axis struct {
	Name   string
	Values []string
	Line   int
}

// SeedsSet reports whether the file sets seeds (theory jobs refuse it).
func (s *Spec) SeedsSet() bool { return s.seedsSet }

// MaxRuns is the largest sweep, in runs, that a file may describe.
const MaxRuns = 10_000_000

// rootKeys are the keys a sweep file may set outside [grid], with their kinds.
var rootKeys = map[string]Kind{"job": String, "out": String, "seed": Integer, "seeds": Integer,
	"device": String, "parallel": Integer, "workers": Integer, "threads": Integer, "trace": Bool}

// ParseSpec reads a sweep file. It checks the structure only (known keys, kinds, non-empty
// grids, well-formed ranges); whether the values suit the job is the job's to check. Every
// problem is returned at once, each with its line, as an Errors. With an error, the Spec (nil
// only for a file that is not text) holds what could be read, the bad keys and axes left out,
// so that the caller can check the rest and report everything in one go; it must not be run.
func ParseSpec(src []byte) (*Spec, error) {
	doc, err := Parse(src)
	var errs Errors
	if err != nil {
		errs = append(errs, err.(Errors)...)
	}
	if doc == nil {
		return nil, errs.sorted()
	}
	s := &Spec{Seed: 1, Seeds: 1, Device: "auto", Parallel: 1, Lines: map[string]int{}}
	for _, e := range doc.Tables[0].Entries {
		want, ok := rootKeys[e.Key]
		if !ok {
			errs = append(errs, Error{e.Line, fmt.Sprintf("unknown key %q (want job, out, seed, seeds, device, parallel, workers, threads, trace, or a parameter under [grid])", e.Key)})
			continue
		}
		s.Lines[e.Key] = e.Line
		if e.Value.Kind != want {
			errs = append(errs, Error{e.Line, fmt.Sprintf("%s must be %s, not %s", e.Key, want, e.Value.Kind)})
			continue
		}
		v := e.Value
		switch e.Key {
		case "job":
			s.Job = v.Str
		case "out":
			s.Out = v.Str
			if strings.TrimSpace(v.Str) == "" {
				errs = append(errs, Error{e.Line, "out is empty"})
			}
		case "device":
			s.Device = v.Str
			if _, err := backend.Parse(v.Str); err != nil {
				errs = append(errs, Error{e.Line, err.Error()})
			}
		case "seed":
			if v.Int < 0 {
				errs = append(errs, Error{e.Line, fmt.Sprintf("seed %d: need seed >= 0", v.Int)})
			}
			s.Seed = uint64(v.Int)
		case "seeds":
			s.seedsSet = true
			if v.Int < 1 || v.Int > 1<<20 {
				errs = append(errs, Error{e.Line, fmt.Sprintf("seeds %d: need 1 <= seeds <= %d", v.Int, 1<<20)})
			}
			s.Seeds = int(v.Int)
		case "parallel":
			if v.Int < 1 || v.Int > 1024 {
				errs = append(errs, Error{e.Line, fmt.Sprintf("parallel %d: need 1 <= parallel <= 1024", v.Int)})
			}
			s.Parallel = int(v.Int)
		case "workers":
			if v.Int < 0 || v.Int > 1<<16 {
				errs = append(errs, Error{e.Line, fmt.Sprintf("workers %d: need 0 (all cores) or more", v.Int)})
			}
			s.Workers = int(v.Int)
		case "threads":
			if v.Int < 0 || v.Int > 1<<16 {
				errs = append(errs, Error{e.Line, fmt.Sprintf("threads %d: need 0 (all cores) or more", v.Int)})
			}
			s.Threads = int(v.Int)
		case "trace":
			s.Trace = v.Bool
		}
	}
	if _, ok := s.Lines["job"]; !ok {
		errs = append(errs, Error{1, "no job: set job = \"se\", \"amp\", \"gd\", \"smi-se\", \"smi-amp\" or \"smi-sgd\""})
	}
	if _, ok := s.Lines["out"]; !ok {
		errs = append(errs, Error{1, "no out: set out = \"results/my-sweep\", the folder the results go to"})
	}
	for _, t := range doc.Tables[1:] {
		if t.Name != "grid" {
			errs = append(errs, Error{t.Line, fmt.Sprintf("unknown table [%s] (the only table is [grid])", t.Name)})
		}
	}
	g := doc.Table("grid")
	if g == nil {
		errs = append(errs, Error{0, "no [grid] table: put the parameters to sweep under [grid]"})
		return s, errs.sorted()
	}
	s.Lines["[grid]"] = g.Line
	for _, e := range g.Entries {
		vals, err := axisValues(e.Value)
		if err != nil {
			errs = append(errs, Error{e.Line, fmt.Sprintf("%s: %v", e.Key, err)})
			continue
		}
		s.Grid = append(s.Grid, Axis{Name: e.Key, Values: vals, Line: e.Line})
	}
	runs := s.Seeds
	for _, a := range s.Grid {
		if runs > MaxRuns/len(a.Values) {
			errs = append(errs, Error{g.Line, fmt.Sprintf("the grid has more than %d runs", MaxRuns)})
			s.Grid = nil // too large to enumerate for further checks
			break
		}
		runs *= len(a.Values)
	}
	return s, errs.sorted()
}

// axisValues expands a grid value: a scalar is one value, a list its elements, and a string
// with a colon a range "a:b:n" or "a:b:n:log" (package grid), unless what comes before its
// first colon is not a number: then it is one word value ("powerlaw:1.25", a --teacher).
func axisValues(v Value) ([]string, error) {
	switch v.Kind {
	case Array:
		if len(v.Elems) == 0 {
			return nil, fmt.Errorf("empty list: a grid needs at least one value")
		}
		out := make([]string, len(v.Elems))
		for i, e := range v.Elems {
			out[i] = e.Text()
		}
		return out, nil
	case String:
		if strings.TrimSpace(v.Str) == "" {
			return nil, fmt.Errorf("empty value")
		}
		first, _, isRange := strings.Cut(v.Str, ":")
		if _, err := strconv.ParseFloat(strings.TrimSpace(first), 64); !isRange || err != nil {
			return []string{v.Str}, nil
		}
		xs, err := grid.Parse(v.Str)
		if err != nil {
			return nil, err
		}
		out := make([]string, len(xs))
		for i, x := range xs {
			out[i] = strconv.FormatFloat(x, 'g', -1, 64)
		}
		return out, nil
	}
	return []string{v.Text()}, nil
}

// Points returns the number of grid points: the product of the axes' lengths.
func (s *Spec) Points() int {
	n := 1
	for _, a := range s.Grid {
		n *= len(a.Values)
	}
	return n
}

// Point returns the values of grid point k, one per axis: the first axis varies slowest.
func (s *Spec) Point(k int) []string {
	vals := make([]string, len(s.Grid))
	for i := len(s.Grid) - 1; i >= 0; i-- {
		n := len(s.Grid[i].Values)
		vals[i] = s.Grid[i].Values[k%n]
		k /= n
	}
	return vals
}

// Run is one (grid point, seed) of a sweep.
type Run struct {
	Index int    // position in the sweep: Point*Seeds + seed offset
	Point int    // grid point
	Seed  uint64 // its seed
}

// Runs returns the number of runs: points times seeds.
func (s *Spec) Runs() int { return s.Points() * s.Seeds }

// Run returns run k: point k / Seeds with seed Seed + k mod Seeds.
func (s *Spec) Run(k int) Run {
	return Run{Index: k, Point: k / s.Seeds, Seed: s.Seed + uint64(k%s.Seeds)}
}

// Hash identifies what a sweep computes: the job, the seeds, whether runs keep their traces,
// and the expanded grid in order. Where the results go and how they are computed (out, device,
// parallel, workers, threads) do not enter, so shards run on different machines share it.
// trace enters only when true, so trace = false hashes as a file without the key.
func (s *Spec) Hash() string {
	var b strings.Builder
	fmt.Fprintf(&b, "job=%q\nseed=%d\nseeds=%d\n", s.Job, s.Seed, s.Seeds)
	if s.Trace {
		b.WriteString("trace=true\n")
	}
	for _, a := range s.Grid {
		fmt.Fprintf(&b, "grid.%q=%q\n", a.Name, a.Values)
	}
	h := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(h[:8])
}

// Shard is slice I of N of a sweep's runs (0 <= I < N): the runs whose index is I mod N. The
// zero Shard is the whole sweep.
type Shard struct{ I, N int }

// ParseShard reads "i/n" with 0 <= i < n.
func ParseShard(s string) (Shard, error) {
	is, ns, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(is))
	n, err2 := strconv.Atoi(strings.TrimSpace(ns))
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("shard %q: want i/n, e.g. 0/4 (i from 0 to n-1)", s)
	}
	if n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("shard %q: need 0 <= i < n", s)
	}
	return Shard{i, n}, nil
}

// Whole reports whether the shard is the whole sweep.
func (sh Shard) Whole() bool { return sh.N <= 1 }

// Has reports whether run k belongs to the shard.
func (sh Shard) Has(k int) bool { return sh.Whole() || k%sh.N == sh.I }

// String returns "i/n", or "all".
func (sh Shard) String() string {
	if sh.Whole() {
		return "all"
	}
	return fmt.Sprintf("%d/%d", sh.I, sh.N)
}

// Folder returns where a shard writes inside the sweep's out folder: out itself for the whole
// sweep, out/shard-i-of-n otherwise.
func (sh Shard) Folder(out string) string {
	if sh.Whole() {
		return out
	}
	return fmt.Sprintf("%s/shard-%d-of-%d", strings.TrimRight(out, "/"), sh.I, sh.N)
}
