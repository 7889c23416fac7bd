// Package table holds aim's CSV tables: the one definition of each kind of row (a Schema: its
// columns in order, each with how a typed row writes its cell), and the CSVs read back as
// parsed values (Table), from which every figure is drawn. A job's CSV header, its cells, the
// kind `aim plot` recognises from a header and the columns its figure reads all come from the
// job's Schema, so no list of columns is kept in step with another by hand.
package table

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Kind names the command that writes a kind of CSV.
type Kind string

// The kinds of CSV the commands write.
const (
	SE            Kind = "aim se"
	AMP           Kind = "aim amp"
	GD            Kind = "aim gd"
	AMPTrace      Kind = "aim amp --trace"
	GDTrace       Kind = "aim gd --trace"
	ERM           Kind = "aim erm"
	ERMSpectrum   Kind = "aim erm --spectrum"
	GDSpectrum    Kind = "aim gd --spectrum" // written only: no figure reads it
	SMISE         Kind = "aim smi se"
	SMIAMP        Kind = "aim smi amp"
	SMIAMPTrace   Kind = "aim smi amp --trace"
	SMISGD        Kind = "aim smi sgd"
	SMIThresholds Kind = "aim smi thresholds"
	AIMThresholds Kind = "aim thresholds"
	Bench         Kind = "aim bench"
)

// FormatFloat writes a number as every CSV does: 12 significant digits, and NaN (no value) as
// an empty cell.
func FormatFloat(v float64) string {
	if math.IsNaN(v) {
		return ""
	}
	return strconv.FormatFloat(v, 'g', 12, 64)
}

// LayerName is the column of layer l (from 0) of a per-layer quantity: prefix and l+1, twice
// for a diagonal entry ("Q" -> Q11, Q22, ...; "cos" -> cos1, cos2, ...).
func LayerName(prefix string, l int, diag bool) string {
	if diag {
		return fmt.Sprintf("%s%d%d", prefix, l+1, l+1)
	}
	return fmt.Sprintf("%s%d", prefix, l+1)
}

// LayerNames returns the columns of n layers of a per-layer quantity (LayerName).
func LayerNames(prefix string, n int, diag bool) []string {
	out := make([]string, n)
	for l := range out {
		out[l] = LayerName(prefix, l, diag)
	}
	return out
}

// Column is one column of a row type R (or, for a per-layer quantity, one column per layer):
// its name, whether it holds words (which a reader does not parse as numbers), and how a row
// writes its cell.
type Column[R any] struct {
	name   string
	word   bool
	cell   func(r *R) string   // a single column
	diag   bool                // per-layer: the names of LayerName
	less   int                 // per-layer: L - less layers
	layers func(r *R) []string // per-layer: one cell per layer
	added  bool                // added after CSVs of the kind were first written (Added)
}

// Added marks a column added to a kind after CSVs of that kind were first written: a reader
// still recognises the kind from a header that lacks it (and its value then reads as absent,
// Table.V returns NaN), so files written before the column existed still plot.
func Added[R any](c Column[R]) Column[R] {
	c.added = true
	return c
}

// Word is a column of text written as it is.
func Word[R any](name string, cell func(r *R) string) Column[R] {
	return Column[R]{name: name, word: true, cell: cell}
}

// Bool is a column of true or false (a word column).
func Bool[R any](name string, v func(r *R) bool) Column[R] {
	return Column[R]{name: name, word: true, cell: func(r *R) string { return strconv.FormatBool(v(r)) }}
}

// Float is a column of numbers written by FormatFloat (NaN empty).
func Float[R any](name string, v func(r *R) float64) Column[R] {
	return Column[R]{name: name, cell: func(r *R) string { return FormatFloat(v(r)) }}
}

// Int is a column of whole numbers.
func Int[R any](name string, v func(r *R) int) Column[R] {
	return Column[R]{name: name, cell: func(r *R) string { return strconv.Itoa(v(r)) }}
}

// Uint is a column of seeds.
func Uint[R any](name string, v func(r *R) uint64) Column[R] {
	return Column[R]{name: name, cell: func(r *R) string { return strconv.FormatUint(v(r), 10) }}
}

// Seconds is a column of wall times, in seconds with three decimals.
func Seconds[R any](name string, v func(r *R) float64) Column[R] {
	return Column[R]{name: name, cell: func(r *R) string { return strconv.FormatFloat(v(r), 'f', 3, 64) }}
}

// Layers is one column per layer (L - less of them, named by LayerName) of a per-layer
// quantity, written by FormatFloat.
func Layers[R any](prefix string, diag bool, less int, v func(r *R) []float64) Column[R] {
	return Column[R]{name: prefix, diag: diag, less: less, layers: func(r *R) []string {
		xs := v(r)
		out := make([]string, len(xs))
		for i, x := range xs {
			out[i] = FormatFloat(x)
		}
		return out
	}}
}

