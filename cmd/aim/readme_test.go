package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// readmeCommands returns the aim commands of README.md's ```sh blocks (continuation lines
// joined; comments and other programs left out) and the `make` targets those blocks run.
func readmeCommands(t *testing.T, text string) (cmds [][]string, targets []string) {
	t.Helper()
	in := false
	var cur string
	for _, line := range strings.Split(text, "\n") {
		trim := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trim, "```"):
			in = !in && (trim == "```sh" || trim == "```bash" || trim == "```shell")
			cur = ""
			continue
		case !in:
			continue
		}
		if i := strings.Index(trim, " #"); i >= 0 && !strings.Contains(trim[:i], `"`) {
			trim = strings.TrimSpace(trim[:i])
		}
		if strings.HasPrefix(trim, "#") || trim == "" {
			continue
		}
		if strings.HasSuffix(trim, `\`) {
			cur += strings.TrimSuffix(trim, `\`) + " "
			continue
		}
		cur += trim
		fields := shellFields(t, cur)
		cur = ""
		if len(fields) == 0 {
			continue
		}
		switch filepath.Base(fields[0]) {
		case "aim":
			cmds = append(cmds, fields[1:])
		case "make":
			targets = append(targets, fields[1:]...)
		}
	}
	return cmds, targets
}

// makeCommands returns the aim commands of a Makefile target ($(BIN) lines).
func makeCommands(t *testing.T, makefile, target string) [][]string {
	t.Helper()
	var cmds [][]string
	in := false
	var cur string
	for _, line := range strings.Split(makefile, "\n") {
		switch {
		case strings.HasPrefix(line, target+":"):
			in = true
			continue
		case in && !strings.HasPrefix(line, "\t"):
			in = false
		}
		if !in {
			continue
		}
		trim := strings.TrimSpace(line)
		if strings.HasSuffix(trim, `\`) {
			cur += strings.TrimSuffix(trim, `\`) + " "
			continue
		}
		cur += trim
		if f := shellFields(t, cur); len(f) > 0 && f[0] == "$(BIN)" {
			cmds = append(cmds, f[1:])
		}
		cur = ""
	}
	return cmds
}

// shellFields splits a command line as sh does for the simple lines of the docs: words, and
// single- or double-quoted strings.
func shellFields(t *testing.T, s string) []string {
	t.Helper()
	var out []string
	var w strings.Builder
	quote := rune(0)
	word := false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '\'' || r == '"':
			quote, word = r, true
		case r == ' ' || r == '\t':
			if word {
				out = append(out, w.String())
				w.Reset()
				word = false
			}
		default:
			w.WriteRune(r)
			word = true
		}
	}
	if quote != 0 {
		t.Fatalf("unbalanced quote in %q", s)
	}
	if word {
		out = append(out, w.String())
	}
	return out
}

// reducedSizes caps the flags that set a run's size, so that every documented command runs in
// about a second: grids keep their ends with few points, lists their first two values, counts
// shrink.
var reducedSizes = map[string]func(string) string{
	"alpha":         grid(3),
	"T":             firstInts(2),
	"c":             list(1),
	"D":             atMost(40),
	"seeds":         atMost(1),
	"samples":       atMost(64),
	"max-samples":   atMost(128),
	"max-iter":      atMost(10),
	"gen-samples":   atMost(0),
	"draws":         atMost(200),
	"epochs":        atMost(1),
	"repeat":        atMost(1),
	"points":        atMost(64),
	"quad-max-eval": atMost(20000),
}

// grid keeps a:b:n[:log] with n at most k, and a list's first k values.
func grid(k int) func(string) string {
	return func(v string) string {
		if p := strings.Split(v, ":"); len(p) >= 3 {
			if n, err := strconv.Atoi(p[2]); err == nil && n > k {
				p[2] = strconv.Itoa(k)
			}
			return strings.Join(p, ":")
		}
		return list(k)(v)
	}
}

// firstInts replaces a grid or list of integers by its first k values: "2:6:5" gives "2:3:2".
func firstInts(k int) func(string) string {
	return func(v string) string {
		p := strings.Split(v, ":")
		if len(p) < 3 {
			return list(k)(v)
		}
		lo, err1 := strconv.Atoi(p[0])
		n, err2 := strconv.Atoi(p[2])
		if err1 != nil || err2 != nil || n <= k {
			return v
		}
		return fmt.Sprintf("%d:%d:%d", lo, lo+k-1, k)
	}
}

func list(k int) func(string) string {
	return func(v string) string {
		if p := strings.Split(v, ","); len(p) > k {
			return strings.Join(p[:k], ",")
		}
		return v
	}
}

func atMost(k int) func(string) string {
	return func(v string) string {
		if n, err := strconv.Atoi(v); err == nil && n > k {
			return strconv.Itoa(k)
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil && f > float64(k) {
			return strconv.Itoa(k)
		}
		return v
	}
}

var readmeFlag = regexp.MustCompile(`^--?([A-Za-z][A-Za-z0-9-]*)(=(.*))?$`)

// reducedDefaults are the size flags a command gets when the README leaves them at a default
// that takes more than a second.
var reducedDefaults = map[string][]string{
	"se":             {"--gen-samples", "0"},
	"thresholds":     {"--T", "2:3:2"},
	"amp":            {"--D", "40", "--seeds", "1", "--max-iter", "10"},
	"gd":             {"--D", "30", "--seeds", "1", "--max-iter", "20"},
	"smi se":         {"--samples", "64", "--gen-samples", "0", "--alpha", "0.2:1.5:3"},
	"smi amp":        {"--D", "60", "--seeds", "1", "--max-iter", "5", "--gen-samples", "0", "--alpha", "0.5"},
	"smi sgd":        {"--D", "40", "--epochs", "1"},
	"smi thresholds": {"--samples", "64"},
	"bench":          {"--D", "40", "--repeat", "1", "--device", "cpu"},
}

// reduce returns args with reducedSizes applied, reducedDefaults added where the flag is
// absent, and --quiet.
func reduce(args []string) []string {
	out := append([]string(nil), args...)
	name := ""
	if len(out) > 0 {
		name = out[0]
		if name == "smi" && len(out) > 1 {
			name += " " + out[1]
		}
	}
	have := map[string]bool{}
	for _, a := range out {
		if m := readmeFlag.FindStringSubmatch(a); m != nil {
			have[m[1]] = true
		}
	}
	d := slices.Clone(reducedDefaults[name])
	for i := 0; i+1 < len(out); i++ {
		if name == "smi se" && (out[i] == "--L" || out[i] == "-L") && out[i+1] != "1" && out[i+1] != "2" {
			d = append(d, "--draws", "100") // the sampled channel integrals of L >= 3
		}
	}
	for i := 0; i+1 < len(d); i += 2 {
		if !have[strings.TrimLeft(d[i], "-")] {
			out = append(out, d[i], d[i+1])
		}
	}
	for i := 0; i < len(out); i++ {
		m := readmeFlag.FindStringSubmatch(out[i])
		if m == nil {
			continue
		}
		f, ok := reducedSizes[m[1]]
		switch {
		case !ok:
		case m[2] != "":
			out[i] = "--" + m[1] + "=" + f(m[3])
		case i+1 < len(out):
			out[i+1] = f(out[i+1])
			i++
		}
	}
	quiet := false
	for _, a := range out {
		quiet = quiet || a == "--quiet" || a == "-quiet"
	}
	if !quiet && len(out) > 0 && !strings.HasPrefix(out[0], "-") && out[0] != "version" && out[0] != "device" && out[0] != "plot" {
		out = append(out, "--quiet")
	}
	return out
}

// TestREADMECommands runs every aim command of README.md's shell blocks, and those of the make
// targets they name, in order in one folder (later commands read what earlier ones wrote), at
// reduced size: each must exit with status 0.
func TestREADMECommands(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the README's commands: skipped in -short mode")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	cmds, targets := readmeCommands(t, string(readme))
	for _, target := range targets {
		if target == "demo" {
			cmds = append(makeCommands(t, string(makefile), target), cmds...)
		}
	}
	if len(cmds) < 5 {
		t.Fatalf("%d aim commands in README.md: the reader is broken", len(cmds))
	}
	t.Chdir(t.TempDir())
	for _, c := range cmds {
		args := reduce(c)
		start := time.Now()
		code, stdout, stderr := runArgs(t, args...)
		t.Logf("aim %s: status %d in %.1f s", strings.Join(args, " "), code, time.Since(start).Seconds())
		if code != 0 {
			t.Errorf("aim %s (README: aim %s): status %d\n%s%s", strings.Join(args, " "), strings.Join(c, " "), code, stdout, stderr)
		}
	}
}
