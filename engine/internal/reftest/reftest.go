// Package reftest reads the published reference curves that the tests compare with. The curves
// are part of the repository, in testdata/ beside this file (testdata/README.md gives their
// source repositories, commits and methods), and are embedded in the test binaries, so the tests
// that use them run wherever the binary runs and are never skipped. $AIM_REFERENCE, when set,
// names another folder with the same layout (aim/, smi/) to read instead.
package reftest

import (
	"embed"
	"encoding/csv"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"testing"
)

//go:embed testdata/aim testdata/smi
var data embed.FS

// embeddedRoot is the folder of the embedded copy inside data.
const embeddedRoot = "testdata"

// override returns $AIM_REFERENCE, the folder that replaces the embedded copy when set.
func override() string { return os.Getenv("AIM_REFERENCE") }

// Dir returns the folder the reference files are read from: $AIM_REFERENCE when set, else
// "testdata", the root of the copy embedded from this package's folder.
func Dir(t testing.TB) string {
	t.Helper()
	if d := override(); d != "" {
		return d
	}
	return embeddedRoot
}

// Path returns the name of a reference file, elem joined under Dir (for example
// Path(t, "smi", "BO_2w.csv")), and fails the test if the file does not exist. Columns and Open
// read the file by that name.
func Path(t testing.TB, elem ...string) string {
	t.Helper()
	var p string
	var err error
	if d := override(); d != "" {
		p = filepath.Join(append([]string{d}, elem...)...)
		_, err = os.Stat(p)
	} else {
		p = path.Join(append([]string{embeddedRoot}, elem...)...)
		_, err = fs.Stat(data, p)
	}
	if err != nil {
		t.Fatalf("reference file: %v", err)
	}
	return p
}

// Open opens a reference file by the name Path returned.
func Open(t testing.TB, name string) io.ReadCloser {
	t.Helper()
	var f io.ReadCloser
	var err error
	if override() != "" {
		f, err = os.Open(name)
	} else {
		f, err = data.Open(name)
	}
	if err != nil {
		t.Fatalf("reference file: %v", err)
	}
	return f
}

// Columns reads a reference CSV with a header (by the name Path returned) and returns its numeric
// columns by name; a column with an empty header (the authors' pandas index) is dropped.
func Columns(t testing.TB, name string) map[string][]float64 {
	t.Helper()
	f := Open(t, name)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(rows) < 2 {
		t.Fatalf("%s: no data rows", name)
	}
	cols := map[string][]float64{}
	for _, row := range rows[1:] {
		for j, col := range rows[0] {
			if col == "" {
				continue
			}
			v, err := strconv.ParseFloat(row[j], 64)
			if err != nil {
				t.Fatalf("%s: column %s: %v", name, col, err)
			}
			cols[col] = append(cols[col], v)
		}
	}
	return cols
}