// Schema is the one definition of a kind of row: the kind of CSV and its columns in order.
type Schema[R any] struct {
	Kind    Kind
	Columns []Column[R]
}

// Layered reports whether the header depends on the number of layers L (the SMI kinds).
func (s *Schema[R]) Layered() bool {
	return slices.ContainsFunc(s.Columns, func(c Column[R]) bool { return c.layers != nil })
}

// Header returns the CSV header for L layers (L is ignored by a kind without layers).
func (s *Schema[R]) Header(L int) []string {
	var out []string
	for _, c := range s.Columns {
		out = append(out, c.names(L)...)
	}
	return out
}

// names returns the header names of column c for L layers.
func (c Column[R]) names(L int) []string {
	if c.layers == nil {
		return []string{c.name}
	}
	return LayerNames(c.name, max(0, L-c.less), c.diag)
}

// added returns the header names, for L layers, of the columns marked Added.
func (s *Schema[R]) added(L int) map[string]bool {
	out := map[string]bool{}
	for _, c := range s.Columns {
		if c.added {
			for _, n := range c.names(L) {
				out[n] = true
			}
		}
	}
	return out
}

// words returns the columns that hold words.
func (s *Schema[R]) words() map[string]bool {
	out := map[string]bool{}
	for _, c := range s.Columns {
		if c.word {
			out[c.name] = true
		}
	}
	return out
}

// Row returns the cells of one row, in the order of the header.
func (s *Schema[R]) Row(r *R) []string {
	var out []string
	for _, c := range s.Columns {
		if c.layers == nil {
			out = append(out, c.cell(r))
		} else {
			out = append(out, c.layers(r)...)
		}
	}
	return out
}

// Rows returns the cells of every row.
func (s *Schema[R]) Rows(rows []R) [][]string {
	out := make([][]string, len(rows))
	for i := range rows {
		out[i] = s.Row(&rows[i])
	}
	return out
}

// Write writes the CSV of rows, with the header for L layers.
func (s *Schema[R]) Write(w io.Writer, L int, rows []R) error {
	return WriteCSV(w, s.Header(L), s.Rows(rows))
}

// Def returns what a reader needs to recognise the kind from a header.
func (s *Schema[R]) Def() Def {
	return Def{Kind: s.Kind, Layered: s.Layered(), Header: s.Header, words: s.words(), added: s.added}
}

// Table returns the table that reading the CSV of rows would give (named path), so that a
// command draws its figure from exactly the numbers it writes.
func (s *Schema[R]) Table(path string, L int, rows []R) (*Table, error) {
	var buf bytes.Buffer
	if err := s.Write(&buf, L, rows); err != nil {
		return nil, err
	}
	return Read(&buf, path, []Def{s.Def()})
}

// Def is a kind of CSV as a reader sees it: the kind, and its header for L layers.
type Def struct {
	Kind    Kind
	Layered bool                 // the header depends on L (SMI kinds)
	Header  func(L int) []string // the columns for L layers
	words   map[string]bool      // the columns that hold words
	added   func(L int) map[string]bool
}

// matches reports whether header is the kind's header for L layers, less any of the columns
// marked Added (in the same order).
func (d Def) matches(header []string, L int) bool {
	full := d.Header(L)
	var optional map[string]bool
	if d.added != nil {
		optional = d.added(L)
	}
	k := 0
	for _, name := range full {
		switch {
		case k < len(header) && header[k] == name:
			k++
		case !optional[name]:
			return false
		}
	}
	return k == len(header)
}

// Detect recognises a header among defs and returns its kind with the number of layers L of a
// layered kind (0 for the others). The error lists every kind's header.
func Detect(header []string, defs []Def) (Def, int, error) {
	for _, d := range defs {
		if !d.Layered {
			if d.matches(header, 0) {
				return d, 0, nil
			}
			continue
		}
		for L := 1; L <= len(header); L++ {
			if d.matches(header, L) {
				return d, L, nil
			}
		}
	}
	var want []string
	for _, d := range defs {
		L, note := 0, ""
		if d.Layered {
			L, note = 2, " (shown for L = 2 layers)"
		}
		want = append(want, fmt.Sprintf("  %s%s: %s", d.Kind, note, strings.Join(d.Header(L), ",")))
	}
	shown := strings.Join(header, ",")
	if len(shown) > 200 {
		shown = shown[:200] + "..."
	}
	return Def{}, 0, fmt.Errorf("unrecognised CSV header %q; expected the columns of one of:\n%s", shown, strings.Join(want, "\n"))
}

// WriteCSV writes a CSV with a header in one write.
func WriteCSV(w io.Writer, header []string, rows [][]string) error {
	var buf bytes.Buffer
	cw := csv.NewWriter(&buf)
	cw.Write(header)
	cw.WriteAll(rows)
	if err := cw.Error(); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}
