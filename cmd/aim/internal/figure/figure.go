// Package figure draws the papers' kind of figure with gonum/plot: curves (SE lines), points
// with error bars (AMP, GD), and thresholds as vertical lines, on linear or log axes, to PNG,
// SVG or PDF (vector text). Every run command and `aim plot` use it.
package figure

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgpdf"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Palette is the colour-blind-safe qualitative palette of Okabe and Ito (2008), without its
// black, ordered so that neighbours differ most, and a grey for the eighth; Group k of a series
// takes Palette[k mod len]. Black (the reference curve) is Group -1. The figure tests hold every
// pair of neighbours (and the eighth and the first) at a CIEDE2000 distance of at least 20.
var Palette = []string{"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#999999"}

// shapes are the markers of the groups' points, Group k taking shapes[k mod len], so that
// neighbouring groups differ in greyscale print too.
var shapes = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PyramidGlyph{},
	draw.RingGlyph{}, draw.BoxGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{}}

// shape returns the marker of a group (a filled circle for the reference, Group < 0).
func shape(group int) draw.GlyphDrawer {
	if group < 0 {
		return draw.CircleGlyph{}
	}
	return shapes[group%len(shapes)]
}

// Series is one curve or one set of points.
type Series struct {
	Label  string
	Group  int       // colour: Palette[Group], or black for Group < 0
	X, Y   []float64 // same length
	YErr   []float64 // optional error bars (points only)
	Points bool      // markers (with error bars when YErr is set) instead of a line
	Dashed bool
}

// VLine is a vertical line at X, such as a threshold.
type VLine struct {
	X     float64
	Group int
	Label string
	Style VStyle // the dash pattern; the zero value is the short dashes of alpha_PR
}

// VStyle is the dash pattern of a vertical line: one per kind of threshold.
type VStyle int

const (
	VDashed  VStyle = iota // short dashes (alpha_PR, alpha-bar_c)
	VDotted                // dots (alpha_IT)
	VDashDot               // long dash and dot (alpha_alg)
)

// Figure is one panel. Its text (title, labels, legend) may hold the symbols of symbols.go
// and braced scripts: "α_{PR}", "D^{2}".
type Figure struct {
	Title, XLabel, YLabel string
	LogX, LogY            bool
	Series                []Series  // series sharing a label share one legend entry (an SE line and its AMP points)
	VLines                []VLine   // vertical lines sharing a label share one legend entry
	YMin, YMax            float64   // when YMin < YMax, the y range covers at least [YMin, YMax]
	XTicks                []float64 // when set, the labelled x ticks (e.g. the D of a log axis without a decade in range)
	Size                  Size      // zero: 6 x 4.2 inches
}

// Format returns "png", "svg" or "pdf" from a file name, or an error for another extension.
func Format(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".png":
		return "png", nil
	case ".svg":
		return "svg", nil
	case ".pdf":
		return "pdf", nil
	default:
		return "", fmt.Errorf("plot %s: unknown format %q (use .png, .svg or .pdf)", path, ext)
	}
}

func colour(group int) color.Color {
	if group < 0 {
		return color.Black
	}
	var r, g, b uint8
	fmt.Sscanf(Palette[group%len(Palette)], "#%02x%02x%02x", &r, &g, &b)
	return color.RGBA{R: r, G: g, B: b, A: 255}
}

// usable reports whether (x, y) can be drawn on the figure's axes.
func (f *Figure) usable(x, y float64) bool {
	if math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0) {
		return false
	}
	return (!f.LogX || x > 0) && (!f.LogY || y > 0)
}

// Text sizes (points) at the default size; figure sizes scale them by the square root of the
// size's ratio to the default, never below minText, so that text stays legible in a journal
// column (3.4 x 2.6 in).
const (
	titleText  = 12
	labelText  = 11
	tickText   = 9.5
	legendText = 9
	minText    = 7
)

// gridColour is the colour of the grid lines.
var gridColour = color.Gray{Y: 215}

