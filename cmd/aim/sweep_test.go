package main

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aimtheory/aim/cmd/aim/internal/sweep"
)

// TestMain lets a test run the aim command in a real subprocess: the test binary started
// with AIM_TEST_RUN_MAIN=1 is aim.
func TestMain(m *testing.M) {
	if os.Getenv("AIM_TEST_RUN_MAIN") == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// sweepAMPSpec is a 3 x 3 x 4 AMP sweep at D = 24 (36 runs of a few tens of milliseconds).
const sweepAMPSpec = `job = "amp"
out = "OUT"
seeds = 4
seed = 3
device = "cpu"
workers = 1
parallel = PAR

[grid]
channel = "softmax"
T = 2
rho = [0.25, 0.5, 1]
alpha = "0.05:0.15:3"
D = 24
max-iter = 60
`

// writeSweepSpec writes the AMP sweep file with its output folder and parallelism.
func writeSweepSpec(t *testing.T, dir, name, out string, parallel int) string {
	t.Helper()
	src := strings.NewReplacer("OUT", out, "PAR", string(rune('0'+parallel))).Replace(sweepAMPSpec)
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runAim runs the aim command in-process and returns its exit status and output.
func runAim(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// sweepTable reads a results.csv without its wall-time column, the one column that differs
// between two runs of the same sweep.
func sweepTable(t *testing.T, path string) [][]string {
	t.Helper()
	rows := readCSV(t, path)
	drop := slices.Index(rows[0], "seconds")
	if drop < 0 {
		t.Fatalf("%s has no seconds column: %v", path, rows[0])
	}
	for i, r := range rows {
		rows[i] = slices.Delete(slices.Clone(r), drop, drop+1)
	}
	return rows
}

func journalLines(path string) int {
	data, _ := os.ReadFile(path)
	return bytes.Count(data, []byte("\n"))
}

// TestSweepResumeAndShards is the acceptance test of resumable and sharded sweeps. A 3 x 3 x
// 4 AMP sweep is run once uninterrupted; a second copy runs in a real subprocess that is
// killed with SIGKILL at three random points and resumed, and must end with the same table;
// four shards of a third copy, merged, must equal it row for row.
func TestSweepResumeAndShards(t *testing.T) {
	dir := t.TempDir()
	want := filepath.Join(dir, "whole")
	spec := writeSweepSpec(t, dir, "whole.toml", want, 1)
	if code, _, errs := runAim("sweep", "run", "--quiet", spec); code != 0 {
		t.Fatalf("uninterrupted sweep: status %d: %s", code, errs)
	}
	table := sweepTable(t, filepath.Join(want, "results.csv"))
	if len(table) != 37 {
		t.Fatalf("results.csv has %d rows, want 36 and a header", len(table)-1)
	}
	// Rows come in grid order: rho slowest, then alpha, then the seed.
	col := func(name string) int { return slices.Index(table[0], name) }
	if r := table[1+4*3+4+2]; r[col("rho")] != "0.5" || r[col("alpha")] != "0.1" || r[col("seed")] != "5" {
		t.Errorf("run 18 = rho %s alpha %s seed %s, want 0.5, 0.1, 5", r[col("rho")], r[col("alpha")], r[col("seed")])
	}
	// Each row is what `aim amp` writes for that point and seed alone.
	single := filepath.Join(dir, "single.csv")
	if code, _, errs := runAim("amp", "--channel=softmax", "--T=2", "--rho=0.5", "--alpha=0.1", "--D=24", "--max-iter=60",
		"--seeds=1", "--seed=5", "--device=cpu", "--workers=1", "--quiet", "--plot=", "--out="+single); code != 0 {
		t.Fatalf("aim amp: %s", errs)
	}
	if got := sweepTable(t, single); !slices.Equal(got[1], table[1+18]) {
		t.Errorf("sweep row 18 %v, aim amp alone %v", table[1+18], got[1])
	}

	t.Run("kill", func(t *testing.T) {
		out := filepath.Join(dir, "killed")
		spec := writeSweepSpec(t, dir, "killed.toml", out, 2)
		journal := filepath.Join(out, "journal.csv")
		rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
		target := 0
		for kill := 0; kill < 3; kill++ {
			// At least one run past what the journal holds, so that each killed session records
			// a run (a kill that overshot leaves more lines than its target).
			target = max(target, journalLines(journal)-1) + 1 + rng.IntN(10)
			cmd := exec.Command(os.Args[0], "sweep", "run", "--quiet", spec)
			cmd.Env = append(os.Environ(), "AIM_TEST_RUN_MAIN=1")
			var errb bytes.Buffer
			cmd.Stderr = &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(60 * time.Second)
			for journalLines(journal) < 1+target && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			cmd.Process.Signal(syscall.SIGKILL)
			err := cmd.Wait()
			t.Logf("kill %d after %d runs recorded: %d lines in the journal (%v)", kill+1, target, journalLines(journal)-1, err)
			if err == nil {
				t.Fatalf("the sweep finished before kill %d (stderr %s)", kill+1, errb.String())
			}
		}
		if code, _, errs := runAim("sweep", "run", "--quiet", spec); code != 0 {
			t.Fatalf("resumed sweep: status %d: %s", code, errs)
		}
		if got := sweepTable(t, filepath.Join(out, "results.csv")); !slices.EqualFunc(got, table, slices.Equal) {
			t.Errorf("resumed table differs from the uninterrupted one")
			for i := range got {
				if i < len(table) && !slices.Equal(got[i], table[i]) {
					t.Logf("row %d: resumed %v\n uninterrupted %v", i, got[i], table[i])
				}
			}
		}
		if n := journalLines(journal) - 1; n != 36 {
			t.Errorf("journal holds %d runs, want 36 (no run twice)", n)
		}
		man, err := sweep.ReadManifest(filepath.Join(out, "results.json"))
		if err != nil || !man.Complete || len(man.Sessions) != 4 || man.Done != 36 || len(man.Rerun) != 36 {
			t.Errorf("manifest %+v (%v), want complete, 4 sessions, 36 runs", man, err)
		}
	})

	t.Run("shards", func(t *testing.T) {
		out := filepath.Join(dir, "sharded")
		spec := writeSweepSpec(t, dir, "sharded.toml", out, 1)
		if code, _, errs := runAim("sweep", "merge", spec); code == 0 || !strings.Contains(errs, "no shard folders") {
			t.Errorf("merge before any shard: status %d: %s", code, errs)
		}
		for i := 0; i < 4; i++ {
			if code, _, errs := runAim("sweep", "run", "--quiet", "--shard", string(rune('0'+i))+"/4", spec); code != 0 {
				t.Fatalf("shard %d: status %d: %s", i, code, errs)
			}
			if i == 2 {
				code, _, errs := runAim("sweep", "merge", spec)
				if code == 0 || !strings.Contains(errs, "9 of 36 runs are missing") {
					t.Errorf("merge with shard 3 missing: status %d: %s", code, errs)
				}
			}
		}
		if code, _, errs := runAim("sweep", "merge", spec); code != 0 {
			t.Fatalf("merge: status %d: %s", code, errs)
		}
		if got := sweepTable(t, filepath.Join(out, "results.csv")); !slices.EqualFunc(got, table, slices.Equal) {
			t.Errorf("merged shards differ from the whole sweep")
		}
		// A shard of another sweep is refused, and so is resuming into a folder of another sweep.
		other := filepath.Join(dir, "other.toml")
		src, _ := os.ReadFile(spec)
		os.WriteFile(other, bytes.Replace(src, []byte("seed = 3"), []byte("seed = 4"), 1), 0o644)
		if code, _, errs := runAim("sweep", "merge", other); code != 2 || !strings.Contains(errs, "refusing to mix") {
			t.Errorf("merge of another spec: status %d: %s", code, errs)
		}
		if code, _, errs := runAim("sweep", "run", "--shard", "1/4", other); code != 2 || !strings.Contains(errs, "holds the results of another sweep") {
			t.Errorf("resume with another spec: status %d: %s", code, errs)
		}
	})

	t.Run("corrupt-tail", func(t *testing.T) {
		// A journal cut in the middle of its last line: the line is dropped with a warning and
		// that run computed again.
		out := filepath.Join(dir, "cut")
		os.MkdirAll(out, 0o755)
		spec := writeSweepSpec(t, dir, "cut.toml", out, 1)
		for _, name := range []string{"journal.csv", "results.json"} {
			data, _ := os.ReadFile(filepath.Join(want, name))
			if name == "journal.csv" {
				data = data[:len(data)-7]
			}
			os.WriteFile(filepath.Join(out, name), data, 0o644)
		}
		code, _, errs := runAim("sweep", "run", spec)
		if code != 0 || !strings.Contains(errs, "dropped its corrupt last line 37") || !strings.Contains(errs, "35 done, 1 to go") {
			t.Fatalf("status %d: %s", code, errs)
		}
		if got := sweepTable(t, filepath.Join(out, "results.csv")); !slices.EqualFunc(got, table, slices.Equal) {
			t.Errorf("table after the dropped line differs")
		}
	})
}

// TestSweepBadFiles runs every malformed sweep file of testdata/sweep/bad: each must exit with
// status 2, name every problem its "# want:" lines list (with the line number where given),
// and leave no output folder.
func TestSweepBadFiles(t *testing.T) {
	files, _ := filepath.Glob("testdata/sweep/bad/*.toml")
	if len(files) < 15 {
		t.Fatalf("%d malformed sweep files, want at least 15", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "out")
			var wants []string
			for _, line := range strings.Split(string(src), "\n") {
				if w, ok := strings.CutPrefix(line, "# want: "); ok {
					wants = append(wants, w)
				}
			}
			if len(wants) == 0 {
				t.Fatal("no # want: line")
			}
			path := filepath.Join(t.TempDir(), "bad.toml")
			os.WriteFile(path, bytes.ReplaceAll(src, []byte("OUT"), []byte(out)), 0o644)
			code, stdout, errs := runAim("sweep", "run", path)
			if code != 2 {
				t.Errorf("status %d, want 2 (stderr %s)", code, errs)
			}
			for _, w := range wants {
				if !strings.Contains(errs, strings.ReplaceAll(w, "FILE", path)) {
					t.Errorf("stderr lacks %q:\n%s", w, errs)
				}
			}
			if stdout != "" {
				t.Errorf("stdout %q", stdout)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("the output folder was created")
			}
		})
	}
}

// TestSweepExamples checks that the sweep files of examples/ are valid and have the runs their
// comments say.
func TestSweepExamples(t *testing.T) {
	for file, runs := range map[string]string{"amp-sweep.toml": "192 runs", "smi-amp-sweep.toml": "20 runs", "smi-se-sweep.toml": "96 runs"} {
		code, out, errs := runAim("sweep", "check", filepath.Join("..", "..", "examples", file))
		if code != 0 || !strings.Contains(out, runs) {
			t.Errorf("%s: status %d, %q %q; want %s", file, code, out, errs, runs)
		}
	}
}

// TestSweepTrace runs AMP and GD sweeps with trace = true: their trace.csv must be, row for
// row (but the wall times), the --trace CSV the command writes for the same points and seeds,
// and with trace-every swept each run keeps its own spacing.
func TestSweepTrace(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		job, grid string
		command   [][]string // the same runs as commands, in the sweep's run order
	}{
		{"amp", "alpha = [0.1, 0.2]\nD = 24\nmax-iter = 15\n",
			[][]string{{"amp", "--alpha=0.1,0.2", "--D=24", "--max-iter=15"}}},
		{"gd", "alpha = 0.2\nD = 16\nmax-iter = 20\ntrace-every = [5, 10]\n",
			[][]string{{"gd", "--alpha=0.2", "--D=16", "--max-iter=20", "--trace-every=5"}, {"gd", "--alpha=0.2", "--D=16", "--max-iter=20", "--trace-every=10"}}},
	} {
		t.Run(tc.job, func(t *testing.T) {
			out := filepath.Join(dir, tc.job)
			spec := filepath.Join(dir, tc.job+".toml")
			src := "job = \"" + tc.job + "\"\nout = \"" + out + "\"\nseeds = 2\nseed = 3\ndevice = \"cpu\"\nworkers = 1\ntrace = true\n[grid]\n" + tc.grid
			os.WriteFile(spec, []byte(src), 0o644)
			if code, _, errs := runAim("sweep", "run", "--quiet", spec); code != 0 {
				t.Fatalf("sweep: status %d: %s", code, errs)
			}
			// GD's trace has no wall times; AMP's has, one column to leave out.
			table := func(path string) [][]string {
				if tc.job == "amp" {
					return sweepTable(t, path)
				}
				return readCSV(t, path)
			}
			got := table(filepath.Join(out, "trace.csv"))
			var want [][]string
			for i, c := range tc.command {
				trace := filepath.Join(dir, tc.job+"-trace.csv")
				args := append(slices.Clone(c), "--seeds=2", "--seed=3", "--device=cpu", "--workers=1", "--quiet", "--plot=",
					"--out="+filepath.Join(dir, tc.job+"-out.csv"), "--trace="+trace)
				if code, _, errs := runAim(args...); code != 0 {
					t.Fatalf("aim %s: status %d: %s", strings.Join(args, " "), code, errs)
				}
				rows := table(trace)
				if i > 0 {
					rows = rows[1:]
				}
				want = append(want, rows...)
			}
			if len(want) < 10 || !slices.EqualFunc(got, want, slices.Equal) {
				t.Errorf("trace.csv has %d rows, the commands' traces %d:\n%v\n%v", len(got), len(want), got[:min(4, len(got))], want[:min(4, len(want))])
			}
			if runs, _ := filepath.Glob(filepath.Join(out, "trace", "seed-*.csv")); len(runs) != 4 {
				t.Errorf("%d per-run traces, want 4", len(runs))
			}
		})
	}
}

