package aim

import (
	"fmt"
	"math"

	"github.com/aimtheory/aim/channel"
)

// Softmax is the row-softmax channel of docs/theory/aim.md 2.2 (channel.Softmax: outputs and g_out)
// with the quantities the state evolution needs.
type Softmax struct{ *channel.Softmax }

// NewSoftmax returns the softmax channel for T >= 2 tokens at inverse temperature beta > 0.
func NewSoftmax(T int, beta float64) (*Softmax, error) {
	k, err := channel.NewSoftmax(T, beta)
	if err != nil {
		return nil, err
	}
	return &Softmax{k}, nil
}

// Name returns "softmax".
func (s *Softmax) Name() string { return "softmax" }

// Directions returns K = T^2 + T - 2, twice the number of directions the softmax observes; the
// state evolution depends on T only through alpha-bar = alpha K.
func (s *Softmax) Directions() int { return s.Tokens()*s.Tokens() + s.Tokens() - 2 }

// FisherSum returns E[sum_{a<=b} g_out,ab^2] = K/(2V) with K = T^2 + T - 2: the observed
// M - 1 = K/2 directions each contribute 1/V, and q-hat = 2 alpha K/(2V) = K alpha/(Q0 - q)
// (docs/theory/aim.md 2.2, the code's output_eq_exact). It does not depend on q or beta.
func (s *Softmax) FisherSum(q, V float64) (float64, error) {
	if !(q >= 0) || !(V > 0) || math.IsInf(q, 0) || math.IsInf(V, 0) {
		return 0, fmt.Errorf("softmax FisherSum: need q >= 0 and V > 0, got q = %g, V = %g", q, V)
	}
	return float64(s.Directions()) / (2 * V), nil
}

// OutputEntropy returns psi_out(q, V) = -(K/4)(log(2 pi V) + 1), K = T^2 + T - 2, independent
// of q and beta. Derivation: the softmax y determines h up to the global shift h -> h + c 1 1^T,
// so it observes the projection P u of u onto the M - 1 = K/2 directions orthogonal to that
// shift, exactly. Z_out(y; omega, V) is the density of P u = P omega + sqrt(V) P xi at the
// observed value, times the Jacobian J(y) of y -> P u:
//
//	log Z_out = -(K/4) log(2 pi V) - ||P (u - omega)||^2/(2V) + log J(y),
//
// and E ||P (u - omega)||^2 = V K/2. The dropped constant is E log J(y): y = g(h(u)) with
// u ~ N(0, Q0 I) whatever q is (q + V = Q0), so it depends on T, beta and rho but not on q; it
// cancels between fixed points at one (rho, alpha) and from both sides of the envelope
// identity. Its q-derivative along V = Q0 - q is K/(4V) = FisherSum/2.
func (s *Softmax) OutputEntropy(q, V float64) (float64, error) {
	if !(q >= 0) || !(V > 0) || math.IsInf(q, 0) || math.IsInf(V, 0) {
		return 0, fmt.Errorf("softmax OutputEntropy: need q >= 0 and V > 0, got q = %g, V = %g", q, V)
	}
	return -float64(s.Directions()) / 4 * (math.Log(2*math.Pi*V) + 1), nil
}

// Softmax implements Entropic.
var _ Entropic = (*Softmax)(nil)
