// Package grid parses the parameter grids of the command line: comma lists ("0.05,0.1,0.2"),
// linear ranges "a:b:n" (n points from a to b inclusive) and geometric ranges "a:b:n:log".
package grid

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Parse returns the values that spec describes: a comma-separated list of numbers, a linear
// range "a:b:n" = a + (b - a) k/(n - 1) for k = 0..n-1, or a geometric range "a:b:n:log" =
// a (b/a)^(k/(n-1)), which needs 0 < a. Every value must be finite; ranges need a <= b and
// n >= 1 (n = 1 needs a = b).
func Parse(spec string) ([]float64, error) {
	s := strings.TrimSpace(spec)
	if s == "" {
		return nil, fmt.Errorf("empty grid")
	}
	if strings.Contains(s, ":") {
		return parseRange(s)
	}
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := number(f)
		if err != nil {
			return nil, fmt.Errorf("grid %q: %w", spec, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// MaxPoints is the most points a range may have.
const MaxPoints = 1_000_000

func number(f string) (float64, error) {
	f = strings.TrimSpace(f)
	if f == "" {
		return 0, fmt.Errorf("empty entry")
	}
	v, err := strconv.ParseFloat(f, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", f)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not finite", f)
	}
	return v, nil
}

func parseRange(spec string) ([]float64, error) {
	parts := strings.Split(spec, ":")
	geometric := false
	if len(parts) == 4 {
		if strings.TrimSpace(parts[3]) != "log" {
			return nil, fmt.Errorf("range %q: the fourth field may only be \"log\"", spec)
		}
		geometric = true
		parts = parts[:3]
	}
	if len(parts) != 3 {
		return nil, fmt.Errorf("range %q: want a:b:n or a:b:n:log", spec)
	}
	a, err := number(parts[0])
	if err != nil {
		return nil, fmt.Errorf("range %q: start: %w", spec, err)
	}
	b, err := number(parts[1])
	if err != nil {
		return nil, fmt.Errorf("range %q: end: %w", spec, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(parts[2]))
	if err != nil || n < 1 {
		return nil, fmt.Errorf("range %q: the count %q must be a whole number >= 1", spec, parts[2])
	}
	if n > MaxPoints {
		return nil, fmt.Errorf("range %q: %d points, more than %d", spec, n, MaxPoints)
	}
	if a > b {
		return nil, fmt.Errorf("range %q: start %g is above end %g", spec, a, b)
	}
	if n == 1 {
		if a != b {
			return nil, fmt.Errorf("range %q: one point needs start = end", spec)
		}
		return []float64{a}, nil
	}
	if geometric && !(a > 0) {
		return nil, fmt.Errorf("range %q: a geometric range needs a positive start", spec)
	}
	out := make([]float64, n)
	for k := range out {
		t := float64(k) / float64(n-1)
		if geometric {
			out[k] = a * math.Pow(b/a, t)
		} else {
			out[k] = a + (b-a)*t
		}
	}
	out[n-1] = b
	return out, nil
}
