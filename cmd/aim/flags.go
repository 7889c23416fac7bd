package main

// flags.go: the flag definitions the commands share, and the parsing every command goes
// through. The sweep runner fills its runs' configurations through the same definitions, so a
// sweep key is a flag of its job.
//
// The shared flags say the same thing in every command: their usage text starts with the
// sentence of vocabulary (docs/cli/vocabulary.md is the table of it), and a command adds what
// is its own after "; ". Parsing refuses, as bad input (status 2), an unknown flag (with the
// nearest flag's name), a value of the wrong type, a flag given twice (but the repeatable
// ones) and conflicting flags; deprecated spellings set their new flag and warn on stderr.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/aimtheory/aim/cmd/aim/internal/job/aimjob"
	"github.com/aimtheory/aim/cmd/aim/internal/job/smijob"

	"github.com/aimtheory/aim/cmd/aim/internal/figure"
	"github.com/aimtheory/aim/cmd/aim/internal/job"
)

var errHelp = errors.New("help requested")

// usagef returns bad input: the command exits with status 2 and writes nothing.
func usagef(format string, args ...any) error { return job.Inputf(format, args...) }

// listFlag collects a flag that may be repeated and may hold comma lists or ranges.
type listFlag []string

// String returns the values given, space-separated.
func (l *listFlag) String() string { return strings.Join(*l, " ") }

// Set adds a value.
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// typeName is the placeholder of the value in the help.
func (l *listFlag) typeName() string { return "list" }

// gridValue is a string flag that holds a comma list or a range ("a:b:n", "a:b:n:log"): a
// grid. -h and the reference (aim help --json) call its type list.
type gridValue struct{ p *string }

func (g gridValue) String() string {
	if g.p == nil {
		return ""
	}
	return *g.p
}

func (g gridValue) Set(s string) error { *g.p = s; return nil }

func (g gridValue) typeName() string { return "list" }

// gridVar registers the grid flag name into p, its default *p.
func gridVar(fs *flag.FlagSet, p *string, name, usage string) { fs.Var(gridValue{p}, name, usage) }

// autoFloat is a float flag whose value may be auto (NaN): the command's own choice.
type autoFloat struct{ p *float64 }

func (a autoFloat) String() string {
	if a.p == nil || math.IsNaN(*a.p) {
		return "auto"
	}
	return strconv.FormatFloat(*a.p, 'g', -1, 64)
}

func (a autoFloat) Set(s string) error {
	if s == "auto" {
		*a.p = math.NaN()
		return nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) {
		return errors.New("needs a number or auto")
	}
	*a.p = v
	return nil
}

func (a autoFloat) typeName() string { return "float|auto" }

// vocabulary is the first sentence of the usage of every flag that several commands share:
// the same words wherever the flag is. docs/cli/vocabulary.md tabulates it.
var vocabulary = map[string]string{
	"seed":         "random seed",
	"seeds":        "independent runs per grid point, run s with seed --seed + s",
	"workers":      "CPU goroutines (0: all cores); the results do not depend on it",
	"threads":      "threads of the CPU backend's BLAS library, OpenBLAS or MKL (0: all cores)",
	"device":       "where it runs: a comma list of cpu, cpu:K (K CPU devices), cuda, cuda:I, cuda:all and auto, consecutive ordinals cuda:I,J,... being one group of GPUs",
	"max-iter":     "iteration cap",
	"tol":          "convergence tolerance",
	"damping":      "damping theta in [0, 1), the weight on the old iterate: x <- theta x + (1 - theta) x_new (0: undamped)",
	"out":          "CSV output (the manifest goes beside it as .json)",
	"plot":         "plot output, .png, .svg or .pdf; empty for none",
	"size":         figure.SizeUsage + " (default 6x4.2in)",
	"title":        `the figure's title ("" for none; default: the automatic title)`,
	"progress":     "progress on stderr: auto (a bar when stderr is a terminal), json (one JSON line per unit of work done: {\"event\":\"progress\",\"what\":...,\"done\":k,\"total\":n,\"seconds\":t}) or none",
	"quiet":        "the same as --progress none",
	"gen-samples":  "Monte Carlo samples of the generalisation error (0: none)",
	"gen-inner":    "inner samples per Monte Carlo sample of the generalisation error",
	"weight-decay": "weight decay lambda >= 0: the training loss gains lambda Tr S",
	"teacher":      "the law of the target S: mp (the paper's, S = W W^T / sqrt(R D), spectrum Marchenko-Pastur) or powerlaw:GAMMA (eigenvalues w_k ~ k^-gamma for k <= R = floor(rho D), 0 beyond, Haar eigenvectors, (1/D) sum w^2 = 1)",
	"precision":    "arithmetic of the two large contractions of every iteration or step, the forward product X S and the back-projection sum_mu X_mu^T (C_mu X_mu): fp64, fp32, tf32 (TF32 inputs, fp32 sums) or bf16x9 (fp32 emulated by three bfloat16 parts); the eigendecomposition, the RIE map, the channel and everything else stay fp64",
}

