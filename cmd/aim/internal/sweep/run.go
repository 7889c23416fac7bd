package sweep

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aimtheory/aim/cmd/aim/internal/job"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
	"github.com/aimtheory/aim/internal/par"
)

// Plan is a validated sweep ready to run: the file, and how to run one run of its job.
type Plan struct {
	Path    string        // the sweep file
	Src     []byte        // its text, for the manifest
	Spec    *Spec         // the file, validated
	Device  string        // what the device is, for the manifest
	CUDA    func() string // the CUDA driver and GPUs seen, for jobs that can use a GPU; nil for the others
	Version string        // the program version
	// Rerun is the command line that computes run r again on its own.
	Rerun func(r Run) string
	// Run computes run r. A run that finished without a value (diverged, unconverged) returns
	// its row and the reason.
	Run func(r Run) (Output, error)
}

// Output is what one run wrote: the header of its job's table and its one row, and, in a sweep
// with trace = true, the header and rows of its trace.
type Output struct {
	Columns, Row []string
	TraceColumns []string
	Trace        [][]string
}

// traceFile is where a traced sweep keeps the trace of the run at grid point point and seed
// until results are joined: <dir>/trace/seed-<seed>-<h>.csv, written before the run enters the
// journal. h hashes the point's values, not its index, so that the name holds when the sweep
// grows (Execute).
func traceFile(dir string, s *Spec, point int, seed uint64) string {
	h := sha256.Sum256([]byte(s.Describe(point)))
	return filepath.Join(dir, "trace", fmt.Sprintf("seed-%d-%s.csv", seed, hex.EncodeToString(h[:6])))
}

// Describe names grid point k for messages: "rho = 0.5, alpha = 0.1".
func (s *Spec) Describe(k int) string {
	vals := s.Point(k)
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = s.Grid[i].Name + " = " + v
	}
	if len(parts) == 0 {
		return "the defaults"
	}
	return strings.Join(parts, ", ")
}

// LineOf finds the grid key that an error message names, as a flag (--name or -name) or else
// as "name = ", or falls back to the [grid] line.
func (s *Spec) LineOf(msg string) int {
	for _, pattern := range []string{`(^|[^\w-])--?%s($|[^\w-])`, `(^|[^\w-])%s = `} {
		for _, a := range s.Grid {
			if regexp.MustCompile(fmt.Sprintf(pattern, regexp.QuoteMeta(a.Name))).MatchString(msg) {
				return a.Line
			}
		}
	}
	return s.Lines["[grid]"]
}

// Manifest is results.json of a sweep folder.
type Manifest struct {
	Program    string         `json:"program"`
	Command    string         `json:"command"`
	Version    string         `json:"version"`
	Go         string         `json:"go"`
	Host       string         `json:"host"`
	Device     string         `json:"device"`
	CUDA       string         `json:"cuda,omitempty"` // the driver and GPUs seen, for jobs that can use a GPU
	Args       []string       `json:"args"`
	SpecFile   string         `json:"spec_file"`
	Spec       string         `json:"spec"`
	SpecHash   string         `json:"spec_hash"`
	Job        string         `json:"job"`
	Shard      string         `json:"shard"`
	Shards     int            `json:"shards"`
	Runs       int            `json:"runs"`                 // in the sweep
	ShardRuns  int            `json:"shard_runs"`           // in this folder's shard
	Done       int            `json:"done"`                 // finished runs in this folder
	Failed     []string       `json:"failed"`               // runs that finished without a value (diverged, unconverged)
	Complete   bool           `json:"complete"`             // every run of the shard is done and results.csv written
	Sessions   []Session      `json:"sessions"`             // each invocation that worked on the folder
	Wall       float64        `json:"wall_seconds"`         // summed over sessions
	GrownFrom  []string       `json:"grown_from,omitempty"` // the spec hashes of the sweeps the folder held before it grew
	Rerun      []string       `json:"rerun,omitempty"`
	RerunNote  string         `json:"rerun_note,omitempty"`
	Outputs    []string       `json:"outputs"`
	Parameters map[string]any `json:"parameters"`
}

// Session is one invocation that worked on a sweep folder.
type Session struct {
	Started string  `json:"started"`
	Wall    float64 `json:"wall_seconds"`
	Runs    int     `json:"runs"` // runs finished in this session
	Host    string  `json:"host"`
	Version string  `json:"version"`
}

