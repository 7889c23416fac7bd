package fixedpoint

import "testing"

// TestStartParse: every start's String parses back to it, and anything else is an error
// that names the accepted words.
func TestStartParse(t *testing.T) {
	for s, want := range map[Start]string{Uninformed: "uninformed", Informed: "informed", Both: "both"} {
		if s.String() != want {
			t.Errorf("String = %q, want %q", s.String(), want)
		}
		if v, err := ParseStart(want); err != nil || v != s {
			t.Errorf("ParseStart(%q) = %v, %v", want, v, err)
		}
	}
	if _, err := ParseStart("foo"); err == nil || err.Error() != `start "foo": want uninformed, informed or both` {
		t.Errorf("ParseStart(foo): %v", err)
	}
}

// Distinct: both the absolute gap and 1% of the larger value must be exceeded.
func TestDistinct(t *testing.T) {
	for _, c := range []struct {
		a, b, gap float64
		want      bool
	}{
		{0.5, 0.52, 1e-3, true},   // 0.02 > 1e-3 and > 5.2e-3
		{0.5, 0.503, 1e-3, false}, // 3e-3 < 1% of 0.503
		{1e-4, 3e-4, 1e-3, false}, // below the gap, though 3 times apart
		{1e-4, 3e-4, 1e-6, true},  // a smaller gap (the AIM's)
		{0.3, 0.3 + 1e-7, 1e-6, false},
		{-0.5, -0.52, 1e-3, true}, // magnitudes, whatever the sign
	} {
		if got := Distinct(c.a, c.b, c.gap); got != c.want {
			t.Errorf("Distinct(%g, %g, %g) = %v, want %v", c.a, c.b, c.gap, got, c.want)
		}
	}
}
