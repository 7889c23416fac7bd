package codecheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// trackerRules are the forms of a reference to the project's tracker or history rather than to
// the code: issue and task numbers, "#34", calendar dates, earlier sessions (a sweep's Session
// is a word of the code). A comment or a help text
// speaks of what the code does.
var trackerRules = []struct {
	re   *regexp.Regexp
	what string
	// text after the match that makes it something else (an index expression, Go's time layout)
	unless func(match, after string) bool
}{
	{regexp.MustCompile(`(?i)\b(issue|ticket|bug|pull request|merge request|milestone)s?\s*(no\.?\s*)?#?\d+\b`), "an issue number", nil},
	{regexp.MustCompile(`(?i)\btasks?\s*#\d+\b`), "a task number", nil},
	{regexp.MustCompile(`(?i)\btask\s+\d+\b`), "a task number", func(_, after string) bool {
		// "task 2 mu + h" indexes the deep sampler's tasks; a task number stands alone.
		after = strings.TrimLeft(after, " \t")
		return after != "" && !strings.ContainsAny(after[:1], ".,;:)]\n")
	}},
	{regexp.MustCompile(`(^|[\s(\[,;:])#\d+\b`), "a tracker number", func(m, _ string) bool {
		return len(m) == 7 || len(m) == 9 // a colour, #RRGGBB or #RRGGBBAA
	}},
	{regexp.MustCompile(`\b(19|20)\d\d-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])\b`), "a date", func(m, _ string) bool {
		return m == "2006-01-02" // Go's reference time layout
	}},
	{regexp.MustCompile(`(?i)\b(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2},?\s+(19|20)\d\d\b`), "a date", nil},
	{regexp.MustCompile(`(?i)\b(last|previous|earlier|prior|next|later|past)\s+sessions?\b|\bsessions?\s*#?\d+\b`), "session history", nil},
	{regexp.MustCompile(`(?i)\btracker\b|\btracked issue\b`), "a tracker", nil},
}

// trackerReference returns what the text cites, the cited words and their offset in text by
// the first rule it breaks, or "" when it cites nothing.
func trackerReference(text string) (what, cited string, at int) {
	for _, r := range trackerRules {
		for _, loc := range r.re.FindAllStringIndex(text, -1) {
			m := strings.TrimLeft(text[loc[0]:loc[1]], " \t\n([,;:")
			if r.unless != nil && r.unless(m, text[loc[1]:]) {
				continue
			}
			return r.what, m, loc[1] - len(m)
		}
	}
	return "", "", 0
}

// TestTrackerRules: the rules catch the forms of a reference and pass the code's own uses of
// the same words and digits.
func TestTrackerRules(t *testing.T) {
	for _, s := range []string{
		"fixed in issue 15", "(issue\n17; NoisySoftmax computes T = 2", "see #34", "as task 12.", "task #3",
		"(task 12)", "on 2026-12-04 the", "Dec 4, 2026", "in the previous session", "session 3", "Issue #2",
		"the tracker", "bug 7",
	} {
		if what, _, _ := trackerReference(s); what == "" {
			t.Errorf("%q passes; want it caught", s)
		}
	}
	for _, s := range []string{
		"half h of sample mu is task 2 mu + h", "Task 2 i + h is half h", `"#0072B2"`, "alpha_PR", "gonum v0.17",
		"Statistics and Computing 14 (2004) 251-260", "issues its own rank's call", "the lead's copy",
		"t.Format(\"2006-01-02\")", "2 N tasks: half h", "rows 3 to 5", "runs finished in this session",
	} {
		if what, cited, _ := trackerReference(s); what != "" {
			t.Errorf("%q caught as %s (%q); want it passed", s, what, cited)
		}
	}
}

// TestNoTrackerReferences holds every comment and string literal (help texts among them) of
// the module's non-test .go files free of issue and task numbers, dates and session history.
func TestNoTrackerReferences(t *testing.T) {
	root, _, err := ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	files, err := GoFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, file := range files {
		f, err := parser.ParseFile(fset, filepath.Join(root, file), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		// report names the line of the citation: text begins on pos's line, one line per newline.
		report := func(pos token.Pos, kind, text string) {
			if what, cited, at := trackerReference(text); what != "" {
				line := fset.Position(pos).Line + strings.Count(text[:at], "\n")
				t.Errorf("%s:%d: %s cites %s (%q); say what the code does instead", file, line, kind, what, cited)
			}
		}
		for _, cg := range f.Comments {
			var text []string
			for _, c := range cg.List {
				text = append(text, strings.TrimPrefix(strings.TrimPrefix(strings.TrimSuffix(c.Text, "*/"), "//"), "/*"))
			}
			report(cg.Pos(), "a comment", strings.Join(text, "\n"))
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					if !strings.HasPrefix(lit.Value, "`") {
						s = strings.ReplaceAll(s, "\n", " ") // its escaped newlines are not lines of the file
					}
					report(lit.Pos(), "a string", s)
				}
			}
			return true
		})
	}
}
