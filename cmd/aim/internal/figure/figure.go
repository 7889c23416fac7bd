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
	"gonum.org/v1/plot/plotter"
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
}

// Figure is one panel.
type Figure struct {
	Title, XLabel, YLabel string
	LogX, LogY            bool
	Series                []Series
	VLines                []VLine
	YMin, YMax            float64   // when YMin < YMax, the y range covers at least [YMin, YMax]
	XTicks                []float64 // when set, the labelled x ticks (e.g. the D of a log axis without a decade in range)
	Width, Height         vg.Length // zero: 6 x 4.2 inches
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

// Render draws the figure in the given format ("png", "svg" or "pdf": vector text, the fonts
// embedded) to w.
func (f *Figure) Render(w io.Writer, format string) error {
	p := plot.New()
	p.Title.Text = f.Title
	p.X.Label.Text = f.XLabel
	p.Y.Label.Text = f.YLabel
	if f.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
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
		p.Y.Tick.Marker = decadeTicks{}
	}
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.Add(plotter.NewGrid())
	ymin, ymax := math.Inf(1), math.Inf(-1)
	for _, s := range f.Series {
		if len(s.X) != len(s.Y) || (s.YErr != nil && len(s.YErr) != len(s.Y)) {
			return fmt.Errorf("figure: series %q has mismatched lengths", s.Label)
		}
		var xys plotter.XYs
		var errs plotter.YErrors
		for i := range s.X {
			if !f.usable(s.X[i], s.Y[i]) {
				continue
			}
			y := ty(s.Y[i])
			xys = append(xys, plotter.XY{X: s.X[i], Y: y})
			ymin, ymax = math.Min(ymin, y), math.Max(ymax, y)
			if s.YErr != nil {
				lo, hi := s.YErr[i], s.YErr[i]
				if f.LogY {
					lo = y - math.Log10(math.Max(s.Y[i]-s.YErr[i], s.Y[i]*1e-3))
					hi = math.Log10(s.Y[i]+s.YErr[i]) - y
				}
				errs = append(errs, struct{ Low, High float64 }{lo, hi})
			}
		}
		if len(xys) == 0 {
			continue
		}
		c := colour(s.Group)
		if s.Points {
			sc, err := plotter.NewScatter(xys)
			if err != nil {
				return fmt.Errorf("figure: %w", err)
			}
			sc.GlyphStyle.Color = c
			sc.GlyphStyle.Shape = shape(s.Group)
			sc.GlyphStyle.Radius = vg.Points(2.2)
			p.Add(sc)
			if errs != nil {
				eb, err := plotter.NewYErrorBars(struct {
					plotter.XYer
					plotter.YErrorer
				}{xys, errs})
				if err != nil {
					return fmt.Errorf("figure: %w", err)
				}
				eb.LineStyle.Color = c
				p.Add(eb)
			}
			if s.Label != "" {
				p.Legend.Add(s.Label, sc)
			}
			continue
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return fmt.Errorf("figure: %w", err)
		}
		l.LineStyle.Color = c
		l.LineStyle.Width = vg.Points(1.4)
		if s.Dashed {
			l.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(l)
		if s.Label != "" {
			p.Legend.Add(s.Label, l)
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
			return fmt.Errorf("figure: %w", err)
		}
		l.LineStyle.Color = colour(v.Group)
		l.LineStyle.Width = vg.Points(0.7)
		l.LineStyle.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
		p.Add(l)
		if v.Label != "" {
			p.Legend.Add(v.Label, l)
		}
	}
	switch {
	case f.YMin < f.YMax:
		p.Y.Min, p.Y.Max = math.Min(ty(f.YMin), ymin), math.Max(ty(f.YMax), ymax)
	case f.LogY:
		p.Y.Min, p.Y.Max = math.Floor(ymin), math.Ceil(ymax) // whole decades
	}
	width, height := f.Width, f.Height
	if width == 0 {
		width, height = 6*vg.Inch, 4.2*vg.Inch
	}
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
	p.Draw(draw.New(canvas))
	if _, err := canvas.WriteTo(w); err != nil {
		return fmt.Errorf("figure: %w", err)
	}
	return nil
}

// decadeTicks marks a log10-transformed axis: major ticks labelled 10^k at the integers k,
// minor ticks at log10(m 10^k) for m = 2..9.
type decadeTicks struct{}

// Ticks returns the ticks between min and max, in log10 units.
func (decadeTicks) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	for k := math.Floor(min); k <= math.Ceil(max); k++ {
		if k >= min && k <= max {
			ticks = append(ticks, plot.Tick{Value: k, Label: strconv.FormatFloat(math.Pow(10, k), 'g', -1, 64)})
		}
		for m := 2.0; m < 10; m++ {
			if v := k + math.Log10(m); v >= min && v <= max {
				ticks = append(ticks, plot.Tick{Value: v})
			}
		}
	}
	return ticks
}
