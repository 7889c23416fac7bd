package se

import (
	"testing"

	"github.com/aimtheory/aim/engine/aim"
)

func TestZZ(t *testing.T) {
	ch, _ := aim.NewNoisySoftmax(2, 1, 0.01)
	for _, a := range []float64{0.05, 0.1, 0.2} {
		p, err := Solve(ch, 0.5, a, DefaultOptions())
		t.Logf("alpha %g mmse %.5f %v", a, p.MMSE, err)
	}
}
