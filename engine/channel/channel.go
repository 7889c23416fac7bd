// Package channel holds the output channels y = g(h) of the attention-indexed model (AIM) and
// the quantities state evolution needs from them (docs/AIM.md sections 1, 2.2, 2.3).
//
// Coordinates. For T tokens there are M = T(T+1)/2 independent fields per sample. This package
// works in the unit coordinates u of docs/AIM.md section 1: u_ab = h_ab for a < b and
// u_aa = h_aa/sqrt(2), so that under the prior the u_ab are uncorrelated with equal variance Q0.
// Packed vectors list the upper triangle row by row: (0,0), (0,1), ..., (0,T-1), (1,1), ...
// Matrices (h, y) are T x T, row-major.
package channel

import "math"

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

// Channel is a single-layer AIM output channel y = g(h), seen by state evolution.
type Channel interface {
	// Name is the channel's name on the command line ("softmax", "hardmax").
	Name() string
	// Tokens is T, the number of tokens per sequence.
	Tokens() int
	// Output writes y = g(h) for one T x T index matrix h; y and h are T x T, row-major.
	Output(y, h []float64)
	// FisherSum returns E[ sum_{a<=b} g_out,ab(y; omega, V)^2 ] in unit coordinates, where
	// omega_ab ~ N(0, q) iid, u = omega + sqrt(V) xi and y = g(h(u)). State evolution sets
	// q-hat = 2 alpha FisherSum(q, V) with V = Q0 - q (docs/AIM.md 2.1).
	FisherSum(q, V float64) (float64, error)
}