// scale returns the factor of text and line sizes at the figure's size.
func (f *Figure) scale() vg.Length {
	w, h := f.Size.or()
	return vg.Length(math.Sqrt(math.Min(float64(w/DefaultWidth), float64(h/DefaultHeight))))
}

// textSize returns a text's size in points at the figure's size.
func (f *Figure) textSize(base vg.Length) vg.Length {
	return max(vg.Points(minText), vg.Points(float64(base))*f.scale())
}

// Render draws the figure in the given format ("png", "svg" or "pdf": vector text, the fonts
// embedded) to w.
func (f *Figure) Render(w io.Writer, format string) error {
	p, leg, err := f.build()
	if err != nil {
		return err
	}
	width, height := f.Size.or()
	var canvas vg.CanvasWriterTo
	switch format {
	case "png":
		canvas = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(150))}
	case "svg":
		canvas = vgsvg.New(width, height)
	case "pdf":
		c := vgpdf.New(width, height)
		c.EmbedFonts(true)
		canvas = c
	default:
		return fmt.Errorf("figure: unknown format %q", format)
	}
	f.draw(draw.New(canvas), p, leg)
	if _, err := canvas.WriteTo(w); err != nil {
		return fmt.Errorf("figure: %w", err)
	}
	return nil
}

// Draw draws the figure on c and returns where its parts went (the tests read it).
func (f *Figure) Draw(c draw.Canvas) (Layout, error) {
	p, leg, err := f.build()
	if err != nil {
		return Layout{}, err
	}
	return f.draw(c, p, leg), nil
}

// draw places the legend (see layout.go) and draws the plot and the legend on c.
func (f *Figure) draw(c draw.Canvas, p *plot.Plot, leg *plot.Legend) Layout {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	c = draw.Crop(c, 2*f.scale(), -4*f.scale(), 2*f.scale(), -3*f.scale()) // a margin round the figure
	pc := c
	var lay Layout
	margin, inset := 3*f.scale(), 4*f.scale()
	if leg != nil {
		lw, lh := legendSize(leg, margin)
		rec := &recorder{}
		p.Draw(draw.Canvas{Canvas: rec, Rectangle: c.Rectangle})
		dc := p.DataCanvas(draw.Canvas{Canvas: rec, Rectangle: c.Rectangle}).Rectangle
		names, boxes := corners(dc, lw, lh, inset)
		for i, b := range boxes {
			if b.Min.X >= dc.Min.X && b.Min.Y >= dc.Min.Y && !rec.hits(b) {
				lay.Place, lay.Legend = names[i], b
				break
			}
		}
		if lay.Place == "" {
			pc.Max.X -= lw + inset
			dc := p.DataCanvas(pc).Rectangle
			lay.Place = "outside"
			lay.Legend = vg.Rectangle{Min: vg.Point{X: pc.Max.X + inset/2, Y: dc.Max.Y - lh}, Max: vg.Point{X: pc.Max.X + inset/2 + lw, Y: dc.Max.Y}}
		}
	}
	p.Draw(pc)
	lay.Data = p.DataCanvas(pc).Rectangle
	if lay.Place != "" {
		c.SetColor(color.White)
		c.Fill(lay.Legend.Path())
		c.SetLineWidth(0.5 * f.scale())
		c.SetLineDash(nil, 0)
		c.SetColor(color.Gray{Y: 160})
		c.Stroke(lay.Legend.Path())
		in := lay.Legend
		in.Min.X, in.Min.Y, in.Max.X, in.Max.Y = in.Min.X+margin, in.Min.Y+margin, in.Max.X-margin, in.Max.Y-margin
		leg.Draw(draw.Canvas{Canvas: c.Canvas, Rectangle: in})
	}
	return lay
}

// fitTitle returns the title as it fits the figure's width: on two lines, broken after its
// first ": " (the settings after the name), when it is too wide for one.
func fitTitle(sty text.Style, title string, size Size) string {
	w, _ := size.or()
	w -= 8
	if title == "" || sty.Width(title) <= w {
		return title
	}
	if i := strings.Index(title, ": "); i > 0 {
		title = title[:i+1] + "\n" + title[i+2:]
	}
	return title
}

