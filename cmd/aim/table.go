package main

// table.go: the CSV tables the run commands write, read back as parsed values. Every run
// command builds its figure from the table of the rows it writes (figures.go), and `aim plot`
// builds the same figures from the same tables read from the files.

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aimtheory/aim/cmd/aim/internal/output"
)

// csvKind names the command that writes a kind of CSV.
type csvKind string

const (
	kindSE            csvKind = "aim se"
	kindAMP           csvKind = "aim amp"
	kindGD            csvKind = "aim gd"
	kindAMPTrace      csvKind = "aim amp --trace"
	kindGDTrace       csvKind = "aim gd --trace"
	kindSMISE         csvKind = "aim smi se"
	kindSMIAMP        csvKind = "aim smi amp"
	kindSMIAMPTrace   csvKind = "aim smi amp --trace"
	kindSMISGD        csvKind = "aim smi sgd"
	kindSMIThresholds csvKind = "aim smi thresholds"
)

// ampTraceColumns and gdTraceColumns are the headers of the --trace CSVs of `aim amp` and
// `aim gd`.
var (
	ampTraceColumns = []string{"rho", "alpha", "seed", "iter", "error", "step", "delta", "seconds"}
	gdTraceColumns  = []string{"rho", "alpha", "seed", "step", "loss", "error"}
)

// tableKinds are the CSV kinds `aim plot` recognises, each with its header: a fixed header,
// or one that depends on the number of layers L (SMI), with the header length as a function
// of L, n = base + per L.
var tableKinds = []struct {
	kind      csvKind
	columns   func(L int) []string
	base, per int // layered kinds: the header has base + per L columns
}{
	{kindSE, func(int) []string { return seColumns }, 0, 0},
	{kindAMP, func(int) []string { return ampColumns }, 0, 0},
	{kindGD, func(int) []string { return gdColumns }, 0, 0},
	{kindAMPTrace, func(int) []string { return ampTraceColumns }, 0, 0},
	{kindGDTrace, func(int) []string { return gdTraceColumns }, 0, 0},
	{kindSMISE, smiSEColumns, 12, 2},
	{kindSMIAMP, smiAMPColumns, 12, 4},
	{kindSMIAMPTrace, smiAMPTraceColumns, 9, 4},
	{kindSMISGD, smiSGDColumns, 7, 3},
	{kindSMIThresholds, smiThresholdColumns, 3, 2},
}

// stringColumns are the columns that hold words, not numbers.
var stringColumns = map[string]bool{"channel": true, "converged": true, "device": true, "optimizer": true, "finished": true}

// detectKind recognises a CSV from its header; L is the number of layers of an SMI kind.
func detectKind(header []string) (csvKind, int, error) {
	for _, k := range tableKinds {
		L := 0
		if k.per > 0 {
			n := len(header) - k.base
			if n < k.per || n%k.per != 0 {
				continue
			}
			L = n / k.per
		}
		if equalStrings(header, k.columns(L)) {
			return k.kind, L, nil
		}
	}
	var want []string
	for _, k := range tableKinds {
		L := 0
		note := ""
		if k.per > 0 {
			L, note = 2, " (shown for L = 2 layers)"
		}
		want = append(want, fmt.Sprintf("  %s%s: %s", k.kind, note, strings.Join(k.columns(L), ",")))
	}
	shown := strings.Join(header, ",")
	if len(shown) > 200 {
		shown = shown[:200] + "..."
	}
	return "", 0, fmt.Errorf("unrecognised CSV header %q; expected the columns of one of:\n%s", shown, strings.Join(want, "\n"))
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// table is a CSV of a known kind with every numeric cell parsed.
type csvTable struct {
	path   string
	kind   csvKind
	L      int // layers (SMI kinds)
	header []string
	col    map[string]int
	cells  [][]string
	vals   [][]float64 // NaN for an empty cell and for the word columns

	th     *figThresholds // thresholds to draw, from the manifest beside the CSV or the run command
	params map[string]any // the manifest's parameters (nil without a manifest)
}

// thresholds are the vertical lines a table brings to its figure.
type figThresholds struct {
	alphaPR   map[string]float64 // aim se: alpha_PR per rho (rhoKey), finite values only
	alphaBarC float64            // aim se: the rho -> 0 weak-recovery threshold; NaN for none
	stability []float64          // aim smi se: alpha_l = 1/F_l per layer; NaN or Inf for none
	fallback  []float64          // aim smi se: where stability is out of range: the onset (or the conditional threshold)
	fromCSV   bool               // fallback holds conditional thresholds (from an `aim smi thresholds` CSV)
}

func (t *csvTable) rows() int { return len(t.cells) }

// v returns the value of a numeric column (NaN when the column is absent or the cell empty).
func (t *csvTable) v(i int, name string) float64 {
	j, ok := t.col[name]
	if !ok {
		return math.NaN()
	}
	return t.vals[i][j]
}

// s returns a cell as written.
func (t *csvTable) s(i int, name string) string {
	j, ok := t.col[name]
	if !ok {
		return ""
	}
	return t.cells[i][j]
}

// name is the file's base name without its extension, for legends.
func (t *csvTable) name() string {
	b := filepath.Base(t.path)
	return strings.TrimSuffix(b, filepath.Ext(b))
}

// readTable reads a CSV, recognises its kind from the header and parses every numeric cell.
// Errors name the file (name) and the line.
func readTable(r io.Reader, name string) (*csvTable, error) {
	cr := csv.NewReader(r)
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: empty file (no header)", name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	header = append([]string(nil), header...)
	kind, L, err := detectKind(header)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	t := &csvTable{path: name, kind: kind, L: L, header: header, col: map[string]int{}}
	for j, h := range header {
		t.col[h] = j
	}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		vals := make([]float64, len(rec))
		for j, cell := range rec {
			vals[j] = math.NaN()
			if cell == "" || stringColumns[header[j]] {
				continue
			}
			v, err := strconv.ParseFloat(cell, 64)
			if err != nil {
				line, _ := cr.FieldPos(j)
				return nil, fmt.Errorf("%s line %d: column %s: %q is not a number", name, line, header[j], cell)
			}
			vals[j] = v
		}
		t.cells = append(t.cells, append([]string(nil), rec...))
		t.vals = append(t.vals, vals)
	}
	return t, nil
}

