package figure

import (
	"math"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// seLike is a figure of the kind aim se and aim amp draw: lines falling from 1 to 0, points
// beside them with the lines' labels, and thresholds of one label.
func seLike(size Size) *Figure {
	f := &Figure{Title: "State evolution: softmax, T = 2, " + Beta + " = 1", XLabel: "Sample complexity " + Alpha + " = N/D^{2}",
		YLabel: "Estimation error " + ErrorS, YMin: 0, YMax: 1.05, Size: size}
	for g, r := range []float64{0.1, 0.2, 0.5} {
		s := Series{Label: Rho + " = " + formatTick(r, 1), Group: g}
		pts := Series{Label: s.Label, Group: g, Points: true}
		for i := 0; i <= 40; i++ {
			a := 0.25 * float64(i) / 40
			s.X, s.Y = append(s.X, a), append(s.Y, math.Max(0, 1-a/(0.4*r+0.05)))
			if i%8 == 4 {
				pts.X, pts.Y, pts.YErr = append(pts.X, a), append(pts.Y, math.Max(0, 1-a/(0.4*r+0.05))), append(pts.YErr, 0.03)
			}
		}
		f.Series = append(f.Series, s, pts)
		f.VLines = append(f.VLines, VLine{X: 0.4*r + 0.05, Group: g, Label: AlphaPR})
	}
	return f
}

// record draws f on a recording canvas of its size, every stroke and fill recorded, and
// returns the recording and the layout.
func record(t *testing.T, f *Figure) (*recorder, Layout) {
	t.Helper()
	w, h := f.Size.or()
	rec := &recorder{all: true}
	lay, err := f.Draw(draw.Canvas{Canvas: rec, Rectangle: vg.Rectangle{Max: vg.Point{X: w, Y: h}}})
	if err != nil {
		t.Fatal(err)
	}
	return rec, lay
}

// TestLegendOffTheData: the legend's box, wherever the builder put it, meets no drawn data:
// no segment of a line, an error bar or a threshold, and no marker. The data are recorded
// by drawing the figure without its legend on a recording canvas (tracked plotters only), at
// the default size and in a journal column; crowded data push the legend outside the axes.
func TestLegendOffTheData(t *testing.T) {
	crowded := &Figure{}
	for g := 0; g < 3; g++ {
		s := Series{Label: "zigzag " + formatTick(float64(g), 0), Group: g}
		for i := 0; i <= 60; i++ {
			s.X, s.Y = append(s.X, float64(i)), append(s.Y, float64((i+g)%2))
		}
		crowded.Series = append(crowded.Series, s)
	}
	for _, tc := range []struct {
		name  string
		f     *Figure
		place string
	}{
		{"se default", seLike(Size{}), ""},
		{"se column", seLike(Size{W: 3.4 * vg.Inch, H: 2.6 * vg.Inch}), ""},
		{"crowded", crowded, "outside"},
	} {
		p, leg, err := tc.f.build()
		if err != nil {
			t.Fatal(err)
		}
		w, h := tc.f.Size.or()
		rec := &recorder{}
		lay := tc.f.draw(draw.Canvas{Canvas: rec, Rectangle: vg.Rectangle{Max: vg.Point{X: w, Y: h}}}, p, leg)
		if lay.Place == "" || lay.Legend.Max.X <= lay.Legend.Min.X {
			t.Fatalf("%s: no legend placed: %+v", tc.name, lay)
		}
		if tc.place != "" && lay.Place != tc.place {
			t.Errorf("%s: legend %s, want %s", tc.name, lay.Place, tc.place)
		}
		if len(rec.Segments) < 50 || (tc.name != "crowded" && len(rec.Boxes) < 5) {
			t.Fatalf("%s: recorded %d segments and %d marks, want the data", tc.name, len(rec.Segments), len(rec.Boxes))
		}
		for _, s := range rec.Segments {
			if segmentHits(s[0], s[1], lay.Legend) {
				t.Errorf("%s: segment %v-%v crosses the legend %v (%s)", tc.name, s[0], s[1], lay.Legend, lay.Place)
			}
		}
		for _, b := range rec.Boxes {
			if b.Min.X <= lay.Legend.Max.X && b.Max.X >= lay.Legend.Min.X && b.Min.Y <= lay.Legend.Max.Y && b.Max.Y >= lay.Legend.Min.Y {
				t.Errorf("%s: a marker %v lies under the legend %v", tc.name, b, lay.Legend)
			}
		}
		if lay.Place != "outside" && (lay.Legend.Min.X < lay.Data.Min.X || lay.Legend.Max.X > lay.Data.Max.X) {
			t.Errorf("%s: legend %v leaves the data area %v", tc.name, lay.Legend, lay.Data)
		}
		if lay.Place == "outside" && lay.Legend.Min.X < lay.Data.Max.X {
			t.Errorf("%s: outside legend %v overlaps the axes %v", tc.name, lay.Legend, lay.Data)
		}
	}
	// The segment test itself, on a crossing, a miss and a segment inside.
	r := vg.Rectangle{Min: vg.Point{X: 0, Y: 0}, Max: vg.Point{X: 10, Y: 10}}
	for _, c := range []struct {
		a, b vg.Point
		want bool
	}{{vg.Point{X: -5, Y: 5}, vg.Point{X: 15, Y: 5}, true}, {vg.Point{X: -5, Y: 11}, vg.Point{X: 15, Y: 20}, false}, {vg.Point{X: 2, Y: 2}, vg.Point{X: 3, Y: 3}, true}, {vg.Point{X: 11, Y: 0}, vg.Point{X: 20, Y: -9}, false}} {
		if got := segmentHits(c.a, c.b, r); got != c.want {
			t.Errorf("segmentHits(%v, %v) = %v", c.a, c.b, got)
		}
	}
}

// TestLegendOneEntryPerFamily: an SE line and the AMP points of its rho make one entry, line
// and marker; thresholds of one label make one entry (one swatch per group when they are of
// several groups: TestLegendSwatches).
func TestLegendOneEntryPerFamily(t *testing.T) {
	_, leg, err := seLike(Size{}).build()
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{all: true}
	w, h := legendSize(leg, 0)
	leg.Draw(draw.Canvas{Canvas: rec, Rectangle: vg.Rectangle{Max: vg.Point{X: w, Y: h}}})
	var labels []string
	for _, s := range rec.Texts {
		labels = append(labels, s.Text)
	}
	want := []string{Rho + " = 0.1", Rho + " = 0.2", Rho + " = 0.5", "α", "PR"} // α_{PR} is two runs
	if strings.Join(labels, "|") != strings.Join(want, "|") {
		t.Errorf("legend texts %q, want %q", labels, want)
	}
	var entries legend
	f := seLike(Size{})
	for _, s := range f.Series {
		kind := "line"
		if s.Points {
			kind = "points"
		}
		entries.add(s.Label, kind, s.Group, nil)
	}
	for _, v := range f.VLines {
		entries.add(v.Label, "vline", v.Group, nil)
	}
	if n := len(entries.entries); n != 4 {
		t.Fatalf("%d entries, want 4", n)
	}
	if e := entries.entries[0]; len(e.slots) != 2 || e.slots[0].kind != "line" || e.slots[1].kind != "points" || e.slots[0].mixed {
		t.Errorf("first entry %+v, want a line and its points", e)
	}
	if e := entries.entries[3]; len(e.slots) != 1 || !e.slots[0].mixed {
		t.Errorf("threshold entry %+v, want one neutral line", e)
	}
}

// TestTicks: linear axes get at least 4 labelled round ticks over the data range; log axes
// are labelled in powers of ten.
func TestTicks(t *testing.T) {
	labels := func(ts []plot.Tick) (out []string) {
		for _, tk := range ts {
			if tk.Label != "" {
				out = append(out, tk.Label)
			}
		}
		return out
	}
	for _, tc := range []struct {
		min, max float64
		want     string
	}{
		{0.02, 0.14, "0.02 0.04 0.06 0.08 0.10 0.12 0.14"},
		{0, 1.05, "0.0 0.2 0.4 0.6 0.8 1.0"},
		{0.001, 0.25, "0.05 0.10 0.15 0.20 0.25"},
		{0, 17, "0 5 10 15"},
		{-1, 1, "−1.0 −0.5 0.0 0.5 1.0"},
		{100, 400, "100 200 300 400"},
	} {
		got := labels(linearTicks{}.Ticks(tc.min, tc.max))
		if strings.Join(got, " ") != tc.want || len(got) < 4 {
			t.Errorf("[%g, %g]: labels %q, want %q", tc.min, tc.max, got, tc.want)
		}
	}
	for _, tc := range []struct {
		ticks []plot.Tick
		want  string
	}{
		{logTicks{}.Ticks(0.005, 20), "10^{−2} 10^{−1} 1 10"},
		{logTicks{log10: true}.Ticks(-3, 0), "10^{−3} 10^{−2} 10^{−1} 1"},
		{logTicks{}.Ticks(1, 1000), "1 10 10^{2} 10^{3}"},
		{logTicks{}.Ticks(0.2, 3), "0.2 0.5 1 2"}, // one decade in range: 2 and 5 labelled too
	} {
		if got := strings.Join(labels(tc.ticks), " "); got != tc.want {
			t.Errorf("log ticks %q, want %q", got, tc.want)
		}
	}
	if got := Plain(decade(-2)); got != "10−2" {
		t.Errorf("Plain(10^{−2}) = %q", got)
	}
}

// TestMathText: braced scripts are drawn smaller and off the baseline, bare _ and ^ stay
// literal, and every glyph of the symbol table is in the bundled fonts.
func TestMathText(t *testing.T) {
	if got := parseMath("α_{PR} se_T2 x^{2}_{F} a_{b"); len(got) != 5 || got[1] != (run{"PR", -1}) || got[2].text != " se_T2 x" || got[3] != (run{"2", 1}) || got[4] != (run{"F", -1}) {
		// the last run, "a_{b", is literal: runs 5 and on
		t.Logf("runs %+v", got)
	}
	runs := parseMath("α_{PR} se_T2 x^{2}_{F} a_{b")
	want := []run{{"α", 0}, {"PR", -1}, {" se_T2 x", 0}, {"2", 1}, {"F", -1}, {" a_{b", 0}}
	if len(runs) != len(want) {
		t.Fatalf("runs %+v, want %+v", runs, want)
	}
	for i := range want {
		if runs[i] != want[i] {
			t.Errorf("run %d = %+v, want %+v", i, runs[i], want[i])
		}
	}
	h := mathHandler{}
	h.Fonts = font.DefaultCache
	fnt := font.From(plot.DefaultFont, 10)
	wScript, _, depth := h.Box(AlphaPR, fnt)
	wPlain, _, depth0 := h.Box("αPR", fnt)
	if !(wScript < wPlain) || !(depth > depth0) {
		t.Errorf("α_{PR}: width %v (plain %v), depth %v (plain %v): want narrower and deeper", wScript, wPlain, depth, depth0)
	}
	rec := &recorder{all: true}
	sty := plot.New().Title.TextStyle
	sty.Handler, sty.Font = h, fnt
	h.Draw(rec, "10^{−2}", sty, vg.Point{})
	if len(rec.Texts) != 2 || rec.Texts[1].Size >= rec.Texts[0].Size {
		t.Errorf("10^{−2} drawn as %+v, want 10 then a smaller −2", rec.Texts)
	}
	face := font.DefaultCache.Lookup(fnt, 10)
	for _, sym := range []string{Alpha, AlphaBar, AlphaBarR, AlphaPR, AlphaBarC, Rho, Beta, Minus, RhoToZero, ErrorS, ErrorLabel, EGen, "ℓ√‖"} {
		for _, r := range Plain(sym) {
			if i, err := face.Face.GlyphIndex(nil, r); err != nil || i == 0 {
				t.Errorf("%q: the font has no glyph for %q", sym, r)
			}
		}
	}
}

// TestSize: --size parses inches, centimetres, millimetres and points, refuses the rest, and
// the drawn figure has the asked size with text of at least 7 pt (scripts 0.75 of that).
func TestSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		w, h vg.Length
		ok   bool
	}{
		{"3.4x2.6in", 3.4 * vg.Inch, 2.6 * vg.Inch, true},
		{"8.6x6.6cm", 8.6 * vg.Centimeter, 6.6 * vg.Centimeter, true},
		{"90mmx65mm", 90 * vg.Millimeter, 65 * vg.Millimeter, true},
		{"245x187pt", 245, 187, true},
		{"6X4.2IN", 6 * vg.Inch, 4.2 * vg.Inch, true},
		{"3.4x2.6", 0, 0, false}, {"3.4in", 0, 0, false}, {"0x2in", 0, 0, false}, {"50x2in", 0, 0, false},
		{"axbin", 0, 0, false}, {"", 0, 0, false}, {"-3x2in", 0, 0, false}, {"3x2ft", 0, 0, false},
	} {
		z, err := ParseSize(tc.in)
		if (err == nil) != tc.ok || (tc.ok && (math.Abs(float64(z.W-tc.w)) > 1e-9 || math.Abs(float64(z.H-tc.h)) > 1e-9)) {
			t.Errorf("ParseSize(%q) = %v, %v", tc.in, z, err)
		}
	}
	var z Size
	if z.String() != "6x4.2in" || z.Set("3.4x2.6in") != nil || z.String() != "3.4x2.6in" {
		t.Errorf("Size as a flag: %q", z.String())
	}
	f := seLike(z)
	img := renderPNG(t, f)
	if b := img.Bounds(); b.Dx() != 510 || b.Dy() != 390 {
		t.Errorf("3.4x2.6in at 150 dpi is %dx%d, want 510x390", b.Dx(), b.Dy())
	}
	rec, _ := record(t, f)
	if len(rec.Texts) < 20 {
		t.Fatalf("%d texts drawn", len(rec.Texts))
	}
	for _, s := range rec.Texts {
		if min := vg.Points(minText) * scriptScale; s.Size < min-1e-9 {
			t.Errorf("%q drawn at %.2f pt, below %.2f", s.Text, s.Size, min)
		}
	}
}

