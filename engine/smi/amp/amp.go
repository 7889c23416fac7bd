// Package amp runs GAMP for the sequence multi-index model of deep tied attention
// (docs/theory/smi.md 3): the P x D estimate of W* with its P x P posterior covariance, the channel's
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
)

// ErrDiverged is wrapped by the error Run returns when the iteration produces NaN or blows up.
var ErrDiverged = errors.New("SMI GAMP diverged")

// GAMP for the sequence multi-index model with deep tied rank-1 attention output
// (docs/theory/smi.md 3, "Algorithm 1" of Troiani et al. 2025), on the host CPU with plain slices.
// Shapes: What is P x D (row k = layer k's weight estimate), Chat P x P, and per sample mu the
// channel quantities omega_mu, g_mu are P x M row-major (entry (k, l) = layer k, token l at
// k M + l, as smi.Deep). The per-sample channel work (the posterior quadrature of
// smi.DeepPosterior) runs on Workers goroutines, each sample writing its own slot; every
// reduction over samples is summed in sample order, so the results do not depend on Workers.

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

// Run runs GAMP on the SMI data (docs/theory/smi.md 3, Algorithm 1):
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