// usage returns the usage of the shared flag name, with the command's own words more.
func usage(name, more string) string {
	v, ok := vocabulary[name]
	if !ok {
		panic("flag " + name + " is not in the vocabulary")
	}
	if more == "" {
		return v
	}
	return v + "; " + more
}

// flagInfo is what a command's flag set carries beside its flags: the help, where warnings go,
// the deprecated spellings and the repeatable flags. It rides in the set as a hidden flag
// (infoFlag), so that it lives and dies with the set.
type flagInfo struct {
	name       string            // "aim se"
	usage      string            // the text before the flags in -h
	stderr     io.Writer         // deprecation warnings
	aliases    map[string]string // deprecated spelling -> its flag
	notes      map[string]string // deprecated spelling -> what the warning adds
	repeatable map[string]bool
	warned     []string
}

const infoFlag = "\x00info"

func (i *flagInfo) String() string   { return "" }
func (i *flagInfo) Set(string) error { return errors.New("not a flag") }

// infoOf returns the information of fs; a set made without newFlags gets an empty one.
func infoOf(fs *flag.FlagSet) *flagInfo {
	if f := fs.Lookup(infoFlag); f != nil {
		return f.Value.(*flagInfo)
	}
	i := &flagInfo{name: fs.Name(), stderr: io.Discard}
	fs.Var(i, infoFlag, "")
	return i
}

// newFlags returns the flag set of a command whose -h prints usage and the flags' defaults.
// The flag package prints nothing itself: parse reports every problem.
func newFlags(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	i := infoOf(fs)
	i.usage, i.stderr = usage, stderr
	return fs
}

// deprecate registers old as a deprecated spelling of the flag name (registered already): it
// sets that flag, and parse warns on stderr. note, if not empty, is added to the warning.
func deprecate(fs *flag.FlagSet, old, name, note string) {
	f := fs.Lookup(name)
	if f == nil {
		panic("deprecate: no flag " + name)
	}
	i := infoOf(fs)
	if i.aliases == nil {
		i.aliases, i.notes = map[string]string{}, map[string]string{}
	}
	i.aliases[old], i.notes[old] = name, note
	fs.Var(f.Value, old, "deprecated: "+name)
}

// repeatable marks the flag name as one that may be given several times.
func repeatable(fs *flag.FlagSet, name string) {
	i := infoOf(fs)
	if i.repeatable == nil {
		i.repeatable = map[string]bool{}
	}
	i.repeatable[name] = true
}

// canonical returns the flag a spelling sets.
func canonical(fs *flag.FlagSet, name string) string {
	if n, ok := infoOf(fs).aliases[name]; ok {
		return n
	}
	return name
}

// warnf writes a warning of the command on its stderr.
func warnf(fs *flag.FlagSet, format string, args ...any) {
	i := infoOf(fs)
	fmt.Fprintf(i.stderr, "%s: warning: %s\n", i.name, fmt.Sprintf(format, args...))
}

