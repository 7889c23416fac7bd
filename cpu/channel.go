package cpu

import (
	"fmt"
	"math"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/device"
)

// channelMaker returns, for ch, a function that gives each goroutine its scalar channel
// (channel.New's, the Go twins of kernels/channel.cu and the noisy softmax, cloned: the same stateless one for softmax, the noisy softmax at T = 2 and the
// closed-form hardmax, a copy for the lattice estimates at T > 2, which are not safe for
// concurrent use), and the samples per chunk of the parallel loops: fewer for the lattice
// estimates, which cost about a millisecond a sample, and for the noisy softmax.
func channelMaker(op string, ch channel.Spec) (func() channel.Scalar, int, error) {
	sc, err := channel.New(ch)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", op, err)
	}
	per := chunkSamples
	switch {
	case ch.T > 2 && (ch.Kind == channel.KindHardmax || ch.Noise > 0):
		per = chunkPolytope
	case ch.Noise > 0:
		per = chunkNoisy
	}
	return sc.Clone, per, nil
}

// ChannelOutput computes y_mu = g(h_mu) for n samples of t x t matrices h: the row softmax of
// beta h or the one-hot row argmax (ties to the lowest index). y may be h.
func (d *backend) ChannelOutput(ch channel.Spec, y, h device.Buffer, n int) error {
	const op = "cpu ChannelOutput"
	mk, per, err := channelMaker(op, ch)
	if err != nil {
		return err
	}
	t := ch.T
	tt := t * t
	ys, hs := data(y), data(h)
	inPlace := n > 0 && &ys[0] == &hs[0] // the front allows y = h or no overlap
	return d.forChunks(op, chunks(n, per), func() func(c int) {
		sc := mk()
		tmp := make([]float64, tt) // the channels write y row by row while reading h
		return func(c int) {
			lo, hi := span(c, n, per)
			for mu := lo; mu < hi; mu++ {
				hm, ym := hs[mu*tt:(mu+1)*tt], ys[mu*tt:(mu+1)*tt]
				if inPlace {
					copy(tmp, hm)
					hm = tmp
				}
				sc.Output(ym, hm)
			}
		}
	})
}

// ChannelGOut computes g_mu = g_out(y_mu; omega_mu, V) for n samples in z-coordinates and
// returns sum_mu sum_{a<=b} g_mu,ab^2 (deterministic, independent of the worker count: each
// sample's value depends on the sample alone, even the polytope estimates of hardmax at T > 2,
// whose lattice is fixed and whose constraints are re-ordered per call). A sample whose
// estimate fails gets NaN, and so does the sum.
//
// Per sample, y is the t x t output and omega the t x t matrix of which only the upper
// triangle (a <= b) is read; g is written full and symmetric. The scalar channel works in
// packed unit coordinates u, z = sqrt(2) u entry by entry: omega_u = omega_z/sqrt2,
// V_u = V/2 and g_z = g_u/sqrt2 (g = d log Z_out/d omega). g may be omega; g does not overlap y.
func (d *backend) ChannelGOut(ch channel.Spec, g, y, omega device.Buffer, n int, v float64) (float64, error) {
	const op = "cpu ChannelGOut"
	mk, per, err := channelMaker(op, ch)
	if err != nil {
		return 0, err
	}
	t := ch.T
	tt := t * t
	gs, ys, oms := data(g), data(y), data(omega)
	m := channel.Fields(t)
	vu := v / 2
	part := make([]float64, chunks(n, per))
	err = d.forChunks(op, len(part), func() func(c int) {
		sc := mk()               // per goroutine: the lattice estimates are not safe for concurrent use
		ou := make([]float64, m) // per-goroutine scratch: packed omega_u and g_u
		gu := make([]float64, m)
		return func(c int) {
			lo, hi := span(c, n, per)
			var s float64
			for mu := lo; mu < hi; mu++ {
				om := oms[mu*tt : (mu+1)*tt]
				k := 0
				for a := 0; a < t; a++ {
					for b := a; b < t; b++ {
						ou[k] = om[a*t+b] / math.Sqrt2
						k++
					}
				}
				sc.GOut(gu, ys[mu*tt:(mu+1)*tt], ou, vu)
				gm := gs[mu*tt : (mu+1)*tt]
				k = 0
				for a := 0; a < t; a++ {
					for b := a; b < t; b++ {
						gz := gu[k] / math.Sqrt2
						gm[a*t+b] = gz
						gm[b*t+a] = gz
						s += gz * gz
						k++
					}
				}
			}
			part[c] = s
		}
	})
	return sumChunks(part), err
}
