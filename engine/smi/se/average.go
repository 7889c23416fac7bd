package se

import (
	"fmt"
	"math"
	"slices"

	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/smi"
	"github.com/aimtheory/aim/engine/stream"
	"github.com/aimtheory/aim/internal/par"
)

// Fisher returns, for each layer l, E[ sum_tokens g_out,l^2 ] over the SE's Monte Carlo
// draws at the diagonal overlaps Q (the average that q-hat = alpha times), and the number of
// channel integrals that stopped at their evaluation budget.
func Fisher(ch *smi.Deep, Q []float64, o Options) ([]float64, int, error) {
	f, err := fisher(ch, Q, o)
	return f.F.mean, f.F.inexact, err
}

// PsiOut returns the output part of the free entropy at the diagonal overlaps Q,
// psi_out(Q) = E_{xi, eta} log Z_out(y; omega, V) (Point.PsiOut), over the SE's Monte Carlo
// draws, with its standard error over the replicates (NaN with one). It is the same average
// as Fisher's, on the same channel integrals.
func PsiOut(ch *smi.Deep, Q []float64, o Options) (psi, stderr float64, err error) {
	if err := o.validate(ch); err != nil {
		return math.NaN(), math.NaN(), err
	}
	f, err := fisher(ch, Q, o)
	if err != nil {
		return math.NaN(), math.NaN(), err
	}
	return f.psi, f.psiErr, nil
}

// mapAverage is the SE map's channel average at Q: F (P entries, with the covariance of the
// average) and psi_out with its standard error.
type mapAverage struct {
	F           average
	psi, psiErr float64
}

// fisher is Fisher with the covariance of the average over the replicates, and psi_out from
// the same integrals (smi.DeepMoments.LogZ).
func fisher(ch *smi.Deep, Q []float64, o Options) (mapAverage, error) {
	P, M := ch.P(), ch.M
	V := make([]float64, P*P)
	for l := 0; l < P; l++ {
		V[l*P+l] = 1 - Q[l] + o.Epsilon
	}
	var batch *smi.SampleBatch
	if o.Draws > 0 {
		var err error
		if batch, err = sampleAll(ch, Q, V, o); err != nil {
			return mapAverage{}, err
		}
	}
	a, err := smiAverage(ch, o, P+1, func(acc []float64, w *smiWorker, xi, eta []float64) error {
		if batch != nil {
			return w.sampled(acc, batch, V, o.Draws/2)
		}
		if err := w.posterior(ch, Q, V, xi, eta); err != nil {
			return err
		}
		for k := 0; k < P; k++ {
			for l := 0; l < M; l++ {
				g := w.m.Mean[k*M+l] / V[k*P+k]
				acc[k] += g * g
			}
		}
		acc[P] += w.m.LogZ
		return nil
	})
	if err != nil {
		return mapAverage{}, err
	}
	n := P + 1
	f := mapAverage{F: average{mean: a.mean[:P], cov: make([]float64, P*P), inexact: a.inexact},
		psi: a.mean[P], psiErr: math.Sqrt(math.Max(a.cov[P*n+P], 0))}
	for k := 0; k < P; k++ {
		copy(f.F.cov[k*P:(k+1)*P], a.cov[k*n:k*n+P])
	}
	return f, nil
}

// smiWorker is one goroutine's work space.
type smiWorker struct {
	post        *smi.DeepPosterior
	m           *smi.DeepMoments
	half        [2]*smi.SampleMoments // the two halves' estimates, with Options.Draws
	sample      int                   // the current sample's index i R + r (its draws' stream offset)
	s           *smi.DeepScratch
	omega, z, u []float64
	xi          []float64
	cov, cov2   []float64 // (P M) x (P M) posterior covariances (cov2: the second half's)
}

// posterior draws one SE sample, omega = Q^{1/2} xi and Z = omega + V^{1/2} eta (Q and V
// diagonal), runs the forward map and takes the channel's posterior moments into w.m.
func (w *smiWorker) posterior(ch *smi.Deep, Q, V, xi, eta []float64) error {
	w.draw(ch, Q, V, xi, eta)
	return w.post.Moments(w.m, w.u, w.omega, V)
}

// draw sets omega = Q^{1/2} xi and Z = omega + V^{1/2} eta (Q and V diagonal) and the output's
// pre-activation u = v_L(Z).
func (w *smiWorker) draw(ch *smi.Deep, Q, V, xi, eta []float64) {
	P, M := ch.P(), ch.M
	for k := 0; k < P; k++ {
		for l := 0; l < M; l++ {
			w.omega[k*M+l] = math.Sqrt(Q[k]) * xi[k*M+l]
			w.z[k*M+l] = w.omega[k*M+l] + math.Sqrt(V[k*P+k])*eta[k*M+l]
		}
	}
	ch.Forward(w.u, w.z, nil, w.s)
}

