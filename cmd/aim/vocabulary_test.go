package main

import (
	"bufio"
	"bytes"
	"flag"
	"io"
	"math"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aimtheory/aim/cmd/aim/internal/job/aimjob"
	"github.com/aimtheory/aim/cmd/aim/internal/job/benchjob"
	"github.com/aimtheory/aim/cmd/aim/internal/job/smijob"

	smiamp "github.com/aimtheory/aim/engine/smi/amp"
)

// commandFlags returns the flag set of every command that takes flags, by the name the
// vocabulary table uses ("smi se", ...), registered as the command registers it.
func commandFlags() map[string]*flag.FlagSet {
	var q progressMode
	sets := map[string]*flag.FlagSet{}
	add := func(name string, register func(fs *flag.FlagSet)) {
		fs := newFlags("aim "+name, "Usage: aim "+name+" [flags]\n", io.Discard)
		register(fs)
		sets[name] = fs
	}
	add("se", func(fs *flag.FlagSet) { seFlags(fs, aimjob.NewSEConfig(), &q) })
	add("thresholds", func(fs *flag.FlagSet) { thresholdsFlags(fs, aimjob.NewThresholdsConfig(), &q) })
	add("amp", func(fs *flag.FlagSet) { ampFlags(fs, aimjob.NewAMPConfig(), &q) })
	add("gd", func(fs *flag.FlagSet) { gdFlags(fs, aimjob.NewGDConfig(), &q) })
	add("erm", func(fs *flag.FlagSet) { ermFlags(fs, aimjob.NewERMConfig(), &q) })
	add("smi se", func(fs *flag.FlagSet) { smiSECommandFlags(fs, smijob.NewSMISEConfig(), &q) })
	add("smi thresholds", func(fs *flag.FlagSet) { smiThresholdsFlags(fs, smijob.NewSMIThresholdsConfig(), &q) })
	add("smi amp", func(fs *flag.FlagSet) { smiAMPFlags(fs, smijob.NewSMIAMPConfig(), &q) })
	add("smi sgd", func(fs *flag.FlagSet) { smiSGDFlags(fs, smijob.NewSMISGDConfig(), &q) })
	add("bench", func(fs *flag.FlagSet) { benchFlags(fs, benchjob.NewBenchConfig(), &q) })
	add("device", func(fs *flag.FlagSet) { deviceFlags(fs) })
	return sets
}

// TestSharedFlags checks, for every command, that each flag of the vocabulary it takes starts
// its help with the vocabulary's words and follows the vocabulary's rule for its default, and
// that every command writing a table takes the output flags.
func TestSharedFlags(t *testing.T) {
	rules := map[string]func(def string) bool{
		"seed":     func(d string) bool { return d == "1" },
		"workers":  func(d string) bool { return d == "0" },
		"threads":  func(d string) bool { return d == "0" },
		"quiet":    func(d string) bool { return d == "false" },
		"progress": func(d string) bool { return d == "auto" },
		"out":      func(d string) bool { return strings.HasPrefix(d, "results/") && strings.HasSuffix(d, ".csv") },
		"plot":     func(d string) bool { return strings.HasPrefix(d, "results/") && strings.HasSuffix(d, ".png") },
		"size":     func(d string) bool { return d == "6x4.2in" },
		"title":    func(d string) bool { return d == "" },
		"damping": func(d string) bool {
			v, err := strconv.ParseFloat(d, 64)
			return d == "auto" || err == nil && v >= 0 && v < 1
		},
		"max-iter": func(d string) bool { n, err := strconv.Atoi(d); return err == nil && n >= 0 },
		"device": func(d string) bool {
			return d == "auto" || d == "cpu" || d == "all"
		},
		"gen-samples": func(d string) bool { n, err := strconv.Atoi(d); return err == nil && n >= 0 },
	}
	for cmd, fs := range commandFlags() {
		for name, words := range vocabulary {
			f := fs.Lookup(name)
			if f == nil {
				continue
			}
			if !strings.HasPrefix(f.Usage, words) {
				t.Errorf("aim %s --%s: help %q does not start with the vocabulary's %q", cmd, name, f.Usage, words)
			}
			if rule, ok := rules[name]; ok && !rule(f.DefValue) {
				t.Errorf("aim %s --%s: default %q breaks the vocabulary's rule", cmd, name, f.DefValue)
			}
		}
		if cmd == "device" {
			continue
		}
		for _, name := range []string{"out", "plot", "size", "title", "progress", "quiet"} {
			if fs.Lookup(name) == nil {
				t.Errorf("aim %s has no --%s", cmd, name)
			}
		}
	}
	// aim plot takes the figure options with the same words.
	plotFlags, _ := newPlotFlags(io.Discard)
	for _, name := range []string{"size", "title"} {
		if f := plotFlags.Lookup(name); f == nil || !strings.HasPrefix(f.Usage, vocabulary[name]) {
			t.Errorf("aim plot --%s: %v, want the vocabulary's %q", name, f, vocabulary[name])
		}
	}
}