// maxRerunLines bounds the per-run command lines a manifest lists.
const maxRerunLines = 10000

// ReadManifest reads a sweep folder's results.json.
func ReadManifest(path string) (*Manifest, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &m, nil
}

func writeManifest(path string, m *Manifest) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, append(data, '\n'))
}

// newManifest fills what every manifest of the plan records.
func (p *Plan) newManifest(command string, sh Shard, args []string) *Manifest {
	host, _ := os.Hostname()
	s := p.Spec
	m := &Manifest{Program: "aim", Command: command, Version: p.Version, Go: runtime.Version(), Host: host,
		Device: p.Device, Args: args, SpecFile: p.Path, Spec: string(p.Src), SpecHash: s.Hash(), Job: s.Job,
		Shard: sh.String(), Shards: max(1, sh.N), Runs: s.Runs(), Failed: []string{}, Sessions: []Session{}}
	if p.CUDA != nil {
		m.CUDA = strings.TrimSpace(p.CUDA())
	}
	grid := map[string]any{}
	for _, a := range s.Grid {
		grid[a.Name] = a.Values
	}
	m.Parameters = map[string]any{"job": s.Job, "seed": s.Seed, "seeds": s.Seeds, "device": s.Device,
		"parallel": s.Parallel, "workers": s.Workers, "threads": s.Threads, "trace": s.Trace, "grid": grid}
	for k := 0; k < s.Runs(); k++ {
		if sh.Has(k) {
			m.ShardRuns++
			if len(m.Rerun) < maxRerunLines {
				m.Rerun = append(m.Rerun, p.Rerun(s.Run(k)))
			}
		}
	}
	if m.ShardRuns > maxRerunLines {
		m.RerunNote = fmt.Sprintf("the first %d of %d runs; run k is the command of its grid point with --seed %d + k mod %d", maxRerunLines, m.ShardRuns, s.Seed, s.Seeds)
	}
	return m
}

