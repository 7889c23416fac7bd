package main

import (
	"io"
	"os"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress is a progress bar (a job.Progress) that draws only when its writer is a terminal,
// so that logs and CI stay quiet.
type progress struct{ bar *progressbar.ProgressBar }

func newProgress(total int, what string, w io.Writer, quiet bool) progress {
	f, ok := w.(*os.File)
	if quiet || !ok || !term.IsTerminal(int(f.Fd())) {
		return progress{}
	}
	return progress{bar: progressbar.NewOptions(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionThrottle(100_000_000),
	)}
}

// Add counts n units of work done.
func (p progress) Add(n int) {
	if p.bar != nil {
		p.bar.Add(n)
	}
}

// Finish clears the bar.
func (p progress) Finish() {
	if p.bar != nil {
		p.bar.Finish()
	}
}
