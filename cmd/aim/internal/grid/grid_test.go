package grid

import (
	"math"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		spec string
		want []float64
	}{
		{"0.05,0.1, 0.15", []float64{0.05, 0.1, 0.15}},
		{"0.5", []float64{0.5}},
		{"0:1:5", []float64{0, 0.25, 0.5, 0.75, 1}},
		{"0.001:0.25:128", nil}, // checked below by its ends and count
		{"1:100:3:log", []float64{1, 10, 100}},
		{"2:2:1", []float64{2}},
	}
	for _, tc := range tests {
		got, err := Parse(tc.spec)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.spec, err)
		}
		if tc.want == nil {
			if len(got) != 128 || got[0] != 0.001 || got[127] != 0.25 || math.Abs(got[1]-got[0]-0.249/127) > 1e-15 {
				t.Errorf("Parse(%q) = %d points from %g to %g", tc.spec, len(got), got[0], got[len(got)-1])
			}
			continue
		}
		if len(got) != len(tc.want) {
			t.Fatalf("Parse(%q) = %v, want %v", tc.spec, got, tc.want)
		}
		for i := range got {
			if math.Abs(got[i]-tc.want[i]) > 1e-12*math.Max(1, math.Abs(tc.want[i])) {
				t.Errorf("Parse(%q)[%d] = %g, want %g", tc.spec, i, got[i], tc.want[i])
			}
		}
	}
}

func TestParseRejects(t *testing.T) {
	for _, spec := range []string{"", "  ", "a", "0.1,,0.2", "0.1,x", "1:0:5", "0:1:0", "0:1:-3", "0:1:2.5", "0:1",
		"0:1:5:lin", "0:1:5:log", "1:2:1", "NaN", "Inf", "1:2:3:4:5", ":1:3", "0:1:1000001", "1:2:99999999999:log"} {
		if got, err := Parse(spec); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", spec, got)
		}
	}
}
