package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aimtheory/aim/cmd/aim/internal/job"
)

// testPlan is a plan of a 3 x 2 grid with 2 seeds whose run k writes the row (x, y, seed,
// x y + seed); run failAt fails without a row while failing is set, and the runs at y = 20
// finish without a value. With trace (trace = true), a run's trace is the (x + seed) mod 3
// rows (x, y, seed, i) for i < (x + seed) mod 3.
func testPlan(t *testing.T, out string, parallel int, failAt int, failing *atomic.Bool, trace ...bool) *Plan {
	t.Helper()
	src := "job = \"test\"\nout = \"" + out + "\"\nseeds = 2\nseed = 5\nparallel = " + strconv.Itoa(parallel) + "\n"
	if len(trace) > 0 && trace[0] {
		src += "trace = true\n"
	}
	return planOf(t, src+"[grid]\nx = [1, 2, 3]\ny = [10, 20]\n", failAt, failing)
}

// planOf is testPlan's plan for the sweep file src, whose grid keys are x and y (integers).
func planOf(t *testing.T, src string, failAt int, failing *atomic.Bool) *Plan {
	t.Helper()
	spec, err := ParseSpec([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	cols := []string{"x", "y", "seed", "value"}
	return &Plan{Path: "test.toml", Src: []byte(src), Spec: spec, Device: "none", Version: "test",
		Rerun: func(r Run) string { return "run " + strconv.Itoa(r.Index) },
		Run: func(r Run) (Output, error) {
			if r.Index == failAt && failing.Load() {
				return Output{}, errors.New("boom")
			}
			p := spec.Point(r.Point)
			x, _ := strconv.Atoi(p[0])
			y, _ := strconv.Atoi(p[1])
			seed := strconv.FormatUint(r.Seed, 10)
			out := Output{Columns: cols, Row: []string{p[0], p[1], seed, strconv.Itoa(x*y + int(r.Seed))}}
			if spec.Trace {
				out.TraceColumns, out.Trace = []string{"x", "y", "seed", "i"}, [][]string{}
				for i := 0; i < (x+int(r.Seed))%3; i++ {
					out.Trace = append(out.Trace, []string{p[0], p[1], seed, strconv.Itoa(i)})
				}
			}
			if y == 20 {
				return out, errors.New("no value\nsecond line")
			}
			return out, nil
		}}
}

// TestExecute checks a sweep through the plan's Run: a run that fails without a row stops the
// sweep with the runs done kept; the same command resumes and ends with every row in run
// order, the failed runs listed; four merged shards equal it.
func TestExecute(t *testing.T) {
	dir := t.TempDir()
	var failing atomic.Bool
	failing.Store(true)
	p := testPlan(t, filepath.Join(dir, "whole"), 2, 7, &failing)
	err := p.Execute(Shard{}, nil, job.ProgressNone, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "run 7 (x = 2, y = 20, seed 6): boom") || !strings.Contains(err.Error(), "run the same command again to resume") {
		t.Fatalf("first session: %v", err)
	}
	failing.Store(false)
	var stdout, stderr bytes.Buffer
	err = p.Execute(Shard{}, nil, job.ProgressJSON, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "6 of 12 runs failed and were written without their values") || job.IsInput(err) {
		t.Fatalf("second session: %v", err)
	}
	// --progress json: a line with the runs done before, then one per run, up to all 12.
	var events []job.ProgressEvent
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var e job.ProgressEvent
		if err := json.Unmarshal([]byte(line), &e); err != nil || e.Event != "progress" || e.What != "sweep run" || e.Total != 12 {
			t.Fatalf("progress line %q: %+v, %v", line, e, err)
		}
		events = append(events, e)
	}
	if n := len(events); n < 2 || events[n-1].Done != 12 || events[0].Done != 12-(n-1) {
		t.Errorf("progress events %+v: want the runs done before, then one per run up to 12", events)
	}
	want := "x,y,seed,value\n"
	for k := 0; k < 12; k++ {
		x, y, seed := 1+k/4, 10*(1+k/2%2), 5+k%2
		want += strconv.Itoa(x) + "," + strconv.Itoa(y) + "," + strconv.Itoa(seed) + "," + strconv.Itoa(x*y+seed) + "\n"
	}
	got, _ := os.ReadFile(filepath.Join(dir, "whole", "results.csv"))
	if string(got) != want {
		t.Errorf("results.csv\n%s\nwant\n%s", got, want)
	}
	man, err := ReadManifest(filepath.Join(dir, "whole", "results.json"))
	if err != nil || !man.Complete || man.Done != 12 || len(man.Sessions) != 2 || len(man.Failed) != 6 ||
		man.Failed[0] != "run 2 (point 1, seed 5): no value" || man.Rerun[11] != "run 11" {
		t.Errorf("manifest %+v, %v", man, err)
	}
	// Four shards, merged, give the same table.
	sp := testPlan(t, filepath.Join(dir, "sharded"), 1, -1, &failing)
	for i := 0; i < 4; i++ { // shards 2 and 3 hold the runs at y = 20
		if err := sp.Execute(Shard{I: i, N: 4}, nil, job.ProgressNone, io.Discard, io.Discard); (err != nil) != (i >= 2) || err != nil && !strings.Contains(err.Error(), "3 of 3 runs failed") {
			t.Fatalf("shard %d: %v", i, err)
		}
	}
	if err := sp.Merge(nil, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "6 of 12 runs failed") {
		t.Fatalf("merge: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "sharded", "results.csv")); string(got) != want {
		t.Errorf("merged results.csv\n%s\nwant\n%s", got, want)
	}
	// A folder of another sweep is refused as bad input.
	other := testPlan(t, filepath.Join(dir, "whole"), 1, -1, &failing)
	other.Spec.Seed = 6
	if err := other.Execute(Shard{}, nil, job.ProgressNone, io.Discard, io.Discard); !job.IsInput(err) || !strings.Contains(err.Error(), "holds the results of another sweep") {
		t.Errorf("another sweep's folder: %v", err)
	}
}

// TestExecuteTrace checks a sweep with trace = true: each run's trace is kept as it finishes,
// an interrupted sweep resumes with them, and trace.csv joins them in run order, whole or from
// four merged shards; a recorded run whose trace is gone is refused, and trace enters the hash.
func TestExecuteTrace(t *testing.T) {
	dir := t.TempDir()
	var failing atomic.Bool
	failing.Store(true)
	p := testPlan(t, filepath.Join(dir, "whole"), 1, 7, &failing, true)
	if err := p.Execute(Shard{}, nil, job.ProgressNone, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("first session: %v", err)
	}
	for k := 0; k < 12; k++ {
		if _, err := os.Stat(traceFile(filepath.Join(dir, "whole"), p.Spec, k/2, uint64(5+k%2))); (err == nil) != (k < 7) {
			t.Errorf("run %d: trace file %v after the runs before 7", k, err)
		}
	}
	failing.Store(false)
	if err := p.Execute(Shard{}, nil, job.ProgressNone, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "6 of 12 runs failed") {
		t.Fatalf("second session: %v", err)
	}
	want := "x,y,seed,i\n"
	for k := 0; k < 12; k++ {
		x, y, seed := 1+k/4, 10*(1+k/2%2), 5+k%2
		for i := 0; i < (x+seed)%3; i++ {
			want += fmt.Sprintf("%d,%d,%d,%d\n", x, y, seed, i)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "whole", "trace.csv")); string(got) != want {
		t.Errorf("trace.csv\n%s\nwant\n%s", got, want)
	}
	man, err := ReadManifest(filepath.Join(dir, "whole", "results.json"))
	if err != nil || !slices.Contains(man.Outputs, filepath.Join(dir, "whole", "trace.csv")) || man.Parameters["trace"] != true {
		t.Errorf("manifest outputs %v, parameters %v (%v)", man.Outputs, man.Parameters, err)
	}
	sp := testPlan(t, filepath.Join(dir, "sharded"), 2, -1, &failing, true)
	for i := 0; i < 4; i++ {
		sp.Execute(Shard{I: i, N: 4}, nil, job.ProgressNone, io.Discard, io.Discard)
	}
	if err := sp.Merge(nil, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "6 of 12 runs failed") {
		t.Fatalf("merge: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "sharded", "trace.csv")); string(got) != want {
		t.Errorf("merged trace.csv\n%s\nwant\n%s", got, want)
	}
	os.Remove(traceFile(filepath.Join(dir, "whole"), p.Spec, 2, 5))
	if err := p.Execute(Shard{}, nil, job.ProgressNone, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "run 4 is recorded, but its trace is missing") {
		t.Errorf("a recorded run without its trace: %v", err)
	}
	plain := testPlan(t, "x", 1, -1, &failing)
	if plain.Spec.Hash() == p.Spec.Hash() {
		t.Errorf("trace = true and no trace hash alike (%s)", p.Spec.Hash())
	}
	off, err := ParseSpec(bytes.Replace(p.Src, []byte("trace = true"), []byte("trace = false"), 1))
	if err != nil || off.Hash() != plain.Spec.Hash() {
		t.Errorf("trace = false hashes as %v, no trace as %s (%v)", off, plain.Spec.Hash(), err)
	}
}
