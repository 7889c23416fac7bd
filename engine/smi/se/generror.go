package se

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat"

	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/internal/mc"
	"github.com/aimtheory/aim/engine/smi"
	"github.com/aimtheory/aim/engine/stream"
	"github.com/aimtheory/aim/internal/par"
)

// GenErrorOptions set the Monte Carlo estimates of the SMI generalisation errors (GenError,
// GenErrorBO).
type GenErrorOptions struct {
	Samples int    // outer samples of omega (at least 2)
	Inner   int    // GenErrorBO: inner draws of Z given omega per outer sample (at least 2)
	Seed    uint64 // fixes every draw: the same seed gives the same estimate on any machine
	Workers int    // goroutines (0: GOMAXPROCS); the estimates do not depend on it
}

// DefaultGenErrorOptions returns 100000 outer samples, 8 inner samples, seed 1.
func DefaultGenErrorOptions() GenErrorOptions {
	return GenErrorOptions{Samples: 100000, Inner: 8, Seed: 1}
}

// genChunk is the number of outer samples per deterministic reduction chunk: each chunk returns
// its samples' estimates and they are joined in chunk order, so the result does not depend on
// Workers. Every draw is read from the seed's stream at the sample's own offset.
const genChunk = 512

// check validates Q and the options; inner says whether GenErrorBO's inner draws are needed.
func (o GenErrorOptions) check(ch *smi.Deep, Q []float64, inner bool) error {
	if len(Q) != ch.P() {
		return fmt.Errorf("%d overlaps for P = %d", len(Q), ch.P())
	}
	for l, q := range Q {
		if !(q >= 0 && q <= 1) {
			return fmt.Errorf("Q_%d%d = %g: need 0 <= Q <= 1", l+1, l+1, q)
		}
	}
	if o.Samples < 2 {
		return fmt.Errorf("samples = %d: need >= 2", o.Samples)
	}
	if inner && o.Inner < 2 {
		return fmt.Errorf("inner samples = %d: need >= 2 (the unbiased covariance)", o.Inner)
	}
	return nil
}

// genWork is one goroutine's buffers for the generalisation errors.
type genWork struct {
	s           *smi.DeepScratch
	xi          []float64 // one outer sample's normals
	omega, z, u []float64
	y           []float64 // K outputs of M x M
}

// GenError returns the plug-in generalisation error of docs/theory/smi.md 2.1 at the diagonal
// overlaps Q, the authors' definition (gen_error_2W.ipynb),
//
//	e_gen(Q) = E || g(Z) - g(omega) ||_F^2,  omega = Q^{1/2} xi,  Z = omega + (I - Q)^{1/2} eta,
//
// with g the deep attention output (M x M) and xi, eta iid N(0, 1) (P x M): the error of the
// estimator y-hat = g(W-hat x / sqrt(D)) with the posterior mean W-hat. Outer sample i reads
// the normals 2 i P M .. 2 (i+1) P M - 1 of the stream of o.Seed (xi, then eta); o.Inner is not
// used. It returns the mean and its standard error. The "one layer" curve of the paper is this
// error with Q_11 set to 0.
func GenError(ch *smi.Deep, Q []float64, o GenErrorOptions) (mean, stderr float64, err error) {
	if err := o.check(ch, Q, false); err != nil {
		return math.NaN(), math.NaN(), fmt.Errorf("SMI e_gen: %w", err)
	}
	P, M := ch.P(), ch.M
	pm, mm := P*M, M*M
	return genMapReduce(ch, o, 2*pm, 2, func(w *genWork, i int) float64 {
		device.FillNormals(w.xi, o.Seed, stream.SMISESample(i, 2*pm))
		for k := 0; k < P; k++ {
			for l := 0; l < M; l++ {
				w.omega[k*M+l] = math.Sqrt(Q[k]) * w.xi[k*M+l]
				w.z[k*M+l] = w.omega[k*M+l] + math.Sqrt(1-Q[k])*w.xi[pm+k*M+l]
			}
		}
		yo, yz := w.y[:mm], w.y[mm:2*mm]
		ch.Forward(w.u, w.omega, nil, w.s)
		ch.OutputU(yo, w.u)
		ch.Forward(w.u, w.z, nil, w.s)
		ch.OutputU(yz, w.u)
		var e float64
		for k := range yo {
			d := yz[k] - yo[k]
			e += d * d
		}
		return e
	})
}