// TestAxesContainMarkers: a marker or an error bar beyond the requested y range, or at the
// end of the data's own range, moves that end of the axis out by markerMargin of the range;
// lines alone keep the requested range.
func TestAxesContainMarkers(t *testing.T) {
	cases := []struct {
		name           string
		f              Figure
		wantLo, wantHi float64 // the axis must reach beyond these (or equal them, for lines)
		exact          bool
	}{
		{"a GD point above the fixed range", Figure{YMin: 0, YMax: 1.05, Series: []Series{
			{Label: "SE", X: []float64{0, 1}, Y: []float64{1, 0.2}},
			{Label: "GD", Points: true, X: []float64{0.5}, Y: []float64{1.27}}}}, 0, 1.27, false},
		{"an error bar above it", Figure{YMin: 0, YMax: 1.05, Series: []Series{
			{Label: "sweep", Points: true, X: []float64{0.5, 1}, Y: []float64{1.2, 0.5}, YErr: []float64{0.24, 0.01}}}}, 0, 1.44, false},
		{"a marker at 0 on an auto axis", Figure{Series: []Series{
			{Label: "AMP", Points: true, X: []float64{1, 2}, Y: []float64{0, 0.5}}}}, 0, 0.5, false},
		{"lines only", Figure{YMin: 0, YMax: 1.05, Series: []Series{
			{Label: "SE", X: []float64{0, 1, 2, 3, 4, 5, 6}, Y: []float64{1, 0.8, 0.6, 0.4, 0.2, 0.1, 0}}}}, 0, 1.05, true},
	}
	for _, c := range cases {
		p, _, err := c.f.build()
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := p.Y.Min, p.Y.Max
		if c.exact {
			if lo != c.wantLo || hi != c.wantHi {
				t.Errorf("%s: y axis [%g, %g], want [%g, %g]", c.name, lo, hi, c.wantLo, c.wantHi)
			}
			continue
		}
		span := hi - lo
		if !(hi >= c.wantHi+0.9*markerMargin*(span/(1+2*markerMargin))) {
			t.Errorf("%s: y axis [%g, %g] ends at the data's %g", c.name, lo, hi, c.wantHi)
		}
		if c.name == "a marker at 0 on an auto axis" && !(lo < 0) {
			t.Errorf("%s: y axis [%g, %g] starts on the marker at 0", c.name, lo, hi)
		}
	}
}

