package channel

import (
	"fmt"
	"math"
)

// The per-sample math of the AIM output channels (docs/theory/aim.md 1, 2.2, 2.3), the Go twin of
// kernels/channel.cu: the CPU backend runs these functions sample by sample, the CUDA kernels compute
// the same values (kernels/emu checks them without a GPU), and the theory (engine/aim) builds
// its state-evolution integrals on them.
//
// Coordinates. For T tokens there are M = T(T+1)/2 independent fields per sample, in the unit
// coordinates u of docs/theory/aim.md section 1: u_ab = h_ab for a < b and u_aa = h_aa/sqrt(2), so
// that under the prior the u_ab are uncorrelated with equal variance Q0. Packed vectors list
// the upper triangle row by row: (0,0), (0,1), ..., (0,T-1), (1,1), ... Matrices (h, y) are
// T x T, row-major.

// Fields returns M = T(T+1)/2, the number of independent entries of a symmetric T x T matrix.
func Fields(T int) int { return T * (T + 1) / 2 }

// Index returns the position of the pair (a, b), a <= b, in a packed upper triangle of size T.
func Index(T, a, b int) int {
	if a > b {
		a, b = b, a
	}
	return a*T - a*(a-1)/2 + (b - a)
}

// HFromU writes the symmetric T x T matrix h (row-major) from packed unit coordinates u:
// h_aa = sqrt(2) u_aa and h_ab = h_ba = u_ab for a < b.
func HFromU(h, u []float64, T int) {
	k := 0
	for a := 0; a < T; a++ {
		for b := a; b < T; b++ {
			if a == b {
				h[a*T+a] = math.Sqrt2 * u[k]
			} else {
				h[a*T+b] = u[k]
				h[b*T+a] = u[k]
			}
			k++
		}
	}
}

// Softmax is the noiseless row-softmax channel y_ab = exp(beta h_ab) / sum_c exp(beta h_ac)
// (docs/theory/aim.md 2.2). It is invertible up to one global shift of the symmetric h, so it observes
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

// GOut writes g_out(y; omega, V) = E[u - omega | y, omega]/V in packed unit coordinates for one
// sample (y is T x T row-major, omega and g are packed, V > 0). The softmax fixes h up to one
// global shift h -> h + c 1 1^T, whose direction in unit coordinates is n (n_ab = 1 for a < b,
// n_aa = 1/sqrt(2), |n|^2 = T^2/2). With phi_ab = log(y_ab / y_aT)/beta, the symmetric
// particular solution with h_TT = 0 is h^p_ab = phi_Ta + phi_ab (docs/theory/aim.md section 3), and
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

// Hardmax is the hardmax output channel for T = 2 (docs/theory/aim.md 2.3): row a of y is one-hot at
// argmax_c h_ac. With d1 = h11 - h12, d2 = h22 - h12 and s_a = +1 iff y_aa = 1, the channel
// observes the signs of d1, d2, so Z_out = Phi2(kappa1, kappa2; s1 s2/3) with
// kappa_a = s_a (sqrt2 omega_aa - omega_12)/sqrt(3V) (packed unit coordinates
// omega = (omega11, omega12, omega22)).
//
// By default g_out = d/d omega log Z_out is exact (it equals E[u - omega | y, omega]/V). With
// paperCompat the bivariate density phi2(kappa1, kappa2; rho12) replaces both partial derivatives
// d1Phi2, d2Phi2, as in the authors' SE_hardmax.py and AMP_hardmax.py; this reproduces the
// published curves but is not Bayes-optimal.
//
// Its state-evolution integral (FisherSum) is the theory's: engine/aim.Hardmax.
type Hardmax struct {
	paper bool
}

// NewHardmax returns the hardmax channel for T tokens; only T = 2 is implemented.
func NewHardmax(T int, paperCompat bool) (*Hardmax, error) {
	if T != 2 {
		return nil, fmt.Errorf("hardmax is implemented for T = 2 only (got T = %d)", T)
	}
	return &Hardmax{paper: paperCompat}, nil
}

// Name is "hardmax".
func (h *Hardmax) Name() string { return "hardmax" }

// Tokens is T = 2.
func (h *Hardmax) Tokens() int { return 2 }

// PaperCompat reports whether g_out uses the authors' phi2 formula instead of the exact one.
func (h *Hardmax) PaperCompat() bool { return h.paper }

// Output writes y = hardmax(hm) row by row: y_ab = 1 if b = argmax_c hm_ac (ties go to the
// lowest index), 0 otherwise. y and hm are 2 x 2, row-major.
func (h *Hardmax) Output(y, hm []float64) { hardmaxRows(y, hm, 2) }

// hardmaxRows writes the T x T one-hot y with y_ab = 1 for b = argmax_c hm_ac (ties to the
// lowest index), row by row.
func hardmaxRows(y, hm []float64, T int) {
	for a := 0; a < T; a++ {
		best := 0
		for c := 1; c < T; c++ {
			if hm[a*T+c] > hm[a*T+best] {
				best = c
			}
		}
		for c := 0; c < T; c++ {
			y[a*T+c] = 0
		}
		y[a*T+best] = 1
	}
}

// GOut writes g_out(y; omega, V) = d/d omega log Z_out in packed unit coordinates
// (g11, g12, g22), for a 2 x 2 row-major one-hot y (only y_11 and y_22 are read: s_a = +1 iff
// y_aa = 1), packed omega and V > 0. The ratios d_aPhi2/Phi2 are computed in logarithms, so g
// stays finite when Z_out underflows (kappa -> -inf), where it grows like |kappa|.
func (h *Hardmax) GOut(g, y, omega []float64, V float64) {
	r := math.Sqrt(3 * V)
	s1, s2 := -1.0, -1.0
	if y[0] > 0.5 {
		s1 = 1
	}
	if y[3] > 0.5 {
		s2 = 1
	}
	k1 := s1 * (math.Sqrt2*omega[0] - omega[1]) / r
	k2 := s2 * (math.Sqrt2*omega[2] - omega[1]) / r
	rho := s1 * s2 / 3
	_, r1, r2, p := BVNRatios(k1, k2, rho)
	if h.paper {
		r1, r2 = p, p
	}
	g[0] = math.Sqrt2 * s1 * r1 / r
	g[1] = -(s1*r1 + s2*r2) / r
	g[2] = math.Sqrt2 * s2 * r2 / r
}