// parseFlags parses args, turning -h into errHelp (after printing the help) and every other
// problem into bad input.
func parseFlags(fs *flag.FlagSet, args []string) error {
	files, err := parse(fs, args, false)
	if err != nil {
		return err
	}
	if len(files) > 0 {
		return usagef("unexpected argument %q", files[0])
	}
	return nil
}

// parseWithFiles parses flags that may come before, between and after file arguments, and
// returns the files. -h gives errHelp; every other problem is bad input.
func parseWithFiles(fs *flag.FlagSet, args []string) ([]string, error) {
	return parse(fs, args, true)
}

// parse parses args; with interleaved, flags may follow file arguments, which it returns.
func parse(fs *flag.FlagSet, args []string, interleaved bool) ([]string, error) {
	var files []string
	rest := args
	for {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				printHelp(fs)
				return nil, errHelp
			}
			return nil, flagError(fs, err)
		}
		if fs.NArg() == 0 || !interleaved {
			files = append(files, fs.Args()...)
			break
		}
		files = append(files, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if err := checkRepeats(fs, args, interleaved); err != nil {
		return nil, err
	}
	if err := conflicts(fs, [3]string{"progress", "quiet", "--quiet is --progress none"}); err != nil {
		return nil, err
	}
	i := infoOf(fs)
	for _, old := range setSpellings(fs) {
		if name, ok := i.aliases[old]; ok && !slices.Contains(i.warned, old) {
			i.warned = append(i.warned, old)
			msg := fmt.Sprintf("--%s is deprecated, use --%s (the same value)", old, name)
			if n := i.notes[old]; n != "" {
				msg += "; " + n
			}
			warnf(fs, "%s", msg)
		}
	}
	return files, nil
}

// given2 returns the spellings set on the command line.
func setSpellings(fs *flag.FlagSet) []string {
	var names []string
	fs.Visit(func(f *flag.Flag) { names = append(names, f.Name) })
	return names
}

// given reports whether the flag name was set on the command line, in any spelling.
func given(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || canonical(fs, f.Name) == name })
	return set
}

// checkRepeats refuses a flag given twice (in any spelling), but a repeatable one. It reads
// args as the flag package does.
func checkRepeats(fs *flag.FlagSet, args []string, interleaved bool) error {
	seen := map[string]string{} // flag -> the spelling first given
	for k := 0; k < len(args); k++ {
		a := args[k]
		if a == "--" {
			break
		}
		if len(a) < 2 || a[0] != '-' {
			if interleaved {
				continue
			}
			break
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := fs.Lookup(name)
		if f == nil {
			continue
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !hasValue && !(ok && b.IsBoolFlag()) {
			k++
		}
		c := canonical(fs, name)
		if infoOf(fs).repeatable[c] {
			continue
		}
		if first, dup := seen[c]; dup {
			if first == name {
				return usagef("--%s given twice: give it once", name)
			}
			return usagef("--%s given twice (as --%s and --%s): give it once", c, first, name)
		}
		seen[c] = name
	}
	return nil
}

// conflicts returns bad input when two of the flags of a pair are both given: the second of
// each pair would be ignored, or the two contradict. why says which.
func conflicts(fs *flag.FlagSet, pairs ...[3]string) error {
	for _, p := range pairs {
		if given(fs, p[0]) && given(fs, p[1]) {
			return usagef("--%s and --%s conflict: %s", p[0], p[1], p[2])
		}
	}
	return nil
}

// flagError turns an error of the flag package into bad input that says what to do.
func flagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		name = strings.TrimLeft(name, "-")
		return unknownFlagError{cmd: infoOf(fs).name, name: name, suggestion: nearestFlag(fs, name), usage: usageLine(fs)}
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		return job.InputError{Err: fmt.Errorf("--%s needs a value", strings.TrimLeft(name, "-"))}
	}
	// invalid value "v" for flag -name: reason; invalid boolean value "v" for -name: reason
	for _, pre := range []string{"invalid value ", "invalid boolean value "} {
		rest, ok := strings.CutPrefix(msg, pre)
		if !ok {
			continue
		}
		q, err2 := strconv.QuotedPrefix(rest)
		if err2 != nil {
			break
		}
		v, _ := strconv.Unquote(q)
		rest = strings.TrimPrefix(strings.TrimPrefix(rest[len(q):], " for flag "), " for ")
		name, reason, _ := strings.Cut(rest, ": ")
		name = strings.TrimLeft(name, "-")
		return flagValueError{name: canonical(fs, name), value: v, want: wantOf(fs.Lookup(name), reason)}
	}
	return job.InputError{Err: err}
}

