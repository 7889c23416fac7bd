package devtest

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
)

// QuadraticCSV reads a file of the authors' published quadratic-network results
// (engine/aim/se/testdata/quadratic, its README) into its column indices and rows of numbers,
// whichever package's test calls it.
func QuadraticCSV(t testing.TB, name string) (map[string]int, [][]float64) {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(here), "..", "..", "aim", "se", "testdata", "quadratic", name)
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	recs, err := csv.NewReader(fh).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	rows := make([][]float64, 0, len(recs)-1)
	for _, rec := range recs[1:] {
		row := make([]float64, len(rec))
		for i, s := range rec {
			if row[i], err = strconv.ParseFloat(s, 64); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		rows = append(rows, row)
	}
	return col, rows
}
