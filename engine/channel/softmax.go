package channel

import (
	"fmt"
	"math"
)

// Softmax is the noiseless row-softmax channel y_ab = exp(beta h_ab) / sum_c exp(beta h_ac)
// (docs/AIM.md 2.2). It is invertible up to one global shift of the symmetric h, so it observes
// M - 1 = (T^2 + T - 2)/2 directions of the M fields exactly, whatever beta is.
type Softmax struct {
	t    int
	beta float64
}

// NewSoftmax returns the softmax channel for T >= 2 tokens at inverse temperature beta > 0.
func NewSoftmax(T int, beta float64) (*Softmax, error) {
	if T < 2 {
		return nil, fmt.Errorf("softmax channel: T = %d, need T >= 2", T)
	}
	if !(beta > 0) || math.IsInf(beta, 1) {
		return nil, fmt.Errorf("softmax channel: beta = %g, need 0 < beta < inf", beta)
	}
	return &Softmax{t: T, beta: beta}, nil
}

// Name returns "softmax".
func (s *Softmax) Name() string { return "softmax" }

// Tokens returns T.
func (s *Softmax) Tokens() int { return s.t }

// Beta returns the inverse temperature beta.
func (s *Softmax) Beta() float64 { return s.beta }

// Output writes the row softmax y_ab = exp(beta h_ab) / sum_c exp(beta h_ac), computed with the
// row maximum subtracted so that it neither overflows nor underflows to 0/0.
func (s *Softmax) Output(y, h []float64) {
	T := s.t
	for a := 0; a < T; a++ {
		row := h[a*T : a*T+T]
		out := y[a*T : a*T+T]
		m := row[0]
		for _, v := range row[1:] {
			m = math.Max(m, v)
		}
		var sum float64
		for b, v := range row {
			out[b] = math.Exp(s.beta * (v - m))
			sum += out[b]
		}
		for b := range out {
			out[b] /= sum
		}
	}
}

// Directions returns K = T^2 + T - 2, twice the number of directions the softmax observes; the
// state evolution depends on T only through alpha-bar = alpha K.
func (s *Softmax) Directions() int { return s.t*s.t + s.t - 2 }

// FisherSum returns E[sum_{a<=b} g_out,ab^2] = K/(2V) with K = T^2 + T - 2: the observed
// M - 1 = K/2 directions each contribute 1/V, and q-hat = 2 alpha K/(2V) = K alpha/(Q0 - q)
// (docs/AIM.md 2.2, the code's output_eq_exact). It does not depend on q or beta.
func (s *Softmax) FisherSum(q, V float64) (float64, error) {
	if !(q >= 0) || !(V > 0) || math.IsInf(q, 0) || math.IsInf(V, 0) {
		return 0, fmt.Errorf("softmax FisherSum: need q >= 0 and V > 0, got q = %g, V = %g", q, V)
	}
	return float64(s.Directions()) / (2 * V), nil
}