// wantOf says what the flag f takes, for an error about its value.
func wantOf(f *flag.Flag, reason string) string {
	if f != nil {
		if g, ok := f.Value.(flag.Getter); ok {
			switch g.Get().(type) {
			case bool:
				return "needs true or false"
			case int, int64:
				return "needs an integer"
			case uint, uint64:
				return "needs an integer >= 0"
			case float64:
				return "needs a number"
			}
		}
	}
	return reason
}

// unknownFlagError is a flag the command does not have.
type unknownFlagError struct{ cmd, name, suggestion, usage string }

func (e unknownFlagError) Error() string {
	s := "unknown flag --" + e.name
	if e.suggestion != "" {
		s += "; did you mean --" + e.suggestion + "?"
	}
	return s + "\n" + e.usage + "\nRun '" + e.cmd + " -h' for the flags."
}

// Unwrap makes the error bad input (status 2).
func (e unknownFlagError) Unwrap() error { return job.InputError{Err: errors.New(e.Error())} }

// flagValueError is a value that the flag's type refuses.
type flagValueError struct{ name, value, want string }

func (e flagValueError) Error() string { return fmt.Sprintf("--%s %s: %s", e.name, e.value, e.want) }

// Unwrap makes the error bad input (status 2).
func (e flagValueError) Unwrap() error { return job.InputError{Err: errors.New(e.Error())} }

// usageLine is the first line of the command's usage text.
func usageLine(fs *flag.FlagSet) string {
	line, _, _ := strings.Cut(infoOf(fs).usage, "\n")
	if !strings.Contains(line, fs.Name()) {
		return "Usage: " + fs.Name() + " [flags]"
	}
	return line
}

// nearestFlag returns the flag whose name is nearest to name in edit distance, if near enough
// to be what was meant: at most 2 edits, and fewer than half the name's letters.
func nearestFlag(fs *flag.FlagSet, name string) string {
	best, bestD := "", 3
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name == infoFlag {
			return
		}
		d := editDistance(strings.ToLower(name), strings.ToLower(f.Name))
		if d < bestD && 2*d < len(name)+1 {
			best, bestD = canonical(fs, f.Name), d
		}
	})
	return best
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// printHelp writes the command's usage and its flags (not the deprecated spellings) on stderr.
func printHelp(fs *flag.FlagSet) {
	i := infoOf(fs)
	fmt.Fprint(i.stderr, i.usage)
	printDefaults(i.stderr, fs)
}

// printDefaults writes the flags of fs with their usage and defaults, as --name.
func printDefaults(w io.Writer, fs *flag.FlagSet) {
	i := infoOf(fs)
	var names []string
	fs.VisitAll(func(f *flag.Flag) {
		if _, old := i.aliases[f.Name]; !old && f.Name != infoFlag {
			names = append(names, f.Name)
		}
	})
	sort.Strings(names)
	for _, n := range names {
		f := fs.Lookup(n)
		line := "  --" + n
		if t := typeName(f); t != "" {
			line += " " + t
		}
		line += "\n    \t" + strings.ReplaceAll(f.Usage, "\n", "\n    \t")
		if d := f.DefValue; d != "" && d != "false" && d != "0" && !strings.Contains(f.Usage, "(default") {
			if typeName(f) == "string" {
				d = strconv.Quote(d)
			}
			line += " (default " + d + ")"
		}
		fmt.Fprintln(w, line)
	}
}