// sampleAll runs the sampled channel integrals of every SE sample of smiAverage at once: a
// first pass of smiAverage's draws gives each sample's omega and u, then one
// smi.SampleBatch runs on o.Device (nil: the CPU twin). Task 2 i + h is half h (of o.Draws/2
// draws) of sample i = w.sample, with slot 2 i + h: its draws come from stream.SMISEDraw(i, h).
func sampleAll(ch *smi.Deep, Q, V []float64, o Options) (*smi.SampleBatch, error) {
	total := o.Replicates * o.perReplicate(o.Samples)
	b, err := ch.NewSampleBatch(2 * total)
	if err != nil {
		return nil, err
	}
	if _, err := smiAverage(ch, o, 0, func(_ []float64, w *smiWorker, xi, eta []float64) error {
		w.draw(ch, Q, V, xi, eta)
		for h := 0; h < 2; h++ {
			b.Set(2*w.sample+h, uint64(2*w.sample+h), w.u, w.omega, V)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := b.Run(o.Device, o.Draws/2, o.Seed, stream.SMISEDraws, stream.SMISEDrawNormals, o.Workers); err != nil {
		return nil, fmt.Errorf("smi se: %w", err)
	}
	return b, nil
}

// sampled adds one SE sample's terms of fisher from its two halves in b (sampleAll), each of
// draws draws: independent posterior means m_a, m_b, and acc[k] gets sum_tokens
// m_a m_b / V_kk^2 (E[m_a m_b] = E[m]^2 up to the O(1/n^2) bias left by the sampler), acc[P]
// the mean of the halves' log Z_out.
func (w *smiWorker) sampled(acc []float64, b *smi.SampleBatch, V []float64, draws int) error {
	P, M := len(acc)-1, len(w.u)
	if err := w.halves(b, draws); err != nil {
		return err
	}
	for k := 0; k < P; k++ {
		vk := V[k*P+k]
		for l := 0; l < M; l++ {
			acc[k] += w.half[0].Mean[k*M+l] * w.half[1].Mean[k*M+l] / (vk * vk)
		}
	}
	acc[P] += (w.half[0].LogZ + w.half[1].LogZ) / 2
	return nil
}

// halves takes the current sample's two halves (of draws draws each) from b into w.half; the
// sample is exact where both are.
func (w *smiWorker) halves(b *smi.SampleBatch, draws int) error {
	for h, m := range w.half {
		if err := b.Moments(m, 2*w.sample+h, draws); err != nil {
			return err
		}
	}
	w.m.Exact = w.half[0].Exact && w.half[1].Exact
	return nil
}

// smiChunk is the number of samples per deterministic reduction chunk.
const smiChunk = 64

// average is a Monte Carlo average of nOut values over the SE's draws.
type average struct {
	mean []float64 // the mean of the Replicates replicate means m_r
	// cov (nOut x nOut) estimates the covariance of mean without bias,
	// sum_r (m_r - mean)(m_r - mean)^T / (R (R - 1)); NaN for R = 1.
	cov     []float64
	inexact int // channel integrals that stopped at their budget, plus the dropped samples
}

// smiAverage averages f over o.Samples draws (xi, eta), each P x M iid N(0, 1), split into
// R = o.Replicates replicates of n = ceil(Samples / R) draws. Draw i of replicate r is the
// shifted Halton point i+1 with the r-th shift (the shifts are the consecutive blocks of 2 P M
// normals from the SMISEShift offset of o.Seed's stream), or with o.MonteCarlo the normals
// 2 s P M .. 2 (s+1) P M - 1 of the stream of o.Seed, s = i R + r: growing n keeps the draws
// already made, and R = 1 is the single shift. f adds its nOut values to acc. Chunks of
// smiChunk samples are summed in order (par.MapReduce), so the result does not depend on
// Workers. A sample whose f fails is dropped and its replicate's mean is over the others; the
// count returned adds the dropped samples to the inexact integrals, and more than 1% dropped is
// an error.
func smiAverage(ch *smi.Deep, o Options, nOut int, f func(acc []float64, w *smiWorker, xi, eta []float64) error) (average, error) {
	P, M := ch.P(), ch.M
	pm := P * M
	R := o.Replicates
	per := o.perReplicate(o.Samples)
	total := R * per
	shifts := make([]float64, R*2*pm)
	if !o.MonteCarlo {
		device.FillNormals(shifts, o.Seed, stream.SMISEShift)
		for i, v := range shifts {
			shifts[i] = 0.5 * math.Erfc(-v/math.Sqrt2) // uniform on (0, 1)
		}
	}
	// chunkResult is one chunk's sums per replicate (R x nOut) and counts.
	type chunkResult struct {
		sum             []float64
		n               []int // samples kept per replicate
		inexact, failed int
		lastErr         error
	}
	newWorker := func() (*smiWorker, error) {
		var post *smi.DeepPosterior // the cubature, where the channel has one (L <= 3)
		if ch.CheckInvertible() == nil {
			var err error
			if post, err = ch.NewPosterior(); err != nil {
				return nil, err
			}
			if o.QuadTol > 0 {
				post.Tol = o.QuadTol
			}
			if o.QuadMaxEval > 0 {
				post.MaxEval = o.QuadMaxEval
			}
		}
		w := &smiWorker{post: post, m: ch.NewMoments(), s: ch.NewScratch(), omega: make([]float64, pm),
			z: make([]float64, pm), u: make([]float64, M), xi: make([]float64, 2*pm), cov: make([]float64, pm*pm), cov2: make([]float64, pm*pm)}
		if o.Draws > 0 {
			w.half = [2]*smi.SampleMoments{ch.NewSampleMoments(), ch.NewSampleMoments()}
		}
		return w, nil
	}
	acc := chunkResult{sum: make([]float64, R*nOut), n: make([]int, R)}
	acc, err := par.MapReduce(o.Workers, par.Chunks(total, smiChunk), newWorker, func(w *smiWorker, c int) (chunkResult, error) {
		res := chunkResult{sum: make([]float64, R*nOut), n: make([]int, R)}
		lo, hi := par.Span(c, total, smiChunk)
		for s := lo; s < hi; s++ {
			r, i := s/per, s%per
			w.sample = i*R + r
			if o.MonteCarlo {
				device.FillNormals(w.xi, o.Seed, stream.SMISESample(i*R+r, 2*pm))
			} else {
				haltonNormals(w.xi, uint64(i)+1, shifts[r*2*pm:(r+1)*2*pm])
			}
			if err := f(res.sum[r*nOut:(r+1)*nOut], w, w.xi[:pm], w.xi[pm:]); err != nil {
				// A channel integral that fails (smi.DeepPosterior's errors) drops its
				// sample; more than 1% dropped is an error.
				res.failed++
				res.lastErr = fmt.Errorf("sample %d of replicate %d: %w", i, r, err)
				continue
			}
			res.n[r]++
			if !w.m.Exact {
				res.inexact++
			}
		}
		return res, nil
	}, acc, func(acc, res chunkResult) chunkResult {
		for k, v := range res.sum {
			acc.sum[k] += v
		}
		for r, k := range res.n {
			acc.n[r] += k
		}
		acc.inexact += res.inexact
		acc.failed += res.failed
		if res.lastErr != nil {
			acc.lastErr = res.lastErr
		}
		return acc
	})
	if err != nil {
		return average{}, err
	}
	if acc.failed > total/100 || slices.Contains(acc.n, 0) {
		return average{}, fmt.Errorf("%d of %d channel integrals failed (more than 1%%, or a whole replicate), e.g. %w", acc.failed, total, acc.lastErr)
	}
	out := average{mean: make([]float64, nOut), cov: make([]float64, nOut*nOut), inexact: acc.inexact + acc.failed}
	means := acc.sum // replicate means, in place
	for r := 0; r < R; r++ {
		for k := 0; k < nOut; k++ {
			means[r*nOut+k] /= float64(acc.n[r])
			out.mean[k] += means[r*nOut+k] / float64(R)
		}
	}
	for a := 0; a < nOut; a++ {
		for b := 0; b < nOut; b++ {
			if R < 2 {
				out.cov[a*nOut+b] = math.NaN()
				continue
			}
			var c float64
			for r := 0; r < R; r++ {
				c += (means[r*nOut+a] - out.mean[a]) * (means[r*nOut+b] - out.mean[b])
			}
			out.cov[a*nOut+b] = c / float64(R*(R-1))
		}
	}
	return out, nil
}

// haltonPrimes are the bases of the Halton sequence, one per coordinate (up to L = 3, M = 2:
// 12 coordinates).
var haltonPrimes = []uint64{2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53}

// haltonNormals writes Phi^{-1}(frac(h_d(i) + shift_d)) for d = 0..len(dst)-1, h_d(i) the
// radical inverse of i in base haltonPrimes[d].
func haltonNormals(dst []float64, i uint64, shift []float64) {
	for d := range dst {
		b := haltonPrimes[d]
		f, x := 1.0, 0.0
		for k := i; k > 0; k /= b {
			f /= float64(b)
			x += f * float64(k%b)
		}
		x += shift[d]
		if x >= 1 {
			x--
		}
		if x <= 0 {
			x = 0.5 / float64(1<<53)
		}
		dst[d] = -math.Sqrt2 * math.Erfcinv(2*x)
	}
}
