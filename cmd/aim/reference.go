package main

// reference.go: the commands of aim and their flags as data (cliCommands), from which
// docs/cli (make docs), the Python package's job functions (python/aimtheory/_jobs.py, made by
// make docs too) and `aim help --json` all come.

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
)

// cliCommand is a command of aim as docs/cli documents it.
type cliCommand struct {
	name string // as typed after aim: "se", "smi se"
	// flags builds the command's flag set, as the command does, with -h writing on stderr;
	// nil for a command without one (aim smi and aim sweep dispatch, aim version takes nothing).
	flags func(stderr io.Writer) *flag.FlagSet
	usage string // the usage text of a command without a flag set
	// noHelp: the command has no -h (aim version), so TestCLIDocsHelp cannot compare.
	noHelp bool
	args   string // its positional arguments as the usage writes them: "spec.toml", "file.csv ..."
}

// versionUsage describes aim version, which has no -h.
const versionUsage = `Usage: aim version
       aim --version

Prints one line: the release of the command line (its flags, tables and manifests), the commit
aim was built from, and the Go version it was built with.
`

// cliCommands are the commands of aim in the order of aim help, each subcommand after its
// parent.
func cliCommands() []cliCommand {
	return []cliCommand{
		{name: "se", flags: func(w io.Writer) *flag.FlagSet { fs, _, _ := newSEFlags(w); return fs }},
		{name: "thresholds", flags: func(w io.Writer) *flag.FlagSet { fs, _, _ := newThresholdsFlags(w); return fs }},
		{name: "amp", flags: func(w io.Writer) *flag.FlagSet { fs, _, _ := newAMPFlags(w); return fs }},
		{name: "gd", flags: func(w io.Writer) *flag.FlagSet { fs, _, _ := newGDFlags(w); return fs }},
		{name: "erm", flags: func(w io.Writer) *flag.FlagSet { fs, _, _ := newERMFlags(w); return fs }},
		{name: "smi", usage: smiUsage},
		{name: "smi se", flags: func(w io.Writer) *flag.FlagSet { fs, _, _ := newSMISEFlags(w); return fs }},
		{name: "smi thresholds", flags: func(w io.Writer) *flag.FlagSet { fs, _, _ := newSMIThresholdsFlags(w); return fs }},
		{name: "smi amp", flags: func(w io.Writer) *flag.FlagSet { fs, _, _ := newSMIAMPFlags(w); return fs }},
		{name: "smi sgd", flags: func(w io.Writer) *flag.FlagSet { fs, _, _ := newSMISGDFlags(w); return fs }},
		{name: "sweep", usage: sweepUsage},
		{name: "sweep run", args: "spec.toml", flags: func(w io.Writer) *flag.FlagSet { fs, _, _ := newSweepRunFlags(w); return fs }},
		{name: "sweep check", args: "spec.toml", flags: func(w io.Writer) *flag.FlagSet { return newSweepFlags("check", w) }},
		{name: "sweep merge", args: "spec.toml", flags: func(w io.Writer) *flag.FlagSet { return newSweepFlags("merge", w) }},
		{name: "plot", args: "file.csv ...", flags: func(w io.Writer) *flag.FlagSet { fs, _ := newPlotFlags(w); return fs }},
		{name: "bench", flags: func(w io.Writer) *flag.FlagSet { fs, _, _ := newBenchFlags(w); return fs }},
		{name: "device", flags: func(w io.Writer) *flag.FlagSet { fs, _ := newDeviceFlags(w); return fs }},
		{name: "version", usage: versionUsage, noHelp: true},
	}
}

// file is the page of the command: docs/cli/smi-se.md for smi se.
func (c cliCommand) file() string { return strings.ReplaceAll(c.name, " ", "-") + ".md" }

// parent is the command c is a subcommand of ("smi" for smi se), or "".
func (c cliCommand) parent() string {
	p, _, ok := strings.Cut(c.name, " ")
	if !ok {
		return ""
	}
	return p
}

// usageText is the text -h prints before the flags.
func (c cliCommand) usageText() string {
	if c.flags == nil {
		return c.usage
	}
	return infoOf(c.flags(io.Discard)).usage
}

