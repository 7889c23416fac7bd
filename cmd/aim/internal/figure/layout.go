package figure

// layout.go: the legend (one entry per label, its thumbnails merged) and where it goes: in the
// first corner of the data area whose box no drawn point or segment enters, else outside the
// axes on the right. The drawn geometry is read back by drawing the figure once on a recording
// canvas, which the tests use too.

import (
	"image"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Layout is where the builder put the parts of a drawn figure.
type Layout struct {
	Data   vg.Rectangle // the data area
	Legend vg.Rectangle // the legend's box, its frame included (empty without a legend)
	Place  string       // "top right", "top left", "bottom left", "bottom right", "outside" or ""
}

// neutral is the colour of a legend marker standing for points of several groups.
var neutral = color.Gray{Y: 90}

// maxSwatches is the most colours a legend line shows for lines of several groups that share a
// label (the thresholds of every layer, say); beyond it the line is neutral grey.
const maxSwatches = 6

// entry is one legend entry: a label and, per kind of mark, the thumbnail of its first series:
// for lines of several groups, a line of one segment per group in its colour.
type entry struct {
	label string
	slots []slot
}

type slot struct {
	kind   string // "line", "points" or "vline"
	group  int
	thumb  plot.Thumbnailer
	mixed  bool
	groups []int // the distinct groups of the label's marks of this kind, in order
}

// legend collects entries in the order their labels first appear.
type legend struct{ entries []*entry }

// add adds a series' mark to the entry of its label.
func (l *legend) add(label, kind string, group int, thumb plot.Thumbnailer) {
	if label == "" {
		return
	}
	var e *entry
	for _, x := range l.entries {
		if x.label == label {
			e = x
		}
	}
	if e == nil {
		e = &entry{label: label}
		l.entries = append(l.entries, e)
	}
	for i := range e.slots {
		if sl := &e.slots[i]; sl.kind == kind {
			sl.mixed = sl.mixed || sl.group != group
			if !slices.Contains(sl.groups, group) {
				sl.groups = append(sl.groups, group)
			}
			return
		}
	}
	e.slots = append(e.slots, slot{kind: kind, group: group, thumb: thumb, groups: []int{group}})
}

// thumbs returns an entry's thumbnails: lines first, then marks; lines of several groups as
// one segment per group in its colour (neutral grey beyond maxSwatches), marks of several
// groups in neutral grey.
func (e *entry) thumbs() []plot.Thumbnailer {
	var out []plot.Thumbnailer
	for _, want := range []string{"vline", "line", "points"} {
		for _, s := range e.slots {
			if s.kind != want {
				continue
			}
			t := s.thumb
			if s.mixed {
				switch v := t.(type) {
				case *plotter.Line:
					c := *v
					if len(s.groups) <= maxSwatches {
						t = swatches{style: c.LineStyle, groups: s.groups}
						break
					}
					c.LineStyle.Color = neutral
					t = &c
				case *plotter.Scatter:
					c := *v
					c.GlyphStyle.Color = neutral
					c.GlyphStyle.Shape = draw.CircleGlyph{}
					t = &c
				}
			}
			out = append(out, t)
		}
	}
	return out
}

// swatches is the legend thumbnail of lines of several groups: the thumbnail's width split
// into one horizontal segment per group, each in the group's colour and the lines' dashes.
type swatches struct {
	style  draw.LineStyle
	groups []int
}

// Thumbnail draws the segments across the middle of c.
func (w swatches) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	n := vg.Length(len(w.groups))
	step := (c.Max.X - c.Min.X) / n
	gap := step / 8
	for i, g := range w.groups {
		st := w.style
		st.Color = colour(g)
		x0 := c.Min.X + vg.Length(i)*step
		c.StrokeLine2(st, x0+gap/2, y, x0+step-gap/2, y)
	}
}

// tracked is a data plotter whose drawing a recorder records.
type tracked struct{ plot.Plotter }

// Plot draws the plotter, recording it when c draws on a recorder.
func (t tracked) Plot(c draw.Canvas, p *plot.Plot) {
	if r := recorderOf(c.Canvas); r != nil {
		r.on = true
		defer func() { r.on = false }()
	}
	t.Plotter.Plot(c, p)
}

// recorderOf returns the recorder under a canvas (gonum nests draw.Canvas in draw.Canvas), or nil.
func recorderOf(c vg.Canvas) *recorder {
	for {
		switch v := c.(type) {
		case *recorder:
			return v
		case draw.Canvas:
			c = v.Canvas
		case *draw.Canvas:
			c = v.Canvas
		default:
			return nil
		}
	}
}

// DataRange forwards the plotter's data range (none for a plotter without one).
func (t tracked) DataRange() (xmin, xmax, ymin, ymax float64) {
	if d, ok := t.Plotter.(plot.DataRanger); ok {
		return d.DataRange()
	}
	return math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
}

// GlyphBoxes forwards the plotter's glyph boxes.
func (t tracked) GlyphBoxes(p *plot.Plot) []plot.GlyphBox {
	if g, ok := t.Plotter.(plot.GlyphBoxer); ok {
		return g.GlyphBoxes(p)
	}
	return nil
}

// recorder is a vg.Canvas that draws nothing and records the geometry of the data plotters
// (every stroke and fill while on, or always when all is set) and every text drawn.
type recorder struct {
	on, all  bool
	Segments [][2]vg.Point // stroked line segments
	Boxes    []vg.Rectangle
	Texts    []recordedText
	depth    int // Push depth; marks: the depths at which a transform was set
	marks    []int
}

