package figure

// mathtext.go: the text handler of every figure's text: Unicode (Greek letters, ‖, −, Ŝ, ...)
// in the bundled Liberation fonts, with braced sub- and superscripts: "α_{PR}", "D^{2}",
// "10^{−2}". A bare "_" or "^" is literal (a file name such as se_T2 stays as it is).

import (
	"math"
	"strings"

	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
)

// Script sizes and baseline shifts, as fractions of the font size.
const (
	scriptScale = 0.75
	subDrop     = 0.22
	superRise   = 0.40
)

// run is a piece of a label at one level: 0 on the baseline, -1 a subscript, +1 a superscript.
type run struct {
	text  string
	level int
}

// parseMath splits a label into runs; an unclosed "_{" or "^{" is literal.
func parseMath(s string) []run {
	var runs []run
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			runs = append(runs, run{text: cur.String()})
			cur.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		if (s[i] == '_' || s[i] == '^') && i+1 < len(s) && s[i+1] == '{' {
			if j := strings.IndexByte(s[i+2:], '}'); j >= 0 {
				flush()
				level := -1
				if s[i] == '^' {
					level = 1
				}
				runs = append(runs, run{text: s[i+2 : i+2+j], level: level})
				i += 2 + j
				continue
			}
		}
		cur.WriteByte(s[i])
	}
	flush()
	return runs
}

// Plain returns the label as plain text, the script markers removed ("α_{PR}" -> "αPR").
func Plain(s string) string {
	var b strings.Builder
	for _, r := range parseMath(s) {
		b.WriteString(r.text)
	}
	return b.String()
}

// mathHandler is a text.Handler drawing the runs of parseMath with the fonts of Plain.
type mathHandler struct{ text.Plain }

var _ text.Handler = mathHandler{}

// runFont returns the font of a run of level at the label's font.
func runFont(fnt font.Font, level int) font.Font {
	if level != 0 {
		fnt.Size = fnt.Size * scriptScale
	}
	return fnt
}

// shift returns the baseline offset of a level at font size size.
func shift(size vg.Length, level int) vg.Length {
	switch level {
	case -1:
		return -subDrop * size
	case 1:
		return superRise * size
	}
	return 0
}

// Box returns the width, the height above the baseline and the depth below it.
func (h mathHandler) Box(txt string, fnt font.Font) (width, height, depth vg.Length) {
	for _, r := range parseMath(txt) {
		f := runFont(fnt, r.level)
		w, ht, d := h.Plain.Box(r.text, f)
		s := shift(fnt.Size, r.level)
		width += w
		height = vg.Length(math.Max(float64(height), float64(ht+s)))
		depth = vg.Length(math.Max(float64(depth), float64(d-s)))
	}
	return width, height, depth
}

// Draw draws a label as Plain does: aligned by sty.XAlign and sty.YAlign, rotated by
// sty.Rotation about pt, one line under another.
func (h mathHandler) Draw(c vg.Canvas, txt string, sty text.Style, pt vg.Point) {
	txt = strings.TrimRight(txt, "\n")
	if txt == "" {
		return
	}
	c.SetColor(sty.Color)
	if sty.Rotation != 0 {
		c.Push()
		defer c.Pop()
		c.Rotate(sty.Rotation)
	}
	sin64, cos64 := math.Sincos(sty.Rotation)
	sin, cos := vg.Length(sin64), vg.Length(cos64)
	pt.X, pt.Y = pt.Y*sin+pt.X*cos, pt.Y*cos-pt.X*sin
	base := h.Fonts.Lookup(sty.Font, sty.Font.Size)
	pt.Y += sty.Height(txt)*vg.Length(sty.YAlign) - base.Extents().Ascent
	lines := h.Lines(txt)
	for i, line := range lines {
		w, _, _ := h.Box(line, sty.Font)
		x := pt.X + vg.Length(sty.XAlign)*w
		y := pt.Y + vg.Length(len(lines)-i)*sty.Font.Size
		for _, r := range parseMath(line) {
			f := runFont(sty.Font, r.level)
			face := h.Fonts.Lookup(f, f.Size)
			c.FillString(face, vg.Point{X: x, Y: y + shift(sty.Font.Size, r.level)}, r.text)
			x += face.Width(r.text)
		}
	}
}