// TestVocabularyTable checks docs/cli/vocabulary.md against the flag sets: each flag of the
// shared-flags table exists in each command it lists, with the default it gives.
func TestVocabularyTable(t *testing.T) {
	f, err := os.Open("../../docs/cli/vocabulary.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sets := commandFlags()
	tick := regexp.MustCompile("`([^`]*)`")
	rows, in := 0, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "## Shared flags":
			in = true
			continue
		case in && strings.HasPrefix(line, "## "):
			in = false
		}
		if !in || !strings.HasPrefix(line, "| `--") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 5 {
			t.Fatalf("row %q: %d cells, want 5", line, len(cells))
		}
		rows++
		name := strings.TrimPrefix(tick.FindStringSubmatch(cells[0])[1], "--")
		// The default: one value for every command, or "cmd: value" entries, an entry
		// without a command being the others'.
		defaults, common := map[string]string{}, ""
		for _, e := range strings.Split(cells[3], "; ") {
			v := tick.FindStringSubmatch(e)
			if v == nil {
				t.Fatalf("--%s: default entry %q has no `value`", name, e)
			}
			if cmd, _, ok := strings.Cut(e, ": `"); ok && !strings.Contains(cmd, "`") {
				defaults[cmd] = v[1]
			} else {
				common = v[1]
			}
		}
		for _, cmd := range strings.Split(strings.TrimSpace(cells[4]), ", ") {
			fs, ok := sets[cmd]
			if !ok {
				t.Errorf("--%s: unknown command %q in the table", name, cmd)
				continue
			}
			fl := fs.Lookup(name)
			if fl == nil {
				t.Errorf("the table lists --%s in aim %s, which has no such flag", name, cmd)
				continue
			}
			want, ok := defaults[cmd]
			if !ok {
				want = common
			}
			want = strings.ReplaceAll(want, "<command>", strings.ReplaceAll(cmd, " ", "-"))
			if want == `""` { // the table writes an empty default as ""
				want = ""
			}
			if fl.DefValue != want {
				t.Errorf("aim %s --%s: default %q, the table says %q", cmd, name, fl.DefValue, want)
			}
		}
		for cmd := range defaults {
			if !strings.Contains(cells[4], cmd) {
				t.Errorf("--%s: a default for %s, which the row does not list", name, cmd)
			}
		}
	}
	if rows < 10 {
		t.Errorf("read %d rows of the shared-flags table", rows)
	}
	// Every vocabulary flag has its row.
	doc, _ := os.ReadFile("../../docs/cli/vocabulary.md")
	for name := range vocabulary {
		if !strings.Contains(string(doc), "| `--"+name+"` |") {
			t.Errorf("--%s is in the vocabulary but not in docs/cli/vocabulary.md", name)
		}
	}
}

// TestDidYouMean checks that a mistyped flag names the nearest flag in two lines of usage,
// with status 2.
func TestDidYouMean(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"se", "--max-itr", "3"}, "did you mean --max-iter?"},
		{[]string{"amp", "--dampng", "0.5"}, "did you mean --damping?"},
		{[]string{"smi", "amp", "--iter", "3"}, "did you mean --max-iter?"}, // near the deprecated --iters: the new name
		{[]string{"bench", "--devices", "cpu"}, "did you mean --device?"},
		{[]string{"gd", "--qiet"}, "did you mean --quiet?"},
		{[]string{"thresholds", "--chanel", "hardmax"}, "did you mean --channel?"},
	} {
		code, stdout, stderr := runArgs(t, tc.args...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != 2 || stdout != "" || !strings.Contains(lines[0], tc.want) {
			t.Errorf("aim %v: status %d, stderr %q; want status 2 and %q", tc.args, code, stderr, tc.want)
		}
		if len(lines) != 3 || !strings.HasPrefix(lines[1], "Usage: aim ") || !strings.Contains(lines[2], "-h' for the flags") {
			t.Errorf("aim %v: want the error and two lines of usage, got %q", tc.args, stderr)
		}
	}
	// Nothing near: no guess.
	if _, _, stderr := runArgs(t, "se", "--zzzzzz"); !strings.Contains(stderr, "unknown flag --zzzzzz\n") {
		t.Errorf("aim se --zzzzzz: %q, want no suggestion", stderr)
	}
	if code, _, stderr := runArgs(t, "sse"); code != 2 || !strings.Contains(stderr, "did you mean se?") || strings.Count(stderr, "\n") != 3 {
		t.Errorf("aim sse: status %d, %q", code, stderr)
	}
	if got := editDistance("max-itr", "max-iter"); got != 1 {
		t.Errorf("editDistance(max-itr, max-iter) = %d, want 1", got)
	}
}

