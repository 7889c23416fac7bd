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