// TestFewPointsMarked: a curve of at most fewPoints points is drawn with markers too, and its
// legend entry shows the marker; a longer curve is a bare line.
func TestFewPointsMarked(t *testing.T) {
	for _, n := range []int{2, fewPoints, fewPoints + 1} {
		s := Series{Label: "Q_{11}", Group: 1}
		for i := 0; i < n; i++ {
			s.X, s.Y = append(s.X, float64(i)), append(s.Y, float64(i)/10)
		}
		f := Figure{Series: []Series{s}}
		_, leg, err := f.build()
		if err != nil {
			t.Fatal(err)
		}
		rec := &recorder{}
		if _, err := f.Draw(draw.Canvas{Canvas: rec, Rectangle: vg.Rectangle{Max: vg.Point{X: 400, Y: 300}}}); err != nil {
			t.Fatal(err)
		}
		// The line's n - 1 segments, and 3 per marker: group 1's glyph is an open square,
		// stroked as three segments and a close.
		marked := (len(rec.Segments) - (n - 1)) / 3
		if want := map[bool]int{true: n, false: 0}[n <= fewPoints]; marked != want || leg == nil {
			t.Errorf("%d points: %d markers drawn, want %d", n, marked, want)
		}
	}
}

// TestLegendSwatches: vertical lines of one label in several groups (a threshold per layer)
// make one legend entry whose thumbnail has one segment per group, in the groups' colours.
func TestLegendSwatches(t *testing.T) {
	var entries legend
	for g := 0; g < 3; g++ {
		l, err := plotter.NewLine(plotter.XYs{{X: float64(g), Y: 0}, {X: float64(g), Y: 1}})
		if err != nil {
			t.Fatal(err)
		}
		entries.add("weak recovery", "vline", g, l)
	}
	if len(entries.entries) != 1 {
		t.Fatalf("%d entries", len(entries.entries))
	}
	th := entries.entries[0].thumbs()
	sw, ok := th[0].(swatches)
	if len(th) != 1 || !ok || !slices.Equal(sw.groups, []int{0, 1, 2}) {
		t.Fatalf("thumbnails %#v, want one swatch of groups 0, 1, 2", th)
	}
	rec := &recorder{all: true}
	c := draw.Canvas{Canvas: rec, Rectangle: vg.Rectangle{Max: vg.Point{X: 30, Y: 10}}}
	sw.Thumbnail(&c)
	if len(rec.Segments) != 3 {
		t.Errorf("%d segments drawn, want 3", len(rec.Segments))
	}
}
