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

// GOut writes g_out(y; omega, V) = E[u - omega | y, omega]/V in packed unit coordinates for one
// sample (y is T x T row-major, omega and g are packed, V > 0). The softmax fixes h up to one
// global shift h -> h + c 1 1^T, whose direction in unit coordinates is n (n_ab = 1 for a < b,
// n_aa = 1/sqrt(2), |n|^2 = T^2/2). With phi_ab = log(y_ab / y_aT)/beta, the symmetric
// particular solution with h_TT = 0 is h^p_ab = phi_Ta + phi_ab (docs/AIM.md section 3), and
//
//	g = P_perp (u^p - omega) / V,   P_perp = I - n n^T / |n|^2.
//
// Outputs below the smallest normal float64 (2^-1022, which includes those that underflowed to
// 0) are read as 2^-1022: log is then exact on every platform (Go's math.Log is wrong for
// subnormals on amd64), and the CUDA kernel computes the same value.
func (s *Softmax) GOut(g, y, omega []float64, V float64) {
	T := s.t
	logy := func(a, b int) float64 { return math.Log(math.Max(y[a*T+b], 0x1p-1022)) }
	phi := func(a, b int) float64 { return (logy(a, b) - logy(a, T-1)) / s.beta }
	var dot float64 // n . (u^p - omega)
	k := 0
	for a := 0; a < T; a++ {
		for b := a; b < T; b++ {
			hp := phi(T-1, a) + phi(a, b)
			if a == b {
				g[k] = hp/math.Sqrt2 - omega[k]
				dot += g[k] / math.Sqrt2
			} else {
				g[k] = hp - omega[k]
				dot += g[k]
			}
			k++
		}
	}
	c := dot / (float64(T*T) / 2)
	k = 0
	for a := 0; a < T; a++ {
		for b := a; b < T; b++ {
			if a == b {
				g[k] = (g[k] - c/math.Sqrt2) / V
			} else {
				g[k] = (g[k] - c) / V
			}
			k++
		}
	}
}