// typeName is the placeholder of f's value in the help: "" for a switch.
func typeName(f *flag.Flag) string {
	if t, ok := f.Value.(interface{ typeName() string }); ok {
		return t.typeName()
	}
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return ""
	}
	if g, ok := f.Value.(flag.Getter); ok {
		switch g.Get().(type) {
		case int, int64:
			return "int"
		case uint, uint64:
			return "uint"
		case float64:
			return "float"
		}
	}
	return "string" // a string, or text parsed by a flag.Func (--title, --size)
}

// figureFlags registers --size and --title, the figure options (job.Figure), on every command
// that draws a figure: --size the figure's size, a bad value bad input (status 2, nothing
// written); --title its title, "" for none, absent the automatic title.
func figureFlags(fs *flag.FlagSet, f *job.Figure) {
	fs.Var(&f.Size, "size", usage("size", ""))
	fs.Func("title", usage("title", ""), func(v string) error {
		f.Title, f.TitleSet = v, true
		return nil
	})
}

// outputFlags registers --out, --plot, --size, --title, --progress and --quiet, which every
// command that writes a table shares.
func outputFlags(fs *flag.FlagSet, out, plot *string, f *job.Figure, pm *progressMode) {
	fs.StringVar(out, "out", *out, usage("out", ""))
	fs.StringVar(plot, "plot", *plot, usage("plot", ""))
	figureFlags(fs, f)
	progressFlags(fs, pm, "")
}

// dampingFlag registers --damping into d (NaN: auto, the command's choice, said by more).
func dampingFlag(fs *flag.FlagSet, d *float64, more string) {
	fs.Var(autoFloat{d}, "damping", usage("damping", more))
}

// modelFlags registers the flags every AIM command (se, amp, gd) shares, into m; withHardmax
// is false for gd, whose students are softmax or linear.
func modelFlags(fs *flag.FlagSet, m *aimjob.Model, pm *progressMode, withHardmax bool) {
	if withHardmax {
		fs.StringVar(&m.Channel, "channel", m.Channel, "output channel: softmax, hardmax, or linear (y = h at T = 1: the extensive-width quadratic network, width ratio kappa = rho)")
		fs.BoolVar(&m.PaperCompat, "paper-compat", m.PaperCompat, "hardmax: use the published channel formula (bivariate density in place of the CDF derivative) that the paper's curves come from")
		fs.IntVar(&m.T, "T", m.T, "tokens per sequence, an integer (hardmax: 2 to 6; linear: 1, its default)")
	} else {
		fs.StringVar(&m.Channel, "channel", m.Channel, "output channel: softmax, or linear (y = h at T = 1: the extensive-width quadratic network, width ratio kappa = rho); the hardmax output has no useful gradient")
		fs.IntVar(&m.T, "T", m.T, "tokens per sequence, an integer (linear: 1, its default)")
	}
	fs.Float64Var(&m.Beta, "beta", m.Beta, "softmax inverse temperature")
	fs.Var((*listFlag)(&m.Rho), "rho", "rank ratio rho = R/D: a value, list or range; repeatable, each value once (default 0.5)")
	repeatable(fs, "rho")
	outputFlags(fs, &m.Out, &m.Plot, &m.Figure, pm)
	fs.StringVar(&m.Axes, "axes", m.Axes, "plot axes: auto, lin, logx, logy or loglog (auto: lin for softmax, loglog for hardmax)")
}

// teacherFlag registers --teacher, the law of the target S, into m; more is the command's own
// words.
func teacherFlag(fs *flag.FlagSet, m *aimjob.Model, more string) {
	fs.StringVar(&m.Teacher, "teacher", m.Teacher, usage("teacher", more))
}

