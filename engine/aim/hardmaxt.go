package aim

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mathext"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/internal/par"
)

// HardmaxT is the hardmax channel at any T (channel.HardmaxT: g_out by a Gaussian polytope
// integral with its error) as the state evolution sees it. It gives
// FisherSum(q, V) = E[sum_{a<=b} g_ab^2] with an error: at q = 0 exactly over the output
// patterns, and for q > 0 by Monte Carlo over (omega, y).
type HardmaxT struct {
	T       int
	Tol     float64 // the target error of each g_out (channel.HardmaxT.Tol)
	Points  int     // the most lattice points per shift of each g_out (0: channel.HardmaxTPoints)
	Samples int     // Monte Carlo samples of FisherSumEstimate
	Workers int     // goroutines (0: all cores)
}

// NewHardmaxT returns the channel for 2 <= T <= 6 with 20 000 Monte Carlo samples and g_out
// to 1e-3.
func NewHardmaxT(T int) (*HardmaxT, error) {
	if _, err := channel.NewHardmaxT(T, 0, 0); err != nil {
		return nil, err
	}
	return &HardmaxT{T: T, Tol: 1e-3, Samples: 20000}, nil
}

// kernel returns a per-goroutine channel.HardmaxT with the channel's rule and tolerance.
func (h *HardmaxT) kernel() (*channel.HardmaxT, error) {
	k, err := channel.NewHardmaxT(h.T, h.Points, 0)
	if err == nil {
		k.Tol = h.Tol
	}
	return k, err
}

// Value is an estimate with its standard error.
type Value struct {
	V, Err float64
}

// fisherInnerShifts and fisherInner(T) points per shift are the polytope rule of each g_out
// inside FisherSumLattice: its errors average out over the outer points (they are reshifted
// per point), so a small rule suffices. At T = 3, 16 points are 15 times faster than 64 x 8
// with the same outer error; at T = 4 they are not enough (the ratio estimator's bias, 0.7%
// at lambda = 0 against FisherSumZero), 64 are. For T >= 5 (no table shipped) 256 is a
// guess from that trend, not measured.
const fisherInnerShifts = 2

func fisherInner(T int) int {
	switch {
	case T <= 3:
		return 16
	case T == 4:
		return 64
	}
	return 256
}

// hardmaxTSeed fixes the Monte Carlo draws of FisherSumEstimate (common random numbers: the
// same draws for every q, so that the SE map is a deterministic function of q).
const hardmaxTSeed = 0x61696d2d68617264 // "aim-hard"