// recordedText is a string drawn and its font size.
type recordedText struct {
	Text string
	Size vg.Length
}

func (r *recorder) SetLineWidth(vg.Length)              {}
func (r *recorder) SetLineDash([]vg.Length, vg.Length)  {}
func (r *recorder) SetColor(color.Color)                {}
func (r *recorder) Rotate(float64)                      { r.transformed() }
func (r *recorder) Translate(vg.Point)                  { r.transformed() }
func (r *recorder) Scale(float64, float64)              { r.transformed() }
func (r *recorder) DrawImage(vg.Rectangle, image.Image) {}

func (r *recorder) transformed() {
	if len(r.marks) == 0 || r.marks[len(r.marks)-1] != r.depth {
		r.marks = append(r.marks, r.depth)
	}
}

// Push saves the transform.
func (r *recorder) Push() { r.depth++ }

// Pop restores it.
func (r *recorder) Pop() {
	if n := len(r.marks); n > 0 && r.marks[n-1] == r.depth {
		r.marks = r.marks[:n-1]
	}
	r.depth--
}

func (r *recorder) recording() bool { return (r.on || r.all) && len(r.marks) == 0 }

// Stroke records the path's segments (and its arcs' boxes).
func (r *recorder) Stroke(p vg.Path) {
	if !r.recording() {
		return
	}
	var last vg.Point
	for _, c := range p {
		switch c.Type {
		case vg.LineComp:
			r.Segments = append(r.Segments, [2]vg.Point{last, c.Pos})
		case vg.ArcComp, vg.CurveComp:
			r.Boxes = append(r.Boxes, pathBox(vg.Path{c}))
		}
		last = c.Pos
	}
}

// Fill records the path's bounding box.
func (r *recorder) Fill(p vg.Path) {
	if r.recording() {
		r.Boxes = append(r.Boxes, pathBox(p))
	}
}

// FillString records the text and its size.
func (r *recorder) FillString(f font.Face, _ vg.Point, s string) {
	r.Texts = append(r.Texts, recordedText{Text: s, Size: f.Font.Size})
}

// pathBox returns the bounding box of a path.
func pathBox(p vg.Path) vg.Rectangle {
	b := vg.Rectangle{Min: vg.Point{X: vg.Length(math.Inf(1)), Y: vg.Length(math.Inf(1))}, Max: vg.Point{X: vg.Length(math.Inf(-1)), Y: vg.Length(math.Inf(-1))}}
	grow := func(pt vg.Point, rad vg.Length) {
		b.Min.X, b.Min.Y = min(b.Min.X, pt.X-rad), min(b.Min.Y, pt.Y-rad)
		b.Max.X, b.Max.Y = max(b.Max.X, pt.X+rad), max(b.Max.Y, pt.Y+rad)
	}
	for _, c := range p {
		switch c.Type {
		case vg.ArcComp:
			grow(c.Pos, c.Radius)
		case vg.CloseComp:
		default:
			grow(c.Pos, 0)
			for _, q := range c.Control {
				grow(q, 0)
			}
		}
	}
	return b
}

// hits reports whether a recorded segment or box enters the rectangle.
func (r *recorder) hits(b vg.Rectangle) bool {
	for _, s := range r.Segments {
		if segmentHits(s[0], s[1], b) {
			return true
		}
	}
	for _, x := range r.Boxes {
		if x.Min.X <= b.Max.X && x.Max.X >= b.Min.X && x.Min.Y <= b.Max.Y && x.Max.Y >= b.Min.Y {
			return true
		}
	}
	return false
}

// segmentHits reports whether the segment a-b meets the rectangle (Liang-Barsky clipping).
func segmentHits(a, b vg.Point, r vg.Rectangle) bool {
	t0, t1 := 0.0, 1.0
	dx, dy := float64(b.X-a.X), float64(b.Y-a.Y)
	for _, c := range [4][2]float64{
		{-dx, float64(a.X - r.Min.X)}, {dx, float64(r.Max.X - a.X)},
		{-dy, float64(a.Y - r.Min.Y)}, {dy, float64(r.Max.Y - a.Y)},
	} {
		p, q := c[0], c[1]
		if p == 0 {
			if q < 0 {
				return false
			}
			continue
		}
		t := q / p
		if p < 0 {
			t0 = math.Max(t0, t)
		} else {
			t1 = math.Min(t1, t)
		}
		if t0 > t1 {
			return false
		}
	}
	return true
}

// legendSize returns the size of a legend's box with its frame margin m.
func legendSize(l *plot.Legend, m vg.Length) (vg.Length, vg.Length) {
	r := l.Rectangle(draw.Canvas{})
	return r.Max.X - r.Min.X + 2*m, r.Max.Y - r.Min.Y + 2*m
}

// corners returns the candidate boxes of a w x h legend in the data area dc, inset by in, in
// the order they are tried.
func corners(dc vg.Rectangle, w, h, in vg.Length) ([]string, []vg.Rectangle) {
	names := []string{"top right", "top left", "bottom left", "bottom right"}
	left, right := dc.Min.X+in, dc.Max.X-in-w
	bottom, top := dc.Min.Y+in, dc.Max.Y-in-h
	at := func(x, y vg.Length) vg.Rectangle {
		return vg.Rectangle{Min: vg.Point{X: x, Y: y}, Max: vg.Point{X: x + w, Y: y + h}}
	}
	return names, []vg.Rectangle{at(right, top), at(left, top), at(left, bottom), at(right, bottom)}
}
