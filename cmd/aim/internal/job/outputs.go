package job

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/aimtheory/aim/cmd/aim/internal/figure"
	"github.com/aimtheory/aim/cmd/aim/internal/output"
	"github.com/aimtheory/aim/cmd/aim/internal/plot"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
)

// results are the pending output files of a command: the CSV, its manifest and the plot.
type results struct {
	files               output.Set
	csv, manifest, plot *output.Pending
}

// openResults opens the outputs before any work starts, so that an unwritable path fails at
// once as bad input and nothing is computed.
func openResults(csvPath, plotPath string) (*results, error) {
	r := &results{}
	var err error
	if r.csv, err = r.files.Add(csvPath); err != nil {
		return nil, InputError{err}
	}
	if r.manifest, err = r.files.Add(output.ManifestPath(csvPath)); err != nil {
		r.files.Abort()
		return nil, InputError{err}
	}
	if plotPath != "" {
		if r.plot, err = r.files.Add(plotPath); err != nil {
			r.files.Abort()
			return nil, InputError{err}
		}
	}
	return r, nil
}

// finish writes the plot (if any) and the manifest, then commits every file; on an error it
// removes them all. A plot with no figure (an interrupted job with too few rows to draw) is
// removed and not listed among the outputs, which list the files written, then those of also
// (a trace written already). A manifest without "complete" gets "complete": true.
func (r *results) finish(f *figure.Figure, manifest map[string]any, also ...string) error {
	if r.plot != nil && f == nil {
		r.plot.Abort()
		r.files = slices.DeleteFunc(r.files, func(p *output.Pending) bool { return p == r.plot })
		r.plot = nil
	}
	if r.plot != nil {
		format, _ := figure.Format(r.plot.Path())
		if err := f.Render(r.plot.File(), format); err != nil {
			r.files.Abort()
			return err
		}
	}
	if _, ok := manifest["complete"]; !ok {
		manifest["complete"] = true
	}
	outputs := make([]string, len(r.files))
	for i, p := range r.files {
		outputs[i] = p.Path()
	}
	manifest["outputs"] = append(outputs, also...)
	if err := output.WriteJSON(r.manifest, manifest); err != nil {
		r.files.Abort()
		return err
	}
	return r.files.Commit()
}

// summary is the line a command prints when its files are written.
func (r *results) summary(rows int, wall time.Duration) string {
	s := fmt.Sprintf("wrote %s (%d rows)", r.csv.Path(), rows)
	if r.plot != nil {
		s += ", " + r.plot.Path()
	}
	return s + fmt.Sprintf(", %s in %.2f s", r.manifest.Path(), wall.Seconds())
}

// Outputs are a command's results and, when it writes them, its trace and one more table
// (OpenExtra).
type Outputs struct {
	res, trace, extra *results
}

// OpenOutputs opens the results and the trace (none when tracePath is empty, its plot none
// when tracePlot is empty).
func OpenOutputs(csvPath, plotPath, tracePath, tracePlot string) (*Outputs, error) {
	res, err := openResults(csvPath, plotPath)
	if err != nil {
		return nil, err
	}
	o := &Outputs{res: res}
	if tracePath != "" {
		if o.trace, err = openResults(tracePath, tracePlot); err != nil {
			res.files.Abort()
			return nil, err
		}
	}
	return o, nil
}

// OpenExtra opens one more CSV of the job, with its manifest beside it and no plot (the
// eigenvalues of `aim gd --spectrum`); an unwritable path is bad input, and every pending file
// is removed then.
func (o *Outputs) OpenExtra(path string) error {
	r, err := openResults(path, "")
	if err != nil {
		o.Abort(err)
		return err
	}
	o.extra = r
	return nil
}

// HasExtra reports whether the job writes the table of OpenExtra.
func (o *Outputs) HasExtra() bool { return o.extra != nil }

// WriteExtra writes the table of OpenExtra and its manifest; after an interruption (stop, the
// job's ErrInterrupted) the manifest lists the missing runs.
func WriteExtra[R any](o *Outputs, s *table.Schema[R], L int, rows []R, manifest map[string]any, stop error, missing []Missing) error {
	if err := s.Write(o.extra.csv.File(), L, rows); err != nil {
		return err
	}
	if stop != nil {
		MarkIncomplete(manifest, missing)
	}
	return o.extra.finish(nil, manifest)
}

