package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/aimtheory/aim/cmd/aim/internal/job"
)

// progressMode is --progress: auto, json or none (job.ProgressMode).
type progressMode = job.ProgressMode

// progressValue is the flag.Value of --progress.
type progressValue struct{ m *progressMode }

func (v progressValue) String() string {
	if v.m == nil || *v.m == "" {
		return string(job.ProgressAuto)
	}
	return string(*v.m)
}

func (v progressValue) Set(s string) error {
	if !slices.Contains(job.ProgressModes, progressMode(s)) {
		return fmt.Errorf("needs auto, json or none")
	}
	*v.m = progressMode(s)
	return nil
}

func (v progressValue) typeName() string { return "auto|json|none" }

// quietValue is the flag.Value of --quiet, a bool flag that sets --progress none.
type quietValue struct{ m *progressMode }

func (q quietValue) IsBoolFlag() bool { return true }
func (q quietValue) String() string   { return "false" }
func (q quietValue) Get() any         { return q.m != nil && *q.m == job.ProgressNone }

func (q quietValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	if b {
		*q.m = job.ProgressNone
	} else if *q.m == job.ProgressNone {
		*q.m = job.ProgressAuto
	}
	return nil
}

// progressFlags registers --progress and --quiet into m; more is what --progress auto does in
// this command, for its usage. parse refuses the two together.
func progressFlags(fs *flag.FlagSet, m *progressMode, more string) {
	if *m == "" {
		*m = job.ProgressAuto
	}
	fs.Var(progressValue{m}, "progress", usage("progress", more))
	fs.Var(quietValue{m}, "quiet", usage("quiet", ""))
}

// newProgress returns the meter of a job's work: a bar on a terminal (auto), JSON lines
// (json), or nothing.
func newProgress(total int, what string, w io.Writer, mode progressMode) job.Progress {
	switch mode {
	case job.ProgressJSON:
		return job.NewJSONProgress(w, total, what)
	case job.ProgressNone:
		return nil
	}
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return bar{progressbar.NewOptions(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionThrottle(100_000_000),
	)}
}

// bar is a progress bar on a terminal (a job.Progress).
type bar struct{ b *progressbar.ProgressBar }

// Add counts n units of work done.
func (p bar) Add(n int) { p.b.Add(n) }

// Finish clears the bar.
func (p bar) Finish() { p.b.Finish() }
