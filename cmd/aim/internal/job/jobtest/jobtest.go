// Package jobtest holds what the job packages' tests share: an Env that interrupts a job at a
// known point, readers of the CSV and the manifest a job writes, and the checks on what an
// interrupted job leaves behind.
package jobtest

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/aimtheory/aim/cmd/aim/internal/job"
)

// cancelAfter is a Progress that cancels its context once n units of work are counted: the
// hook through which a test interrupts a job at a known point.
type cancelAfter struct {
	mu     *sync.Mutex
	done   *int
	n      int
	cancel context.CancelFunc
}

// Add counts k units and cancels once n are counted.
func (p cancelAfter) Add(k int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	*p.done += k
	if *p.done >= p.n {
		p.cancel()
	}
}

// Finish does nothing.
func (cancelAfter) Finish() {}

// InterruptAfter returns an Env whose context is cancelled once n units of progress are counted.
func InterruptAfter(n int) job.Env {
	ctx, cancel := context.WithCancel(context.Background())
	p := cancelAfter{mu: &sync.Mutex{}, done: new(int), n: n, cancel: cancel}
	return job.Env{Context: ctx, Progress: func(int, string) job.Progress { return p }}
}

// Validated returns c after Validate, failing the test on an error.
func Validated[C interface{ Validate() error }](t testing.TB, c C) C {
	t.Helper()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

// ReadCSVLines returns the lines of a CSV file.
func ReadCSVLines(t testing.TB, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// ReadManifest decodes a JSON manifest.
func ReadManifest(t testing.TB, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// NoTemporaries fails the test when dir holds a hidden file or a temporary.
func NoTemporaries(t testing.TB, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || strings.Contains(e.Name(), ".tmp") {
			t.Errorf("%s left in %s", e.Name(), dir)
		}
	}
}

// MissingPoints returns the manifest's missing points as "rho/alpha" (and "/seed" when present).
func MissingPoints(t testing.TB, man map[string]any) []string {
	t.Helper()
	list, ok := man["missing"].([]any)
	if !ok {
		t.Fatalf("manifest missing = %v", man["missing"])
	}
	var out []string
	for _, x := range list {
		m := x.(map[string]any)
		s := JSONCell(m["rho"]) + "/" + JSONCell(m["alpha"])
		if seed, ok := m["seed"]; ok {
			s += "/" + JSONCell(seed)
		}
		out = append(out, s)
	}
	return out
}

// JSONCell formats a JSON number as the CSV writes it.
func JSONCell(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
