package job

import (
	"encoding/json"
	"io"
	"sync"
	"time"
)

// ProgressMode is how a command reports its progress on stderr (--progress).
type ProgressMode string

// The progress modes.
const (
	// ProgressAuto draws a bar when stderr is a terminal and nothing otherwise (aim sweep run:
	// a line per finished run).
	ProgressAuto ProgressMode = "auto"
	// ProgressJSON writes one JSON line per unit of work done (JSONProgress), for programs
	// that drive aim, such as the Python package.
	ProgressJSON ProgressMode = "json"
	// ProgressNone reports nothing.
	ProgressNone ProgressMode = "none"
)

// ProgressModes are the values --progress takes.
var ProgressModes = []ProgressMode{ProgressAuto, ProgressJSON, ProgressNone}

// ProgressEvent is the line JSONProgress writes each time work is done:
//
//	{"event":"progress","what":"amp softmax","done":17,"total":4800,"seconds":1.23}
//
// what names the work (the meter's), done of total units are finished, and seconds have passed
// since the meter started. A command may run several meters one after the other (what tells
// them apart).
type ProgressEvent struct {
	Event   string  `json:"event"`
	What    string  `json:"what"`
	Done    int     `json:"done"`
	Total   int     `json:"total"`
	Seconds float64 `json:"seconds"`
}

// JSONProgress is a Progress that writes a ProgressEvent line on its writer at every Add. It
// may be called from several goroutines.
type JSONProgress struct {
	mu          sync.Mutex
	w           io.Writer
	what        string
	done, total int
	start       time.Time
}

// NewJSONProgress returns a meter over total units of work named what, writing on w.
func NewJSONProgress(w io.Writer, total int, what string) *JSONProgress {
	return &JSONProgress{w: w, what: what, total: total, start: time.Now()}
}

// Add counts n units done and writes the event.
func (p *JSONProgress) Add(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	b, _ := json.Marshal(ProgressEvent{Event: "progress", What: p.what, Done: p.done, Total: p.total,
		Seconds: float64(time.Since(p.start).Milliseconds()) / 1000})
	p.w.Write(append(b, '\n'))
}

// Finish does nothing: the last event said how much was done.
func (p *JSONProgress) Finish() {}
