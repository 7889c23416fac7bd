package figure

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"image"
	"image/png"
	"io"
	"math"
	"regexp"
	"strings"
	"testing"
)

// TestRenderPNG draws a line and points and checks the image size and that the series'
// colours are on it.
func TestRenderPNG(t *testing.T) {
	f := &Figure{
		XLabel: "alpha", YLabel: "mmse", LogY: true,
		Series: []Series{
			{Label: "line", Group: 0, X: []float64{0.1, 0.2, 0.3}, Y: []float64{1, 0.5, 0}}, // y = 0 is dropped on log axes
			{Label: "points", Group: 5, X: []float64{0.1, 0.2}, Y: []float64{0.9, 0.6}, YErr: []float64{0.05, 0.05}, Points: true},
		},
		VLines: []VLine{{X: 0.25, Group: 0, Label: "alpha_PR"}},
	}
	img := renderPNG(t, f)
	if b := img.Bounds(); b.Dx() != 900 || b.Dy() != 630 {
		t.Fatalf("image is %dx%d, want 900x630 (6 x 4.2 in at 150 dpi)", b.Dx(), b.Dy())
	}
	count := map[string]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bb, _ := img.At(x, y).RGBA()
			for _, hex := range []string{Palette[0], Palette[5]} {
				want := colour(map[string]int{Palette[0]: 0, Palette[5]: 5}[hex])
				wr, wg, wb, _ := want.RGBA()
				if r == wr && g == wg && bb == wb {
					count[hex]++
				}
			}
		}
	}
	for _, hex := range []string{Palette[0], Palette[5]} {
		if count[hex] < 50 {
			t.Errorf("colour %s covers %d pixels, want a drawn series (>= 50)", hex, count[hex])
		}
	}
}

func TestRenderSVGAndFormats(t *testing.T) {
	f := &Figure{XLabel: "alpha-bar", Series: []Series{{Label: "rho = 0.5", X: []float64{1, 2}, Y: []float64{1, 2}}}}
	var buf bytes.Buffer
	if err := f.Render(&buf, "svg"); err != nil {
		t.Fatal(err)
	}
	if s := buf.String(); !strings.HasPrefix(strings.TrimSpace(s), "<?xml") || !strings.Contains(s, "alpha-bar") {
		t.Errorf("svg output lacks the header or the axis label")
	}
	for path, want := range map[string]string{"a/b.png": "png", "x.SVG": "svg", "f.pdf": "pdf"} {
		if got, err := Format(path); err != nil || got != want {
			t.Errorf("Format(%q) = %q, %v", path, got, err)
		}
	}
	if _, err := Format("x.gif"); err == nil {
		t.Error("Format(x.gif) succeeded")
	}
	bad := &Figure{Series: []Series{{X: []float64{1}, Y: []float64{1, 2}}}}
	if err := bad.Render(&buf, "png"); err == nil {
		t.Error("mismatched series rendered without error")
	}
}

// TestRenderPDF: a PDF figure is a PDF file whose text is vector text: the axis labels and a
// legend entry are shown by text operators in its (deflated) content streams, not drawn as
// pixels.
func TestRenderPDF(t *testing.T) {
	f := &Figure{XLabel: "sample complexity", YLabel: "mmse", Series: []Series{{Label: "rho = 0.5", X: []float64{1, 2}, Y: []float64{1, 2}}}}
	var buf bytes.Buffer
	if err := f.Render(&buf, "pdf"); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	if !bytes.HasPrefix(b, []byte("%PDF-1.")) || !bytes.Contains(b[max(0, len(b)-64):], []byte("%%EOF")) {
		t.Fatalf("not a PDF file: starts %q", b[:min(len(b), 16)])
	}
	var text []byte
	for _, m := range regexp.MustCompile(`(?s)stream\r?\n(.*?)endstream`).FindAllSubmatch(b, -1) {
		if r, err := zlib.NewReader(bytes.NewReader(m[1])); err == nil {
			c, _ := io.ReadAll(r)
			text = append(text, c...)
		}
	}
	for _, label := range []string{"sample complexity", "mmse", "rho = 0.5"} {
		if !bytes.Contains(text, []byte("("+label+")Tj")) {
			t.Errorf("the PDF shows no text %q", label)
		}
	}
}

