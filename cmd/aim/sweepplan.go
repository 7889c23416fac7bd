package main

// sweepplan.go: a sweep file read and validated into a plan, each of its runs' configurations
// filled through the job command's own flags.

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/aimtheory/aim/backend"
	"github.com/aimtheory/aim/cmd/aim/internal/job"
	"github.com/aimtheory/aim/cmd/aim/internal/sweep"
)

// loadSweep reads and validates a sweep file: its structure, then every run's flags through
// the job's own parser, then (withDevice) whether each run fits in memory. Every problem is
// reported at once, with the line of the key it concerns, as bad input.
func loadSweep(path string, withDevice bool) (*sweep.Plan, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, job.InputError{Err: err}
	}
	// The structure first; what can be read of a file with problems is checked further, so
	// that every problem is reported at once.
	spec, err := sweep.ParseSpec(src)
	var errs sweep.Errors
	if err != nil && !errors.As(err, &errs) {
		return nil, sweepFileError(path, err)
	}
	if spec == nil {
		return nil, sweepFileError(path, errs)
	}
	j, ok := sweepJobs[spec.Job]
	if !ok {
		// Unless the job key is missing or not a string, which is reported already.
		if line, set := spec.Lines["job"]; set && !slices.ContainsFunc(errs, func(e sweep.Error) bool { return e.Line == line }) {
			errs = append(errs, sweep.Error{Line: line, Msg: fmt.Sprintf("unknown job %q (want %s)", spec.Job, sweepJobNames())})
		}
		return nil, sweepFileError(path, errs)
	}
	plan := &sweep.Plan{Path: path, Src: src, Spec: spec, Device: "cpu (theory)", Version: programVersion(),
		Rerun: func(r sweep.Run) string {
			return "aim " + strings.Join(j.command, " ") + " " + strings.Join(j.runArgs(spec, r), " ")
		},
		Run: func(r sweep.Run) (sweep.Output, error) { return j.runOne(spec, r) }}
	if j.device && spec.Device != "cpu" {
		plan.CUDA = backend.CUDAReport
	}
	if !j.simulation && spec.SeedsSet() && spec.Seeds != 1 {
		errs = append(errs, sweep.Error{Line: spec.Lines["seeds"], Msg: fmt.Sprintf("seeds %d: job %s is theory, with one run per point (seed sets its Monte Carlo draws)", spec.Seeds, spec.Job)})
	}
	if _, ok := spec.Lines["device"]; ok && !j.device {
		errs = append(errs, sweep.Error{Line: spec.Lines["device"], Msg: fmt.Sprintf("job %s runs on the CPU only: remove device", spec.Job)})
	}
	if _, ok := spec.Lines["threads"]; ok && !j.device {
		errs = append(errs, sweep.Error{Line: spec.Lines["threads"], Msg: fmt.Sprintf("job %s makes no BLAS calls: remove threads", spec.Job)})
	}
	if spec.Trace && !j.traced {
		errs = append(errs, sweep.Error{Line: spec.Lines["trace"], Msg: fmt.Sprintf("job %s keeps no trace in a sweep (amp and gd do): remove trace", spec.Job)})
	}
	// Each key on its own: refused, unknown, or of the wrong type.
	bad := map[string]bool{}
	for _, a := range spec.Grid {
		if a.Name == "trace-every" && !spec.Trace {
			errs = append(errs, sweep.Error{Line: a.Line, Msg: "trace-every needs trace = true (without a trace it is ignored)"})
			bad[a.Name] = true
			continue
		}
		if slices.Contains(sweepOwned, a.Name) || slices.Contains(j.owned, a.Name) {
			errs = append(errs, sweep.Error{Line: a.Line, Msg: fmt.Sprintf("%s cannot be swept: the sweep sets it (or it only concerns plots)", a.Name)})
			bad[a.Name] = true
			continue
		}
		for _, v := range a.Values {
			_, err := j.parse([]string{"--" + a.Name + "=" + v})
			if err == nil {
				continue
			}
			var unknown unknownFlagError
			switch {
			case errors.As(err, &unknown):
				hint := ""
				if unknown.suggestion != "" {
					hint = fmt.Sprintf("did you mean %s? ", unknown.suggestion)
				}
				errs = append(errs, sweep.Error{Line: a.Line, Msg: fmt.Sprintf("unknown parameter %q for job %s (%ssee aim %s -h)", a.Name, spec.Job, hint, strings.Join(j.command, " "))})
			case isFlagTypeError(err):
				errs = append(errs, sweep.Error{Line: a.Line, Msg: fmt.Sprintf("%s = %q: wrong type (want %s)", a.Name, v, j.flagKind(a.Name))})
			default:
				continue
			}
			bad[a.Name] = true
			break
		}
	}
	// Grid points are checked on the keys that passed so far.
	good := spec.Grid[:0:0]
	for _, a := range spec.Grid {
		if !bad[a.Name] {
			good = append(good, a)
		}
	}
	spec.Grid = good
	var dev *job.Device
	if withDevice && j.memory != nil && len(errs) == 0 {
		devName := "cpu"
		if j.device {
			devName = spec.Device
		}
		if dev, err = job.OpenDevice(devName, spec.Workers, spec.Threads); err != nil {
			return nil, sweepFileError(path, sweep.Errors{{Line: spec.Lines["device"], Msg: err.Error()}})
		}
		defer dev.Close()
		plan.Device = dev.Note
	}
	// Every point through the job's parser (and memory check), each distinct problem once; in
	// a grid of more than maxCheckedPoints points, that many spread evenly over it.
	seen := map[string]bool{}
	points, step := spec.Points(), 1
	if points > maxCheckedPoints {
		step = (points + maxCheckedPoints - 1) / maxCheckedPoints
	}
	for k := 0; k < points && len(errs) < 20; k += step {
		cfg, err := j.parse(j.pointArgs(spec, k))
		if err == nil && dev != nil {
			err = j.memory(cfg, dev)
		}
		if err == nil {
			continue
		}
		msg := strings.TrimSpace(err.Error())
		if seen[msg] {
			continue
		}
		seen[msg] = true
		errs = append(errs, sweep.Error{Line: spec.LineOf(msg), Msg: fmt.Sprintf("%s (at %s)", msg, spec.Describe(k))})
	}
	if len(errs) > 0 {
		sort.SliceStable(errs, func(i, j int) bool { return errs[i].Line < errs[j].Line })
		return nil, sweepFileError(path, errs)
	}
	return plan, nil
}

