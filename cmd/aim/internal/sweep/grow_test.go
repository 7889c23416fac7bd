package sweep

import (
	"bytes"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aimtheory/aim/cmd/aim/internal/job"
)

// grownSrc is testPlan's sweep (trace = true) grown: seeds 4 to 6 for 5 and 6, and x = 4
// between 1 and 2; 24 runs of which the 12 of testPlan are at other indices.
func grownSrc(out string) string {
	return "job = \"test\"\nout = \"" + out + "\"\nseeds = 3\nseed = 4\ntrace = true\n[grid]\nx = [1, 4, 2, 3]\ny = [10, 20]\n"
}

// counted wraps the plan's Run to count the runs it computes.
func counted(p *Plan, n *atomic.Int32) *Plan {
	run := p.Run
	p.Run = func(r Run) (Output, error) { n.Add(1); return run(r) }
	return p
}

// sweepOutputs returns a folder's results.csv and trace.csv.
func sweepOutputs(t *testing.T, dir string) (string, string) {
	t.Helper()
	results, err1 := os.ReadFile(filepath.Join(dir, "results.csv"))
	trace, err2 := os.ReadFile(filepath.Join(dir, "trace.csv"))
	if err1 != nil || err2 != nil {
		t.Fatalf("%s: %v, %v", dir, err1, err2)
	}
	return string(results), string(trace)
}