// Execute runs (or resumes) shard sh of the sweep into its folder: every run not yet in the
// journal, Spec.Parallel at a time, each appended to the journal as it finishes (with trace,
// after its trace file is written); then results.csv, trace.csv and results.json. args is the
// command line, for the manifest. mode says what goes on stderr as runs finish: a line per run
// (job.ProgressAuto), a job.ProgressEvent line per run (job.ProgressJSON, done counting the runs
// of the shard done before too) or nothing.
func (p *Plan) Execute(sh Shard, args []string, mode job.ProgressMode, stdout, stderr io.Writer) error {
	s := p.Spec
	dir := sh.Folder(s.Out)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return job.Inputf("out %s: %v", dir, err)
	}
	lock, err := lockFolder(dir)
	if err != nil {
		return err
	}
	defer lock.release()
	manPath := filepath.Join(dir, "results.json")
	man := p.newManifest("sweep run", sh, args)
	if old, err := ReadManifest(manPath); err == nil {
		man.Sessions, man.Wall, man.GrownFrom = old.Sessions, old.Wall, old.GrownFrom
		if old.SpecHash == man.SpecHash {
			err = completeGrowth(dir, man.SpecHash)
		} else {
			var kept int
			if kept, err = p.grow(dir, sh, old, man, stderr); err == nil && mode != job.ProgressNone {
				fmt.Fprintf(stderr, "aim sweep: %s grows from the sweep of spec %s, keeping its %d runs\n", dir, old.SpecHash, kept)
			}
		}
		if err != nil {
			return err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	journal, recs, warning, err := OpenJournal(filepath.Join(dir, "journal.csv"))
	if err != nil {
		return err
	}
	defer journal.Close()
	if warning != "" {
		fmt.Fprintln(stderr, "aim sweep: warning:", warning)
	}
	done := map[int]bool{}
	for _, r := range recs {
		if err := checkRecord(s, sh, r); err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(dir, "journal.csv"), err)
		}
		if s.Trace {
			if _, err := os.Stat(traceFile(dir, s, r.Point, r.Seed)); err != nil {
				return fmt.Errorf("%s: run %d is recorded, but its trace is missing (%v): remove the folder to run the sweep again", filepath.Join(dir, "journal.csv"), r.Run, err)
			}
		}
		done[r.Run] = true
	}
	var todo []Run
	for k := 0; k < s.Runs(); k++ {
		if sh.Has(k) && !done[k] {
			todo = append(todo, s.Run(k))
		}
	}
	start := time.Now()
	session := Session{Started: start.UTC().Format(time.RFC3339), Host: man.Host, Version: man.Version}
	man.Sessions = append(man.Sessions, session)
	man.Done = len(done)
	if err := writeManifest(manPath, man); err != nil {
		return err
	}
	// What a killed session left: half-written temporary files (and the per-run folders of
	// earlier versions, which ran each run through a CSV of its own).
	os.RemoveAll(filepath.Join(dir, ".inflight"))
	for _, pattern := range []string{filepath.Join(dir, ".*.tmp*"), filepath.Join(dir, "trace", ".*.tmp*")} {
		stale, _ := filepath.Glob(pattern)
		for _, f := range stale {
			os.Remove(f)
		}
	}
	if mode == job.ProgressAuto {
		fmt.Fprintf(stderr, "aim sweep: %s, shard %s: %d runs, %d done, %d to go, %d at a time\n", p.Path, sh, man.ShardRuns, len(done), len(todo), s.Parallel)
	}
	if s.Trace {
		if err := os.MkdirAll(filepath.Join(dir, "trace"), 0o755); err != nil {
			return err
		}
	}
	finished, runErr := p.execute(dir, todo, journal, man.ShardRuns-len(todo), man.ShardRuns, mode, stderr)
	session.Wall, session.Runs = time.Since(start).Seconds(), finished
	man.Sessions[len(man.Sessions)-1] = session
	man.Wall += session.Wall
	man.Done = len(done) + finished
	if runErr != nil {
		if err := writeManifest(manPath, man); err != nil {
			return err
		}
		return fmt.Errorf("%w (%d of %d runs done; run the same command again to resume)", runErr, man.Done, man.ShardRuns)
	}
	// Every run is done: the table in grid order, then the manifest.
	_, recs, _, err = OpenJournal(filepath.Join(dir, "journal.csv"))
	if err != nil {
		return err
	}
	return finish(dir, journal.Columns(), recs, func(r Record) string { return traceFile(dir, s, r.Point, r.Seed) }, man, stdout)
}

// checkRecord verifies that a journal line belongs to this sweep and shard.
func checkRecord(s *Spec, sh Shard, r Record) error {
	if r.Run >= s.Runs() {
		return fmt.Errorf("run %d is not in the sweep (%d runs)", r.Run, s.Runs())
	}
	if want := s.Run(r.Run); want.Point != r.Point || want.Seed != r.Seed {
		return fmt.Errorf("run %d is recorded at point %d seed %d, the sweep file has point %d seed %d", r.Run, r.Point, r.Seed, want.Point, want.Seed)
	}
	if !sh.Has(r.Run) {
		return fmt.Errorf("run %d does not belong to shard %s", r.Run, sh)
	}
	return nil
}

