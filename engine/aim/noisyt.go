package aim

import (
	"fmt"
	"math"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/internal/par"
)

// NoisySoftmaxT is the softmax channel with additive Gaussian label noise at any
// 2 <= T <= channel.NoisyTMax (NoisySoftmax computes T = 2 by quadrature and is how
// this one is tested), y = softmax_row(beta h) + sqrt(Delta) xi, as the state evolution sees
// it: FisherSum and OutputEntropy are Monte Carlo averages over (omega, y),
//
//	FisherSum(q, V)     = E sum_{a<=b} g_ab^2,   psi_out(q, V) = E log Z_out(y; omega, V),
//
// with omega ~ N(0, q I_M), u = omega + sqrt(V) xi, y = softmax(beta h(u)) + sqrt(Delta) xi',
// and per sample the importance-sampling estimates of channel.NoisySoftmaxT. The draws are the
// fixed stream of noisyTSeed (sample s takes normals (2M + T^2) s onwards) and the lattice of
// sample s is reshifted by s, so the SE map is a deterministic, smooth function of (q, V)
// (common random numbers) whose per-sample integration errors are independent and average out;
// each g_out uses a fixed rule (Points points of each of channel.NoisyTShifts shifts, no
// stopping rule, which would make the map jump), and the square |g|^2 loses its bias, the
// estimate's variance VarM/V. Z_out is the density of the whole T x T output (so psi_out
// differs from NoisySoftmax's at T = 2 by the constant E log N(w_a; 1, 2 Delta) of the
// uninformative row sums, -log(4 pi Delta) - 1 per sample). The errors of both averages are in
// FisherSumValue and OutputEntropyValue.
type NoisySoftmaxT struct {
	T           int
	Beta, Delta float64
	Samples     int // Monte Carlo samples of (omega, y)
	Points      int // lattice points per shift of each g_out
	Workers     int // goroutines (0: all cores); the values do not depend on it

	softmax *channel.Softmax
	bound   float64          // Bound's multiple of the error added to FisherSum
	memo    *pairMemo[Value] // shared with the Bound channels
}

// noisyTSeed fixes the Monte Carlo draws of NoisySoftmaxT.
const noisyTSeed = 0x61696d2d6e6f6973 // "aim-nois"

// Default sizes of NoisySoftmaxT: samples of (omega, y) and lattice points per shift of each
// g_out (the per-sample errors, about 0.02 of the prior scale at 64 points, average out over
// the samples).
const (
	NoisyTSamples = 4096
	NoisyTPoints  = 64
)

// NewNoisySoftmaxT returns the noisy softmax channel at 2 <= T <= channel.NoisyTMax,
// 0 < beta < inf and 0 < Delta < inf, with the default sizes.
func NewNoisySoftmaxT(T int, beta, delta float64) (*NoisySoftmaxT, error) {
	if _, err := channel.NewNoisySoftmaxT(T, beta, delta, NoisyTPoints, 0); err != nil {
		return nil, err
	}
	sm, err := channel.NewSoftmax(T, beta)
	if err != nil {
		return nil, err
	}
	n := &NoisySoftmaxT{T: T, Beta: beta, Delta: delta, Samples: NoisyTSamples, Points: NoisyTPoints, softmax: sm,
		memo: &pairMemo[Value]{}}
	return n, nil
}

// Bound returns the channel whose FisherSum is FisherSum + sign times its standard error (the
// same draws; the SE solved with both bounds brackets the fixed point's Monte Carlo error).
func (n *NoisySoftmaxT) Bound(sign float64) *NoisySoftmaxT {
	b := *n
	b.bound = sign
	return &b
}

// Name returns "softmax".
func (n *NoisySoftmaxT) Name() string { return "softmax" }

// Tokens returns T.
func (n *NoisySoftmaxT) Tokens() int { return n.T }

// Output writes the noiseless row softmax of beta h (T x T).
func (n *NoisySoftmaxT) Output(y, h []float64) { n.softmax.Output(y, h) }

// FisherSum returns FisherSumValue's estimate (plus the Bound's multiple of its error):
// q-hat = 2 alpha FisherSum(q, V).
func (n *NoisySoftmaxT) FisherSum(q, V float64) (float64, error) {
	_, f, err := n.integrals("FisherSum", q, V)
	return f.V + n.bound*f.Err, err
}