// TestGrow checks that a sweep folder grows into a file with more seeds and grid values: only
// the new runs are computed, and the tables equal those of the grown sweep run afresh, also
// when the growth is cut before or after its commit; a file that drops a recorded run or
// changes the job, the trace or the grid keys is refused and leaves the folder as it was.
func TestGrow(t *testing.T) {
	dir := t.TempDir()
	var failing atomic.Bool
	run := func(p *Plan, sh Shard) error { return p.Execute(sh, nil, job.ProgressNone, io.Discard, io.Discard) }
	fresh := filepath.Join(dir, "fresh")
	if err := run(planOf(t, grownSrc(fresh), -1, &failing), Shard{}); err == nil || !strings.Contains(err.Error(), "12 of 24 runs failed") {
		t.Fatalf("fresh grown sweep: %v", err)
	}
	wantResults, wantTrace := sweepOutputs(t, fresh)
	// base runs testPlan's sweep into a new folder.
	base := func(name string) (*Plan, string) {
		out := filepath.Join(dir, name)
		p := testPlan(t, out, 1, -1, &failing, true)
		if err := run(p, Shard{}); err == nil || !strings.Contains(err.Error(), "6 of 12 runs failed") {
			t.Fatalf("%s: %v", name, err)
		}
		return p, out
	}

	p, out := base("grown")
	var computed atomic.Int32
	var stderr bytes.Buffer
	grown := counted(planOf(t, grownSrc(out), -1, &failing), &computed)
	if err := grown.Execute(Shard{}, nil, job.ProgressAuto, io.Discard, &stderr); err == nil || !strings.Contains(err.Error(), "12 of 24 runs failed") {
		t.Fatalf("grown: %v", err)
	}
	if n := computed.Load(); n != 12 {
		t.Errorf("the grown sweep computed %d runs, want the 12 new ones", n)
	}
	if !strings.Contains(stderr.String(), "grows from the sweep of spec "+p.Spec.Hash()+", keeping its 12 runs") {
		t.Errorf("stderr %q: want the growth announced", stderr.String())
	}
	if results, trace := sweepOutputs(t, out); results != wantResults || trace != wantTrace {
		t.Errorf("grown sweep's tables\n%s\n%s\nwant\n%s\n%s", results, trace, wantResults, wantTrace)
	}
	man, err := ReadManifest(filepath.Join(out, "results.json"))
	if err != nil || !man.Complete || man.Runs != 24 || man.SpecHash != grown.Spec.Hash() ||
		!slices.Equal(man.GrownFrom, []string{p.Spec.Hash()}) || len(man.Sessions) != 2 || man.Sessions[1].Runs != 12 {
		t.Errorf("grown manifest %+v (%v)", man, err)
	}

	// Cut after the commit: the grown manifest is written, journal.csv is still the old one and
	// the renumbered journal waits beside it. The next Execute of the grown file completes the rename.
	_, out = base("cut-after")
	old, _ := os.ReadFile(filepath.Join(out, "journal.csv"))
	g := planOf(t, grownSrc(out), -1, &failing)
	oldMan, _ := ReadManifest(filepath.Join(out, "results.json"))
	if _, err := g.grow(out, Shard{}, oldMan, g.newManifest("sweep run", Shard{}, nil), io.Discard); err != nil {
		t.Fatal(err)
	}
	os.Rename(filepath.Join(out, "journal.csv"), pendingJournal(out, g.Spec.Hash()))
	os.WriteFile(filepath.Join(out, "journal.csv"), old, 0o644)
	if done, todo, from, err := g.State(Shard{}); done != 12 || todo != 12 || from != "" || err != nil {
		t.Errorf("State after a growth cut after its commit: %d done, %d to do, from %q, %v", done, todo, from, err)
	}
	computed.Store(0)
	if err := run(counted(g, &computed), Shard{}); err == nil || !strings.Contains(err.Error(), "12 of 24 runs failed") || computed.Load() != 12 {
		t.Fatalf("resumed after a growth cut after its commit: %v, %d runs computed", err, computed.Load())
	}
	if results, trace := sweepOutputs(t, out); results != wantResults || trace != wantTrace {
		t.Errorf("growth cut after its commit, resumed: tables differ from the fresh sweep's")
	}

	// Cut before the commit: a renumbered journal lies beside the old sweep's folder, which
	// the old file resumes as it was and the grown file grows again.
	p, out = base("cut-before")
	g = planOf(t, grownSrc(out), -1, &failing)
	os.WriteFile(pendingJournal(out, g.Spec.Hash()), []byte("not a journal\n"), 0o644)
	if done, todo, from, err := g.State(Shard{}); done != 12 || todo != 12 || from != p.Spec.Hash() || err != nil {
		t.Errorf("State before the growth: %d done, %d to do, from %q, %v", done, todo, from, err)
	}
	computed.Store(0)
	if err := run(counted(p, &computed), Shard{}); err == nil || computed.Load() != 0 {
		t.Fatalf("the old file after a growth cut before its commit: %v, %d runs computed", err, computed.Load())
	}
	if _, err := os.Stat(pendingJournal(out, g.Spec.Hash())); err == nil {
		t.Errorf("an uncommitted growth's journal is left")
	}
	os.WriteFile(pendingJournal(out, g.Spec.Hash()), []byte("not a journal\n"), 0o644)
	if err := run(g, Shard{}); err == nil || !strings.Contains(err.Error(), "12 of 24 runs failed") {
		t.Fatalf("grown after a growth cut before its commit: %v", err)
	}
	if results, trace := sweepOutputs(t, out); results != wantResults || trace != wantTrace {
		t.Errorf("growth cut before its commit, grown again: tables differ from the fresh sweep's")
	}

	// Refused: each leaves the folder byte for byte.
	_, out = base("refused")
	files := func() map[string]string {
		m := map[string]string{}
		filepath.Walk(out, func(path string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() {
				data, _ := os.ReadFile(path)
				m[path] = string(data)
			}
			return nil
		})
		return m
	}
	before := files()
	src := strings.Replace(grownSrc(out), "x = [1, 4, 2, 3]", "x = [1, 2, 3]", 1)
	for _, c := range []struct{ src, want string }{
		{strings.Replace(src, "seeds = 3\nseed = 4", "seeds = 1\nseed = 5", 1), "it holds runs this file does not have (seed 6 at x = 1, y = 10, and 5 more)"},
		{strings.Replace(src, "x = [1, 2, 3]", "x = [1, 3]", 1), "it holds runs this file does not have (seed 5 at x = 2, y = 10, and 3 more)"},
		{strings.Replace(src, `job = "test"`, `job = "other"`, 1), "its job is test"},
		{strings.Replace(src, "trace = true", "trace = false", 1), "trace = true there"},
		{strings.Replace(src, "y = [10, 20]", "z = [10, 20]", 1), "its grid keys are x, y"},
		{strings.Replace(src, "x = [1, 2, 3]\ny = [10, 20]", "y = [10, 20]\nx = [1, 2, 3]", 1), "its grid keys are x, y"},
	} {
		err := run(planOf(t, c.src, -1, &failing), Shard{})
		if !job.IsInput(err) || !strings.Contains(err.Error(), "holds the results of another sweep") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\n%v\nwant %q", c.src, err, c.want)
		}
	}
	if after := files(); !maps.Equal(before, after) {
		t.Errorf("a refused growth changed the folder")
	}
	// A range grows with more points: the guide's example.
	three, _ := axisValues(Value{Kind: String, Str: "0.05:0.15:3"})
	five, _ := axisValues(Value{Kind: String, Str: "0.05:0.15:5"})
	for _, v := range three {
		if !slices.Contains(five, v) {
			t.Errorf("0.05:0.15:5 is %v, without %s of 0.05:0.15:3", five, v)
		}
	}
	// Neither a shard's folder nor a merged one grows.
	sp := testPlan(t, filepath.Join(dir, "sharded"), 1, -1, &failing, true)
	run(sp, Shard{I: 0, N: 2})
	run(sp, Shard{I: 1, N: 2})
	sp.Merge(nil, io.Discard, io.Discard)
	for _, sh := range []Shard{{I: 0, N: 2}, {}} {
		if err := run(planOf(t, grownSrc(filepath.Join(dir, "sharded")), -1, &failing), sh); !job.IsInput(err) || !strings.Contains(err.Error(), "a sharded sweep does not grow") {
			t.Errorf("shard %s grown: %v", sh, err)
		}
	}
}
