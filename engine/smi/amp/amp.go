// Package amp runs GAMP for the sequence multi-index model of deep tied attention
// (docs/SMI.md 3): the P x D estimate of W* with its P x P posterior covariance, the channel's
// g_out from the posterior quadrature of package smi (at L = 3 and 4 its importance sampler), and
// the teacher-normalised overlaps and test error per iteration.
package amp

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/fixedpoint"
	"github.com/aimtheory/aim/engine/smi"
	"github.com/aimtheory/aim/engine/stream"
	"github.com/aimtheory/aim/internal/par"
	"github.com/aimtheory/aim/internal/spd"
	"github.com/aimtheory/aim/kernels"
)

// ErrDiverged is wrapped by the error Run returns when the iteration produces NaN or blows up.
var ErrDiverged = errors.New("SMI GAMP diverged")

// GAMP for the sequence multi-index model with deep tied rank-1 attention output
// (docs/SMI.md 3, "Algorithm 1" of Troiani et al. 2025), on the host CPU with plain slices.
// Shapes: What is P x D (row k = layer k's weight estimate), Chat P x P, and per sample mu the
// channel quantities omega_mu, g_mu are P x M row-major (entry (k, l) = layer k, token l at
// k M + l, as smi.Deep). The per-sample channel work (the posterior quadrature of
// smi.DeepPosterior) runs on Workers goroutines, each sample writing its own slot; every
// reduction over samples is summed in sample order, so the results do not depend on Workers.

// Options control one GAMP run on an SMI data set (docs/SMI.md 3).
type Options struct {
	MaxIter int // iteration cap (50, as the authors; their code calls it T)
	// Damping theta in [0, 1) is the weight on the old iterate (engine/fixedpoint's convention):
	// What <- (1 - theta) What_new + theta What, Chat likewise. The authors' rho = 1 - theta = 0.8.
	// It is where the run starts: the damping is adaptive. An update that is unstable (some
	// layer's |What_l|^2 / D grows past maxNorm = 4, where a posterior mean has at most 1, or
	// Chat + Epsilon I is not positive definite) is redone from the same channel outputs with
	// theta <- (1 + theta)/2, up to maxAdaptiveDamping = 0.95, and the run goes on at the raised
	// damping (Iteration.Damping); an update still unstable at 0.95 is taken, and the
	// divergence checks report it if it breaks down.
	Damping float64
	// Tol stops the run when the estimated squared distance of What to the fixed point,
	// ||What - What*||^2 / (P D), falls below it (fixedpoint.Steps on the damped steps: the
	// step over (1 - r)^2, r the contraction rate of the last steps; 1e-8, which in practice
	// runs MaxIter iterations); 0 never stops early.
	Tol float64
	// Epsilon is the ridge of the channel's variance: the posterior moments are taken at
	// V = Chat + Epsilon I (1e-3, as the authors' compute_g_out_d_gout). The Onsager term uses
	// Chat itself, as the authors' code does.
	Epsilon float64
	// Init chooses What_0: "random" (the default, as the authors; "" means the same) draws
	// What_0 = InitScale N(0, 1) entrywise from the data seed's Gaussian stream at
	// stream.Init, with Chat_0 = I; "zero" starts at What_0 = 0, Chat_0 = I. From the zero
	// start GAMP stays at the uninformative fixed point: at omega = 0 the sign symmetry
	// w_l -> -w_l of each layer makes E[Z | y] = 0, hence g = 0, B = 0 and What = 0 forever.
	// A random start breaks the symmetry. "consistent" draws the same What_0 and starts on the
	// Nishimori line instead: Chat_0 = I - What_0 What_0^T / D, so that omega's variance plus V
	// is the prior variance of z, as at every later iterate of Bayes-optimal GAMP (with
	// Chat_0 = I and |What_0|^2/D = 1 the first channel sees twice the variance of z). It needs
	// InitScale < 1, and Chat_0 positive definite. "informed" starts on the Nishimori line at
	// the overlap q = InitScale in (0, 1) with the teacher: What_0 = q W* + sqrt(q (1 - q)) xi,
	// xi the same N(0, 1) draws, so that M_ll = Q_ll = q up to O(1/sqrt(D)), and Chat_0 =
	// I - What_0 What_0^T / D (about (1 - q) I): GAMP's analogue of the SE's informed start,
	// which tells whether a learned fixed point of the SE is one GAMP stays at.
	Init      string
	InitScale float64 // the scale of the random What_0 (1), or the informed start's overlap q
	// TestSamples is the size of the fresh test set of the generalisation error (1000, as the
	// authors); 0: none (EGen is NaN). Its tokens come from the data seed's Gaussian stream at
	// stream.SMIAMPTest = stream.Data + 2^51 + 2^50: past the N M D training tokens, and
	// distinct from the SGD test set at stream.Data + 2^51 (stream.SMISGDTest) as long as
	// that one holds fewer than 2^50 numbers.
	TestSamples int
	// Workers is the number of goroutines of the channel quadrature and the other per-sample
	// work (0: GOMAXPROCS). The results do not depend on it.
	Workers int
	// QuadTol and QuadMaxEval set the channel quadrature's relative tolerance and evaluation
	// budget (smi.DeepPosterior.Tol, .MaxEval); 0 keeps the channel's defaults
	// (smi.DefaultDeepTol, smi.DefaultDeepMaxEval).
	QuadTol     float64
	QuadMaxEval int
	// Draws, when positive, replaces the cubature of the L = 3 channel by importance sampling
	// (smi.DeepSampler), and L = 4, which has no cubature, needs it; it is ignored at L = 1, 2.
	// Each sample takes Draws draws per iteration from the data seed's stream at
	// stream.SMIAMPDraw(iteration, mu) (half h at h stream.SMIAMPDrawNormals/2 from there):
	// two halves, whose averaged moments give g and whose cross product m_a m_b^T replaces
	// m m^T in the posterior covariance of dg, so that the sampling noise does not bias Cov
	// downwards. 0: the budget-capped cubature (QuadTol, QuadMaxEval). DefaultOptions(L) sets
	// DefaultDraws(L).
	Draws int
	// Device runs the sampled integrals (Draws), all N samples' of one iteration in one batch
	// (smi.SampleBatch): its sampler (device.DeepSampler; the GPU's kernel or the CPU
	// backend's twin). nil runs the CPU twin in this process on Workers goroutines; the
	// estimates are the same to rounding.
	Device device.Device
	// DampMessages also damps g (g <- (1 - theta) g + theta g_prev) before the back-projection and
	// the next Onsager term, as in the damped GAMP of Rangan, Schniter, Fletcher and Sarkar
	// (2015), so that What and the Onsager term see the same messages. On by default: with the
	// authors' scheme (false: only What and Chat damped, AMP_BO_2w.py) GAMP at D = 1000 stays at
	// the uninformative point in a period-2 cycle for some seeds (alpha = 0.5 seed 3; layer 1 at
	// alpha = 1.2 seeds 1 and 3), and with it those runs reach the state evolution.
	DampMessages bool
	// Progress, when set, is called after every iteration.
	Progress func(it Iteration)
}