// build makes the plot and its legend (nil without entries; not added to the plot: draw
// places it).
func (f *Figure) build() (*plot.Plot, *plot.Legend, error) {
	p := plot.New()
	h := mathHandler{text.Plain{Fonts: font.DefaultCache}}
	p.TextHandler = h
	p.Title.TextStyle.Handler = h
	p.Title.TextStyle.Font.Size = f.textSize(titleText)
	p.Title.Text = fitTitle(p.Title.TextStyle, f.Title, f.Size)
	p.X.Label.Text = f.XLabel
	p.Y.Label.Text = f.YLabel
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.Label.TextStyle.Handler = h
		ax.Label.TextStyle.Font.Size = f.textSize(labelText)
		ax.Tick.Label.Handler = h
		ax.Tick.Label.Font.Size = f.textSize(tickText)
		ax.Tick.Marker = linearTicks{}
	}
	if f.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = logTicks{}
	}
	if len(f.XTicks) > 0 {
		ticks := make(plot.ConstantTicks, len(f.XTicks))
		for i, x := range f.XTicks {
			ticks[i] = plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'g', -1, 64)}
		}
		p.X.Tick.Marker = ticks
	}
	// A log y axis is drawn as log10(y) on a linear axis with decade labels: gonum v0.17 places
	// the rotated y label at the arithmetic middle of a log axis, which pushes the plot down.
	ty := func(y float64) float64 { return y }
	if f.LogY {
		ty = math.Log10
		p.Y.Tick.Marker = logTicks{log10: true}
	}
	leg := plot.NewLegend()
	leg.TextStyle.Handler = h
	leg.TextStyle.Font.Size = f.textSize(legendText)
	leg.Top, leg.Left = true, true
	leg.ThumbnailWidth = 2 * leg.TextStyle.Font.Size
	leg.Padding = 0.25 * leg.TextStyle.Font.Size
	var entries legend
	s := f.scale()
	grid := plotter.NewGrid()
	grid.Vertical.Color, grid.Horizontal.Color = gridColour, gridColour
	grid.Vertical.Width, grid.Horizontal.Width = 0.5*s, 0.5*s
	p.Add(grid)
	ymin, ymax := math.Inf(1), math.Inf(-1)
	pmin, pmax := math.Inf(1), math.Inf(-1) // the reach of the markers and error bars
	for _, sr := range f.Series {
		if len(sr.X) != len(sr.Y) || (sr.YErr != nil && len(sr.YErr) != len(sr.Y)) {
			return nil, nil, fmt.Errorf("figure: series %q has mismatched lengths", sr.Label)
		}
		var xys plotter.XYs
		var errs plotter.YErrors
		for i := range sr.X {
			if !f.usable(sr.X[i], sr.Y[i]) {
				continue
			}
			y := ty(sr.Y[i])
			xys = append(xys, plotter.XY{X: sr.X[i], Y: y})
			ymin, ymax = math.Min(ymin, y), math.Max(ymax, y)
			if sr.YErr != nil {
				lo, hi := sr.YErr[i], sr.YErr[i]
				if f.LogY {
					lo = y - math.Log10(math.Max(sr.Y[i]-sr.YErr[i], sr.Y[i]*1e-3))
					hi = math.Log10(sr.Y[i]+sr.YErr[i]) - y
				}
				errs = append(errs, struct{ Low, High float64 }{lo, hi})
				if !math.IsNaN(lo) && !math.IsNaN(hi) && !math.IsInf(lo, 0) && !math.IsInf(hi, 0) {
					ymin, ymax = math.Min(ymin, y-lo), math.Max(ymax, y+hi) // the bars stay on the axes
					pmin, pmax = math.Min(pmin, y-lo), math.Max(pmax, y+hi)
				}
			}
		}
		if len(xys) == 0 {
			continue
		}
		c := colour(sr.Group)
		if sr.Points || len(xys) <= fewPoints {
			for _, xy := range xys {
				pmin, pmax = math.Min(pmin, xy.Y), math.Max(pmax, xy.Y)
			}
		}
		if sr.Points {
			sc, err := markers(xys, sr.Group, 2.4*s)
			if err != nil {
				return nil, nil, err
			}
			p.Add(tracked{sc})
			if errs != nil {
				eb, err := plotter.NewYErrorBars(struct {
					plotter.XYer
					plotter.YErrorer
				}{xys, errs})
				if err != nil {
					return nil, nil, fmt.Errorf("figure: %w", err)
				}
				eb.LineStyle.Color = c
				eb.LineStyle.Width = 0.8 * s
				p.Add(tracked{eb})
			}
			entries.add(sr.Label, "points", sr.Group, sc)
			continue
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, nil, fmt.Errorf("figure: %w", err)
		}
		l.LineStyle.Color = c
		l.LineStyle.Width = 1.4 * s
		if sr.Dashed {
			l.LineStyle.Dashes = []vg.Length{4 * s, 3 * s}
		}
		p.Add(tracked{l})
		entries.add(sr.Label, "line", sr.Group, l)
		if len(xys) <= fewPoints { // a curve of a few points shows where they are
			sc, err := markers(xys, sr.Group, 2*s)
			if err != nil {
				return nil, nil, err
			}
			p.Add(tracked{sc})
			entries.add(sr.Label, "points", sr.Group, sc)
		}
	}
	if !(ymin <= ymax) {
		ymin, ymax = 0, 1
	}
	for _, v := range f.VLines {
		if !f.usable(v.X, 1) {
			continue
		}
		l, err := plotter.NewLine(plotter.XYs{{X: v.X, Y: ymin}, {X: v.X, Y: ymax}})
		if err != nil {
			return nil, nil, fmt.Errorf("figure: %w", err)
		}
		l.LineStyle.Color = colour(v.Group)
		l.LineStyle.Width = 0.8 * s
		switch v.Style {
		case VDotted:
			l.LineStyle.Dashes = []vg.Length{0.8 * s, 1.6 * s}
		case VDashDot:
			l.LineStyle.Dashes = []vg.Length{5 * s, 1.5 * s, 0.8 * s, 1.5 * s}
		default:
			l.LineStyle.Dashes = []vg.Length{2 * s, 2 * s}
		}
		p.Add(tracked{l})
		entries.add(v.Label, "vline", v.Group, l)
	}
	for _, e := range entries.entries {
		leg.Add(e.label, e.thumbs()...)
	}
	lp := &leg
	if len(entries.entries) == 0 {
		lp = nil
	}
	switch {
	case f.YMin < f.YMax:
		p.Y.Min, p.Y.Max = math.Min(ty(f.YMin), ymin), math.Max(ty(f.YMax), ymax)
	case f.LogY:
		p.Y.Min, p.Y.Max = math.Floor(ymin), math.Ceil(ymax) // whole decades
	default:
		p.Y.Min, p.Y.Max = ymin, ymax
	}
	// A marker or an error bar that reaches an end of the y axis would sit on its edge, half
	// drawn: that end moves out by a margin.
	if pad := markerMargin * (p.Y.Max - p.Y.Min); pad > 0 {
		if pmax >= p.Y.Max-pad/4 {
			p.Y.Max = pmax + pad
		}
		if pmin <= p.Y.Min+pad/4 {
			p.Y.Min = pmin - pad
		}
	}
	return p, lp, nil
}

// markers returns the markers of a group's points: its colour and shape, of the given radius.
func markers(xys plotter.XYs, group int, radius vg.Length) (*plotter.Scatter, error) {
	sc, err := plotter.NewScatter(xys)
	if err != nil {
		return nil, fmt.Errorf("figure: %w", err)
	}
	sc.GlyphStyle.Color = colour(group)
	sc.GlyphStyle.Shape = shape(group)
	sc.GlyphStyle.Radius = radius
	return sc, nil
}

// fewPoints is the most points of a curve that are marked as well as joined.
const fewPoints = 5

// markerMargin is the margin, as a fraction of the y range, between the end of the y axis and
// a marker or error bar that would otherwise touch it.
const markerMargin = 0.04
