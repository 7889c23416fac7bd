package se

import (
	"math"
	"testing"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/rie"
)

// TestSolvePrior: SolvePrior with rie.MP is Solve; with the eigenvalues of a power-law teacher
// (aim.Teacher, gamma = 1.25, D = 100, rho = 1) the error is below the prior's variance
// Q0 - mean^2, decreases in alpha and rises with the label noise, the informed and uninformed
// starts agree (no first-order transition is expected for the linear channel), and the softmax
// channel runs too. Start Both is refused for a non-MP prior.
func TestSolvePrior(t *testing.T) {
	lin := func(noise float64) aim.Channel {
		ch, err := aim.NewLinear(noise)
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}
	for _, alpha := range []float64{0.1, 0.4} {
		a, err1 := Solve(lin(0.25), 0.5, alpha, DefaultOptions())
		b, err2 := SolvePrior(lin(0.25), rie.MP{Rho: 0.5}, alpha, DefaultOptions())
		if err1 != nil || err2 != nil || a != b {
			t.Errorf("alpha %g: Solve %+v, SolvePrior(MP) %+v (%v, %v)", alpha, a, b, err1, err2)
		}
	}
	p := aim.Params{D: 100, Rho: 1, Teacher: aim.Teacher{PowerLaw: true, Gamma: 1.25}}
	prior := p.Prior()
	v := prior.Q0() - prior.Mean()*prior.Mean()
	for _, noise := range []float64{0.05, 0.5} {
		prev := v
		for _, alpha := range []float64{0.02, 0.1, 0.3, 1} {
			pt, err := SolvePrior(lin(noise), prior, alpha, DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			inf := DefaultOptions()
			inf.Start = Informed
			pi, err := SolvePrior(lin(noise), prior, alpha, inf)
			if err != nil {
				t.Fatal(err)
			}
			more, err := SolvePrior(lin(2*noise), prior, alpha, DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("Delta %g alpha %g: mmse %.6f (informed %.6f, Delta x 2: %.6f)", noise, alpha, pt.MMSE, pi.MMSE, more.MMSE)
			if !(pt.MMSE < prev) || math.Abs(pi.MMSE-pt.MMSE) > 1e-8 || !(more.MMSE > pt.MMSE) || pt.Rho != 1 {
				t.Errorf("Delta %g alpha %g: mmse %g (previous alpha %g), informed %g, doubled noise %g, rank %g", noise, alpha, pt.MMSE, prev, pi.MMSE, more.MMSE, pt.Rho)
			}
			prev = pt.MMSE
		}
	}
	sm, err := aim.NewChannel(channel.Spec{Kind: channel.KindSoftmax, T: 2, Beta: 1})
	if err != nil {
		t.Fatal(err)
	}
	if pt, err := SolvePrior(sm, prior, 0.2, DefaultOptions()); err != nil || !(pt.MMSE > 0 && pt.MMSE < v) {
		t.Errorf("softmax: %+v, %v", pt, err)
	}
	both := DefaultOptions()
	both.Start = Both
	if _, err := SolvePrior(lin(0.1), prior, 0.2, both); err == nil {
		t.Error("Start Both accepted for a power-law prior")
	}
}