// cliSummary returns the line that introduces the command in the usage of its parent (aim help
// for a command, aim smi -h for smi se): the words after "  aim <command> [args]  ", with
// their continuation lines.
func cliSummary(c cliCommand, byName map[string]cliCommand) (string, error) {
	parentUsage := mainUsage
	if p := c.parent(); p != "" {
		parentUsage = byName[p].usageText()
	}
	lines := strings.Split(parentUsage, "\n")
	for k, line := range lines {
		rest, ok := strings.CutPrefix(line, "  aim "+c.name)
		if !ok || rest != "" && rest[0] != ' ' {
			continue
		}
		var words []string
		if _, s, ok := strings.Cut(strings.TrimSpace(rest), "  "); ok {
			words = append(words, strings.TrimSpace(s))
		} else if strings.HasPrefix(rest, "  ") {
			words = append(words, strings.TrimSpace(rest))
		}
		for _, next := range lines[k+1:] {
			if !strings.HasPrefix(next, "      ") || strings.TrimSpace(next) == "" {
				break
			}
			words = append(words, strings.TrimSpace(next))
		}
		if len(words) > 0 {
			return strings.Join(words, " "), nil
		}
	}
	where := "aim help"
	if p := c.parent(); p != "" {
		where = "aim " + p + " -h"
	}
	return "", fmt.Errorf("aim %s: no line \"  aim %s ...  <what it does>\" in the usage of %s", c.name, c.name, where)
}

// flagNames returns the names of the flags of fs that -h lists (not the deprecated spellings),
// in the order of flag.VisitAll (sorted).
func flagNames(fs *flag.FlagSet) []string {
	i := infoOf(fs)
	var names []string
	fs.VisitAll(func(f *flag.Flag) {
		if _, old := i.aliases[f.Name]; !old && f.Name != infoFlag {
			names = append(names, f.Name)
		}
	})
	return names
}

// Reference is what `aim help --json` prints: every command of aim with its flags, for the
// programs that drive aim (the Python package checks its job functions against it).
type Reference struct {
	Program  string             `json:"program"`
	Version  string             `json:"version"` // the release of the command line (semver)
	Commands []ReferenceCommand `json:"commands"`
}

// ReferenceCommand is one command of the Reference.
type ReferenceCommand struct {
	Name    string          `json:"name"`    // as typed after aim: "smi se"
	Summary string          `json:"summary"` // its line in the usage of its parent
	Usage   string          `json:"usage"`   // the text -h prints before the flags
	Args    string          `json:"args"`    // positional arguments ("spec.toml"), or ""
	Flags   []ReferenceFlag `json:"flags"`   // nil for a command that dispatches (aim smi)
}

// ReferenceFlag is one flag of a command (deprecated spellings are not listed).
type ReferenceFlag struct {
	Name string `json:"name"`
	// Type is "bool", "int", "uint", "float", "string", "list" (a comma list or a range
	// "a:b:n", "a:b:n:log"), "float|auto" (a number or auto) or "auto|json|none" (one of
	// these words): the placeholder -h writes, "bool" for a switch.
	Type       string `json:"type"`
	Default    string `json:"default"`
	Usage      string `json:"usage"`
	Repeatable bool   `json:"repeatable"`
}

// reference returns the Reference of aim.
func reference() (Reference, error) {
	cmds := cliCommands()
	byName := map[string]cliCommand{}
	for _, c := range cmds {
		byName[c.name] = c
	}
	ref := Reference{Program: "aim", Version: semver}
	for _, c := range cmds {
		summary, err := cliSummary(c, byName)
		if err != nil {
			return Reference{}, err
		}
		rc := ReferenceCommand{Name: c.name, Summary: summary, Usage: c.usageText(), Args: c.args}
		if c.flags != nil {
			fs := c.flags(io.Discard)
			rc.Flags = []ReferenceFlag{}
			for _, n := range flagNames(fs) {
				f := fs.Lookup(n)
				rc.Flags = append(rc.Flags, ReferenceFlag{Name: n, Type: referenceType(f), Default: f.DefValue,
					Usage: f.Usage, Repeatable: infoOf(fs).repeatable[n]})
			}
		}
		ref.Commands = append(ref.Commands, rc)
	}
	return ref, nil
}

// referenceType is the type of a flag's value in the Reference.
func referenceType(f *flag.Flag) string {
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return "bool"
	}
	return typeName(f)
}

// runHelp runs aim help: the usage of aim, or with --json the Reference.
func runHelp(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		fmt.Fprint(stdout, mainUsage)
		return 0
	case len(args) == 1 && strings.TrimLeft(args[0], "-") == "json":
		ref, err := reference()
		if err != nil {
			fmt.Fprintf(stderr, "aim help: %v\n", err)
			return 1
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(ref); err != nil {
			fmt.Fprintf(stderr, "aim help: %v\n", err)
			return 1
		}
		return 0
	}
	fmt.Fprintf(stderr, "aim help: unexpected argument %q\nUsage: aim help [--json]\n", args[0])
	return 2
}
