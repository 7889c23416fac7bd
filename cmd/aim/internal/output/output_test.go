package output

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCommitAndAbort(t *testing.T) {
	dir := t.TempDir()
	var s Set
	a, err := s.Add(filepath.Join(dir, "sub", "a.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.File().WriteString("x,y\n1,2\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(a.Path()); !os.IsNotExist(err) {
		t.Fatalf("final file exists before commit: %v", err)
	}
	if err := s.Commit(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(a.Path())
	if err != nil || string(got) != "x,y\n1,2\n" {
		t.Fatalf("committed file = %q, %v", got, err)
	}
	b, err := Create(filepath.Join(dir, "b.csv"))
	if err != nil {
		t.Fatal(err)
	}
	b.File().WriteString("half")
	b.Abort()
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "sub" {
		t.Fatalf("after abort the folder holds %v, want only sub/", entries)
	}
}

func TestCreateRejectsUnwritable(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "plain")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(file, "x.csv"), dir, ""} {
		if p, err := Create(path); err == nil {
			p.Abort()
			t.Errorf("Create(%q) succeeded, want an error", path)
		}
	}
	if got := ManifestPath("results/se.csv"); got != "results/se.json" {
		t.Errorf("ManifestPath = %q", got)
	}
}

// TestRemoveAll checks that RemoveAll removes the temporaries of the pending files, keeps the
// committed and aborted ones as they are, and refuses new files after it.
func TestRemoveAll(t *testing.T) {
	t.Cleanup(func() {
		live.Lock()
		live.removed = false
		live.Unlock()
	})
	dir := t.TempDir()
	var s Set
	done, err := s.Add(filepath.Join(dir, "done.csv"))
	if err != nil {
		t.Fatal(err)
	}
	done.File().WriteString("x\n")
	if err := done.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a.csv", "a.json", "a.png"} {
		p, err := s.Add(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		p.File().WriteString("half")
	}
	RemoveAll()
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "done.csv" {
		t.Errorf("after RemoveAll the folder holds %v, want only done.csv", entries)
	}
	if p, err := Create(filepath.Join(dir, "late.csv")); err == nil {
		p.Abort()
		t.Error("Create after RemoveAll succeeded")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("a refused Create left %v", entries)
	}
}
