// Package job is the shared core of aim's jobs, under the packages that hold the jobs of each
// model (aimjob: aim se, amp, gd and thresholds; smijob: aim smi se, thresholds, amp and sgd;
// benchjob: aim bench): bad input (Inputf), the Env a job reports to, the outputs opened once
// nothing can refuse the job any more and written with the JSON manifest, interruptions, the
// devices, the kinds of CSV every job package registers, the figure options, and aim plot.
//
// Each job is a typed configuration with its validation (Validate), a function that runs it and
// returns typed rows (Run...), and one definition of its row (a table.Schema) from which its CSV
// columns and cells, the kind `aim plot` reads back, and its figure all come. Execute... is the
// job as its command runs it: Run..., with the outputs opened once nothing can refuse the job
// any more, then the CSV, the figure and the JSON manifest. The command line (package main)
// fills a configuration from its flags and calls Execute...; the sweep runner fills the same
// configuration from a grid point, through the same flags, and calls the same Run... for the
// row.
//
// The jobs reach the engine and the devices through these packages only; the command line
// imports none of them.
package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/aimtheory/aim/cmd/aim/internal/figure"
	"github.com/aimtheory/aim/cmd/aim/internal/plot"
	"github.com/aimtheory/aim/cmd/aim/internal/table"
)

// InputError marks bad input: the command exits with status 2 and writes nothing.
type InputError struct{ Err error }

// Error returns the message of the error InputError marks.
func (e InputError) Error() string { return e.Err.Error() }

// Unwrap returns the error InputError marks.
func (e InputError) Unwrap() error { return e.Err }

// Inputf returns bad input with a formatted message.
func Inputf(format string, args ...any) error { return InputError{fmt.Errorf(format, args...)} }

// IsInput reports whether err is, or wraps, bad input.
func IsInput(err error) bool {
	var e InputError
	return errors.As(err, &e)
}

// MarkInput marks err as bad MarkInput (nil stays nil).
func MarkInput(err error) error {
	if err == nil || IsInput(err) {
		return err
	}
	return InputError{err}
}

// Progress counts units of work done: a progress bar on a terminal.
type Progress interface {
	Add(n int)
	Finish()
}

// Env is what a job reports to while it runs, and what its manifest records of the process.
type Env struct {
	Log      io.Writer                             // notes: the device chosen, searches skipped; nil discards them
	Progress func(total int, what string) Progress // a meter over total units of work; nil: none
	Version  string                                // the program version
	Args     []string                              // the command line
	// Context stops the job when cancelled (nil: never): the rows it finished are written
	// and it returns ErrInterrupted (the jobs that write a row per grid point; the others
	// ignore it).
	Context context.Context

	ready func() error // Execute's: opens the outputs once nothing can refuse the job any more
}

// Begin is called by a job's Run once it has checked everything that can refuse it (device,
// memory) and before it computes: Execute opens the outputs there, so that bad input writes
// nothing and an unwritable output fails before any work.
func (e Env) Begin() error {
	if e.ready == nil {
		return nil
	}
	return e.ready()
}

// Notef writes a note line.
func (e Env) Notef(format string, args ...any) {
	if e.Log != nil {
		fmt.Fprintf(e.Log, format+"\n", args...)
	}
}

type noProgress struct{}

// Add counts nothing.
func (noProgress) Add(int) {}

// Finish does nothing.
func (noProgress) Finish() {}

func (e Env) Meter(total int, what string) Progress {
	if e.Progress == nil {
		return noProgress{}
	}
	if p := e.Progress(total, what); p != nil {
		return p
	}
	return noProgress{}
}

// Manifest holds what every Manifest records.
func (e Env) Manifest(command, deviceNote string, params map[string]any, start time.Time) map[string]any {
	host, _ := os.Hostname()
	return map[string]any{
		"program":      "aim",
		"command":      command,
		"version":      e.Version,
		"go":           runtime.Version(),
		"host":         host,
		"device":       deviceNote,
		"args":         e.Args,
		"parameters":   params,
		"started":      start.UTC().Format(time.RFC3339),
		"wall_seconds": time.Since(start).Seconds(),
	}
}

// RunSeed is the data seed of run s of a simulation's grid point: seed + s, the same at every
// point, so that every alpha (and rho) of a seed shares its teacher. The CLI derives it; the
// engine's stream registry (engine/stream) holds only the offsets within a seed's stream.
func RunSeed(seed uint64, s int) uint64 { return seed + uint64(s) }

// Failures is the error of a job whose failed rows (unconverged or diverged) were written
// without values: the command exits with status 1. what says what failed ("points did not
// converge").
func Failures(failed []string, rows int, what string) error {
	if len(failed) == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d %s (written with converged=false and no values):\n  %s",
		len(failed), rows, what, strings.Join(failed, "\n  "))
}

// kindOrder is the order in which a reader tries the kinds of CSV.
var kindOrder = []table.Kind{table.SE, table.AMP, table.GD, table.AMPTrace, table.GDTrace, table.ERM, table.ERMSpectrum,
	table.SMISE, table.SMIAMP, table.SMIAMPTrace, table.SMISGD, table.SMIThresholds, table.AIMThresholds, table.Bench}

var (
	kindsMu sync.Mutex
	kinds   = map[table.Kind]table.Def{}
)

// RegisterKinds adds the kinds of CSV a job package writes to those ReadTable reads; each
// package registers its own when it is initialised, so that a program reads every kind of the
// job packages it links.
func RegisterKinds(defs ...table.Def) {
	kindsMu.Lock()
	defer kindsMu.Unlock()
	for _, d := range defs {
		kinds[d.Kind] = d
	}
}

// Kinds are the kinds of CSV registered (RegisterKinds), in the order a reader tries them.
func Kinds() []table.Def {
	kindsMu.Lock()
	defer kindsMu.Unlock()
	var out []table.Def
	for _, k := range kindOrder {
		if d, ok := kinds[k]; ok {
			out = append(out, d)
		}
	}
	return out
}

// ReadTable reads a CSV of any registered kind (and the manifest beside it).
func ReadTable(path string) (*table.Table, error) { return table.ReadFile(path, Kinds()) }

// DrawFigure lays tables out on one figure; a combination that cannot share one is bad input.
func DrawFigure(tables []*table.Table, o plot.Options) (*figure.Figure, error) {
	f, err := plot.Build(tables, o)
	return f, MarkInput(err)
}

// CheckCSV checks that the results file's path ends in .csv; a bad one is bad input.
func CheckCSV(path string) error {
	if !strings.HasSuffix(strings.ToLower(path), ".csv") {
		return Inputf("--out %q: the results file must end in .csv", path)
	}
	return nil
}

// CheckPlot checks the format of a figure's path ("" for none); a bad one is bad input.
func CheckPlot(path string) error {
	if path == "" {
		return nil
	}
	_, err := figure.Format(path)
	return MarkInput(err)
}
