// Package aim is the attention-indexed model (docs/theory/aim.md): its teacher and data (model.go),
// its output channels as the state evolution sees them (softmax, hardmax: Z_out, g_out and the
// SE integral FisherSum), with the state evolution, GAMP-RIE and gradient descent in the
// sub-packages se, amp and gd. The per-sample channel math (outputs, g_out) is the Go twin of
// the CUDA kernels, in package channel; the channels here embed it, and NewChannel builds them
// from the run's channel.Spec.
package aim

import "github.com/aimtheory/aim/channel"

// Fields returns M = T(T+1)/2, the number of fields per sample (channel.Fields).
func Fields(T int) int { return channel.Fields(T) }

// Channel is a single-layer AIM output channel y = g(h), seen by state evolution.
type Channel interface {
	// Name is the channel's name on the command line ("softmax", "hardmax", "linear").
	Name() string
	// Tokens is T, the number of tokens per sequence.
	Tokens() int
	// Output writes y = g(h) for one T x T index matrix h; y and h are T x T, row-major.
	Output(y, h []float64)
	// FisherSum returns E[ sum_{a<=b} g_out,ab(y; omega, V)^2 ] in unit coordinates, where
	// omega_ab ~ N(0, q) iid, u = omega + sqrt(V) xi and y = g(h(u)). State evolution sets
	// q-hat = 2 alpha FisherSum(q, V) with V = Q0 - q (docs/theory/aim.md 2.1).
	FisherSum(q, V float64) (float64, error)
}

// Entropic is a Channel whose output free entropy the state evolution can compute.
type Entropic interface {
	Channel
	// OutputEntropy returns psi_out(q, V) = E log Z_out(y; omega, V) (u-coordinates), with
	// omega_ab ~ N(0, q) iid, u = omega + sqrt(V) xi, y = g(h(u)) and
	// Z_out(y; omega, V) = E_xi P(y | u = omega + sqrt(V) xi), up to a constant independent of
	// q and V that the channel documents (it cancels between fixed points at one alpha and in
	// the envelope identity dPhi/dalpha = psi_out). Its q-derivative along V = Q0 - q is
	// FisherSum(q, V)/2, which makes q-hat = 2 alpha FisherSum the stationarity condition of
	// the free entropy (engine/aim/se).
	OutputEntropy(q, V float64) (float64, error)
}

// NewChannel returns the channel of s as the state evolution sees it, built on channel.New's
// scalar channel, so that s is validated and its kind resolved by the one rule of package
// channel: Linear or NoisyLinear (the linear channel without or with label noise), Softmax, NoisySoftmax (label noise at T = 2) and Hardmax (T = 2, exact or the
// published formula) embed it; at T > 2, where channel.New's is a lattice estimate, the
// hardmax comes from its shipped table (NewHardmaxTChannel) and the noisy softmax is
// NewNoisySoftmaxT. The lattice rule of s (Points, Tol) is the device operations'; the theory's
// integrals fix their own sizes.
func NewChannel(s channel.Spec) (Channel, error) {
	sc, err := channel.New(s)
	if err != nil {
		return nil, err
	}
	switch k := sc.(type) {
	case *channel.Linear:
		return NewLinear(k.Noise())
	case *channel.Softmax:
		return &Softmax{k}, nil
	case *channel.Hardmax:
		return &Hardmax{k}, nil
	case *channel.NoisySoftmax:
		return newNoisySoftmaxOf(k, noisySizes, noisyCoarse), nil
	}
	if s.Kind == channel.KindHardmax {
		return NewHardmaxTChannel(s.T)
	}
	return NewNoisySoftmaxT(s.T, s.Beta, s.Noise)
}