// TestFlagTypes checks the errors of values of the wrong type.
func TestFlagTypes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"se", "--T", "2.5"}, "--T 2.5: needs an integer"},
		{[]string{"amp", "--D", "x"}, "--D x: needs an integer"},
		{[]string{"se", "--seed", "-1"}, "--seed -1: needs an integer >= 0"},
		{[]string{"se", "--beta", "b"}, "--beta b: needs a number"},
		{[]string{"se", "--quiet=maybe"}, "--quiet maybe: needs true or false"},
		{[]string{"amp", "--damping", "x"}, "--damping x: needs a number or auto"},
		{[]string{"se", "--max-iter"}, "--max-iter needs a value"},
	} {
		code, _, stderr := runArgs(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "parse error") {
			t.Errorf("aim %v: status %d, stderr %q; want status 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestDuplicateFlags checks that a flag given twice, in any spelling, is bad input, but for
// --rho with different values.
func TestDuplicateFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"se", "--max-iter", "3", "--max-iter", "4"}, "--max-iter given twice"},
		{[]string{"amp", "--D", "10", "--D=20"}, "--D given twice"},
		{[]string{"gd", "--quiet", "--quiet"}, "--quiet given twice"},
		{[]string{"smi", "amp", "--iters", "3", "--max-iter", "3"}, "--max-iter given twice (as --iters and --max-iter)"},
		{[]string{"smi", "sgd", "--gen-samples", "3", "--test-samples", "3"}, "--gen-samples given twice (as --gen-samples and --test-samples)"},
		{[]string{"bench", "--device", "cpu", "--device", "cpu"}, "--device given twice"},
		{[]string{"se", "--rho", "0.5", "--rho", "0.5"}, "--rho 0.5 given twice"},
		{[]string{"se", "--rho", "0.5,1,0.5"}, "--rho 0.5 given twice"},
		{[]string{"amp", "--rho", "0.2:0.6:3", "--rho", "0.4"}, "--rho 0.4 given twice"},
		{[]string{"plot", "--out", "a.png", "x.csv", "--out", "b.png"}, "--out given twice"},
	} {
		code, _, stderr := runArgs(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("aim %v: status %d, stderr %q; want status 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	// --rho is repeatable with distinct values.
	c, _, err := parseSE([]string{"--rho", "0.5", "--rho", "2", "--alpha", "0.1"}, io.Discard)
	if err != nil || !slices.Equal(c.Rhos(), []float64{0.5, 2}) {
		t.Errorf("--rho 0.5 --rho 2: %v, %v", c.Rhos(), err)
	}
}

// TestConflicts checks that flags one of which the other would ignore are bad input.
func TestConflicts(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"se", "--threshold", "--rescaled"}, "--threshold and --rescaled conflict"},
		{[]string{"se", "--threshold", "--out", "x.csv"}, "--threshold and --out conflict"},
		{[]string{"se", "--threshold", "--plot", "x.png"}, "--threshold and --plot conflict"},
		{[]string{"se", "--threshold", "--gen-samples", "10"}, "--threshold and --gen-samples conflict"},
		{[]string{"smi", "se", "--at", "0.5,0.5", "--start", "informed"}, "--at and --start conflict"},
		{[]string{"smi", "se", "--max-samples", "8000"}, "--max-samples needs --mc-error"},
		{[]string{"gd", "--trace-every", "5"}, "--trace-every needs --trace"},
		{[]string{"smi", "amp", "--init", "zero", "--init-scale", "0.5"}, "--init-scale and --init zero conflict"},
	} {
		code, _, stderr := runArgs(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("aim %v: status %d, stderr %q; want status 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestVersion checks aim version and aim --version: the release, the commit and the Go
// version.
func TestVersion(t *testing.T) {
	if !regexp.MustCompile(`^v\d+\.\d+\.\d+$`).MatchString(semver) {
		t.Errorf("semver %q is not vX.Y.Z", semver)
	}
	old := version
	defer func() { version = old }()
	version = "abc1234"
	want := "aim " + semver + " (commit abc1234, " + runtime.Version() + ")\n"
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, stdout, stderr := runArgs(t, args...)
		if code != 0 || stdout != want || stderr != "" {
			t.Errorf("aim %v: status %d, stdout %q, stderr %q; want %q", args, code, stdout, stderr, want)
		}
	}
	version = ""
	if _, stdout, _ := runArgs(t, "version"); !strings.Contains(stdout, "(commit ") || strings.Contains(stdout, "commit ,") {
		t.Errorf("aim version without -ldflags: %q", stdout)
	}
	if code, _, _ := runArgs(t, "version", "extra"); code != 2 {
		t.Errorf("aim version extra: status %d, want 2", code)
	}
}

// TestDeprecatedAliases checks that each deprecated spelling sets the same value as the new
// one, with a warning on stderr, and that the help lists the new one only.
func TestDeprecatedAliases(t *testing.T) {
	type parsed struct {
		v      int
		stderr string
	}
	parseWith := func(parse func([]string, io.Writer) (int, error), args ...string) parsed {
		var b bytes.Buffer
		v, err := parse(args, &b)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return parsed{v, b.String()}
	}
	gd := func(a []string, w io.Writer) (int, error) { c, _, err := parseGD(a, w); return c.Steps, err }
	smiAMPIters := func(a []string, w io.Writer) (int, error) {
		c, _, err := parseSMIAMP(a, w)
		return c.Iters, err
	}
	smiAMPGen := func(a []string, w io.Writer) (int, error) {
		c, _, err := parseSMIAMP(a, w)
		return c.TestSamples, err
	}
	smiSGDGen := func(a []string, w io.Writer) (int, error) {
		c, _, err := parseSMISGD(a, w)
		return c.TestSamples, err
	}
	for _, tc := range []struct {
		cmd      string
		parse    func([]string, io.Writer) (int, error)
		old, new string
	}{
		{"gd", gd, "steps", "max-iter"},
		{"smi amp", smiAMPIters, "iters", "max-iter"},
		{"smi amp", smiAMPGen, "test-samples", "gen-samples"},
		{"smi sgd", smiSGDGen, "test-samples", "gen-samples"},
	} {
		o := parseWith(tc.parse, "--"+tc.old, "37")
		n := parseWith(tc.parse, "--"+tc.new, "37")
		if o.v != 37 || n.v != 37 {
			t.Errorf("aim %s: --%s 37 gives %d, --%s 37 gives %d", tc.cmd, tc.old, o.v, tc.new, n.v)
		}
		if want := "warning: --" + tc.old + " is deprecated, use --" + tc.new + " (the same value)"; !strings.Contains(o.stderr, want) || n.stderr != "" {
			t.Errorf("aim %s: stderr %q with --%s, %q with --%s; want %q with the old only", tc.cmd, o.stderr, tc.old, n.stderr, tc.new, want)
		}
		var help bytes.Buffer
		fs := newFlags("aim "+tc.cmd, "", &help)
		commandRegister(tc.cmd)(fs)
		printDefaults(&help, fs)
		if strings.Contains(help.String(), "--"+tc.old+" ") || !strings.Contains(help.String(), "--"+tc.new+" ") {
			t.Errorf("aim %s -h lists --%s or lacks --%s", tc.cmd, tc.old, tc.new)
		}
	}
	// The old space-separated --device list of bench: the comma list, with a warning.
	var b bytes.Buffer
	c, _, err := parseBench([]string{"--device", "cpu  cpu:2", "--D", "20"}, &b)
	if err != nil || c.Device != "cpu,cpu:2" || !strings.Contains(b.String(), "write --device cpu,cpu:2") {
		t.Errorf("bench --device \"cpu  cpu:2\": %q, %v, stderr %q", c.Device, err, b.String())
	}
	for in, want := range map[string][]string{
		"cpu,cuda:0,1,cpu:2": {"cpu", "cuda:0,1", "cpu:2"},
		"cuda:all":           {"cuda:all"},
		" cpu , cuda ":       {"cpu", "cuda"},
	} {
		if got := benchjob.SplitDevices(in); !slices.Equal(got, want) {
			t.Errorf("SplitDevices(%q) = %q, want %q", in, got, want)
		}
	}
}

// commandRegister returns the function that registers the flags of cmd.
func commandRegister(cmd string) func(fs *flag.FlagSet) {
	var q progressMode
	switch cmd {
	case "gd":
		return func(fs *flag.FlagSet) { gdFlags(fs, aimjob.NewGDConfig(), &q) }
	case "smi amp":
		return func(fs *flag.FlagSet) { smiAMPFlags(fs, smijob.NewSMIAMPConfig(), &q) }
	case "smi sgd":
		return func(fs *flag.FlagSet) { smiSGDFlags(fs, smijob.NewSMISGDConfig(), &q) }
	}
	panic(cmd)
}

// TestDampingConvention checks the one meaning of --damping: the defaults give the numbers
// of before (the engine's theta), an explicit value in the smi commands warns with the value
// of the former meaning, and workers 0 is all cores in se too.
func TestDampingConvention(t *testing.T) {
	c, _, err := parseSMIAMP(nil, io.Discard)
	if rho := 1 - smiamp.DefaultOptions(2).Damping; err != nil || c.Damping != 1-rho {
		t.Errorf("smi amp default damping %v (%v), want the engine's %v", c.Damping, err, smiamp.DefaultOptions(2).Damping)
	}
	var b bytes.Buffer
	if c, _, err = parseSMIAMP([]string{"--damping", "0.3"}, &b); err != nil || c.Damping != 0.3 || !strings.Contains(b.String(), "for the former meaning of 0.3, write --damping 0.7") {
		t.Errorf("smi amp --damping 0.3: %v (%v), stderr %q", c.Damping, err, b.String())
	}
	s, _, err := parseSMISE(nil, io.Discard)
	if err != nil || !math.IsNaN(s.Damping) {
		t.Errorf("smi se default damping %v (%v), want auto (the authors')", s.Damping, err)
	}
	b.Reset()
	if s, _, err = parseSMISE([]string{"--damping", "0.2"}, &b); err != nil || s.Damping != 0.2 || !strings.Contains(b.String(), "weight on the old iterate") {
		t.Errorf("smi se --damping 0.2: %v (%v), stderr %q", s.Damping, err, b.String())
	}
	if code, _, stderr := runArgs(t, "smi", "amp", "--damping", "1"); code != 2 || !strings.Contains(stderr, "weight on the old iterate") {
		t.Errorf("smi amp --damping 1: status %d, %q", code, stderr)
	}
	for _, args := range [][]string{nil, {"--damping", "auto"}} {
		se, _, err := parseSE(append(args, "--alpha", "0.1"), io.Discard)
		if err != nil || se.Damping != 0.5 {
			t.Errorf("se %v: damping %v (%v), want 0.5", args, se.Damping, err)
		}
	}
	se, _, err := parseSE([]string{"--workers", "0", "--alpha", "0.1"}, io.Discard)
	if err != nil || se.Workers != runtime.GOMAXPROCS(0) {
		t.Errorf("se --workers 0: %d (%v), want all cores", se.Workers, err)
	}
}

// TestHelpText checks the help of every command: flags as --name, no stray placeholders, and
// the corrected sentences.
func TestHelpText(t *testing.T) {
	for _, args := range [][]string{{"se"}, {"thresholds"}, {"amp"}, {"gd"}, {"erm"}, {"smi", "se"}, {"smi", "thresholds"}, {"smi", "amp"}, {"smi", "sgd"}, {"bench"}, {"device"}, {"plot"}} {
		code, _, stderr := runArgs(t, append(args, "-h")...)
		if code != 0 || !strings.Contains(stderr, "\n  --") {
			t.Errorf("aim %v -h: status %d, flags not listed as --name:\n%s", args, code, stderr)
		}
		for _, bad := range []string{"-se aim se", "-amp aim amp", "\n  -se ", "`"} {
			if strings.Contains(stderr, bad) {
				t.Errorf("aim %v -h contains %q", args, bad)
			}
		}
	}
	_, _, gd := runArgs(t, "gd", "-h")
	if strings.Contains(gd, "--paper-compat") || strings.Contains(gd, "softmax or hardmax") {
		t.Errorf("aim gd -h offers hardmax:\n%s", gd)
	}
	if _, stdout, _ := runArgs(t, "--help"); !strings.Contains(stdout, "PNG, SVG or PDF") {
		t.Errorf("aim --help does not say that plot writes PDF")
	}
	if _, stdout, _ := runArgs(t, "smi", "-h"); !strings.Contains(stdout, "L <= 4") || strings.Contains(stdout, "L <= 3") {
		t.Errorf("aim smi -h: %s", stdout)
	}
}