// TestPaletteDistinct: neighbouring colours of the palette (and the last and the first, which
// meet when groups wrap) differ by a CIEDE2000 colour difference of at least 20, and
// neighbouring groups have different markers, so that curves stay apart for colour-blind
// readers and in greyscale print.
func TestPaletteDistinct(t *testing.T) {
	n := len(Palette)
	for i := 0; i < n; i++ {
		a, b := colour(i), colour((i+1)%n)
		if d := ciede2000(lab(a), lab(b)); d < 20 {
			t.Errorf("Palette[%d] %s and Palette[%d] %s: Delta E00 = %.1f, want >= 20", i, Palette[i], (i+1)%n, Palette[(i+1)%n], d)
		}
		if fmt.Sprintf("%T", shape(i)) == fmt.Sprintf("%T", shape(i+1)) {
			t.Errorf("groups %d and %d share the marker %T", i, i+1, shape(i))
		}
	}
	// The formula against a published pair (Sharma, Wu and Dalal 2005, table 1, pair 1).
	if d := ciede2000([3]float64{50, 2.6772, -79.7751}, [3]float64{50, 0, -82.7485}); math.Abs(d-2.0425) > 1e-4 {
		t.Errorf("CIEDE2000 of Sharma's pair 1 = %.4f, want 2.0425", d)
	}
}

// lab converts an sRGB colour to CIELAB (D65).
func lab(c interface{ RGBA() (r, g, b, a uint32) }) [3]float64 {
	r, g, b, _ := c.RGBA()
	lin := func(v uint32) float64 {
		x := float64(v) / 0xffff
		if x <= 0.04045 {
			return x / 12.92
		}
		return math.Pow((x+0.055)/1.055, 2.4)
	}
	R, G, B := lin(r), lin(g), lin(b)
	X := (0.4124564*R + 0.3575761*G + 0.1804375*B) / 0.95047
	Y := 0.2126729*R + 0.7151522*G + 0.0721750*B
	Z := (0.0193339*R + 0.1191920*G + 0.9503041*B) / 1.08883
	f := func(t float64) float64 {
		if t > 216.0/24389 {
			return math.Cbrt(t)
		}
		return (24389.0/27*t + 16) / 116
	}
	return [3]float64{116*f(Y) - 16, 500 * (f(X) - f(Y)), 200 * (f(Y) - f(Z))}
}

// ciede2000 is the CIEDE2000 colour difference of two CIELAB colours (Sharma, Wu and Dalal,
// Color Research and Application 30 (2005) 21-30), with kL = kC = kH = 1.
func ciede2000(x, y [3]float64) float64 {
	L1, a1, b1, L2, a2, b2 := x[0], x[1], x[2], y[0], y[1], y[2]
	rad, deg := math.Pi/180, 180/math.Pi
	C1, C2 := math.Hypot(a1, b1), math.Hypot(a2, b2)
	Cb := (C1 + C2) / 2
	G := 0.5 * (1 - math.Sqrt(math.Pow(Cb, 7)/(math.Pow(Cb, 7)+math.Pow(25, 7))))
	a1p, a2p := (1+G)*a1, (1+G)*a2
	C1p, C2p := math.Hypot(a1p, b1), math.Hypot(a2p, b2)
	hue := func(b, a float64) float64 {
		if a == 0 && b == 0 {
			return 0
		}
		h := math.Atan2(b, a) * deg
		if h < 0 {
			h += 360
		}
		return h
	}
	h1p, h2p := hue(b1, a1p), hue(b2, a2p)
	dL, dC := L2-L1, C2p-C1p
	dh := 0.0
	if C1p*C2p != 0 {
		dh = h2p - h1p
		switch {
		case dh > 180:
			dh -= 360
		case dh < -180:
			dh += 360
		}
	}
	dH := 2 * math.Sqrt(C1p*C2p) * math.Sin(dh/2*rad)
	Lbp, Cbp := (L1+L2)/2, (C1p+C2p)/2
	hbp := h1p + h2p
	if C1p*C2p != 0 {
		switch {
		case math.Abs(h1p-h2p) <= 180:
			hbp /= 2
		case h1p+h2p < 360:
			hbp = (hbp + 360) / 2
		default:
			hbp = (hbp - 360) / 2
		}
	}
	T := 1 - 0.17*math.Cos((hbp-30)*rad) + 0.24*math.Cos(2*hbp*rad) + 0.32*math.Cos((3*hbp+6)*rad) - 0.20*math.Cos((4*hbp-63)*rad)
	dTheta := 30 * math.Exp(-math.Pow((hbp-275)/25, 2))
	Rc := 2 * math.Sqrt(math.Pow(Cbp, 7)/(math.Pow(Cbp, 7)+math.Pow(25, 7)))
	Sl := 1 + 0.015*math.Pow(Lbp-50, 2)/math.Sqrt(20+math.Pow(Lbp-50, 2))
	Sc, Sh := 1+0.045*Cbp, 1+0.015*Cbp*T
	Rt := -math.Sin(2*dTheta*rad) * Rc
	return math.Sqrt(math.Pow(dL/Sl, 2) + math.Pow(dC/Sc, 2) + math.Pow(dH/Sh, 2) + Rt*(dC/Sc)*(dH/Sh))
}

// renderPNG renders f as a PNG and decodes it.
func renderPNG(t *testing.T, f *Figure) image.Image {
	t.Helper()
	var buf bytes.Buffer
	if err := f.Render(&buf, "png"); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}