// execute runs todo, Spec.Parallel at a time, appending each finished run to the journal (with
// trace, once its trace file is in dir/trace). It stops handing out runs at the first run that
// fails without a row, waits for those in flight, and returns how many finished and that error.
func (p *Plan) execute(dir string, todo []Run, journal *Journal, before, total int, mode job.ProgressMode, stderr io.Writer) (int, error) {
	var (
		mu       sync.Mutex
		finished int
		meter    job.Progress
	)
	if mode == job.ProgressJSON {
		meter = job.NewJSONProgress(stderr, total, "sweep run")
		meter.Add(before)
	}
	// One run per chunk on Spec.Parallel goroutines (par.For): after a run fails without a row,
	// no new run starts, and the error of the earliest such run is returned.
	err := par.For(p.Spec.Parallel, len(todo), par.NoState, func(_ struct{}, c int) error {
		r := todo[c]
		t0 := time.Now()
		out, runErr := p.Run(r)
		if runErr != nil && out.Row == nil {
			return fmt.Errorf("run %d (%s, seed %d): %w", r.Index, p.Spec.Describe(r.Point), r.Seed, runErr)
		}
		if p.Spec.Trace {
			var buf bytes.Buffer
			if err := table.WriteCSV(&buf, out.TraceColumns, out.Trace); err != nil {
				return err
			}
			if err := WriteFileAtomic(traceFile(dir, p.Spec, r.Point, r.Seed), buf.Bytes()); err != nil {
				return err
			}
		}
		mu.Lock()
		defer mu.Unlock()
		failed := ""
		if runErr != nil {
			failed = firstLine(runErr.Error())
		}
		if err := journal.Append(out.Columns, Record{Run: r.Index, Point: r.Point, Seed: r.Seed, Failed: failed, Fields: out.Row}); err != nil {
			return err
		}
		finished++
		if meter != nil {
			meter.Add(1)
		}
		if mode == job.ProgressAuto {
			status := ""
			if runErr != nil {
				status = " without a value: " + firstLine(runErr.Error())
			}
			fmt.Fprintf(stderr, "aim sweep: [%d/%d] run %d (%s, seed %d) in %.2f s%s\n",
				before+finished, total, r.Index, p.Spec.Describe(r.Point), r.Seed, time.Since(t0).Seconds(), status)
		}
		return nil
	})
	return finished, err
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// finish writes results.csv (the job's columns, one row per run in run order), with trace
// trace.csv (the runs' trace files joined in run order, that of record r at traceOf(r)), and
// the completed manifest of a folder whose runs are all recorded.
func finish(dir string, columns []string, recs []Record, traceOf func(r Record) string, man *Manifest, stdout io.Writer) error {
	sort.Slice(recs, func(i, j int) bool { return recs[i].Run < recs[j].Run })
	rows := make([][]string, len(recs))
	man.Failed = []string{}
	for i, r := range recs {
		rows[i] = r.Fields
		if r.Failed != "" {
			man.Failed = append(man.Failed, fmt.Sprintf("run %d (point %d, seed %d): %s", r.Run, r.Point, r.Seed, r.Failed))
		}
	}
	var buf bytes.Buffer
	if columns == nil { // an empty shard
		columns = []string{}
	}
	if err := table.WriteCSV(&buf, columns, rows); err != nil {
		return err
	}
	csvPath := filepath.Join(dir, "results.csv")
	if err := WriteFileAtomic(csvPath, buf.Bytes()); err != nil {
		return err
	}
	man.Outputs = []string{csvPath, filepath.Join(dir, "results.json"), filepath.Join(dir, "journal.csv")}
	if trace, _ := man.Parameters["trace"].(bool); trace {
		files := make([]string, len(recs))
		for i, r := range recs {
			files[i] = traceOf(r)
		}
		tracePath := filepath.Join(dir, "trace.csv")
		if err := joinCSV(tracePath, files); err != nil {
			return err
		}
		man.Outputs = append(man.Outputs, tracePath)
	}
	man.Complete = true
	man.Done = len(recs)
	if err := writeManifest(filepath.Join(dir, "results.json"), man); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (%d rows) and %s\n", csvPath, len(rows), filepath.Join(dir, "results.json"))
	if len(man.Failed) > 0 {
		return fmt.Errorf("%d of %d runs failed and were written without their values (see failed in %s):\n  %s",
			len(man.Failed), len(recs), filepath.Join(dir, "results.json"), strings.Join(man.Failed[:min(10, len(man.Failed))], "\n  "))
	}
	return nil
}

// Merge checks the shard folders of the sweep (all of one count n, all written from this
// sweep file, every run recorded exactly once) and joins them into <out>/results.csv.
func (p *Plan) Merge(args []string, stdout, stderr io.Writer) error {
	s := p.Spec
	dirs, _ := filepath.Glob(filepath.Join(s.Out, "shard-*-of-*"))
	if len(dirs) == 0 {
		return job.Inputf("no shard folders (shard-i-of-n) in %s", s.Out)
	}
	n := -1
	shards := map[int]string{}
	for _, d := range dirs {
		var i, m int
		if _, err := fmt.Sscanf(filepath.Base(d), "shard-%d-of-%d", &i, &m); err != nil {
			continue
		}
		if n >= 0 && m != n {
			return job.Inputf("%s mixes shard counts: %s and a shard of %d", s.Out, filepath.Base(d), n)
		}
		n = m
		shards[i] = d
	}
	var problems []string
	var columns []string
	var all []Record
	for i := 0; i < n; i++ {
		d, ok := shards[i]
		if !ok {
			problems = append(problems, fmt.Sprintf("shard %d/%d: no folder %s", i, n, Shard{I: i, N: n}.Folder(s.Out)))
			continue
		}
		m, err := ReadManifest(filepath.Join(d, "results.json"))
		if err != nil {
			problems = append(problems, fmt.Sprintf("shard %d/%d: %v", i, n, err))
			continue
		}
		if m.SpecHash != s.Hash() {
			return job.Inputf("%s was written by another sweep (spec %s, this file %s): refusing to mix them", d, m.SpecHash, s.Hash())
		}
		data, err := os.ReadFile(filepath.Join(d, "journal.csv"))
		if err != nil {
			problems = append(problems, fmt.Sprintf("shard %d/%d: %v", i, n, err))
			continue
		}
		cols, recs, dropped, err := ReadJournal(data)
		if err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(d, "journal.csv"), err)
		}
		if dropped != "" {
			fmt.Fprintf(stderr, "aim sweep merge: warning: %s: ignoring the corrupt last %s\n", filepath.Join(d, "journal.csv"), dropped)
		}
		if cols != nil {
			if columns != nil && !slices.Equal(cols, columns) {
				return fmt.Errorf("%s: its columns differ from the other shards'", d)
			}
			columns = cols
		}
		for _, r := range recs {
			if err := checkRecord(s, Shard{I: i, N: n}, r); err != nil {
				return fmt.Errorf("%s: %w", filepath.Join(d, "journal.csv"), err)
			}
		}
		all = append(all, recs...)
	}
	have := map[int]int{}
	for _, r := range all {
		have[r.Run]++
	}
	var missing []string
	for k := 0; k < s.Runs(); k++ {
		switch have[k] {
		case 0:
			if len(missing) < 10 {
				missing = append(missing, fmt.Sprintf("run %d (%s, seed %d)", k, s.Describe(s.Run(k).Point), s.Run(k).Seed))
			}
		case 1:
		default:
			problems = append(problems, fmt.Sprintf("run %d is recorded %d times", k, have[k]))
		}
	}
	if n := s.Runs() - len(have); n > 0 {
		problems = append(problems, fmt.Sprintf("%d of %d runs are missing, e.g. %s: run their shards again", n, s.Runs(), strings.Join(missing, "; ")))
	}
	if len(problems) > 0 {
		return fmt.Errorf("cannot merge %s:\n  %s", s.Out, strings.Join(problems, "\n  "))
	}
	man := p.newManifest("sweep merge", Shard{}, args)
	man.Shards = n
	man.Rerun, man.RerunNote = nil, "see each shard's results.json"
	for i := 0; i < n; i++ {
		if m, err := ReadManifest(filepath.Join(shards[i], "results.json")); err == nil {
			man.Sessions = append(man.Sessions, m.Sessions...)
			man.Wall += m.Wall
			if i == 0 {
				man.Device = m.Device
			}
		}
	}
	return finish(s.Out, columns, all, func(r Record) string { return traceFile(shards[r.Run%n], s, r.Point, r.Seed) }, man, stdout)
}

// joinCSV writes to path the CSV files in order as one table: the first file's header once,
// then every file's rows. Headers that differ are an error. The table streams through a
// temporary file renamed into place (WriteFileAtomic's guarantee, without holding it in memory).
func joinCSV(path string, files []string) error {
	return writeAtomic(path, func(w io.Writer) error {
		var header []byte
		for i, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			h, rows, _ := bytes.Cut(data, []byte("\n"))
			if i == 0 {
				header = h
				if _, err := w.Write(append(slices.Clone(h), '\n')); err != nil {
					return err
				}
			} else if !bytes.Equal(h, header) {
				return fmt.Errorf("%s: header %q, the first file's %q", f, h, header)
			}
			if _, err := w.Write(rows); err != nil {
				return err
			}
		}
		return nil
	})
}

// folderLock holds an exclusive lock on a sweep folder, so that two processes never write one
// journal.
type folderLock struct{ f *os.File }

func lockFolder(dir string) (*folderLock, error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s is being written by another aim sweep (%v)", dir, err)
	}
	return &folderLock{f}, nil
}

func (l *folderLock) release() {
	syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
}
