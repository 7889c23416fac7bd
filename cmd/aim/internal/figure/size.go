package figure

// size.go: the size of a figure, as --size gives it on every command that draws one.

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gonum.org/v1/plot/vg"
)

// DefaultWidth and DefaultHeight are the size of a figure without --size.
const (
	DefaultWidth  = 6 * vg.Inch
	DefaultHeight = 4.2 * vg.Inch
)

// Size is a figure's width and height; the zero Size is the default, 6 x 4.2 inches. It is a
// flag.Value: "3.4x2.6in", "8.6x6.6cm", "90x65mm", "245x187pt" (one unit for both, or one
// after each number).
type Size struct{ W, H vg.Length }

var units = map[string]vg.Length{"in": vg.Inch, "cm": vg.Centimeter, "mm": vg.Millimeter, "pt": 1}

var sizeRE = regexp.MustCompile(`^([0-9]*\.?[0-9]+)(in|cm|mm|pt)?[x×]([0-9]*\.?[0-9]+)(in|cm|mm|pt)$`)

// ParseSize parses "WxHunit" (see Size); each side must lie between 1 and 40 inches.
func ParseSize(s string) (Size, error) {
	m := sizeRE.FindStringSubmatch(strings.ToLower(strings.ReplaceAll(s, " ", "")))
	if m == nil {
		return Size{}, fmt.Errorf("size %q: want WxH with a unit, e.g. 3.4x2.6in, 8.6x6.6cm, 90x65mm or 245x187pt", s)
	}
	wu := m[2]
	if wu == "" {
		wu = m[4]
	}
	w, _ := strconv.ParseFloat(m[1], 64)
	h, _ := strconv.ParseFloat(m[3], 64)
	z := Size{W: vg.Length(w) * units[wu], H: vg.Length(h) * units[m[4]]}
	for _, side := range []vg.Length{z.W, z.H} {
		if side < vg.Inch || side > 40*vg.Inch {
			return Size{}, fmt.Errorf("size %q: each side must lie between 1 in (2.54 cm, 72 pt) and 40 in", s)
		}
	}
	return z, nil
}

// Set parses a flag's value.
func (z *Size) Set(s string) error {
	v, err := ParseSize(s)
	if err != nil {
		return err
	}
	*z = v
	return nil
}

// String returns the size in inches ("6x4.2in" for the default).
func (z *Size) String() string {
	w, h := z.or()
	return strconv.FormatFloat(float64(w/vg.Inch), 'g', 4, 64) + "x" + strconv.FormatFloat(float64(h/vg.Inch), 'g', 4, 64) + "in"
}

// or returns the width and the height, the default for the zero Size.
func (z Size) or() (vg.Length, vg.Length) {
	if z.W == 0 || z.H == 0 {
		return DefaultWidth, DefaultHeight
	}
	return z.W, z.H
}

// SizeUsage is the help text of --size.
const SizeUsage = "figure size WxH with a unit: in, cm, mm or pt, e.g. 3.4x2.6in (a journal column) or 17x10cm"