// GenErrorBO returns the Bayes-optimal generalisation error at the diagonal overlaps Q,
//
//	e_BO(Q) = E_omega || g(Z) - E[g(Z') | omega] ||_F^2 = E_omega tr Cov(g(Z) | omega),
//	omega = Q^{1/2} xi,  Z, Z' | omega iid N(omega, I - Q) (per token),
//
// the error of the Bayes-optimal predictor y-hat = E[y | data, x] (the posterior mean of the
// output, not the output at the posterior mean). The conditional mean minimises the squared
// error, so e_BO <= GenError's plug-in error at every Q; e_BO = 0 at Q = I. Each outer sample
// estimates tr Cov(g | omega) without bias by the sample covariance of o.Inner draws of
// g(omega + (I - Q)^{1/2} eta_j) (divided by Inner - 1), as engine/aim/se.GenError does for the
// AIM; outer sample i reads the normals i (K+1) P M .. (i+1) (K+1) P M - 1 of the stream of
// o.Seed (xi, then eta_1..eta_K, K = Inner). It returns the mean over the outer samples and its
// standard error.
func GenErrorBO(ch *smi.Deep, Q []float64, o GenErrorOptions) (mean, stderr float64, err error) {
	if err := o.check(ch, Q, true); err != nil {
		return math.NaN(), math.NaN(), fmt.Errorf("SMI e_BO: %w", err)
	}
	P, M := ch.P(), ch.M
	pm, mm, K := P*M, M*M, o.Inner
	return genMapReduce(ch, o, (K+1)*pm, K, func(w *genWork, i int) float64 {
		device.FillNormals(w.xi, o.Seed, stream.SMISESample(i, (K+1)*pm))
		for k := 0; k < P; k++ {
			for l := 0; l < M; l++ {
				w.omega[k*M+l] = math.Sqrt(Q[k]) * w.xi[k*M+l]
			}
		}
		for j := 0; j < K; j++ {
			eta := w.xi[(j+1)*pm : (j+2)*pm]
			for k := 0; k < P; k++ {
				for l := 0; l < M; l++ {
					w.z[k*M+l] = w.omega[k*M+l] + math.Sqrt(1-Q[k])*eta[k*M+l]
				}
			}
			ch.Forward(w.u, w.z, nil, w.s)
			ch.OutputU(w.y[j*mm:(j+1)*mm], w.u)
		}
		return mc.TraceCov(w.y[:K*mm], K, mm)
	})
}

// genMapReduce evaluates est(w, i) for the outer samples i = 0..o.Samples-1 in chunks of
// genChunk (par.MapReduce, joined in chunk order) with nxi normals and nout outputs of work
// space per goroutine, and returns the mean of the estimates and its standard error.
func genMapReduce(ch *smi.Deep, o GenErrorOptions, nxi, nout int, est func(w *genWork, i int) float64) (mean, stderr float64, err error) {
	pm, M := ch.P()*ch.M, ch.M
	all, err := par.MapReduce(o.Workers, par.Chunks(o.Samples, genChunk), func() (*genWork, error) {
		return &genWork{s: ch.NewScratch(), xi: make([]float64, nxi), omega: make([]float64, pm), z: make([]float64, pm),
			u: make([]float64, M), y: make([]float64, nout*M*M)}, nil
	}, func(w *genWork, c int) ([]float64, error) {
		lo, hi := par.Span(c, o.Samples, genChunk)
		out := make([]float64, hi-lo)
		for i := lo; i < hi; i++ {
			out[i-lo] = est(w, i)
		}
		return out, nil
	}, make([]float64, 0, o.Samples), func(acc, r []float64) []float64 { return append(acc, r...) })
	if err != nil {
		return math.NaN(), math.NaN(), err
	}
	mean, std := stat.MeanStdDev(all, nil)
	return mean, std / math.Sqrt(float64(len(all))), nil
}
