package main

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/aimtheory/aim/cmd/aim/internal/job"
)

// TestHelpJSON checks aim help --json: every command of the reference with its flags as -h
// lists them, each flag's type one of those the reference documents, and bad arguments refused.
func TestHelpJSON(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"help", "--json"}, &out, &errb); code != 0 {
		t.Fatalf("aim help --json: status %d: %s", code, errb.String())
	}
	var ref Reference
	if err := json.Unmarshal(out.Bytes(), &ref); err != nil {
		t.Fatal(err)
	}
	if ref.Program != "aim" || ref.Version != semver {
		t.Errorf("program %q version %q, want aim %s", ref.Program, ref.Version, semver)
	}
	types := []string{"bool", "int", "uint", "float", "string", "list", "float|auto", "auto|json|none"}
	cmds := cliCommands()
	if len(ref.Commands) != len(cmds) {
		t.Fatalf("%d commands, want %d", len(ref.Commands), len(cmds))
	}
	for k, c := range cmds {
		rc := ref.Commands[k]
		if rc.Name != c.name || rc.Args != c.args {
			t.Errorf("command %d: %q (args %q), want %q (%q)", k, rc.Name, rc.Args, c.name, c.args)
			continue
		}
		if c.flags == nil {
			if rc.Flags != nil {
				t.Errorf("aim %s dispatches, but has flags %v", c.name, rc.Flags)
			}
			continue
		}
		fs := c.flags(io.Discard)
		var names []string
		for _, f := range rc.Flags {
			names = append(names, f.Name)
			if !slices.Contains(types, f.Type) {
				t.Errorf("aim %s --%s: type %q is none of %v", c.name, f.Name, f.Type, types)
			}
			if fl := fs.Lookup(f.Name); fl == nil || fl.DefValue != f.Default || fl.Usage != f.Usage {
				t.Errorf("aim %s --%s: the reference's default %q or usage differs from the flag's", c.name, f.Name, f.Default)
			}
		}
		if want := flagNames(fs); !slices.Equal(names, want) {
			t.Errorf("aim %s: flags %v, want %v", c.name, names, want)
		}
	}
	// The grids are lists, the switches bools, --damping a number or auto.
	want := map[string]map[string]string{
		"se":             {"alpha": "list", "rho": "list", "threshold": "bool", "damping": "float|auto", "max-iter": "int", "seed": "uint", "progress": "auto|json|none"},
		"thresholds":     {"T": "list"},
		"smi thresholds": {"c": "list"},
		"bench":          {"D": "list", "device": "list"},
	}
	for _, rc := range ref.Commands {
		for _, f := range rc.Flags {
			if w, ok := want[rc.Name][f.Name]; ok && f.Type != w {
				t.Errorf("aim %s --%s: type %q, want %q", rc.Name, f.Name, f.Type, w)
			}
		}
	}
	for _, args := range [][]string{{"help", "--yaml"}, {"help", "se", "x"}} {
		if code := run(args, io.Discard, io.Discard); code != 2 {
			t.Errorf("aim %s: status %d, want 2", strings.Join(args, " "), code)
		}
	}
}

// TestProgressJSON checks --progress json: one event per unit of work (a point of aim se),
// done counting up to total, and --progress with --quiet or a bad mode refused.
func TestProgressJSON(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	args := []string{"se", "--rho", "0.5,1", "--alpha", "0.05:0.2:4", "--gen-samples", "0", "--workers", "2",
		"--out", dir + "/se.csv", "--plot", "", "--progress", "json"}
	if code := run(args, &out, &errb); code != 0 {
		t.Fatalf("status %d: %s", code, errb.String())
	}
	var done []int
	for _, line := range strings.Split(strings.TrimSpace(errb.String()), "\n") {
		var e job.ProgressEvent
		if err := json.Unmarshal([]byte(line), &e); err != nil || e.Event != "progress" || e.Total != 8 || e.What != "se softmax" || e.Seconds < 0 {
			t.Fatalf("stderr line %q: %+v, %v", line, e, err)
		}
		done = append(done, e.Done)
	}
	if !slices.Equal(done, []int{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Errorf("done %v, want 1 to 8", done)
	}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"se", "--progress", "json", "--quiet"}, "--progress and --quiet conflict"},
		{[]string{"amp", "--progress", "bar"}, "--progress bar: needs auto, json or none"},
	} {
		var errb bytes.Buffer
		if code := run(c.args, io.Discard, &errb); code != 2 || !strings.Contains(errb.String(), c.msg) {
			t.Errorf("aim %s: status %d, %q; want 2 and %q", strings.Join(c.args, " "), code, errb.String(), c.msg)
		}
	}
}