// theoryDFlag registers --D of the theory commands (se, erm), the power-law teacher's
// dimensions, into m.
func theoryDFlag(fs *flag.FlagSet, m *aimjob.Model) {
	gridVar(fs, &m.Dims, "D", "the power-law teacher's dimension D: a list or range of integers, one curve each (--teacher powerlaw:GAMMA only, which needs it: its theory is that of the D eigenvalues, with no D-independent limit; the MP teacher's theory is D-independent)")
}

// checkRhos refuses a rho given twice (in one list or over repeated --rho): it would write
// every row twice.
func checkRhos(rhos []float64) error {
	for i, r := range rhos {
		if slices.Contains(rhos[:i], r) {
			return usagef("--rho %g given twice", r)
		}
	}
	return nil
}

// noiseFlag registers --noise, the softmax channel's label noise (aim se, aim amp), into m.
func noiseFlag(fs *flag.FlagSet, m *aimjob.Model) {
	fs.Float64Var(&m.Noise, "noise", m.Noise, "label noise Delta >= 0: y = g(h) + sqrt(Delta) xi per output entry (softmax: 2 <= T <= 6, CPU only for amp; linear: every device)")
}

// simFlags registers the flags the simulations (amp, gd) share beside modelFlags, into s.
func simFlags(fs *flag.FlagSet, s *aimjob.Sim, pm *progressMode, withHardmax bool) {
	modelFlags(fs, &s.Model, pm, withHardmax)
	fs.IntVar(&s.D, "D", s.D, "token dimension")
	fs.IntVar(&s.Seeds, "seeds", s.Seeds, usage("seeds", "every alpha shares its teachers"))
	fs.Uint64Var(&s.Seed, "seed", s.Seed, usage("seed", "run s uses seed + s for its teacher, data and start"))
	gridVar(fs, &s.Device, "device", usage("device", "one device or one group (the samples sharded over its GPUs; cpu:K, a check that groups change nothing)"))
	fs.IntVar(&s.Workers, "workers", s.Workers, usage("workers", ""))
	fs.IntVar(&s.Threads, "threads", s.Threads, usage("threads", ""))
	fs.StringVar(&s.Mode, "tokens", s.Mode, "tokens X stored on the device, or streamed: regenerated chunk by chunk from the seed at every use, never stored (same values); auto stores when the largest run fits")
	fs.IntVar(&s.Chunk, "chunk", s.Chunk, "samples per chunk of streamed tokens (0: the largest that fits, at most 4096)")
	fs.StringVar(&s.MaxMemory, "max-memory", s.MaxMemory, "cap on a run's device memory, e.g. 4GiB or 512MiB (default: the device's free memory)")
	fs.StringVar(&s.Precision, "precision", s.Precision, usage("precision", "the CPU emulates tf32 and bf16x9 rounding exactly; the CUDA backend computes them with cuBLAS's GemmEx, tf32 and bf16x9 on the tensor cores"))
	if withHardmax {
		fs.IntVar(&s.Points, "points", s.Points, "hardmax and noisy softmax, T > 2: lattice points per shift (x 8 shifts) of each sample's g_out")
	}
}

// smiFlags registers the flags every `aim smi` subcommand shares, into f; withC is false where
// --c is a grid (thresholds).
func smiFlags(fs *flag.FlagSet, f *smijob.SMI, withC bool, pm *progressMode) {
	fs.IntVar(&f.L, "L", f.L, "attention layers, each of rank 1 (se, thresholds and amp: L <= 4, with L = 4 sampled; sgd: any L)")
	fs.IntVar(&f.M, "M", f.M, "tokens per sequence")
	if withC {
		fs.Float64Var(&f.C, "c", f.C, "skip (residual) strength c >= 0")
	}
	fs.Float64Var(&f.Beta, "beta", f.Beta, "softmax inverse temperature")
	outputFlags(fs, &f.Out, &f.Plot, &f.Figure, pm)
	fs.IntVar(&f.Workers, "workers", f.Workers, usage("workers", ""))
}

