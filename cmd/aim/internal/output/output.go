// Package output writes result files so that an interrupted or failed job never leaves a half
// file: each file is opened as a temporary beside its final path before any work starts (so an
// unwritable path fails at once), and renamed into place only when the job succeeds.
package output

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// live holds the pending files of the process that are neither committed nor aborted, for
// RemoveAll.
var live struct {
	sync.Mutex
	files   map[*Pending]bool
	removed bool // RemoveAll was called: no file may be created any more
}

// track adds p to the live files, or refuses it after RemoveAll.
func track(p *Pending) error {
	live.Lock()
	defer live.Unlock()
	if live.removed {
		return fmt.Errorf("output %s: the process is stopping", p.final)
	}
	if live.files == nil {
		live.files = map[*Pending]bool{}
	}
	live.files[p] = true
	return nil
}

// untrack removes p from the live files.
func untrack(p *Pending) {
	live.Lock()
	delete(live.files, p)
	live.Unlock()
}

// RemoveAll removes the temporary file of every pending file of the process that is not yet
// committed or aborted, and makes Create fail from then on: what a process calls before it
// exits at once (a second interrupt), so that it leaves no temporary behind. A file being
// committed meanwhile ends either at its final path or nowhere.
func RemoveAll() {
	live.Lock()
	defer live.Unlock()
	live.removed = true
	for p := range live.files {
		os.Remove(p.f.Name())
	}
}

// Pending is a file being written under a temporary name beside its final path.
type Pending struct {
	final string
	f     *os.File
}

// Create makes the folder of path if needed and opens a temporary file beside path.
func Create(path string) (*Pending, error) {
	if path == "" {
		return nil, fmt.Errorf("empty output path")
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("output %s: cannot create its folder: %w", path, err)
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("output %s: is a folder", path)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("output %s: cannot write there: %w", path, err)
	}
	p := &Pending{final: path, f: f}
	if err := track(p); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return p, nil
}

// File returns the temporary file to write to.
func (p *Pending) File() *os.File { return p.f }

// Path returns the final path.
func (p *Pending) Path() string { return p.final }

// Commit flushes the temporary file to disk and renames it to the final path.
func (p *Pending) Commit() error {
	defer untrack(p)
	if err := p.f.Sync(); err != nil {
		p.Abort()
		return fmt.Errorf("output %s: %w", p.final, err)
	}
	if err := p.f.Close(); err != nil {
		os.Remove(p.f.Name())
		return fmt.Errorf("output %s: %w", p.final, err)
	}
	if err := os.Chmod(p.f.Name(), 0o644); err != nil {
		os.Remove(p.f.Name())
		return fmt.Errorf("output %s: %w", p.final, err)
	}
	if err := os.Rename(p.f.Name(), p.final); err != nil {
		os.Remove(p.f.Name())
		return fmt.Errorf("output %s: %w", p.final, err)
	}
	return nil
}

// Abort closes and removes the temporary file; the final path is left untouched.
func (p *Pending) Abort() {
	defer untrack(p)
	p.f.Close()
	os.Remove(p.f.Name())
}

// Set is a group of pending files that are committed or aborted together.
type Set []*Pending

// Add opens path as a pending file of the set.
func (s *Set) Add(path string) (*Pending, error) {
	p, err := Create(path)
	if err != nil {
		return nil, err
	}
	*s = append(*s, p)
	return p, nil
}

// Commit commits every file of the set, in order.
func (s Set) Commit() error {
	for i, p := range s {
		if err := p.Commit(); err != nil {
			for _, q := range s[i+1:] {
				q.Abort()
			}
			return err
		}
	}
	return nil
}

// Abort removes every temporary file of the set.
func (s Set) Abort() {
	for _, p := range s {
		p.Abort()
	}
}

// ManifestPath returns the JSON manifest path that goes beside a CSV: results/se.csv ->
// results/se.json.
func ManifestPath(csvPath string) string {
	return strings.TrimSuffix(csvPath, filepath.Ext(csvPath)) + ".json"
}

// WriteJSON writes v as indented JSON to the pending file.
func WriteJSON(p *Pending, v any) error {
	enc := json.NewEncoder(p.File())
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("manifest %s: %w", p.Path(), err)
	}
	return nil
}
