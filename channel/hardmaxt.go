package channel

import (
	"fmt"
	"math"
)

// HardmaxT is the hardmax channel at any T >= 2 (docs/theory/aim.md 2.3 for T = 2; the polytope integrals for the
// rest): row a of y is one-hot at b_a = argmax_c h_ac. Given omega and V, u = omega + sqrt(V) xi
// with xi ~ N(0, I_M) in packed unit coordinates, and y is observed exactly when the T(T-1)
// inequalities h_{a,b_a} - h_{a,c} >= 0 (c != b_a) hold, with h_aa = sqrt(2) u_aa and
// h_ab = u_ab. So
//
//	Z_out(y; omega, V) = P(A xi >= -A omega / sqrt(V)),   g_out = E[u - omega | y, omega]/V = E[xi | .]/sqrt(V),
//
// a Gaussian polytope probability and its first moment (Polytope), estimated by separation of
// variables with a randomised lattice rule whose error comes with every value. The rows of A
// depend on the winners b only; the rows of different a share the variables u_ab = u_ba, which
// is what couples them. For T = 2 it estimates what Hardmax computes in closed form (a
// bivariate normal), which is how it is tested; it exists for T > 2, where no closed form is
// known.
type HardmaxT struct {
	// Tol is the target of each estimate's reported errors (Polytope.Moments): the points
	// double from 64 per shift until they are met or the rule's are used up. 0: every point.
	Tol   float64
	t, m  int
	rule  *Lattice
	polys map[int]*Polytope // by the winners b (sum_a b_a T^a), one per pattern met
	c, xi []float64
	b     []int // the winners of the current output
}

// HardmaxTPoints and HardmaxTShifts are the default lattice rule of NewHardmaxT: 1024 points of
// each of 8 shifts. HardmaxTMax is the largest T (M - 1 = 20 lattice dimensions).
const (
	HardmaxTPoints = 1024
	HardmaxTShifts = 8
	HardmaxTMax    = 6
	hardmaxTSeed   = 0x68617264 // "hard": the lattice shifts, the same on every run and device
)

// NewHardmaxT returns the hardmax channel for 2 <= T <= 6 with a lattice rule of at most points
// points of each of shifts shifts (0 for the defaults), using them all (Tol 0).
func NewHardmaxT(T, points, shifts int) (*HardmaxT, error) {
	if T < 2 || T > HardmaxTMax {
		return nil, fmt.Errorf("hardmax channel: T = %d, need 2 <= T <= %d", T, HardmaxTMax)
	}
	if points == 0 {
		points = HardmaxTPoints
	}
	if shifts == 0 {
		shifts = HardmaxTShifts
	}
	M := Fields(T)
	rule, err := NewLattice(M-1, points, shifts, hardmaxTSeed)
	if err != nil {
		return nil, fmt.Errorf("hardmax channel: %w", err)
	}
	return &HardmaxT{t: T, m: M, rule: rule, polys: map[int]*Polytope{}, c: make([]float64, T*(T-1)), xi: make([]float64, M),
		b: make([]int, T)}, nil
}

// Reseed draws new shifts of the channel's lattice rule from seed (Lattice.Reshift; NewHardmaxT
// uses a fixed seed). An integral over omega of g_out reseeds per point of its own rule, so that
// the errors of the g_out estimates are independent and average out.
func (h *HardmaxT) Reseed(seed uint64) { h.rule.Reshift(seed) }

// Tokens returns T.
func (h *HardmaxT) Tokens() int { return h.t }

// Clone returns a channel with the same T, rule and Tol and work space of its own, for
// another goroutine (the rule is copied, so that either may Reseed).
func (h *HardmaxT) Clone() *HardmaxT {
	rule := *h.rule
	rule.shift = append([]float64(nil), h.rule.shift...)
	return &HardmaxT{Tol: h.Tol, t: h.t, m: h.m, rule: &rule, polys: map[int]*Polytope{}, c: make([]float64, len(h.c)),
		xi: make([]float64, h.m), b: make([]int, h.t)}
}

// Output writes y = hardmax(hm) row by row (ties to the lowest index), as Hardmax.Output.
func (h *HardmaxT) Output(y, hm []float64) { hardmaxRows(y, hm, h.t) }

// Winners returns b with b_a the column of the 1 in row a of the one-hot y (T x T, row-major;
// entries above 1/2 count as the 1).
func (h *HardmaxT) Winners(y []float64) []int { return h.winners(make([]int, h.t), y) }

// winners writes the winners of y into b and returns it.
func (h *HardmaxT) winners(b []int, y []float64) []int {
	T := h.t
	for a := 0; a < T; a++ {
		b[a] = 0
		for c := 0; c < T; c++ {
			if y[a*T+c] > 0.5 {
				b[a] = c
			}
		}
	}
	return b
}

// Constraints returns A (T(T-1) x M, row-major, packed unit coordinates): the rows
// h_{a,b_a} - h_{a,c} for a = 0..T-1 and c != b_a in increasing order.
func (h *HardmaxT) Constraints(b []int) []float64 {
	T, M := h.t, h.m
	A := make([]float64, 0, T*(T-1)*M)
	coef := func(row []float64, a, c int, s float64) {
		if a == c {
			row[Index(T, a, a)] += s * math.Sqrt2
		} else {
			row[Index(T, a, c)] += s
		}
	}
	for a := 0; a < T; a++ {
		for c := 0; c < T; c++ {
			if c == b[a] {
				continue
			}
			row := make([]float64, M)
			coef(row, a, b[a], 1)
			coef(row, a, c, -1)
			A = append(A, row...)
		}
	}
	return A
}

// polytope returns the prepared constraints of the winners b.
func (h *HardmaxT) polytope(b []int) *Polytope {
	key := 0
	for a := len(b) - 1; a >= 0; a-- {
		key = key*h.t + b[a]
	}
	if p, ok := h.polys[key]; ok {
		return p
	}
	T := h.t
	p, err := NewPolytope(h.Constraints(b), T*(T-1), h.m)
	if err != nil {
		panic("hardmax: " + err.Error()) // the rows h_ab - h_ac are never zero
	}
	h.polys[key] = p
	return p
}

// GOut writes g_out(y; omega, V) = E[u - omega | y, omega]/V in packed unit coordinates and
// returns the estimate's log Z_out and its errors (Estimate: ErrM is the standard error of
// E[xi | .], so that of g is ErrM / sqrt(V)). y is T x T one-hot, omega and g hold M values,
// V > 0. It is not safe for concurrent use (one HardmaxT per goroutine).
func (h *HardmaxT) GOut(g, y, omega []float64, V float64) Estimate {
	p := h.polytope(h.winners(h.b, y))
	A, M := p.a, h.m
	sv := math.Sqrt(V)
	for k := range h.c {
		var s float64
		for j := 0; j < M; j++ {
			s += A[k*M+j] * omega[j]
		}
		h.c[k] = -s / sv
	}
	est := p.Moments(h.xi, h.c, h.rule, h.Tol)
	for j := range g {
		g[j] = h.xi[j] / sv
	}
	return est
}
