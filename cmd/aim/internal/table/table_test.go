package table

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// row is a layered test row: a word, a seed, per-layer values and one fewer per-layer value.
type row struct {
	name   string
	seed   uint64
	q      []float64
	cond   []float64
	ok     bool
	wall   float64
	amount float64
}

var testSchema = &Schema[row]{Kind: "test", Columns: []Column[row]{
	Word("name", func(r *row) string { return r.name }),
	Uint("seed", func(r *row) uint64 { return r.seed }),
	Layers("Q", true, 0, func(r *row) []float64 { return r.q }),
	Layers("cond_", false, 1, func(r *row) []float64 { return r.cond }),
	Bool("ok", func(r *row) bool { return r.ok }),
	Seconds("seconds", func(r *row) float64 { return r.wall }),
	Float("x", func(r *row) float64 { return r.amount }),
}}

// TestSchema checks the header for L layers, the cells of a row and that a table of the rows
// reads back the numbers written, with the word columns kept as words.
func TestSchema(t *testing.T) {
	for L, want := range map[int]string{
		1: "name,seed,Q11,ok,seconds,x",
		3: "name,seed,Q11,Q22,Q33,cond_1,cond_2,ok,seconds,x",
	} {
		if got := strings.Join(testSchema.Header(L), ","); got != want {
			t.Errorf("L = %d: header %s, want %s", L, got, want)
		}
	}
	rows := []row{{name: "a,b", seed: 1 << 63, q: []float64{1.0 / 3, math.NaN()}, cond: []float64{math.Inf(1)}, ok: true, wall: 0.0125, amount: 2e-300}}
	if got, want := testSchema.Row(&rows[0]), []string{"a,b", "9223372036854775808", "0.333333333333", "", "+Inf", "true", "0.013", "2e-300"}; !slices.Equal(got, want) {
		t.Errorf("row %q, want %q", got, want)
	}
	tab, err := testSchema.Table("dir/t.csv", 2, rows)
	if err != nil {
		t.Fatal(err)
	}
	if tab.Kind != "test" || tab.L != 2 || tab.Rows() != 1 || tab.Name() != "t" || tab.S(0, "name") != "a,b" || !math.IsNaN(tab.V(0, "name")) ||
		tab.V(0, "Q11") != 0.333333333333 || !math.IsNaN(tab.V(0, "Q22")) || !math.IsInf(tab.V(0, "cond_1"), 1) || tab.V(0, "x") != 2e-300 ||
		!math.IsNaN(tab.V(0, "ok")) || !math.IsNaN(tab.V(0, "missing")) {
		t.Errorf("table %+v: values %v", tab, tab.Values(0))
	}
	if !testSchema.Layered() || (&Schema[row]{Columns: testSchema.Columns[:2]}).Layered() {
		t.Error("Layered")
	}
}

// TestDetect checks that the number of layers is read off the header, and that an unknown
// header is refused with the headers of every kind.
func TestDetect(t *testing.T) {
	fixed := &Schema[row]{Kind: "fixed", Columns: []Column[row]{Word("name", func(r *row) string { return r.name })}}
	defs := []Def{fixed.Def(), testSchema.Def()}
	for L := 1; L <= 4; L++ {
		d, got, err := Detect(testSchema.Header(L), defs)
		if err != nil || d.Kind != "test" || got != L {
			t.Errorf("L = %d: %s with L = %d, %v", L, d.Kind, got, err)
		}
	}
	if d, L, err := Detect([]string{"name"}, defs); err != nil || d.Kind != "fixed" || L != 0 {
		t.Errorf("fixed: %s, %d, %v", d.Kind, L, err)
	}
	_, _, err := Detect([]string{"name", "seed", "Q11", "Q22", "ok"}, defs)
	if err == nil || !strings.Contains(err.Error(), `unrecognised CSV header "name,seed,Q11,Q22,ok"`) ||
		!strings.Contains(err.Error(), "  fixed: name\n  test (shown for L = 2 layers): name,seed,Q11,Q22,cond_1,ok,seconds,x") {
		t.Errorf("unknown header: %v", err)
	}
}

// TestDetectAdded checks that a header lacking columns marked Added (files written before they
// existed) is still recognised, at any number of layers, with the missing values NaN, and that
// a header lacking any other column, or holding the added ones out of order, is not.
func TestDetectAdded(t *testing.T) {
	grown := &Schema[row]{Kind: "grown", Columns: []Column[row]{
		Word("name", func(r *row) string { return r.name }),
		Added(Layers("Q", true, 0, func(r *row) []float64 { return r.q })),
		Float("x", func(r *row) float64 { return r.amount }),
		Added(Bool("ok", func(r *row) bool { return r.ok })),
	}}
	defs := []Def{grown.Def()}
	for _, c := range []struct {
		header string
		L      int // 0: refused
	}{
		{"name,Q11,Q22,x,ok", 2},
		{"name,Q11,x", 1},
		{"name,x,ok", 1}, // no layer column left: the first L tried
		{"name,x", 1},
		{"name,Q11,Q22,ok", 0}, // x is not added
		{"name,x,Q11,ok", 0},   // out of order
		{"name,x,ok,extra", 0},
	} {
		d, L, err := Detect(strings.Split(c.header, ","), defs)
		if c.L == 0 {
			if err == nil {
				t.Errorf("%s: recognised as %s with L = %d, want refused", c.header, d.Kind, L)
			}
			continue
		}
		if err != nil || d.Kind != "grown" || L != c.L {
			t.Errorf("%s: %s with L = %d (%v), want grown with L = %d", c.header, d.Kind, L, err, c.L)
		}
	}
	tab, err := Read(strings.NewReader("name,x\na,2.5\n"), "old.csv", defs)
	if err != nil || tab.V(0, "x") != 2.5 || !math.IsNaN(tab.V(0, "Q11")) || tab.S(0, "ok") != "" {
		t.Errorf("old file: %+v, %v", tab, err)
	}
}

// TestAlphaPRAt checks the thresholds' lookup by rho, also for a rho the CSV rounded.
func TestAlphaPRAt(t *testing.T) {
	th := &Thresholds{AlphaPR: map[string]float64{RhoKey(0.5): 0.1875, RhoKey(1.0 / 3): 0.2}}
	if a, ok := th.AlphaPRAt(0.5); !ok || a != 0.1875 {
		t.Errorf("rho 0.5: %v %v", a, ok)
	}
	if a, ok := th.AlphaPRAt(0.333333333333); !ok || a != 0.2 {
		t.Errorf("rho 1/3 as written: %v %v", a, ok)
	}
	if _, ok := th.AlphaPRAt(2); ok {
		t.Error("rho 2 found")
	}
}