// DefaultOptions returns, for L layers, the authors' settings (AMP_BO_2w.py) with damped
// messages: 50 iterations, damping 0.8, the ridge 1e-3 on V, a random start What_0 ~ N(0, 1)
// with Chat_0 = I, and 1000 fresh test samples for the generalisation error; and
// DefaultDraws(L) draws per sampled channel integral.
func DefaultOptions(L int) Options {
	return Options{MaxIter: 50, Damping: 1 - 0.8, Tol: 1e-8, Epsilon: 1e-3, Init: "random", InitScale: 1, TestSamples: 1000,
		DampMessages: true, Draws: DefaultDraws(L)}
}

// DefaultDraws returns the number of importance-sampling draws per sample of the L-layer
// channel (Options.Draws): 1000 (two halves of 500) up to L = 3 (at L = 1, 2 none are taken),
// 4000 at L = 4. At L = 4 the sampler keeps under 1% of its draws effective where the last
// layer is learned behind unlearned ones, and at 1000 draws the noise of g holds GAMP below
// the state evolution: at alpha = 2, D = 4000 and 8000, it ends at cos^2 = (0.57, 0.34, 0,
// 0.9942), layer 4 twenty SE errors below the SE's (0.682, 0.563, 0.215, 0.99546); with 4000
// and 8000 draws layers 1, 2 and 4 move onto the SE's (0.669, 0.556, 0.021, 0.99534 at 8000;
// README). A layer near its threshold needs more: layer 3 there is held only at 16 000 draws
// (0.29 at D = 2000). At L = 3, 4000 draws land where 1000 do.
func DefaultDraws(L int) int {
	if L >= 4 {
		return 4000
	}
	return 1000
}

// MaxDraws bounds Options.Draws: each half of a sample's draws reads at most
// stream.SMIAMPDrawNormals/2 normals, 2(L-1) per draw (the bound is the deepest sampled L's).
const MaxDraws = 2 * (stream.SMIAMPDrawNormals / 2 / (2 * (smi.MaxSampledLayers - 1)))

func (o Options) validate() error {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case o.MaxIter < 1:
		return fmt.Errorf("amp: SMI MaxIter = %d, need at least 1", o.MaxIter)
	case !(o.Damping >= 0 && o.Damping < 1):
		return fmt.Errorf("amp: SMI damping theta = %g, need 0 <= theta < 1 (the weight on the old iterate)", o.Damping)
	case !(o.Tol >= 0) || !finite(o.Tol):
		return fmt.Errorf("amp: SMI tolerance %g, need 0 <= Tol < inf", o.Tol)
	case !(o.Epsilon >= 0) || !finite(o.Epsilon):
		return fmt.Errorf("amp: SMI ridge epsilon %g, need 0 <= epsilon < inf", o.Epsilon)
	case o.Init != "" && o.Init != "random" && o.Init != "zero" && o.Init != "consistent" && o.Init != "informed":
		return fmt.Errorf("amp: SMI init %q, need \"random\", \"consistent\", \"informed\" or \"zero\"", o.Init)
	case o.Init != "zero" && (!(o.InitScale > 0) || !finite(o.InitScale)):
		return fmt.Errorf("amp: SMI init scale %g, need 0 < scale < inf for a random start", o.InitScale)
	case o.Init == "consistent" && !(o.InitScale < 1):
		return fmt.Errorf("amp: SMI init scale %g, need 0 < scale < 1 for the consistent start (Chat_0 = I - What_0 What_0^T / D)", o.InitScale)
	case o.Init == "informed" && !(o.InitScale < 1):
		return fmt.Errorf("amp: SMI init scale %g, need an overlap 0 < q < 1 for the informed start", o.InitScale)
	case o.TestSamples < 0:
		return fmt.Errorf("amp: SMI TestSamples = %d, need >= 0", o.TestSamples)
	case o.Workers < 0:
		return fmt.Errorf("amp: SMI Workers = %d, need >= 0 (0: GOMAXPROCS)", o.Workers)
	case !(o.QuadTol >= 0) || !finite(o.QuadTol):
		return fmt.Errorf("amp: SMI quadrature tolerance %g, need 0 <= tol < inf (0: default)", o.QuadTol)
	case o.QuadMaxEval < 0:
		return fmt.Errorf("amp: SMI quadrature budget %d, need >= 0 (0: default)", o.QuadMaxEval)
	case o.Draws < 0 || o.Draws > MaxDraws || (o.Draws > 0 && o.Draws < 4):
		return fmt.Errorf("amp: SMI draws %d, need 0 (the cubature) or 4 <= draws <= %d", o.Draws, MaxDraws)
	}
	return nil
}