// mixSeed is the SplitMix64 finaliser of x + (i + 1) 0xd1b54a32d192ed03: seeds derived from one
// x by the index i and scattered over 2^64. Lattice.Reshift draws a rule's shifts from seed + k C
// (C the golden-ratio increment, k up to shifts x dimensions), so two such streams overlap only
// if their seeds differ by a small multiple of C, which for scattered seeds has a probability
// of order 1e-17.
func mixSeed(x uint64, i int) uint64 {
	z := x + uint64(i+1)*0xd1b54a32d192ed03
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// FisherSumZero returns FisherSum(0, V) = sum_y Z_out(y; 0, V) |g_out(y; 0, V)|^2, summed over
// the T^T output patterns (row a's winner b_a), which at q = 0 is the whole expectation: omega
// is 0 and y = hardmax(h(sqrt(V) xi)). At omega = 0 a relabelling of the tokens changes no term,
// so one pattern of each class (PatternClasses) is computed and counted with its class's size. Each term is a polytope estimate, and the errors of the
// terms (independent lattices' shifts) are added in quadrature. It scales as 1/V. alpha-bar_c
// = 1/(2 FisherSum(0, 1)) is the weak-recovery threshold of the rho -> 0 limit (docs/theory/aim.md 2.3).
func (h *HardmaxT) FisherSumZero(V float64) (Value, error) {
	if !(V > 0) || math.IsInf(V, 0) {
		return Value{}, fmt.Errorf("hardmax T = %d: FisherSum(0, V = %g): need 0 < V < inf", h.T, V)
	}
	T, M := h.T, channel.Fields(h.T)
	reps, counts := PatternClasses(T)
	n := len(reps)
	type acc struct{ s, v float64 }
	res, err := par.MapReduce(h.Workers, par.Chunks(n, 8), func() (*channel.HardmaxT, error) {
		return h.kernel()
	}, func(k *channel.HardmaxT, c int) (acc, error) {
		lo, hi := par.Span(c, n, 8)
		y, g, omega := make([]float64, T*T), make([]float64, M), make([]float64, M)
		var a acc
		for p := lo; p < hi; p++ {
			t, e := classTerm(k, reps[p], y, g, omega, V)
			// The patterns of a class share one estimate, so its error counts once per pattern.
			w := float64(counts[p])
			a.s += w * t
			a.v += w * w * e * e
		}
		return a, nil
	}, acc{}, func(a, b acc) acc { return acc{a.s + b.s, a.v + b.v} })
	if err != nil {
		return Value{}, fmt.Errorf("hardmax T = %d: FisherSum(0, %g): %w", T, V, err)
	}
	return Value{V: res.s, Err: math.Sqrt(res.v)}, nil
}

// FisherSumEstimate returns FisherSum(q, V) = E[sum_{a<=b} g_ab(y; omega, V)^2] for
// omega ~ N(0, q I_M), u = omega + sqrt(V) xi, y = hardmax(h(u)), by Monte Carlo over
// Samples draws of (omega, xi) (the fixed stream of hardmaxTSeed: sample s takes normals
// 2 M s .. 2 M s + 2M - 1), g_out by the polytope estimate. Err is the standard error over the
// draws (the polytope errors, below Tol, are much smaller).
func (h *HardmaxT) FisherSumEstimate(q, V float64) (Value, error) {
	if !(q >= 0) || !(V > 0) || math.IsInf(q, 0) || math.IsInf(V, 0) {
		return Value{}, fmt.Errorf("hardmax T = %d: FisherSum(q = %g, V = %g): need q >= 0 and V > 0, finite", h.T, q, V)
	}
	if h.Samples < 2 {
		return Value{}, fmt.Errorf("hardmax T = %d: %d samples, need at least 2", h.T, h.Samples)
	}
	T, M, n := h.T, channel.Fields(h.T), h.Samples
	const chunk = 64
	type acc struct{ s, s2 float64 }
	res, err := par.MapReduce(h.Workers, par.Chunks(n, chunk), func() (*channel.HardmaxT, error) {
		return h.kernel()
	}, func(k *channel.HardmaxT, c int) (acc, error) {
		lo, hi := par.Span(c, n, chunk)
		z := make([]float64, 2*M)
		u, omega, g := make([]float64, M), make([]float64, M), make([]float64, M)
		hm, y := make([]float64, T*T), make([]float64, T*T)
		var a acc
		for s := lo; s < hi; s++ {
			device.FillNormals(z, hardmaxTSeed, uint64(2*M*s))
			for j := 0; j < M; j++ {
				omega[j] = math.Sqrt(q) * z[j]
				u[j] = omega[j] + math.Sqrt(V)*z[M+j]
			}
			channel.HFromU(hm, u, T)
			k.Output(y, hm)
			k.GOut(g, y, omega, V)
			var g2 float64
			for _, x := range g {
				g2 += x * x
			}
			if math.IsNaN(g2) {
				return a, fmt.Errorf("sample %d: g_out is NaN", s)
			}
			a.s += g2
			a.s2 += g2 * g2
		}
		return a, nil
	}, acc{}, func(a, b acc) acc { return acc{a.s + b.s, a.s2 + b.s2} })
	if err != nil {
		return Value{}, fmt.Errorf("hardmax T = %d: FisherSum(%g, %g): %w", T, q, V, err)
	}
	mean := res.s / float64(n)
	v := (res.s2/float64(n) - mean*mean) * float64(n) / float64(n-1)
	return Value{V: mean, Err: math.Sqrt(math.Max(v, 0) / float64(n))}, nil
}

// PatternClasses returns the hardmax output patterns of T tokens up to relabelling: reps[i] is
// the winners b (b_a the column of row a's 1) of a class, the lexicographically smallest of
// its patterns, and counts[i] the number of the T^T patterns in it. Relabelling by a
// permutation pi maps b to b' with b'_{pi(a)} = pi(b_a).
func PatternClasses(T int) (reps [][]int, counts []int) {
	perms := permutations(T)
	n := 1
	for range T {
		n *= T
	}
	index := map[string]int{}
	b, img, best := make([]int, T), make([]int, T), make([]int, T)
	for p := 0; p < n; p++ {
		q := p
		for a := range b {
			b[a] = q % T
			q /= T
		}
		copy(best, b)
		for _, pi := range perms {
			for a := range b {
				img[pi[a]] = pi[b[a]]
			}
			if lexLess(img, best) {
				copy(best, img)
			}
		}
		key := fmt.Sprint(best)
		i, ok := index[key]
		if !ok {
			i = len(reps)
			index[key] = i
			reps, counts = append(reps, append([]int(nil), best...)), append(counts, 0)
		}
		counts[i]++
	}
	return reps, counts
}

// permutations returns the T! permutations of 0..T-1.
func permutations(T int) [][]int {
	if T == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(T - 1) {
		for pos := 0; pos <= len(p); pos++ {
			q := make([]int, 0, T)
			q = append(q, p[:pos]...)
			q = append(q, T-1)
			q = append(q, p[pos:]...)
			out = append(out, q)
		}
	}
	return out
}

func lexLess(a, b []int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// FisherSumLattice returns FisherSum(q, V) = F(q/V)/V with
//
//	F(lambda) = sum_c |c| E_z[ Z_out(y_c; sqrt(lambda) z, 1) |g_out(y_c; sqrt(lambda) z, 1)|^2 ],   z ~ N(0, I_M),
//
// summed over the pattern classes c (PatternClasses; relabelling the tokens maps z to an
// equally likely z, so every pattern of a class has the same expectation). The expectation over
// z is a randomised lattice rule of points points in M dimensions with 8 shifts, z_j =
// Phi^-1(w_j); Err is the standard error over the shifts. Each g_out inside is a small polytope
// rule (fisherInner(T) points of fisherInnerShifts shifts) whose shifts are drawn afresh at
// every point z, so that its errors are independent from point to point: they average out and
// are part of the spread over the outer shifts that Err measures, and the bias that the spread
// of g adds to |g|^2 is removed (Estimate.VarM). (With one fixed inner rule the inner error is
// a smooth function of z that does not average out: it biased F by 3e-4 to 2e-3 at T = 2.)
// At q = 0 it is FisherSumZero. The outer shifts and the inner reseeds come from hardmaxTSeed
// (FisherSumLatticeSeed with another seed is an independent estimate of the same integral).
func (h *HardmaxT) FisherSumLattice(q, V float64, points int) (Value, error) {
	return h.FisherSumLatticeSeed(q, V, points, hardmaxTSeed)
}

// FisherSumLatticeSeed is FisherSumLattice with the outer lattice's shifts drawn from seed and
// the inner rule at outer point i of shift r reseeded with seed ^ (r points + i + 1) C (C the
// golden-ratio increment). Two seeds give independent estimates: their shifts, and so their
// errors, are independent. The tables' nodes and the checks against them use it.
func (h *HardmaxT) FisherSumLatticeSeed(q, V float64, points int, seed uint64) (Value, error) {
	if !(q >= 0) || !(V > 0) || math.IsInf(q, 0) || math.IsInf(V, 0) {
		return Value{}, fmt.Errorf("hardmax T = %d: FisherSum(q = %g, V = %g): need q >= 0 and V > 0, finite", h.T, q, V)
	}
	T, M := h.T, channel.Fields(h.T)
	const shifts, chunk = 8, 16
	rule, err := channel.NewLattice(M, points, shifts, seed)
	if err != nil {
		return Value{}, fmt.Errorf("hardmax T = %d: %w", T, err)
	}
	reps, counts := PatternClasses(T)
	sl := math.Sqrt(q / V)
	per := par.Chunks(points, chunk)
	sums, err := par.MapReduce(h.Workers, shifts*per, func() (*channel.HardmaxT, error) {
		return channel.NewHardmaxT(h.T, fisherInner(h.T), fisherInnerShifts)
	}, func(k *channel.HardmaxT, c int) ([]float64, error) {
		r := c / per
		lo, hi := par.Span(c%per, points, chunk)
		out := make([]float64, shifts)
		w, omega, g, y := make([]float64, M), make([]float64, M), make([]float64, M), make([]float64, T*T)
		for i := lo; i < hi; i++ {
			rule.Point(w, r, i)
			for j := range w {
				omega[j] = sl * mathext.NormalQuantile(math.Min(math.Max(w[j], 1e-15), 1-1e-15))
			}
			k.Reseed(seed ^ uint64(r*points+i+1)*0x9e3779b97f4a7c15)
			for p, rep := range reps {
				t, _ := classTerm(k, rep, y, g, omega, 1)
				out[r] += float64(counts[p]) * t
			}
		}
		return out, nil
	}, make([]float64, shifts), func(a, b []float64) []float64 {
		for i := range a {
			a[i] += b[i]
		}
		return a
	})
	if err != nil {
		return Value{}, fmt.Errorf("hardmax T = %d: FisherSum(%g, %g): %w", T, q, V, err)
	}
	var s, s2 float64
	for _, v := range sums {
		v /= float64(points)
		s += v
		s2 += v * v
	}
	mean := s / shifts
	vr := (s2/shifts - mean*mean) * shifts / (shifts - 1)
	return Value{V: mean / V, Err: math.Sqrt(math.Max(vr, 0)/shifts) / V}, nil
}

// classTerm returns Z_out(y; omega, V) |g_out(y; omega, V)|^2 for the pattern of winners b
// (0 for an impossible one) and its error, from z's relative error and g's absolute error
// (ErrM / sqrt(V) per coordinate); y and g are scratch (T x T and M values).
func classTerm(k *channel.HardmaxT, b []int, y, g, omega []float64, V float64) (t, err float64) {
	T := len(b)
	for i := range y {
		y[i] = 0
	}
	for row, c := range b {
		y[row*T+c] = 1
	}
	est := k.GOut(g, y, omega, V)
	if math.IsInf(est.LogZ, -1) {
		return 0, 0
	}
	z := math.Exp(est.LogZ)
	var g2 float64
	for _, x := range g {
		g2 += x * x
	}
	// |g|^2 - VarM/V: the estimate of |g|^2 less the bias its own spread adds (Estimate.VarM;
	// unknown, and taken as 0, when fewer than two shifts saw a point).
	vm := est.VarM
	if math.IsNaN(vm) || math.IsInf(vm, 0) {
		vm = 0
	}
	return z * (g2 - vm/V), z*g2*est.ErrLogZ + z*2*math.Sqrt(g2)*est.ErrM/math.Sqrt(V)
}
