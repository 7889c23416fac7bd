package table

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

// Table is a CSV of a known kind with every numeric cell parsed.
type Table struct {
	Path   string   // the file (or the path a command writes), for messages and legends
	Kind   Kind     // the command that writes it
	L      int      // layers (SMI kinds; 0 for the others)
	Header []string // the columns
	col    map[string]int
	words  map[string]bool
	cells  [][]string
	vals   [][]float64 // NaN for an empty cell and for the word columns

	Th     *Thresholds    // thresholds to draw, from the manifest beside the CSV or the run command
	Params map[string]any // the manifest's parameters (nil without a manifest)
}

// Thresholds are the vertical lines a table brings to its figure.
type Thresholds struct {
	AlphaPR   map[string]float64 // aim se: alpha_PR per rho (RhoKey), finite values only
	AlphaBarC float64            // aim se: the rho -> 0 weak-recovery threshold; NaN for none
	AlphaIT   map[string]float64 // aim se: information-theoretic threshold of a first-order transition per rho (finite only)
	AlphaAlg  map[string]float64 // aim se: algorithmic threshold (the uninformed branch's jump) per rho (finite only)
	Stability []float64          // aim smi se: alpha_l = 1/F_l per layer; NaN or Inf for none
	Fallback  []float64          // aim smi se: where stability is out of range: the onset (or the conditional threshold)
	FromCSV   bool               // Fallback holds conditional thresholds (from an `aim smi thresholds` CSV)
	// PerfectRecovery (aim erm): alpha_c per rho (RhoKey), above which the minimal nuclear-norm
	// interpolator of noiseless labels recovers S exactly (erm.PerfectRecovery).
	PerfectRecovery map[string]float64
	// Interpolation (aim erm, label noise > 0): alpha_interp per rho, below which the nuclear
	// estimator at lambda -> 0+ fits every label (erm.Interpolation).
	Interpolation map[string]float64
}

// RhoKey is the key of a rho in the thresholds' maps (and the manifests' JSON).
func RhoKey(r float64) string { return strconv.FormatFloat(r, 'g', -1, 64) }

// AlphaPRAt returns the perfect-recovery threshold of rho, or false.
func (th *Thresholds) AlphaPRAt(rho float64) (float64, bool) { return RhoAt(th.AlphaPR, rho) }

// RhoAt returns the value of rho in a map keyed by RhoKey, or false.
func RhoAt(m map[string]float64, rho float64) (float64, bool) {
	if a, ok := m[RhoKey(rho)]; ok {
		return a, true
	}
	for k, a := range m { // a rho written with more digits than the CSV keeps
		if r, err := strconv.ParseFloat(k, 64); err == nil && FormatFloat(r) == FormatFloat(rho) {
			return a, true
		}
	}
	return 0, false
}

// Rows returns the number of rows.
func (t *Table) Rows() int { return len(t.cells) }

// V returns the value of a numeric column (NaN when the column is absent or the cell empty).
func (t *Table) V(i int, name string) float64 {
	j, ok := t.col[name]
	if !ok {
		return math.NaN()
	}
	return t.vals[i][j]
}

// S returns a cell as written.
func (t *Table) S(i int, name string) string {
	j, ok := t.col[name]
	if !ok {
		return ""
	}
	return t.cells[i][j]
}

// Cells returns row i as written.
func (t *Table) Cells(i int) []string { return t.cells[i] }

// Values returns row i parsed: NaN for an empty cell and for a word column.
func (t *Table) Values(i int) []float64 { return t.vals[i] }

// Word reports whether column j holds words (which are not parsed as numbers).
func (t *Table) Word(j int) bool { return t.words[t.Header[j]] }

// Name is the file's base name without its extension, for legends.
func (t *Table) Name() string {
	b := filepath.Base(t.Path)
	return strings.TrimSuffix(b, filepath.Ext(b))
}

// Param returns a numeric parameter of the manifest, whatever its Go type.
func (t *Table) Param(name string) (float64, bool) {
	switch v := t.Params[name].(type) {
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

// Read reads a CSV, recognises its kind among defs from the header and parses every numeric
// cell. Errors name the file (name) and the line.
func Read(r io.Reader, name string, defs []Def) (*Table, error) {
	cr := csv.NewReader(r)
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: empty file (no header)", name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	header = append([]string(nil), header...)
	def, L, err := Detect(header, defs)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	t := &Table{Path: name, Kind: def.Kind, L: L, Header: header, col: map[string]int{}, words: def.words}
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
			if cell == "" || t.words[header[j]] {
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

// ReadFile reads a CSV and, when a JSON manifest lies beside it, the thresholds and the
// parameters recorded there.
func ReadFile(path string, defs []Def) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := Read(f, path, defs)
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
	t.Params, _ = man["parameters"].(map[string]any)
	th, _ := man["thresholds"].(map[string]any)
	switch t.Kind {
	case SE:
		if th != nil {
			t.Th = &Thresholds{AlphaPR: map[string]float64{}, AlphaBarC: math.NaN(), AlphaIT: map[string]float64{}, AlphaAlg: map[string]float64{}}
			for key, dst := range map[string]map[string]float64{"alpha_PR": t.Th.AlphaPR, "alpha_IT": t.Th.AlphaIT, "alpha_alg": t.Th.AlphaAlg} {
				if m, ok := th[key].(map[string]any); ok {
					for k, v := range m {
						if x, ok := v.(float64); ok {
							dst[k] = x
						}
					}
				}
			}
			if x, ok := th["alpha_bar_c"].(float64); ok {
				t.Th.AlphaBarC = x
			}
		}
	case ERM:
		if th != nil {
			t.Th = &Thresholds{PerfectRecovery: jsonMap(th["perfect_recovery"]), Interpolation: jsonMap(th["interpolation"])}
		}
	case SMISE:
		if th != nil {
			t.Th = &Thresholds{Stability: jsonList(th["stability"], t.L), Fallback: jsonList(th["onset"], t.L)}
		}
	}
	return t, nil
}

// jsonMap reads an object of numbers (keyed by RhoKey); entries that are not numbers are left
// out.
func jsonMap(v any) map[string]float64 {
	out := map[string]float64{}
	m, _ := v.(map[string]any)
	for k, x := range m {
		if f, ok := x.(float64); ok {
			out[k] = f
		}
	}
	return out
}

// NaNs returns n NaNs (n values not known).
func NaNs(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.NaN()
	}
	return out
}

// jsonList reads a list of n numbers where null (no value) is NaN.
func jsonList(v any, n int) []float64 {
	out := NaNs(n)
	list, _ := v.([]any)
	for i := 0; i < n && i < len(list); i++ {
		if x, ok := list[i].(float64); ok {
			out[i] = x
		}
	}
	return out
}