// Iteration records one GAMP iteration. Overlaps are per layer l (P = L rank-1 layers) and
// defined up to the layer's sign: Q_ll = ||What_l||^2 / D, |M_ll| = |What_l . W*_l| / D and the
// cosine C_l = |M_ll| / sqrt(Q_ll ||W*_l||^2 / D) (0 where What_l = 0), all after the damped
// update.
type Iteration struct {
	Iter int       // 1, 2, ...
	Q    []float64 // Q_ll, length P
	M    []float64 // |M_ll|, length P
	Cos  []float64 // C_l, length P
	// Step is ||What_new - What||^2 / (P D), What_new = (I + A)^{-1} B the undamped proposal and
	// What the previous iterate.
	Step float64
	// Distance is the estimated ||What - What*||^2 / (P D) of the previous iterate to the
	// fixed point (fixedpoint.Steps on the damped steps; +Inf until the rate is known, and
	// again for two iterations after the damping was raised).
	Distance float64
	// EGen is the plug-in generalisation error on the fresh test set,
	// mean_mu ||y(W* x_mu) - y(What x_mu)||_F^2 with y = softmax_row(beta u u^T) of the forward
	// map u = v_L(W x^T / sqrt(D)) (docs/SMI.md 2.1); NaN without a test set.
	EGen    float64
	Inexact int // samples whose quadrature did not meet its tolerance (still used)
	Failed  int // samples whose quadrature failed (Z_out = 0, ...): g = 0, dg = 0
	// Damping is the damping theta this iteration's update took: Options.Damping, or more where
	// adaptive damping raised it (Options.Damping).
	Damping     float64
	QuadSeconds float64 // wall time of this iteration's channel phase (omega and the quadrature)
	Seconds     float64 // wall time of this iteration, the record included
	Elapsed     float64 // wall time since the run started
}

// Result is the outcome of one GAMP run.
type Result struct {
	Trace      []Iteration
	What       []float64 // P x D, the final estimate of W*
	Chat       []float64 // P x P, its final covariance estimate
	Iterations int
	Distance   float64 // the last iteration's estimated distance to the fixed point
	Converged  bool    // Distance fell below Tol before MaxIter
	Seconds    float64
}

// Bytes returns the host memory a Run with options o needs beyond the data
// (smi.Params.Bytes): What, its proposal and B (3 P D), g, g_prev and the undamped g
// (3 N P M), the per-sample sums of the Jacobian blocks (N P P), the per-sample flags (2 N
// bytes), and the test set of
// n_test = o.TestSamples samples (its tokens, n_test M D, its outputs, n_test M M, and the
// per-sample errors), and at L >= 3 with Draws the batch of sampled integrals (2 N tasks of
// kernels.DeepIn(L) + kernels.DeepOut(L) values).
// The per-worker work space (O(P M) numbers and the channel quadrature's regions) is not
// counted.
func Bytes(p smi.Params, o Options) uint64 {
	D, N, M, P := uint64(p.D), uint64(p.N()), uint64(p.M), uint64(p.P())
	nTest := uint64(max(o.TestSamples, 0))
	var sampled uint64 // the batch of sampled integrals (smi.SampleBatch)
	if p.L >= 3 && o.Draws > 0 {
		sampled = 2 * N * uint64(kernels.DeepIn(p.L)+kernels.DeepOut(p.L))
	}
	return 8*(3*P*D+3*N*P*M+N*P*P+nTest*M*D+nTest*M*M+nTest+sampled) + 2*N
}

// smiWorker is one goroutine's work space.
type smiWorker struct {
	ch                  *smi.Deep // the worker's own copy (Deep.OutputU writes its C)
	post                *smi.DeepPosterior
	mom                 *smi.DeepMoments
	half                [2]*smi.SampleMoments // the two halves' estimates, with Options.Draws at L >= 3
	s                   *smi.DeepScratch
	omega, cov, tmp, mv []float64
	z, u, y             []float64
}