// OutputEntropy returns OutputEntropyValue's estimate of psi_out(q, V).
func (n *NoisySoftmaxT) OutputEntropy(q, V float64) (float64, error) {
	p, _, err := n.integrals("OutputEntropy", q, V)
	return p.V, err
}

// FisherSumValue returns FisherSum(q, V) with its Monte Carlo standard error over the samples.
func (n *NoisySoftmaxT) FisherSumValue(q, V float64) (Value, error) {
	_, f, err := n.integrals("FisherSum", q, V)
	return f, err
}

// OutputEntropyValue returns psi_out(q, V) with its Monte Carlo standard error.
func (n *NoisySoftmaxT) OutputEntropyValue(q, V float64) (Value, error) {
	p, _, err := n.integrals("OutputEntropy", q, V)
	return p, err
}

// integrals returns (psi_out, FisherSum) at (q, V), remembering the last pair.
func (n *NoisySoftmaxT) integrals(op string, q, V float64) (psi, fisher Value, err error) {
	if n.Samples < 2 || n.Points < 1 {
		return Value{}, Value{}, fmt.Errorf("noisy softmax T = %d %s: %d samples and %d points, need at least 2 and 1", n.T, op, n.Samples, n.Points)
	}
	return n.memo.integrals(fmt.Sprintf("noisy softmax T = %d", n.T), op, q, V, [2]int{n.Samples, n.Points},
		func() (Value, Value, error) { return n.integrate(q, V) })
}

// integrate runs the Monte Carlo over the samples in chunks of 32, folded in chunk order.
func (n *NoisySoftmaxT) integrate(q, V float64) (psi, fisher Value, err error) {
	T, M, ns := n.T, channel.Fields(n.T), n.Samples
	const chunk = 32
	type acc struct{ f, f2, p, p2 float64 }
	stride := 2*M + T*T
	res, err := par.MapReduce(n.Workers, par.Chunks(ns, chunk), func() (*channel.NoisySoftmaxT, error) {
		k, err := channel.NewNoisySoftmaxT(T, n.Beta, n.Delta, n.Points, 0)
		if err == nil {
			k.Tol = 0
		}
		return k, err
	}, func(k *channel.NoisySoftmaxT, c int) (acc, error) {
		lo, hi := par.Span(c, ns, chunk)
		z := make([]float64, stride)
		u, omega, g := make([]float64, M), make([]float64, M), make([]float64, M)
		h, y := make([]float64, T*T), make([]float64, T*T)
		var a acc
		for s := lo; s < hi; s++ {
			device.FillNormals(z, noisyTSeed, uint64(stride*s))
			for j := 0; j < M; j++ {
				omega[j] = math.Sqrt(q) * z[j]
				u[j] = omega[j] + math.Sqrt(V)*z[M+j]
			}
			channel.HFromU(h, u, T)
			k.Output(y, h)
			for i := range y {
				y[i] += math.Sqrt(n.Delta) * z[2*M+i]
			}
			k.Reseed(noisyTSeed + uint64(s))
			est := k.GOut(g, y, omega, V)
			var g2 float64
			for _, x := range g {
				g2 += x * x
			}
			g2 -= est.VarM / V
			if math.IsNaN(g2) || math.IsInf(est.LogZ, 0) || math.IsNaN(est.LogZ) {
				return a, fmt.Errorf("sample %d: the estimate of g_out or log Z_out failed (log Z = %g)", s, est.LogZ)
			}
			a.f += g2
			a.f2 += g2 * g2
			a.p += est.LogZ
			a.p2 += est.LogZ * est.LogZ
		}
		return a, nil
	}, acc{}, func(a, b acc) acc { return acc{a.f + b.f, a.f2 + b.f2, a.p + b.p, a.p2 + b.p2} })
	if err != nil {
		return Value{}, Value{}, err
	}
	mean := func(s, s2 float64) Value {
		m := s / float64(ns)
		v := (s2/float64(ns) - m*m) * float64(ns) / float64(ns-1)
		return Value{V: m, Err: math.Sqrt(math.Max(v, 0) / float64(ns))}
	}
	return mean(res.p, res.p2), mean(res.f, res.f2), nil
}

// NoisySoftmaxT implements Entropic.
var _ Entropic = (*NoisySoftmaxT)(nil)