// tableOf parses the rows a run command writes, with their header, into its table.
func tableOf(path string, header []string, rows [][]string) (*csvTable, error) {
	var b strings.Builder
	if err := writeRows(&b, header, rows); err != nil {
		return nil, err
	}
	return readTable(strings.NewReader(b.String()), path)
}

// readTableFile reads a CSV and, when a JSON manifest lies beside it, the thresholds and the
// parameters recorded there.
func readTableFile(path string) (*csvTable, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := readTable(f, path)
	if err != nil {
		return nil, err
	}
	mpath := output.ManifestPath(path)
	if mpath == path {
		return t, nil
	}
	data, err := os.ReadFile(mpath)
	if errors.Is(err, fs.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %v", mpath, err)
	}
	var man map[string]any
	if err := json.Unmarshal(data, &man); err != nil {
		return nil, fmt.Errorf("manifest %s: %v", mpath, err)
	}
	t.params, _ = man["parameters"].(map[string]any)
	th, _ := man["thresholds"].(map[string]any)
	switch t.kind {
	case kindSE:
		if th != nil {
			t.th = &figThresholds{alphaPR: map[string]float64{}, alphaBarC: math.NaN()}
			if m, ok := th["alpha_PR"].(map[string]any); ok {
				for k, v := range m {
					if x, ok := v.(float64); ok {
						t.th.alphaPR[k] = x
					}
				}
			}
			if x, ok := th["alpha_bar_c"].(float64); ok {
				t.th.alphaBarC = x
			}
		}
	case kindSMISE:
		if th != nil {
			t.th = &figThresholds{stability: jsonList(th["stability"], t.L), fallback: jsonList(th["onset"], t.L)}
		}
	}
	return t, nil
}

// jsonList reads a list of n numbers where null (no value) is NaN.
func jsonList(v any, n int) []float64 {
	out := nanSlice(n)
	list, _ := v.([]any)
	for i := 0; i < n && i < len(list); i++ {
		if x, ok := list[i].(float64); ok {
			out[i] = x
		}
	}
	return out
}

// param returns a numeric parameter of the manifest, whatever its Go type.
func (t *csvTable) param(name string) (float64, bool) {
	switch v := t.params[name].(type) {
	case float64:
		return v, true
	case int:
		return float64(v), true
	case uint64:
		return float64(v), true
	case int64:
		return float64(v), true
	}
	return 0, false
}

// alphaPR returns the perfect-recovery threshold of rho, or false.
func (th *figThresholds) alphaPRAt(rho float64) (float64, bool) {
	if a, ok := th.alphaPR[rhoKey(rho)]; ok {
		return a, true
	}
	for k, a := range th.alphaPR { // a rho written with more digits than the CSV keeps
		if r, err := strconv.ParseFloat(k, 64); err == nil && num(r) == num(rho) {
			return a, true
		}
	}
	return 0, false
}