// maxCheckedPoints bounds the grid points that loadSweep passes through the job's parser.
const maxCheckedPoints = 100_000

// isFlagTypeError reports whether err is the refusal of a value's type (flagValueError).
func isFlagTypeError(err error) bool {
	var v flagValueError
	return errors.As(err, &v)
}

// flagKind says what a job's flag takes, from the probe values its parser accepts.
func (j *sweepJob) flagKind(name string) string {
	takes := func(v string) bool {
		_, err := j.parse([]string{"--" + name + "=" + v})
		return err == nil || !isFlagTypeError(err)
	}
	switch {
	case takes("x"):
		return "text"
	case takes("1.5"):
		return "a number"
	case takes("true"):
		return "true or false"
	case takes("1"):
		return "a whole number"
	}
	return "another kind of value"
}

// sweepFileError turns a list of problems into bad input that names the file.
func sweepFileError(path string, err error) error {
	var es sweep.Errors
	if !errors.As(err, &es) {
		return usagef("%s: %w", path, err)
	}
	lines := make([]string, len(es))
	for i, e := range es {
		if e.Line > 0 {
			lines[i] = fmt.Sprintf("%s:%d: %s", path, e.Line, e.Msg)
		} else {
			lines[i] = fmt.Sprintf("%s: %s", path, e.Msg)
		}
	}
	return usagef("%d problem(s) in the sweep file:\n  %s", len(es), strings.Join(lines, "\n  "))
}

// pointArgs returns the job's flags for grid point k (without the per-run flags), and the
// trace's with trace = true: the run keeps its trace (the file named is never written; the
// sweep keeps the rows).
func (j *sweepJob) pointArgs(s *sweep.Spec, k int) []string {
	vals := s.Point(k)
	args := make([]string, 0, len(vals)+len(j.fixed)+1)
	for i, v := range vals {
		args = append(args, "--"+s.Grid[i].Name+"="+v)
	}
	if s.Trace && j.traced {
		args = append(args, "--trace=trace.csv")
	}
	return append(args, j.fixed...)
}

// runArgs returns the full flags of run r: those of its command line run alone (Plan.Rerun),
// and those its configuration is filled from.
func (j *sweepJob) runArgs(s *sweep.Spec, r sweep.Run) []string {
	args := j.pointArgs(s, r.Point)
	args = append(args, "--out=run.csv", "--plot=", "--quiet", "--seed="+strconv.FormatUint(r.Seed, 10))
	if j.simulation {
		args = append(args, "--seeds=1")
	}
	if j.device {
		args = append(args, "--device="+s.Device, "--threads="+strconv.Itoa(s.Threads))
	}
	if j.command[0] != "se" {
		args = append(args, "--workers="+strconv.Itoa(s.Workers))
	}
	return args
}

// runOne fills run r's configuration through the job's flags, runs the job and returns the
// header of its table and its one row, and its trace. A run whose row failed (diverged or
// unconverged, written without values) returns the row and the error.
func (j *sweepJob) runOne(s *sweep.Spec, r sweep.Run) (sweep.Output, error) {
	cfg, err := j.parse(j.runArgs(s, r))
	if err != nil {
		return sweep.Output{}, err
	}
	t, failed, err := j.run(cfg)
	if err != nil {
		return sweep.Output{}, err
	}
	if len(t.rows) != 1 {
		return sweep.Output{}, fmt.Errorf("the run wrote %d rows, want 1", len(t.rows))
	}
	return sweep.Output{Columns: t.columns, Row: t.rows[0], TraceColumns: t.traceColumns, Trace: t.trace}, failed
}