// smiDampingNote warns where --damping is given to aim smi se, smi thresholds or smi amp,
// whose papers write the weight on the new iterate: it says what the value means here.
func smiDampingNote(fs *flag.FlagSet, d float64) {
	if math.IsNaN(d) {
		return
	}
	warnf(fs, "--damping is theta, the weight on the old iterate, as in every aim command (aim smi took the weight on the new one): --damping %g keeps %g of the old iterate (for the former meaning of %.12g, write --damping %.12g)",
		d, d, d, 1-d)
}

// smiSEFlags registers the flags of the SMI state evolution's Monte Carlo average, into o.
func smiSEFlags(fs *flag.FlagSet, o *smijob.SMISEOptions) {
	fs.IntVar(&o.Samples, "samples", o.Samples, "Monte Carlo (xi, eta) draws of the channel average per SE iteration")
	fs.Uint64Var(&o.Seed, "seed", o.Seed, usage("seed", "of the SE's draws"))
	fs.BoolVar(&o.MonteCarlo, "monte-carlo", o.MonteCarlo, "plain pseudo-random draws instead of randomised quasi-Monte Carlo (shifted Halton)")
	fs.Float64Var(&o.Epsilon, "epsilon", o.Epsilon, "ridge of the channel variance V = I - Q + epsilon I")
	dampingFlag(fs, &o.Damping, "auto: the authors' 0.2 at L = 2, 0.4 at L >= 3")
	fs.IntVar(&o.MaxIter, "max-iter", o.MaxIter, usage("max-iter", "SE iterations"))
	fs.Float64Var(&o.Tol, "tol", o.Tol, usage("tol", "stop when every layer's estimated distance to the fixed point, |G(Q) - Q|/(1 - slope), is below tol (sampled integrals, L >= 3: or, where the iterates jitter, when |G(Q) - Q| is at most half the standard error of G; manifest noise_limited)"))
	quadMaxEvalFlag(fs, &o.QuadMaxEval)
	integralFlags(fs, &o.SMIIntegrals, smijob.SMISEDefaultDraws)
}

// integralFlags registers --draws, --cubature and --device, the choice of the L = 3 channel
// integrals, into o; def states the command's default number of draws.
func integralFlags(fs *flag.FlagSet, o *smijob.SMIIntegrals, def string) {
	fs.IntVar(&o.Draws, "draws", o.Draws, fmt.Sprintf("L >= 3: importance-sampling draws per channel integral, in two independent halves (0: the default, %s)", def))
	fs.BoolVar(&o.Cubature, "cubature", o.Cubature, "L = 3: the budget-capped adaptive cubature instead of importance sampling (docs/validation/smi-channel.md; L = 4 has none)")
	gridVar(fs, &o.Device, "device", usage("device", "one device, for the L >= 3 sampled channel integrals: cpu runs them in process (the same estimates to rounding)"))
}

// quadMaxEvalFlag registers --quad-max-eval, the SMI channel integral's budget, into n.
func quadMaxEvalFlag(fs *flag.FlagSet, n *int) {
	fs.IntVar(n, "quad-max-eval", *n, "evaluation budget of each sample's channel integral (0: the default, 20 000; L = 3 errors per budget: docs/validation/smi-channel.md)")
}

// env is what a job reports to: notes on stderr, its progress there as pm says (--progress),
// and the program's version and command line for its manifest.
func env(stderr io.Writer, pm progressMode) job.Env {
	return job.Env{Log: stderr, Version: programVersion(), Args: os.Args[1:],
		Progress: func(total int, what string) job.Progress { return newProgress(total, what, stderr, pm) }}
}

// envContext is env with the context that stops the job when cancelled.
func envContext(ctx context.Context, stderr io.Writer, pm progressMode) job.Env {
	e := env(stderr, pm)
	e.Context = ctx
	return e
}

// report returns what prints a job's summary line (when it wrote its files) and returns its
// error: report(stdout)(job.Execute...(c, env)).
func report(stdout io.Writer) func(summary string, err error) error {
	return func(summary string, err error) error {
		if summary != "" {
			fmt.Fprintln(stdout, summary)
		}
		return err
	}
}
