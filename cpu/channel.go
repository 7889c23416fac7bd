package cpu

import (
	"fmt"
	"math"

	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/kernels"
)

// scalarChannel is what the channel operations need from the scalar channels of
// package kernels (*kernels.Softmax, *kernels.NoisySoftmax, *kernels.Hardmax and, through hardmaxT, *kernels.HardmaxT),
// the Go twins of channel.cu and hardmaxt.cu.
type scalarChannel interface {
	Output(y, h []float64)
	GOut(g, y, omega []float64, V float64)
}

// hardmaxT is the scalar channel of kernels.HardmaxT (hardmax at T > 2): GOut drops the
// estimate's errors, which the stopping rule holds below the channel's Tol (up to its points),
// and leaves g NaN where the estimate fails (Z = 0: no lattice point inside), so that the
// square-sum is NaN and GAMP-RIE reports the divergence.
type hardmaxT struct{ k *kernels.HardmaxT }

func (h hardmaxT) Output(y, hm []float64) { h.k.Output(y, hm) }

func (h hardmaxT) GOut(g, y, omega []float64, V float64) { h.k.GOut(g, y, omega, V) }

// noisyT is the scalar channel of kernels.NoisySoftmaxT (the noisy softmax at T > 2), with the
// lattice rule and tolerance of Channel.Lattice, its errors dropped as hardmaxT's are.
type noisyT struct{ k *kernels.NoisySoftmaxT }

func (n noisyT) Output(y, h []float64) { n.k.Output(y, h) }

func (n noisyT) GOut(g, y, omega []float64, V float64) { n.k.GOut(g, y, omega, V) }

// channelMaker returns, for ch, a function that gives each goroutine its scalar channel (the
// same stateless one for softmax and the closed-form hardmax, a fresh kernels.HardmaxT for
// hardmax at T > 2, which is not safe for concurrent use), and the samples per chunk of the
// parallel loops: fewer for the polytope estimates, which cost about a millisecond a sample.
func channelMaker(op string, ch device.Channel) (func() scalarChannel, int, error) {
	switch {
	case ch.Kind == device.Softmax && ch.Noise > 0 && ch.T > 2:
		if err := ch.Validate(); err != nil {
			return nil, 0, fmt.Errorf("%s: %w", op, err)
		}
		points, tol := ch.Lattice()
		s, err := kernels.NewNoisySoftmaxT(ch.T, ch.Beta, ch.Noise, points, kernels.NoisyTShifts)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", op, err)
		}
		s.Tol = tol
		return func() scalarChannel { return noisyT{s.Clone()} }, chunkPolytope, nil
	case ch.Kind == device.Softmax && ch.Noise > 0:
		s, err := kernels.NewNoisySoftmax(ch.T, ch.Beta, ch.Noise)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", op, err)
		}
		return func() scalarChannel { return s }, chunkNoisy, nil
	case ch.Kind == device.Softmax:
		s, err := kernels.NewSoftmax(ch.T, ch.Beta)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", op, err)
		}
		return func() scalarChannel { return s }, chunkSamples, nil
	case ch.Kind == device.Hardmax && ch.T == 2:
		h, err := kernels.NewHardmax(ch.T, ch.PaperCompat)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", op, err)
		}
		return func() scalarChannel { return h }, chunkSamples, nil
	case ch.Kind == device.Hardmax:
		if err := ch.Validate(); err != nil {
			return nil, 0, fmt.Errorf("%s: %w", op, err)
		}
		points, tol := ch.Lattice()
		h, err := kernels.NewHardmaxT(ch.T, points, kernels.HardmaxTShifts)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", op, err)
		}
		h.Tol = tol
		return func() scalarChannel { return hardmaxT{h.Clone()} }, chunkPolytope, nil
	}
	return nil, 0, fmt.Errorf("%s: unknown channel %v", op, ch)
}

// ChannelOutput computes y_mu = g(h_mu) for n samples of t x t matrices h: the row softmax of
// beta h or the one-hot row argmax (ties to the lowest index). y may be h.
func (d *backend) ChannelOutput(ch device.Channel, y, h device.Buffer, n int) error {
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
func (d *backend) ChannelGOut(ch device.Channel, g, y, omega device.Buffer, n int, v float64) (float64, error) {
	const op = "cpu ChannelGOut"
	mk, per, err := channelMaker(op, ch)
	if err != nil {
		return 0, err
	}
	t := ch.T
	tt := t * t
	gs, ys, oms := data(g), data(y), data(omega)
	m := kernels.Fields(t)
	vu := v / 2
	part := make([]float64, chunks(n, per))
	err = d.forChunks(op, len(part), func() func(c int) {
		sc := mk()               // per goroutine: kernels.HardmaxT is not safe for concurrent use
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
