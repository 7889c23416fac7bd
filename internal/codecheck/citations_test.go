package codecheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// citation is a path of the repository's documentation as the code, the help texts and the
// docs cite it, with the section number that may follow it: "docs/theory/aim.md 2.3",
// "docs/design.md section 5", "docs/theory/smi.md, section 2.1".
var citation = regexp.MustCompile(`\b((?:docs/[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.md)|README\.md|CHANGELOG\.md)(?:,?\s+(?:sections?\s+)?(\d+(?:\.\d+)*)\b)?`)

// outside is a citation of a file that a clone does not have.
var outside = regexp.MustCompile(`\.\./shared/`)

// citingFiles returns the files whose text may cite the docs: Go sources and tests, Markdown,
// the Makefile, shell scripts, TOML examples, CUDA sources and the CI script, relative to root.
func citingFiles(root string) ([]string, error) {
	return Files(root, func(name string) bool {
		return name == "vendor" || name == "results" || (strings.HasPrefix(name, ".") && name != ".ci")
	}, func(name string) bool {
		switch filepath.Ext(name) {
		case ".go", ".md", ".sh", ".toml", ".cu", ".cuh":
			return true
		}
		return name == "Makefile" || name == "run"
	})
}

// headings returns the section numbers of a Markdown file's headings: "## 2. Bayes-optimal
// theory" gives "2", "### 2.3 Hardmax" gives "2.3".
func headings(text string) map[string]bool {
	out := map[string]bool{}
	re := regexp.MustCompile(`(?m)^#+\s+(\d+(?:\.\d+)*)\.?\s`)
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		out[m[1]] = true
	}
	return out
}

// TestCitations: every documentation path that the code, the help texts, the scripts and the
// docs cite exists in the repository, every section number cited after it is a heading of
// that file, and nothing cites a file outside the repository (a folder beside the checkout,
// such as the one the sources were drafted in), which a clone does not have. The reference
// data's provenance may name where they came from.
func TestCitations(t *testing.T) {
	root, _, err := ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	files, err := citingFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	secs := map[string]map[string]bool{}
	cited := 0
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for i, line := range strings.Split(text, "\n") {
			if outside.MatchString(line) && !strings.Contains(f, "testdata/") {
				t.Errorf("%s:%d cites a file outside the repository: %s", f, i+1, strings.TrimSpace(line))
			}
		}
		for _, m := range citation.FindAllStringSubmatchIndex(text, -1) {
			path := text[m[2]:m[3]]
			line := strings.Count(text[:m[0]], "\n") + 1
			cited++
			hs, ok := secs[path]
			if !ok {
				doc, err := os.ReadFile(filepath.Join(root, path))
				if err != nil {
					t.Errorf("%s:%d cites %s, which is not in the repository", f, line, path)
					secs[path] = nil
					continue
				}
				hs = headings(string(doc))
				secs[path] = hs
			}
			if hs == nil || m[4] < 0 {
				continue
			}
			if sec := text[m[4]:m[5]]; strings.HasPrefix(path, "docs/") && !hs[sec] {
				t.Errorf("%s:%d cites %s section %s, which %s has no heading for", f, line, path, sec, path)
			}
		}
	}
	if cited < 100 {
		t.Errorf("%d citations found in %d files: the scan is broken", cited, len(files))
	}
	t.Logf("%d citations of %d documents in %d files", cited, len(secs), len(files))
}

// TestCitationForms: the citation pattern reads the forms the code uses.
func TestCitationForms(t *testing.T) {
	for text, want := range map[string][2]string{
		"(docs/theory/aim.md 2.3)":             {"docs/theory/aim.md", "2.3"},
		"docs/design.md section 5":             {"docs/design.md", "5"},
		"docs/design.md, sections 4 and 8":     {"docs/design.md", "4"},
		"see docs/validation/hardmax-gamp.md.": {"docs/validation/hardmax-gamp.md", ""},
		"README.md's table":                    {"README.md", ""},
	} {
		m := citation.FindStringSubmatch(text)
		if m == nil || m[1] != want[0] || m[2] != want[1] {
			t.Errorf("%q: %q, want %q", text, m, want)
		}
	}
}
