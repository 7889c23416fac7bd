package main

import (
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aimtheory/aim/cmd/aim/internal/job/smijob"

	"github.com/aimtheory/aim/cmd/aim/internal/job"
	"github.com/aimtheory/aim/cmd/aim/internal/sweep"
)

// withoutTimes drops the wall-time columns, the only ones that differ between two runs.
func withoutTimes(rows [][]string) [][]string {
	var drop []int
	for j, h := range rows[0] {
		if h == "seconds" || h == "quad_seconds" {
			drop = append(drop, j)
		}
	}
	out := make([][]string, len(rows))
	for i, r := range rows {
		for j, c := range r {
			if !slices.Contains(drop, j) {
				out[i] = append(out[i], c)
			}
		}
	}
	return out
}

// jobTable runs a configuration parsed from flags by the job function and returns its table.
func jobTable(t *testing.T, parse func([]string) (any, error), run func(any) (jobTables, error, error), args []string) [][]string {
	t.Helper()
	cfg, err := parse(args)
	if err != nil {
		t.Fatal(err)
	}
	tables, _, err := run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return append([][]string{tables.columns}, tables.rows...)
}

// TestCommandRowsAreJobRows checks, for every job, that the CSV `aim <cmd>` writes is the
// job's rows for the configuration the same flags give, cell for cell (but the wall times).
func TestCommandRowsAreJobRows(t *testing.T) {
	sgdRows := func(cfg any) (jobTables, error, error) {
		c := cfg.(*smijob.SMISGDConfig)
		res, err := smijob.RunSMISGD(c, job.Env{})
		if err != nil {
			return jobTables{}, nil, err
		}
		return jobTables{columns: smijob.SMISGDSchema.Header(c.L), rows: smijob.SMISGDSchema.Rows(res.Rows)}, res.Err(), nil
	}
	thresholdRows := func(cfg any) (jobTables, error, error) {
		c := cfg.(*smijob.SMIThresholdsConfig)
		res, err := smijob.RunSMIThresholds(c, job.Env{})
		if err != nil {
			return jobTables{}, nil, err
		}
		return jobTables{columns: smijob.SMIThresholdsSchema.Header(c.L), rows: smijob.SMIThresholdsSchema.Rows(res.Rows)}, nil, nil
	}
	for _, tc := range []struct {
		cmd   []string
		args  []string
		parse func([]string) (any, error)
		run   func(any) (jobTables, error, error)
	}{
		{[]string{"se"}, []string{"--rho=0.5,2", "--alpha=0.05:0.3:3", "--gen-samples=100", "--seed=4"}, sweepJobs["se"].parse, sweepJobs["se"].run},
		{[]string{"se"}, []string{"--channel=hardmax", "--paper-compat", "--rescaled", "--rho=0.5", "--alpha=0.5,2", "--gen-samples=0"}, sweepJobs["se"].parse, sweepJobs["se"].run},
		{[]string{"amp"}, []string{"--device=cpu", "--D=20", "--alpha=0.1,0.2", "--rho=0.5,1", "--seeds=2", "--seed=9", "--max-iter=8"}, sweepJobs["amp"].parse, sweepJobs["amp"].run},
		{[]string{"gd"}, []string{"--device=cpu", "--D=16", "--alpha=0.2", "--seeds=2", "--restarts=2", "--max-iter=10", "--optimizer=gd"}, sweepJobs["gd"].parse, sweepJobs["gd"].run},
		{[]string{"smi", "se"}, []string{"--alpha=0.3,0.1", "--samples=32", "--max-iter=30", "--tol=1e-3", "--gen-samples=100", "--workers=1"}, sweepJobs["smi-se"].parse, sweepJobs["smi-se"].run},
		{[]string{"smi", "amp"}, []string{"--D=30", "--alpha=0.8,1.2", "--seeds=2", "--max-iter=3", "--gen-samples=30", "--trace="}, sweepJobs["smi-amp"].parse, sweepJobs["smi-amp"].run},
		{[]string{"smi", "sgd"}, []string{"--D=20", "--alpha=4", "--seeds=2", "--epochs=2", "--every=2", "--gen-samples=10"}, sweepJobs["smi-sgd"].parse, sgdRows},
		{[]string{"smi", "thresholds"}, []string{"--c=0.5,2", "--samples=64", "--hi=0.1", "--workers=1"}, func(a []string) (any, error) { return parsed(parseSMIThresholds(a, io.Discard)) }, thresholdRows},
	} {
		name := strings.Join(append(tc.cmd, tc.args...), " ")
		out := filepath.Join(t.TempDir(), "out.csv")
		if code, _, stderr := runArgs(t, append(append(slices.Clone(tc.cmd), tc.args...), "--quiet", "--plot=", "--out="+out)...); code != 0 {
			t.Fatalf("aim %s: status %d: %s", name, code, stderr)
		}
		got, want := withoutTimes(readCSV(t, out)), withoutTimes(jobTable(t, tc.parse, tc.run, tc.args))
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("aim %s wrote\n%v\nthe job's rows are\n%v", name, got, want)
		}
	}
}