// CSV is the results file, open for the job's rows.
func (o *Outputs) CSV() *os.File { return o.res.csv.File() }

// HasTrace reports whether the job writes a trace.
func (o *Outputs) HasTrace() bool { return o.trace != nil }

// Abort removes every pending file and returns err.
func (o *Outputs) Abort(err error) error {
	o.res.files.Abort()
	for _, r := range []*results{o.trace, o.extra} {
		if r != nil {
			r.files.Abort()
		}
	}
	return err
}

// WriteTrace writes the trace CSV, its figure when the trace has a plot (drawn from the rows
// as aim plot draws the file, with the manifest's parameters, at the size and with the title
// of look), and its manifest. After an interruption (stop, the job's ErrInterrupted) the manifest lists the
// missing runs, and an empty trace gets no figure.
func WriteTrace[R any](o *Outputs, s *table.Schema[R], L int, rows []R, look Figure, params, manifest map[string]any, stop error, missing []Missing) error {
	draw := func(t *table.Table) (*figure.Figure, error) {
		return DrawFigure([]*table.Table{t}, look.Options(plot.Options{}))
	}
	return WriteTraceDrawn(o, s, L, rows, draw, params, manifest, stop, missing)
}

// WriteTraceDrawn is WriteTrace with the trace's figure drawn by draw, from the table of the
// rows as aim plot reads the file back (with the manifest's parameters), for a job that draws
// more on it than the file holds.
func WriteTraceDrawn[R any](o *Outputs, s *table.Schema[R], L int, rows []R, draw func(t *table.Table) (*figure.Figure, error), params, manifest map[string]any, stop error, missing []Missing) error {
	r := o.trace
	if err := s.Write(r.csv.File(), L, rows); err != nil {
		return err
	}
	if stop != nil {
		MarkIncomplete(manifest, missing)
	}
	var fig *figure.Figure
	if r.plot != nil && (stop == nil || len(rows) > 0) {
		t, err := s.Table(r.csv.Path(), L, rows)
		if err != nil {
			return err
		}
		t.Params = params
		if fig, err = draw(t); err != nil {
			return err
		}
	}
	return r.finish(fig, manifest)
}

// Execute runs a job's Run with the outputs opened (by open) when the job is ready to compute,
// and returns its result, the outputs and the time the computation started; on an error the
// outputs are removed, except on ErrInterrupted (see stopped).
func Execute[R any](env Env, open func() (*Outputs, error), run func(Env) (R, error)) (R, *Outputs, time.Time, error) {
	var out *Outputs
	var start time.Time
	env.ready = func() error {
		var err error
		out, err = open()
		start = time.Now()
		return err
	}
	res, err := run(env)
	if err != nil && out != nil && !errors.Is(err, ErrInterrupted) {
		out.Abort(err)
	}
	return res, out, start, err
}

// Stopped reports whether a job's Run ended with an interruption after its outputs were
// opened (execute keeps them then): the job writes what it finished and returns err after.
func Stopped(err error, out *Outputs) bool { return out != nil && errors.Is(err, ErrInterrupted) }

// MarkIncomplete records in a manifest that the job was interrupted, with the grid points it
// did not finish.
func MarkIncomplete(manifest map[string]any, missing []Missing) {
	manifest["complete"] = false
	manifest["missing"] = append([]Missing{}, missing...)
}

// Complete writes the plot and the manifest (its outputs listing the trace's and the extra
// table's files too) and commits the outputs; it returns the line to print and failed, the
// error of rows that failed (already written without values), which makes the command exit
// with status 1.
func (o *Outputs) Complete(f *figure.Figure, manifest map[string]any, rows int, start time.Time, failed error) (string, error) {
	var also []string
	for _, r := range []*results{o.trace, o.extra} {
		if r != nil {
			for _, p := range r.files {
				also = append(also, p.Path())
			}
		}
	}
	if err := o.res.finish(f, manifest, also...); err != nil {
		return "", err
	}
	return o.res.summary(rows, time.Since(start)), failed
}