// smiState is one GAMP run.
type smiState struct {
	data    *smi.Data
	o       Options
	D, N    int
	M, P    int
	workers []*smiWorker
	// iterate
	what, chat []float64
	g, gPrev   []float64 // N x P x M
	gRaw       []float64 // N x P x M: this iteration's g before the messages' damping
	dgSum      []float64 // N x P x P: sum_l dg_l per sample
	inexact    []bool
	failed     []bool
	first      bool
	batch      *smi.SampleBatch // 2 N tasks: half h of sample mu is task 2 mu + h
	// test set
	nTest      int
	xt, yt, et []float64
}

// Run runs GAMP on the SMI data (docs/SMI.md 3, Algorithm 1):
//
//	init  What = InitScale N(0, 1) (P x D), Chat = I_P, g_prev = 0
//	loop  V = Chat
//	      omega_{mu,.,l} = What x_{mu l} / sqrt(D) - V g_prev_{mu,.,l}   (no Onsager term at t = 1)
//	      per sample, with the posterior of z_{.l} ~ N(omega_{.l}, V + eps I) given y_mu
//	      (smi.DeepPosterior; at L >= 3 smi.DeepSampler, Options.Draws) and V_e = V + eps I:
//	        g_{.l} = V_e^{-1} E[z_{.l} - omega_{.l}],
//	        dg_l = dg_{.l}/d omega_{.l} = V_e^{-1} Cov(z_{.l}) V_e^{-1} - V_e^{-1}   (exact)
//	      A = -(1/D) sum_mu sum_l dg_l  (symmetrised)
//	      B = (1/sqrt(D)) sum_mu sum_l g_{mu,.,l} x_{mu l}^T + A What
//	      Chat_new = (I + A)^{-1},  What_new = (I + A)^{-1} B      (Gaussian prior denoiser)
//	      What = (1 - theta) What_new + theta What,  Chat = (1 - theta) Chat_new + theta Chat
//	      g_prev = g
//	stop  after MaxIter iterations or when ||What_new - What||^2 / (P D) < Tol.
//
// The start matters: at What = 0 the sign symmetry of every layer gives E[Z | y] = 0, so
// What = 0 is a fixed point (the uninformative one) and GAMP needs the random start to leave it.
// The Onsager term uses V = Chat and the channel V + eps I, as the authors' AMP_BO_2w.py. At
// finite D the Jacobian sum A is noisy (the per-sample dg has a heavy tail from bimodal
// posteriors) and from the random start some runs stall near the uninformative point even
// where state evolution learns a layer (measured at alpha = 0.5: see
// TestSMILearnsLastLayerFirst).
// A sample whose quadrature fails contributes nothing (g = 0, dg = 0) and is counted in
// Iteration.Failed; more than 1% of failures in one iteration is an error. NaN or Inf in
// the iterate, a singular I + A, or a V + eps I that is not positive definite (which the
// adaptive damping of Options.Damping avoids where it can) return an error
// wrapping ErrDiverged that names the iteration. The data's channel must pass
// smi.Deep.CheckPosterior (M = 2; L <= 3, or L = 4 with Draws).
func Run(data *smi.Data, o Options) (Result, error) {
	if data == nil {
		return Result{}, errors.New("amp: SMI data is nil")
	}
	if err := o.validate(); err != nil {
		return Result{}, err
	}
	st, err := newSMIState(data, o)
	if err != nil {
		return Result{}, err
	}
	return st.run()
}

