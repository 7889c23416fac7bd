package channel

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestSpecNoiseValidate: the label noise Delta is accepted for softmax at 2 <= T <= 6 (0 is
// the noiseless channel) and refused, with the reason, when negative or not finite, on hardmax
// and at T > 6; String names it.
func TestSpecNoiseValidate(t *testing.T) {
	for _, c := range []Spec{{Kind: KindSoftmax, T: 2, Beta: 1, Noise: 0.01}, {Kind: KindSoftmax, T: 3, Beta: 1}, {Kind: KindSoftmax, T: 3, Beta: 1, Noise: 0.01}, {Kind: KindLinear, T: 1}, {Kind: KindLinear, T: 1, Noise: 0.25}} {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	for _, c := range []struct {
		ch   Spec
		want string
	}{
		{Spec{Kind: KindSoftmax, T: 2, Beta: 1, Noise: -1}, "Delta >= 0"},
		{Spec{Kind: KindSoftmax, T: 2, Beta: 1, Noise: math.NaN()}, "Delta >= 0"},
		{Spec{Kind: KindSoftmax, T: 2, Beta: 1, Noise: math.Inf(1)}, "Delta >= 0"},
		{Spec{Kind: KindSoftmax, T: 7, Beta: 1, Noise: 0.01}, "2 <= T <= 6"},
		{Spec{Kind: KindHardmax, T: 2, Noise: 0.01}, "softmax and linear only"},
		{Spec{Kind: KindLinear, T: 2}, "need T = 1"},
		{Spec{Kind: KindLinear, T: 1, Noise: -0.5}, "Delta >= 0"},
	} {
		if err := c.ch.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one mentioning %q", c.ch, err, c.want)
		}
	}
	if s := (Spec{Kind: KindSoftmax, T: 2, Beta: 1, Noise: 0.01}).String(); s != "softmax-noise0.01" {
		t.Errorf("String = %q", s)
	}
}

// TestNewMatchesConstructors: New builds, for each kind of Spec, the channel of the kind's
// constructor with the Spec's lattice rule, so that its outputs and g_out are those of the
// constructor's channel bit for bit, its clones' too; Support refuses label noise unless it
// declares it.
func TestNewMatchesConstructors(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct {
		s    Spec
		want func() (Scalar, error)
	}{
		{Spec{Kind: KindSoftmax, T: 3, Beta: 1.5}, func() (Scalar, error) { return NewSoftmax(3, 1.5) }},
		{Spec{Kind: KindLinear, T: 1, Noise: 0.25}, func() (Scalar, error) { return NewLinear(0.25) }},
		{Spec{Kind: KindSoftmax, T: 2, Beta: 1, Noise: 0.1}, func() (Scalar, error) { return NewNoisySoftmax(2, 1, 0.1) }},
		{Spec{Kind: KindHardmax, T: 2, PaperCompat: true}, func() (Scalar, error) { return NewHardmax(2, true) }},
		{Spec{Kind: KindHardmax, T: 3, Points: 256}, func() (Scalar, error) {
			k, err := NewHardmaxT(3, 256, HardmaxTShifts)
			if err != nil {
				return nil, err
			}
			k.Tol = DefaultHardmaxTol
			return hardmaxTScalar{k}, nil
		}},
		{Spec{Kind: KindSoftmax, T: 3, Beta: 1, Noise: 0.1, Points: 128, Tol: -1}, func() (Scalar, error) {
			k, err := NewNoisySoftmaxT(3, 1, 0.1, 128, NoisyTShifts)
			if err != nil {
				return nil, err
			}
			return noisyTScalar{k}, nil
		}},
	} {
		got, err := New(c.s)
		if err != nil {
			t.Fatalf("%v: %v", c.s, err)
		}
		want, err := c.want()
		if err != nil {
			t.Fatal(err)
		}
		T := c.s.T
		M := Fields(T)
		h, y, y2 := make([]float64, T*T), make([]float64, T*T), make([]float64, T*T)
		u, omega, g, g2 := make([]float64, M), make([]float64, M), make([]float64, M), make([]float64, M)
		for k := range u {
			u[k], omega[k] = r.NormFloat64(), 0.5*r.NormFloat64()
		}
		HFromU(h, u, T)
		got.Output(y, h)
		want.Output(y2, h)
		if !slices.Equal(y, y2) {
			t.Errorf("%v: Output %v, the constructor's %v", c.s, y, y2)
		}
		got.Clone().GOut(g, y, omega, 0.5)
		want.GOut(g2, y, omega, 0.5)
		for k := range g {
			if math.Float64bits(g[k]) != math.Float64bits(g2[k]) {
				t.Errorf("%v: GOut %v, the constructor's %v", c.s, g, g2)
				break
			}
		}
		err = (Support{}).Check(c.s)
		if (c.s.Noise > 0 && c.s.Kind == KindSoftmax) != errors.Is(err, ErrUnsupported) {
			t.Errorf("%v: Support{}.Check = %v", c.s, err)
		}
		if err := (Support{Noise: true}).Check(c.s); err != nil {
			t.Errorf("%v: Support{Noise: true}.Check = %v", c.s, err)
		}
	}
	if _, err := New(Spec{Kind: KindHardmax, T: 7}); err == nil {
		t.Error("New accepted hardmax at T = 7")
	}
}
