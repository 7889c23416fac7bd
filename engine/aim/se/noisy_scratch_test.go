package se

import (
	"testing"
	"time"

	"github.com/aimtheory/aim/engine/aim"
)

func TestNoisyScratchSE(t *testing.T) {
	for _, delta := range []float64{0.01} {
		ch, _ := aim.NewNoisySoftmax(2, 1, delta)
		sm, _ := aim.NewSoftmax(2, 1)
		for _, alpha := range []float64{0.04, 0.1, 0.16} {
			t0 := time.Now()
			p, err := Solve(ch, 0.5, alpha, DefaultOptions())
			p0, _ := Solve(sm, 0.5, alpha, DefaultOptions())
			t.Logf("delta %g alpha %g: mmse %.5f (noiseless %.5f) iters %d err %v %v", delta, alpha, p.MMSE, p0.MMSE, p.Iterations, err, time.Since(t0))
		}
	}
}
