package se

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/stat"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/internal/mc"
	"github.com/aimtheory/aim/internal/par"
)

// GenErrorOptions set the Monte Carlo estimate of the generalisation error.
type GenErrorOptions struct {
	Samples int    // outer samples of omega (at least 2)
	Inner   int    // inner samples of xi per omega (at least 2)
	Seed    uint64 // fixes every draw: the same seed gives the same estimate on any machine
	Workers int    // goroutines (0: GOMAXPROCS); the estimate does not depend on it
}

// DefaultGenErrorOptions returns 20000 outer samples, 8 inner samples, seed 1.
func DefaultGenErrorOptions() GenErrorOptions {
	return GenErrorOptions{Samples: 20000, Inner: 8, Seed: 1}
}

// genChunk is the number of outer samples drawn from one random stream; the streams are
// numbered, so the estimate does not depend on how many goroutines compute it.
const genChunk = 512

// GenError returns the Bayes-optimal generalisation error on the outputs (docs/theory/aim.md 2.4)
//
//	e_gen = E || g(h(u)) - g-hat(omega) ||_F^2,  g-hat(omega) = E_xi' g(h(omega + sqrt(V) xi')),
//
// with omega ~ N(0, q I_M) and u = omega + sqrt(V) xi in unit coordinates, and its Monte Carlo
// standard error. Since g-hat is the conditional mean, e_gen = E_omega tr Cov(g | omega), which
// each outer sample estimates without bias by the sample covariance of Inner draws of g.
// The norm is the squared Frobenius norm of the T x T output matrix. A channel that knows
// e_gen in closed form (aim.ExactGenError: the linear channel) gives it exactly, with
// stderr 0.
func GenError(ch aim.Channel, q, V float64, o GenErrorOptions) (mean, stderr float64, err error) {
	if !(q >= 0) || !(V >= 0) || math.IsInf(q, 0) || math.IsInf(V, 0) {
		return math.NaN(), math.NaN(), fmt.Errorf("gen error: need q >= 0 and V >= 0, got q = %g, V = %g", q, V)
	}
	if x, ok := ch.(aim.ExactGenError); ok {
		return x.GenError(q, V), 0, nil
	}
	if o.Samples < 2 || o.Inner < 2 {
		return math.NaN(), math.NaN(), fmt.Errorf("gen error: need at least 2 outer and 2 inner samples, got %d and %d", o.Samples, o.Inner)
	}
	// Each chunk of genChunk outer samples draws from its own numbered stream and returns its
	// estimates; they are joined in chunk order, so the result is independent of Workers.
	est, err := par.MapReduce(o.Workers, par.Chunks(o.Samples, genChunk), func() (*genWork, error) {
		var w genWork
		w.init(ch, q, V, o.Inner)
		return &w, nil
	}, func(w *genWork, c int) ([]float64, error) {
		lo, hi := par.Span(c, o.Samples, genChunk)
		return w.chunk(rand.New(rand.NewPCG(o.Seed, uint64(c))), hi-lo), nil
	}, make([]float64, 0, o.Samples), func(acc, r []float64) []float64 { return append(acc, r...) })
	if err != nil {
		return math.NaN(), math.NaN(), fmt.Errorf("gen error: %w", err)
	}
	mean, std := stat.MeanStdDev(est, nil)
	return mean, std / math.Sqrt(float64(len(est))), nil
}

// genWork holds one goroutine's buffers for GenError.
type genWork struct {
	ch             aim.Channel
	T, nf, K       int
	sq, sv         float64
	omega, u, h, g []float64 // g holds K outputs of T*T entries
}

func (w *genWork) init(ch aim.Channel, q, V float64, inner int) {
	w.ch, w.T, w.K = ch, ch.Tokens(), inner
	w.nf = aim.Fields(w.T)
	w.sq, w.sv = math.Sqrt(q), math.Sqrt(V)
	w.omega = make([]float64, w.nf)
	w.u = make([]float64, w.nf)
	w.h = make([]float64, w.T*w.T)
	w.g = make([]float64, inner*w.T*w.T)
}

// chunk draws n outer samples and returns their estimates of tr Cov(g | omega).
func (w *genWork) chunk(r *rand.Rand, n int) []float64 {
	TT := w.T * w.T
	est := make([]float64, n)
	for i := 0; i < n; i++ {
		for k := range w.omega {
			w.omega[k] = w.sq * r.NormFloat64()
		}
		for j := 0; j < w.K; j++ {
			for k := range w.u {
				w.u[k] = w.omega[k] + w.sv*r.NormFloat64()
			}
			channel.HFromU(w.h, w.u, w.T)
			w.ch.Output(w.g[j*TT:(j+1)*TT], w.h)
		}
		est[i] = mc.TraceCov(w.g, w.K, TT)
	}
	return est
}