func newSMIState(data *smi.Data, o Options) (*smiState, error) {
	p := data.P
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("amp: SMI data: %w", err)
	}
	ch, err := p.Channel()
	if err != nil {
		return nil, fmt.Errorf("amp: SMI data: %w", err)
	}
	if err := ch.CheckPosterior(sampledAt(p.L, o)); err != nil {
		return nil, fmt.Errorf("amp: SMI GAMP needs the channel posterior: %w", err)
	}
	D, N, M, P := p.D, p.N(), p.M, p.P()
	if len(data.W) != P*D || len(data.X) != N*M*D || len(data.U) != N*M {
		return nil, fmt.Errorf("amp: SMI data sizes W %d, X %d, U %d do not match P = %d, D = %d, N = %d, M = %d",
			len(data.W), len(data.X), len(data.U), P, D, N, M)
	}
	s := &smiState{data: data, o: o, D: D, N: N, M: M, P: P,
		what: make([]float64, P*D), chat: make([]float64, P*P),
		g: make([]float64, N*P*M), gPrev: make([]float64, N*P*M), gRaw: make([]float64, N*P*M), dgSum: make([]float64, N*P*P),
		inexact: make([]bool, N), failed: make([]bool, N), first: true}
	nw := o.Workers
	if nw == 0 {
		nw = par.Workers(0)
	}
	nw = max(1, min(nw, max(N, o.TestSamples)))
	s.workers = make([]*smiWorker, nw)
	for i := range s.workers {
		wch := *ch
		var post *smi.DeepPosterior // the cubature, where the integrals are not sampled
		if !sampledAt(P, o) {
			if post, err = wch.NewPosterior(); err != nil {
				return nil, fmt.Errorf("amp: SMI: %w", err)
			}
			if o.QuadTol > 0 {
				post.Tol = o.QuadTol
			}
			if o.QuadMaxEval > 0 {
				post.MaxEval = o.QuadMaxEval
			}
		}
		w := &smiWorker{ch: &wch, post: post, mom: ch.NewMoments(), s: ch.NewScratch(),
			omega: make([]float64, P*M), cov: make([]float64, P*P), tmp: make([]float64, P*P), mv: make([]float64, P),
			z: make([]float64, P*M), u: make([]float64, M), y: make([]float64, M*M)}
		if s.sampled() {
			w.half = [2]*smi.SampleMoments{ch.NewSampleMoments(), ch.NewSampleMoments()}
		}
		s.workers[i] = w
	}
	if s.sampled() {
		if s.batch, err = ch.NewSampleBatch(2 * N); err != nil {
			return nil, fmt.Errorf("amp: SMI: %w", err)
		}
	}
	// Start: What_0, and Chat_0 = I or (consistent, informed) I - What_0 What_0^T / D.
	if o.Init != "zero" {
		device.FillNormals(s.what, p.Seed, stream.Init)
		if o.Init == "informed" {
			q := o.InitScale
			for i := range s.what {
				s.what[i] = q*data.W[i] + math.Sqrt(q*(1-q))*s.what[i]
			}
		} else {
			for i := range s.what {
				s.what[i] *= o.InitScale
			}
		}
	}
	for k := 0; k < P; k++ {
		s.chat[k*P+k] = 1
	}
	if o.Init == "consistent" || o.Init == "informed" {
		for a := 0; a < P; a++ {
			for b := 0; b < P; b++ {
				s.chat[a*P+b] -= floats.Dot(s.what[a*D:(a+1)*D], s.what[b*D:(b+1)*D]) / float64(D)
			}
		}
		if !spd.Invert(make([]float64, P*P), s.chat, P) {
			return nil, fmt.Errorf("amp: SMI %s start: Chat_0 = I - What_0 What_0^T / D = %v is not positive definite (InitScale %g at D = %d)", o.Init, s.chat, o.InitScale, D)
		}
	}
	// The fresh test set and the teacher's outputs on it.
	if o.TestSamples > 0 {
		s.nTest = o.TestSamples
		s.xt, s.yt = data.TestSet(s.nTest, stream.SMIAMPTest)
		s.et = make([]float64, s.nTest)
	}
	return s, nil
}

// sampled reports whether the channel integrals are sampled (Options.Draws at L >= 3).
func (s *smiState) sampled() bool { return sampledAt(s.P, s.o) }

// sampledAt reports whether GAMP at L layers with options o samples its channel integrals.
func sampledAt(L int, o Options) bool { return o.Draws > 0 && L >= 3 }

// smiChunk is the number of consecutive samples a worker takes at a time (one posterior
// quadrature costs up to milliseconds, so small chunks balance the load); colChunk is the
// number of the D columns of the back-projection per chunk.
const (
	smiChunk = 4
	colChunk = 64
)

// parallel calls f(worker, i) for i = 0..n-1 on the workers (par.For, chunks of smiChunk);
// f must write only to slot i (and its worker's space).
func (s *smiState) parallel(n int, f func(w *smiWorker, i int)) error {
	var k atomic.Int64
	return par.For(len(s.workers), par.Chunks(n, smiChunk), func() (*smiWorker, error) {
		return s.workers[k.Add(1)-1], nil
	}, func(w *smiWorker, c int) error {
		lo, hi := par.Span(c, n, smiChunk)
		for i := lo; i < hi; i++ {
			f(w, i)
		}
		return nil
	})
}

// parallelRange cuts 0..n-1 into blocks of colChunk and calls f(lo, hi) on each (par.For);
// f must write only to its block.
func (s *smiState) parallelRange(n int, f func(lo, hi int)) error {
	return par.For(len(s.workers), par.Chunks(n, colChunk), par.NoState, func(_ struct{}, c int) error {
		f(par.Span(c, n, colChunk))
		return nil
	})
}