// TestSweepGrow grows an AMP sweep with traces through the command line: `aim sweep check`
// says what a run would keep and compute, the grown sweep computes only its new runs, and its
// tables equal those of the grown file run into an empty folder; a file that drops a run is
// refused by check and run alike, with exit status 2.
func TestSweepGrow(t *testing.T) {
	dir := t.TempDir()
	write := func(name, out, seeds, alpha string) string {
		spec := filepath.Join(dir, name)
		src := "job = \"amp\"\nout = \"" + out + "\"\nseeds = " + seeds + "\nseed = 3\ndevice = \"cpu\"\nworkers = 1\ntrace = true\n[grid]\nalpha = " + alpha + "\nD = 24\nmax-iter = 15\n"
		os.WriteFile(spec, []byte(src), 0o644)
		return spec
	}
	out := filepath.Join(dir, "grown")
	small, grown, fewer := write("small.toml", out, "2", "0.2"), write("grown.toml", out, "3", "[0.1, 0.2]"), write("fewer.toml", out, "1", "0.2")
	check := func(spec string) (int, string, string) { return runAim("sweep", "check", spec) }
	if code, stdout, errs := check(grown); code != 0 || !strings.Contains(stdout, out+" holds 0 of the runs, 6 to compute") {
		t.Errorf("check before any run: status %d, %q %q", code, stdout, errs)
	}
	if code, _, errs := runAim("sweep", "run", "--quiet", small); code != 0 {
		t.Fatalf("small sweep: status %d: %s", code, errs)
	}
	if code, stdout, errs := check(grown); code != 0 || !strings.Contains(stdout, "which this file grows: its 2 runs are kept, 4 to compute") {
		t.Errorf("check of the grown file: status %d, %q %q", code, stdout, errs)
	}
	for _, args := range [][]string{{"sweep", "check", fewer}, {"sweep", "run", fewer}} {
		if code, _, errs := runAim(args...); code != 2 || !strings.Contains(errs, "it holds runs this file does not have (seed 4 at alpha = 0.2, D = 24, max-iter = 15)") {
			t.Errorf("%v: status %d, %q", args, code, errs)
		}
	}
	code, _, errs := runAim("sweep", "run", grown)
	if code != 0 || !strings.Contains(errs, "grows from the sweep of spec") || !strings.Contains(errs, "4 to go") {
		t.Fatalf("grown sweep: status %d: %s", code, errs)
	}
	if code, stdout, errs := check(grown); code != 0 || !strings.Contains(stdout, out+" holds 6 of the runs, 0 to compute") {
		t.Errorf("check after the growth: status %d, %q %q", code, stdout, errs)
	}
	freshOut := filepath.Join(dir, "fresh")
	if code, _, errs := runAim("sweep", "run", "--quiet", write("fresh.toml", freshOut, "3", "[0.1, 0.2]")); code != 0 {
		t.Fatalf("fresh sweep: status %d: %s", code, errs)
	}
	for _, f := range []string{"results.csv", "trace.csv"} {
		got, want := sweepTable(t, filepath.Join(out, f)), sweepTable(t, filepath.Join(freshOut, f))
		if len(want) < 7 || !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("%s of the grown sweep (%d rows) differs from the fresh one's (%d rows)", f, len(got), len(want))
		}
	}
}
