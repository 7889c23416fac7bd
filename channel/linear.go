package channel

import (
	"fmt"
	"math"
)

// Linear is the linear output channel y = h + sqrt(Delta) xi at T = 1 token
// (docs/theory/aim.md 2.8): with one token the index is the scalar
// h = (x^T S x - Tr S)/sqrt(D), and the model is the extensive-width network with quadratic
// activation of Maillard et al. (arXiv 2408.03733), whose width ratio kappa = m/D is rho.
// Delta = 0 is the noiseless channel.
type Linear struct {
	delta float64
}

// NewLinear returns the linear channel with label noise Delta, a finite Delta >= 0.
func NewLinear(delta float64) (*Linear, error) {
	if !(delta >= 0) || math.IsInf(delta, 1) {
		return nil, fmt.Errorf("linear channel: label noise Delta = %g, need a finite Delta >= 0", delta)
	}
	return &Linear{delta: delta}, nil
}

// Tokens returns 1.
func (l *Linear) Tokens() int { return 1 }

// Noise returns Delta.
func (l *Linear) Noise() float64 { return l.delta }

// Output writes y = h (the label noise is added to the data from its own stream, as for the
// noisy softmax).
func (l *Linear) Output(y, h []float64) { y[0] = h[0] }

// GOut writes g_out(y; omega, V) in unit coordinates, u = h/sqrt(2): y = sqrt(2) u +
// sqrt(Delta) xi with u ~ N(omega, V) makes y Gaussian with mean sqrt(2) omega and variance
// 2V + Delta, so
//
//	g = d/d omega log Z_out = sqrt(2) (y - sqrt(2) omega) / (2V + Delta),
//
// and E g^2 = 2/(2V + Delta), the channel's FisherSum (engine/aim).
func (l *Linear) GOut(g, y, omega []float64, V float64) {
	g[0] = math.Sqrt2 * (y[0] - math.Sqrt2*omega[0]) / (2*V + l.delta)
}

// Clone returns l: the linear channel holds no state.
func (l *Linear) Clone() Scalar { return l }
