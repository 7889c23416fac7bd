package figure

import (
	"bytes"
	"image/png"
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
	var buf bytes.Buffer
	if err := f.Render(&buf, "png"); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
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
	for path, want := range map[string]string{"a/b.png": "png", "x.SVG": "svg"} {
		if got, err := Format(path); err != nil || got != want {
			t.Errorf("Format(%q) = %q, %v", path, got, err)
		}
	}
	if _, err := Format("x.pdf"); err == nil {
		t.Error("Format(x.pdf) succeeded")
	}
	bad := &Figure{Series: []Series{{X: []float64{1}, Y: []float64{1, 2}}}}
	if err := bad.Render(&buf, "png"); err == nil {
		t.Error("mismatched series rendered without error")
	}
}
