// Package reftest finds and reads the published reference curves in ../shared/reference (beside
// the repository) for the tests.
package reftest

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// Dir returns the folder of the reference data: $AIM_REFERENCE, or shared/reference beside the
// repository root. Without it the test is skipped with the reason, except under CI (CI=true),
// where the data must be present and the test fails.
func Dir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("AIM_REFERENCE"); d != "" {
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			ref := filepath.Join(filepath.Dir(d), "shared", "reference")
			if _, err := os.Stat(ref); err == nil {
				return ref
			}
			break
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("reference data not found: expected ../shared/reference beside the repository (or set AIM_REFERENCE)")
	}
	t.Skip("reference data not found: expected ../shared/reference beside the repository (or set AIM_REFERENCE)")
	return ""
}

// Columns reads a CSV with a header and returns its numeric columns by name.
func Columns(t testing.TB, path string) map[string][]float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(rows) < 2 {
		t.Fatalf("%s: no data rows", path)
	}
	cols := map[string][]float64{}
	for _, row := range rows[1:] {
		for j, name := range rows[0] {
			if name == "" {
				continue
			}
			v, err := strconv.ParseFloat(row[j], 64)
			if err != nil {
				t.Fatalf("%s: column %s: %v", path, name, err)
			}
			cols[name] = append(cols[name], v)
		}
	}
	return cols
}

// Path joins elements under the reference folder and checks the file exists.
func Path(t testing.TB, elem ...string) string {
	t.Helper()
	p := filepath.Join(append([]string{Dir(t)}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		t.Fatal(fmt.Errorf("reference file: %w", err))
	}
	return p
}