// TestSweepRowsAreJobRows runs small sweeps of four jobs and checks that every row of
// results.csv is the job's row for the configuration its rerun line gives, and (smi sgd, whose
// command writes every record) the last record `aim smi sgd` writes for that line.
func TestSweepRowsAreJobRows(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ job, spec string }{
		{"se", "seed = 5\n[grid]\nrho = [0.5, 1]\nalpha = [0.05, 0.2]\ngen-samples = 100\n"},
		{"amp", "seeds = 2\nseed = 2\ndevice = \"cpu\"\nworkers = 1\n[grid]\nalpha = [0.1, 0.2]\nD = 16\nmax-iter = 10\n"},
		{"smi-amp", "seeds = 2\n[grid]\nD = 30\nalpha = 1\nmax-iter = 2\ngen-samples = 20\n"},
		{"smi-sgd", "seeds = 2\n[grid]\nD = 20\nalpha = [2, 4]\nepochs = 1\ngen-samples = 10\n"},
	} {
		out := filepath.Join(dir, tc.job)
		path := filepath.Join(dir, tc.job+".toml")
		os.WriteFile(path, []byte(fmt.Sprintf("job = %q\nout = %q\n%s", tc.job, out, tc.spec)), 0o644)
		if code, _, stderr := runArgs(t, "sweep", "run", "--quiet", path); code != 0 {
			t.Fatalf("sweep %s: status %d: %s", tc.job, code, stderr)
		}
		table := withoutTimes(readCSV(t, filepath.Join(out, "results.csv")))
		man, err := sweep.ReadManifest(filepath.Join(out, "results.json"))
		if err != nil || len(man.Rerun) != len(table)-1 {
			t.Fatalf("sweep %s: %d rerun lines for %d rows (%v)", tc.job, len(man.Rerun), len(table)-1, err)
		}
		j := sweepJobs[tc.job]
		for k, line := range man.Rerun {
			args := strings.Fields(line)[1+len(j.command):]
			want := withoutTimes(jobTable(t, j.parse, j.run, args))
			if !slices.Equal(table[0], want[0]) || !slices.Equal(table[1+k], want[1]) {
				t.Errorf("sweep %s run %d (%s): %v, the job's row %v", tc.job, k, line, table[1+k], want[1])
			}
			if tc.job != "smi-sgd" {
				continue
			}
			csvPath := filepath.Join(t.TempDir(), "run.csv")
			args = append(slices.DeleteFunc(args, func(a string) bool { return strings.HasPrefix(a, "--out=") }), "--out="+csvPath)
			if code, _, stderr := runArgs(t, append(slices.Clone(j.command), args...)...); code != 0 {
				t.Fatalf("%s: status %d: %s", line, code, stderr)
			}
			if rows := withoutTimes(readCSV(t, csvPath)); !slices.Equal(rows[len(rows)-1], table[1+k]) {
				t.Errorf("sweep smi-sgd run %d: %v, the last record of %s: %v", k, table[1+k], line, rows[len(rows)-1])
			}
		}
		if tc.job == "amp" && table[1][slices.Index(table[0], "seed")] != strconv.Itoa(2) {
			t.Errorf("sweep amp run 0 has seed %s, want 2", table[1][slices.Index(table[0], "seed")])
		}
	}
}

// TestImports checks that the command line imports the job library, its own internal
// packages and package backend, and neither the engine nor a backend (the job library reaches
// them).
func TestImports(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		ast, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range ast.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			mine, ok := strings.CutPrefix(path, "github.com/aimtheory/aim/")
			if ok && !strings.HasPrefix(mine, "cmd/aim/internal/") && mine != "backend" {
				t.Errorf("%s imports %s: the command line reaches the engine and the devices through the job packages under cmd/aim/internal/job", f, path)
			}
		}
	}
}