func (s *smiState) run() (Result, error) {
	o := s.o
	D, N, P := s.D, s.N, s.P
	start := time.Now()
	res := Result{}
	fail := func(it int, format string, a ...any) (Result, error) {
		res.What, res.Chat = s.what, s.chat
		res.Seconds = time.Since(start).Seconds()
		return res, fmt.Errorf("%w at iteration %d: %s", ErrDiverged, it, fmt.Sprintf(format, a...))
	}
	ve := make([]float64, P*P)
	vinv := make([]float64, P*P)
	A := make([]float64, P*P)
	ipa := make([]float64, P*P)
	inv := make([]float64, P*P)
	B := make([]float64, P*D)
	wNew := make([]float64, P*D)
	theta := o.Damping
	var steps fixedpoint.Steps
	for it := 1; it <= o.MaxIter; it++ {
		stepTheta := theta
		t0 := time.Now()
		// V = Chat; the channel sees V + eps I.
		copy(ve, s.chat)
		for k := 0; k < P; k++ {
			ve[k*P+k] += o.Epsilon
		}
		if !spd.Invert(vinv, ve, P) {
			return fail(it, "V = Chat + eps I = %v is not positive definite", ve)
		}
		V := s.chat
		first := s.first
		if s.sampled() {
			if err := s.sampleAll(it, V, ve, first); err != nil {
				return res, fmt.Errorf("amp: SMI iteration %d: %w", it, err)
			}
		}
		if err := s.parallel(N, func(w *smiWorker, mu int) {
			s.sampleChannel(w, mu, V, ve, vinv, first)
		}); err != nil {
			return res, fmt.Errorf("amp: SMI iteration %d: %w", it, err)
		}
		quad := time.Since(t0).Seconds()
		nFail, nInexact := 0, 0
		for mu := 0; mu < N; mu++ {
			if s.failed[mu] {
				nFail++
			} else if s.inexact[mu] {
				nInexact++
			}
		}
		if nFail*100 > N {
			res.What, res.Chat = s.what, s.chat
			res.Seconds = time.Since(start).Seconds()
			return res, fmt.Errorf("amp: SMI iteration %d: the channel quadrature failed on %d of %d samples (more than 1%%)", it, nFail, N)
		}
		// A = -(1/D) sum_mu sum_l dg_l, summed in sample order, then symmetrised.
		for i := range A {
			A[i] = 0
		}
		for mu := 0; mu < N; mu++ {
			dg := s.dgSum[mu*P*P : (mu+1)*P*P]
			for i := range A {
				A[i] += dg[i]
			}
		}
		for a := 0; a < P; a++ {
			for b := 0; b <= a; b++ {
				v := -(A[a*P+b] + A[b*P+a]) / (2 * float64(D))
				A[a*P+b], A[b*P+a] = v, v
			}
		}
		// (I + A)^{-1}.
		copy(ipa, A)
		for k := 0; k < P; k++ {
			ipa[k*P+k]++
		}
		if !invertGeneral(inv, ipa, P) {
			return fail(it, "I + A = %v is singular", ipa)
		}
		for a := 0; a < P; a++ {
			for b := 0; b < a; b++ {
				v := (inv[a*P+b] + inv[b*P+a]) / 2
				inv[a*P+b], inv[b*P+a] = v, v
			}
		}
		// The damped update, retried with more damping while it is unstable (adaptive damping,
		// Options.Damping): g is damped from its raw value on every try.
		copy(s.gRaw, s.g)
		for {
			if o.DampMessages && it > 1 {
				for i, v := range s.gRaw {
					s.g[i] = (1-theta)*v + theta*s.gPrev[i]
				}
			}
			if err := s.backProject(B, wNew, A, inv); err != nil {
				return res, fmt.Errorf("amp: SMI iteration %d: %w", it, err)
			}
			rho := 1 - theta // the weight on the new iterate
			if theta >= maxAdaptiveDamping || s.stable(wNew, inv, rho) {
				break
			}
			theta = (1 + theta) / 2
		}
		// The step, and the damped update.
		var step float64
		rho := 1 - theta
		for i, v := range wNew {
			d := v - s.what[i]
			step += d * d
			s.what[i] = rho*v + (1-rho)*s.what[i]
		}
		step /= float64(P * D)
		for i := range s.chat {
			s.chat[i] = rho*inv[i] + (1-rho)*s.chat[i]
		}
		for a := 0; a < P; a++ {
			for b := 0; b < a; b++ {
				v := (s.chat[a*P+b] + s.chat[b*P+a]) / 2
				s.chat[a*P+b], s.chat[b*P+a] = v, v
			}
		}
		s.g, s.gPrev = s.gPrev, s.g
		s.first = false
		if !allFinite(s.what) || !allFinite(s.chat) || math.IsNaN(step) || math.IsInf(step, 0) {
			return fail(it, "What or Chat is not finite (step %g, Chat %v)", step, s.chat)
		}
		rec, err := s.record(it, step)
		if err != nil {
			return res, fmt.Errorf("amp: SMI iteration %d: test error: %w", it, err)
		}
		rec.Inexact, rec.Failed = nInexact, nFail
		rec.Damping = theta
		if theta != stepTheta {
			steps.Reset() // the rate changes with the damping
		}
		rec.Distance, _ = steps.Add(rho * rho * step) // the damped step
		rec.QuadSeconds = quad
		rec.Seconds = time.Since(t0).Seconds()
		rec.Elapsed = time.Since(start).Seconds()
		res.Trace = append(res.Trace, rec)
		res.Iterations, res.Distance = it, rec.Distance
		if o.Progress != nil {
			o.Progress(rec)
		}
		if rec.Distance < o.Tol {
			res.Converged = true
			break
		}
	}
	res.What, res.Chat = s.what, s.chat
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// backProject writes B = (1/sqrt(D)) sum_mu sum_l g_{mu,.,l} x_{mu l}^T + A What and
// What_new = inv B (inv = (I + A)^{-1}) into B and wNew (P x D), by blocks of columns (each
// entry summed in sample order).
func (s *smiState) backProject(B, wNew, A, inv []float64) error {
	D, N, M, P := s.D, s.N, s.M, s.P
	data := s.data
	sqrtD := math.Sqrt(float64(D))
	return s.parallelRange(D, func(lo, hi int) {
		for k := 0; k < P; k++ {
			row := B[k*D+lo : k*D+hi]
			for i := range row {
				row[i] = 0
			}
		}
		for mu := 0; mu < N; mu++ {
			gm := s.g[mu*P*M : (mu+1)*P*M]
			for l := 0; l < M; l++ {
				x := data.X[(mu*M+l)*D+lo : (mu*M+l)*D+hi]
				for k := 0; k < P; k++ {
					c := gm[k*M+l]
					if c == 0 {
						continue
					}
					row := B[k*D+lo : k*D+hi]
					for i, v := range x {
						row[i] += c * v
					}
				}
			}
		}
		for k := 0; k < P; k++ {
			row := B[k*D+lo : k*D+hi]
			for i := range row {
				row[i] /= sqrtD
			}
			for j := 0; j < P; j++ {
				a := A[k*P+j]
				wj := s.what[j*D+lo : j*D+hi]
				for i, v := range wj {
					row[i] += a * v
				}
			}
		}
		for k := 0; k < P; k++ {
			row := wNew[k*D+lo : k*D+hi]
			for i := range row {
				var v float64
				for j := 0; j < P; j++ {
					v += inv[k*P+j] * B[j*D+lo+i]
				}
				row[i] = v
			}
		}
	})
}

// maxAdaptiveDamping bounds the damping that adaptive damping raises to: from the authors' 0.2,
// the tries are 0.6, 0.8, 0.9 and 0.95; an update still unstable there is taken, and the
// divergence checks report it.
const maxAdaptiveDamping = 0.95

// maxNorm is the bound on |What_l|^2 / D above which a growing iterate is unstable: the
// posterior mean of a layer with the N(0, 1) prior has E|w-hat|^2 / D = Q_ll <= 1.
const maxNorm = 4

// stable reports whether the damped update What' = rho wNew + (1 - rho) What,
// Chat' = rho inv + (1 - rho) Chat is one GAMP can go on from: every |What'_l|^2 / D is at most
// maxNorm or at most its value before the update, and Chat' + eps I is positive definite.
func (s *smiState) stable(wNew, inv []float64, rho float64) bool {
	D, P := s.D, s.P
	for k := 0; k < P; k++ {
		var n, n0 float64
		for i, v := range wNew[k*D : (k+1)*D] {
			w := s.what[k*D+i]
			u := rho*v + (1-rho)*w
			n += u * u
			n0 += w * w
		}
		n, n0 = n/float64(D), n0/float64(D)
		if !(n <= maxNorm || n <= n0) {
			return false
		}
	}
	c := make([]float64, P*P)
	for i := range c {
		c[i] = rho*inv[i] + (1-rho)*s.chat[i]
	}
	for k := 0; k < P; k++ {
		c[k*P+k] += s.o.Epsilon
	}
	return spd.Factor(make([]float64, P*P), c, P)
}

// sampleOmega writes sample mu's omega_{.l} = What x_{mu l} / sqrt(D) - V g_prev_{.l} (no
// Onsager term at the first iteration) into om (P x M).
func (s *smiState) sampleOmega(om []float64, mu int, V []float64, first bool) {
	D, M, P := s.D, s.M, s.P
	sqrtD := math.Sqrt(float64(D))
	x := s.data.X[mu*M*D : (mu+1)*M*D]
	gp := s.gPrev[mu*P*M : (mu+1)*P*M]
	for k := 0; k < P; k++ {
		wk := s.what[k*D : (k+1)*D]
		for l := 0; l < M; l++ {
			v := dotF(wk, x[l*D:(l+1)*D]) / sqrtD
			if !first {
				for j := 0; j < P; j++ {
					v -= V[k*P+j] * gp[j*M+l]
				}
			}
			om[k*M+l] = v
		}
	}
}

// sampleAll runs the sampled channel integrals of all N samples of iteration it in one batch
// on o.Device (nil: the CPU twin): every sample's omega and u go to the batch's tasks 2 mu + h,
// half h of sample mu with slot 2 ((it - 1) N + mu) + h, whose Draws/2 draws come from
// stream.SMIAMPDraw(it, N, mu) + h stream.SMIAMPDrawNormals/2.
func (s *smiState) sampleAll(it int, V, ve []float64, first bool) error {
	M, N := s.M, s.N
	if err := s.parallel(N, func(w *smiWorker, mu int) {
		om := w.omega
		s.sampleOmega(om, mu, V, first)
		for h := 0; h < 2; h++ {
			s.batch.Set(2*mu+h, 2*(uint64(it-1)*uint64(N)+uint64(mu))+uint64(h), s.data.U[mu*M:(mu+1)*M], om, ve)
		}
	}); err != nil {
		return err
	}
	return s.batch.Run(s.o.Device, s.o.Draws/2, s.data.P.Seed, stream.SMIAMPDraws, stream.SMIAMPDrawNormals/2, len(s.workers))
}

// sampleChannel computes sample mu's channel moments (with Options.Draws at L >= 3 from
// sampleAll's batch, else by the cubature at omega, computed here), g (into s.g) and the sum
// over tokens of the same-token Jacobian blocks (into s.dgSum). V is Chat (the
// Onsager term), ve the channel's variance V + eps I and vinv its inverse.
func (s *smiState) sampleChannel(w *smiWorker, mu int, V, ve, vinv []float64, first bool) {
	M, P := s.M, s.P
	g := s.g[mu*P*M : (mu+1)*P*M]
	dg := s.dgSum[mu*P*P : (mu+1)*P*P]
	var err error
	if s.sampled() {
		err = s.sampleMoments(w, mu)
	} else {
		s.sampleOmega(w.omega, mu, V, first)
		err = w.post.Moments(w.mom, s.data.U[mu*M:(mu+1)*M], w.omega, ve)
	}
	if err == nil {
		err = smiChannelOut(g, dg, w.mom, vinv, P, M, w.cov, w.tmp)
	}
	if err != nil {
		for i := range g {
			g[i] = 0
		}
		for i := range dg {
			dg[i] = 0
		}
		s.failed[mu], s.inexact[mu] = true, false
		return
	}
	s.failed[mu], s.inexact[mu] = false, !w.mom.Exact
}

// sampleMoments takes sample mu's posterior moments from the two halves of sampleAll's batch
// into w.mom: the halves' mean (m_a + m_b)/2 and a second moment whose covariance is
// Second - (m_a m_b^T + m_b m_a^T)/2, free of the upward bias of m m^T by the noise of m.
func (s *smiState) sampleMoments(w *smiWorker, mu int) error {
	for h, m := range w.half {
		if err := s.batch.Moments(m, 2*mu+h, s.o.Draws/2); err != nil {
			return err
		}
	}
	a, b := w.half[0], w.half[1]
	pm := len(a.Mean)
	for i := 0; i < pm; i++ {
		w.mom.Mean[i] = (a.Mean[i] + b.Mean[i]) / 2
	}
	for i := 0; i < pm; i++ {
		for j := 0; j < pm; j++ {
			cross := (a.Mean[i]*b.Mean[j] + b.Mean[i]*a.Mean[j]) / 2
			w.mom.Second[i*pm+j] = (a.Second[i*pm+j]+b.Second[i*pm+j])/2 - cross + w.mom.Mean[i]*w.mom.Mean[j]
		}
	}
	w.mom.Exact = a.Exact && b.Exact
	return nil
}

// smiChannelOut turns the posterior moments of one sample into the GAMP channel outputs:
// g_{.l} = V^{-1} E[z_{.l} - omega_{.l}] (g is P x M row-major) and
// dgSum = sum_l (V^{-1} Cov(z_{.l}) V^{-1} - V^{-1}), Cov the P x P same-token block of the
// posterior covariance. cov and tmp are P x P work space. It fails on a non-finite output.
func smiChannelOut(g, dgSum []float64, m *smi.DeepMoments, vinv []float64, P, M int, cov, tmp []float64) error {
	pm := P * M
	for i := range dgSum {
		dgSum[i] = 0
	}
	for l := 0; l < M; l++ {
		for k := 0; k < P; k++ {
			var v float64
			for j := 0; j < P; j++ {
				v += vinv[k*P+j] * m.Mean[j*M+l]
			}
			g[k*M+l] = v
		}
		for a := 0; a < P; a++ {
			ia := a*M + l
			for b := 0; b < P; b++ {
				ib := b*M + l
				cov[a*P+b] = m.Second[ia*pm+ib] - m.Mean[ia]*m.Mean[ib]
			}
		}
		// tmp = Cov V^{-1}; dg_l = V^{-1} tmp - V^{-1}.
		for a := 0; a < P; a++ {
			for b := 0; b < P; b++ {
				var v float64
				for j := 0; j < P; j++ {
					v += cov[a*P+j] * vinv[j*P+b]
				}
				tmp[a*P+b] = v
			}
		}
		for a := 0; a < P; a++ {
			for b := 0; b < P; b++ {
				var v float64
				for j := 0; j < P; j++ {
					v += vinv[a*P+j] * tmp[j*P+b]
				}
				dgSum[a*P+b] += v - vinv[a*P+b]
			}
		}
	}
	if !allFinite(g) || !allFinite(dgSum) {
		return errors.New("amp: SMI channel output is not finite")
	}
	return nil
}

// record computes the overlaps and the test error after iteration it.
func (s *smiState) record(it int, step float64) (Iteration, error) {
	D, M, P := s.D, s.M, s.P
	rec := Iteration{Iter: it, Step: step, EGen: math.NaN()}
	rec.Q, rec.M, rec.Cos = s.data.Overlaps(s.what)
	if s.nTest > 0 {
		if err := s.parallel(s.nTest, func(w *smiWorker, mu int) {
			smi.Project(w.z, s.what, s.xt[mu*M*D:(mu+1)*M*D], P, M, D)
			w.ch.Forward(w.u, w.z, nil, w.s)
			w.ch.OutputU(w.y, w.u)
			yt := s.yt[mu*M*M : (mu+1)*M*M]
			var e float64
			for i, v := range w.y {
				d := v - yt[i]
				e += d * d
			}
			s.et[mu] = e
		}); err != nil {
			return rec, err
		}
		var e float64
		for _, v := range s.et {
			e += v
		}
		rec.EGen = e / float64(s.nTest)
	}
	return rec, nil
}

func dotF(a, b []float64) float64 {
	var s float64
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

func allFinite(a []float64) bool {
	for _, v := range a {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// invertGeneral writes the inverse of the n x n matrix a into dst (gonum's LU inverse); it
// reports false when a is singular or ill-conditioned (gonum's condition-number check) or the
// result is not finite.
func invertGeneral(dst, a []float64, n int) bool {
	var inv mat.Dense
	if err := inv.Inverse(mat.NewDense(n, n, append([]float64(nil), a[:n*n]...))); err != nil {
		return false
	}
	copy(dst, inv.RawMatrix().Data)
	return allFinite(dst[:n*n])
}
