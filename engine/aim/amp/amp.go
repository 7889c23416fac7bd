// Package amp runs GAMP-RIE, the approximate message passing algorithm of Bayes-optimal
// learning in the attention-indexed model (docs/theory/aim.md section 3), on a device, and
// with Options.ERM the same iteration for empirical risk minimisation with weight decay in the
// quadratic network and the softmax AIM (section 4.1). Every step is
// written with the device's contractions, so memory is O(N T D + D^2) and the cost per
// iteration is O(N T D^2 + D^3): the forward product X S-hat X^T is Gemm then TokenDots, the
// back-projection sum_mu X_mu^T C_mu X_mu is TokenMix then Gemm, and the RIE denoiser is
// EighSym, the spectral map of package rie on the host, and SpectralCompose.
package amp

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/fixedpoint"
	"github.com/aimtheory/aim/engine/stream"
)

// ErrDiverged is wrapped by the error Run returns when the iteration produces NaN or blows up.
var ErrDiverged = errors.New("GAMP-RIE diverged")

// Options control one GAMP-RIE run.
type Options struct {
	MaxIter int     // iteration cap (the paper: 100 for softmax, 500 for hardmax)
	Damping float64 // theta: omega <- (1 - theta) Omega + theta omega, and the same for V
	// Adaptive makes Damping the starting damping: when six steps at one damping made no
	// progress, the smallest of the last three not 1% below the smallest of the three before
	// (a cycle: the undamped iteration can settle into one of period two or three), theta
	// moves halfway to 1, at most to MaxAdaptiveDamping. It is never lowered. For the hardmax
	// channel, whose undamped iteration converges several times faster than the damped one
	// where it does not cycle.
	Adaptive bool
	// Tol stops the run when the estimated squared distance of S-hat to the fixed point,
	// ||S-hat - S-hat*||_F^2 / D, falls below it (fixedpoint.Steps: the step over (1 - r)^2,
	// r the contraction rate of the last steps).
	Tol    float64
	BlowUp float64 // divergence when ||S-hat - S||_F^2 / D exceeds it
	// PaperInit starts as the authors' code does: S-hat a random draw from the prior (W0 from
	// the seed's stream at stream.Init), c-hat = 10, omega = 10, V = 10. The default
	// starts where state evolution does: S-hat = E S = sqrt(rho) I, c-hat = 1 (its error; for
	// another teacher (aim.Teacher) its mean times I and Q0 - mean^2),
	// and no Onsager term in the first step.
	PaperInit bool
	// Precision is the arithmetic of the two large contractions of each iteration (the
	// forward product X S-hat and the back-projection sum_mu X_mu^T (C_mu X_mu)); see
	// device.Precision. At FP64, the zero value, they are Gemm (and QuadFormSum where the
	// device has it); at another precision the device's GemmPrecision, the back-projection as
	// TokenMix then GemmPrecision. TokenDots, the channel, the eigendecomposition and the RIE
	// map stay float64.
	Precision device.Precision
	// ERM runs GAMP for empirical risk minimisation instead of Bayes-optimal GAMP-RIE (linear
	// and softmax channels): on the linear channel the estimator is the minimiser of
	// (1/D) sum_mu (h_mu(S) - y_mu)^2 + WeightDecay Tr S over PSD S, the one engine/aim/erm's
	// state evolution describes. The
	// channel step is the proximal map of the square loss, g = (y - omega)/(V + 1/2) in
	// z-coordinates (the linear channel's g_out with Delta = 1/2, the loss's curvature), the
	// prior precision A = 2 alpha/(V + 1/2) its derivative, and the denoiser the proximal map
	// of WeightDecay Tr S on PSD matrices, f(lambda) = max(lambda - WeightDecay/A, 0) on the
	// eigenvalues of R, with c-hat = Delta (1/D^2) [sum_{i != j} (f_i - f_j)/(lambda_i -
	// lambda_j) + 2 sum_i f'_i] (Delta = 1/(2A), the divergence of the spectral map). At a fixed
	// point g = 2 (y - h(S-hat)) and S-hat satisfies the optimality conditions of the problem
	// exactly, at every D (docs/theory/aim.md 4.1).
	//
	// On the softmax channel the loss is the one `aim gd` trains, (1/D) sum_mu sum_ab
	// (softmax_row(beta h_mu)_ab - y_mu,ab)^2, and the channel step its proximal map per sample
	// (channel.SquareLoss.Prox, Newton's method on the host in unit coordinates u = z/sqrt(2),
	// variance V/2): g = (P - omega_u)/(V/2)/sqrt(2) in z-coordinates and
	// A = (2 alpha/N) sum_mu (M - tr dP/domega_mu)/V, which is 2 alpha/(V + 1/2) for the linear
	// channel's loss. The softmax loss is not convex: the fixed point is a stationary point of
	// the problem.
	ERM bool
	// Spectrum asks for the D eigenvalues of the final S-hat (Result.Eigenvalues): the
	// denoiser's output f(lambda_i) of the last iteration, which the lead holds on the host.
	Spectrum bool
	// WeightDecay is lambda > 0 of ERM. (At lambda = 0 the interpolating minimisers are not
	// unique and the iteration has no fixed point there; the limit lambda -> 0+ is computed by
	// the state evolution.)
	WeightDecay float64
	// Progress, when set, is called after every iteration.
	Progress func(it Iteration)

	// hostProx runs the linear channel's ERM step through the host's proximal map, as the
	// softmax's does (a test of the one against the other's closed form).
	hostProx bool
}

// squareLoss is the linear channel whose g_out is the proximal step of the square loss
// (1/D)(h - y)^2 of ERM in z-coordinates: (y - omega)/(V + 1/2).
var squareLoss = channel.Spec{Kind: channel.KindLinear, T: 1, Noise: 0.5}

// DefaultOptions returns the paper's settings: 100 iterations, a fixed damping 0.5, tolerance
// 1e-5 (here on the estimated distance to the fixed point, in the paper on the last step), and a
// blow-up threshold of 1e6.
func DefaultOptions() Options {
	return Options{MaxIter: 100, Damping: 0.5, Tol: 1e-5, BlowUp: 1e6}
}

// ChannelOptions returns the default options for the channel ch: DefaultOptions for softmax;
// for hardmax the paper's cap of 500 iterations and an undamped start with Adaptive damping.
// The damped hardmax iteration contracts slowly (at alpha-bar = 4, T = 2, D = 150 its error is
// within 1e-4 of its limit after 130 iterations, the undamped one's after 16; at alpha-bar = 8,
// D = 200, 11 undamped and more than 200 damped), and the undamped one can settle into a cycle
// of period two or three at small D, which Adaptive damps. The softmax channel keeps the fixed 0.5: undamped it oscillates, and more damping
// leaves it far from the fixed point.
func ChannelOptions(ch channel.Spec) Options {
	o := DefaultOptions()
	if ch.Kind == channel.KindHardmax {
		o.MaxIter, o.Damping, o.Adaptive = 500, 0, true
	}
	return o
}

// Iteration records one GAMP-RIE iteration.
type Iteration struct {
	Iter  int     // 1, 2, ...
	Error float64 // ||S-hat - S||_F^2 / D after the iteration
	Step  float64 // ||S-hat_new - S-hat_old||_F^2 / D
	// Distance is the estimated ||S-hat_old - S-hat*||_F^2 / D to the fixed point S-hat*
	// (fixedpoint.Steps; +Inf until the rate is known), an upper estimate for S-hat_new.
	Distance float64
	Damping  float64 // theta of this iteration (Options.Adaptive raises it)
	Delta    float64 // the denoiser's noise variance 1/q-hat
	Seconds  float64 // wall time since the run started
}

// Result is the outcome of one run.
type Result struct {
	Error      float64 // final ||S-hat - S||_F^2 / D
	Iterations int
	Distance   float64 // the last iteration's estimated distance to the fixed point
	Converged  bool    // Distance fell below Tol before MaxIter
	Seconds    float64
	Trace      []Iteration
	// Eigenvalues, with Options.Spectrum, are the eigenvalues of the final S-hat, ascending.
	Eigenvalues []float64
}

// Bytes returns the device memory a run needs on a device that holds n samples (all N on one
// device; a shard on a group's lead) beside the data: the n x T x D scratch of the
// contractions, four n x T x T arrays (Omega, omega, g_out, C), five D x D matrices (S-hat, its
// update, R, B, the eigenvectors), the spectra, and W0 (D x R) for the start. The other members
// of a group hold less: no update, R, eigenvectors, spectra or W0.
func Bytes(p aim.Params, n int) uint64 {
	D, N, T, R := uint64(p.D), uint64(n), uint64(p.T()), uint64(p.R())
	return 8 * (N*T*D + 4*N*T*T + 5*D*D + 2*D + 2*T*T + D*R)
}

// StreamedBytes returns the device memory a run on streamed tokens (chunks of chunk samples)
// needs on a device that holds n samples beside its data: as Bytes, with the scratch of one
// chunk (chunk T D) and the buffer of the chunks' tokens (aim.ChunkTokens) in place of the
// n x T x D scratch, and one more D x D matrix (a chunk's back-projection).
func StreamedBytes(p aim.Params, n, chunk int) uint64 {
	D, N, T, R, C := uint64(p.D), uint64(n), uint64(p.T()), uint64(p.R()), uint64(min(chunk, n))
	return 8 * (C*T*D + uint64(aim.ChunkTokens(p, n, chunk)) + 4*N*T*T + 6*D*D + 2*D + 2*T*T + D*R)
}

// Scratch returns the memory dev keeps between calls (device.Device.Scratch) through a run at
// o.Precision on a device that holds n samples and computes its products rows samples at a
// time (n on stored tokens, a chunk on streamed ones): aim.Work, and EighSym and
// SpectralCompose at order D every iteration. A memory plan adds it to Bytes or StreamedBytes.
func Scratch(dev device.Device, p aim.Params, o Options, n, rows int) uint64 {
	w := aim.Work(dev, o.Precision, p, n, rows)
	w.Eigh, w.Compose = p.D, p.D
	return dev.Scratch(w)
}

// member holds one device's part of a run: its shard of the data and its buffers.
type member struct {
	dev                            device.Device
	data                           *aim.Data
	scratch, omegaNew, omega, g, c device.Buffer // per sample (n x T x D, n x T x T)
	sHat, back, tau, kappa         device.Buffer // S-hat (the lead's copy), its part of B, the patterns
	xc, backChunk                  device.Buffer // streamed: a chunk's tokens and back-projection
	sumSq, sumJ, trC               float64       // the shard's sum g^2, sum (M - tr dP/domega) (ERM on the host) and Tr C this iteration
}

// Run runs GAMP-RIE on the data on one device: RunGroup on the group of dev alone.
func Run(dev device.Device, data *aim.Data, o Options) (Result, error) {
	return RunGroup(device.Single(dev), []*aim.Data{data}, o)
}

// RunGroup runs GAMP-RIE (docs/theory/aim.md section 3, z-coordinates) on data sharded over a device
// group (aim.GenerateGroup: parts[j] on member j):
//
//	init  S-hat = sqrt(rho) I, c-hat = 1, g = 0 (the teacher's mean and variance for another
//	      teacher than MP(rho); or, with PaperInit, the authors' start:
//	      S-hat = W0 W0^T / sqrt(R D), c-hat = 10, omega = 10, V = 10, g = g_out(y, omega, V))
//	loop  V_new = 2 c-hat   (on streamed data, the tokens are regenerated chunk by chunk once per
//	      iteration: forward product, channel and back-projection run chunk by chunk)
//	      Omega = tau o (X S-hat X^T - Tr S-hat I)/sqrt(D) - V_new g        (Onsager term)
//	      V = (1 - theta) V_new + theta V,  omega = (1 - theta) Omega + theta omega
//	      g = g_out(y, omega, V),  A = (2 alpha / N) sum_mu sum_{a<=b} g^2    (= q-hat / 2)
//	      B = (1/sqrt(D)) sum_mu (X_mu^T C_mu X_mu - Tr C_mu I),  C_aa = g_aa, C_ab = g_ab / sqrt(2)
//	      R = S-hat + B / (A D),  Delta = 1 / (2 A)
//	      S-hat_new = O diag(f(lambda)) O^T for R = O diag(lambda) O^T, f the RIE map of
//	      MP(rho) + SC(Delta);  c-hat = mmse_S(Delta; rho)
//	      stop when the estimated ||S-hat - S-hat*||^2 / D < Tol (fixedpoint.Steps).
//
// Each member runs the per-sample lines on its shard; the shards' sums of g^2 and Tr C are
// added in member order on the host and their parts of B through the group's Collective
// (g.Sum.Reduce); the lead runs the denoiser and broadcasts S-hat_new. With HostSum, a group
// whose members each hold one chunk (stored tokens) gives exactly the trajectory of one device
// streaming chunks of those shards' sizes. It returns ErrDiverged (wrapped) when a quantity
// becomes NaN or the error exceeds BlowUp.
func RunGroup(g *device.Group, parts []*aim.Data, o Options) (Result, error) {
	if o.MaxIter < 1 || !(o.Damping >= 0 && o.Damping < 1) || !(o.Tol > 0) || !(o.BlowUp > 0) {
		return Result{}, fmt.Errorf("amp: options out of range: %+v", o)
	}
	if len(parts) != g.Len() {
		return Result{}, fmt.Errorf("amp: %d parts of the data for a group of %d devices", len(parts), g.Len())
	}
	gOut := parts[0].P.Channel // the channel g_out is computed with
	var prox *proxStep         // ERM's channel step on the host (softmax)
	if o.ERM {
		if !(o.WeightDecay > 0) || math.IsInf(o.WeightDecay, 0) {
			return Result{}, fmt.Errorf("amp: ERM needs a weight decay 0 < lambda < inf, got %g (the limit lambda -> 0+ is the state evolution's: engine/aim/erm)", o.WeightDecay)
		}
		switch {
		case gOut.Kind == channel.KindSoftmax || gOut.Kind == channel.KindLinear && o.hostProx:
			prox = &proxStep{T: gOut.T, Beta: gOut.Beta}
		case gOut.Kind == channel.KindLinear:
			gOut = squareLoss
		default:
			return Result{}, fmt.Errorf("amp: ERM is implemented for the linear and softmax channels, not %v (the hardmax output has no useful loss)", gOut)
		}
	}
	for _, dev := range g.Members {
		if err := device.SupportsPrecision(dev, o.Precision); err != nil {
			return Result{}, fmt.Errorf("amp: %w", err)
		}
	}
	p := parts[0].P
	D, N, T, R := p.D, p.N(), p.T(), p.R()
	prior := p.Prior() // the RIE's prior: MP(rho), or the teacher's eigenvalues
	lead, ld := g.Lead(), parts[0]
	bufs, err := g.AllocEach(func(j int) []int {
		n := parts[j].Samples()
		chunk := n // samples whose tokens are in memory at once
		if parts[j].Chunk > 0 {
			chunk = parts[j].Chunk
		}
		sizes := []int{chunk * T * D, n * T * T, n * T * T, n * T * T, n * T * T, D * D, D * D, T * T, T * T}
		if parts[j].Chunk > 0 {
			sizes = append(sizes, parts[j].ChunkTokens(), D*D) // the chunks' tokens, a chunk's back-projection
		}
		if j == 0 {
			sizes = append(sizes, D*D, D*D, D*D, D, D, D*R) // the lead's denoiser and start
		}
		return sizes
	})
	if err != nil {
		return Result{}, fmt.Errorf("amp: %w", err)
	}
	defer g.FreeEach(bufs)
	ms := make([]*member, g.Len())
	for j, b := range bufs {
		m := &member{dev: g.Members[j], data: parts[j], scratch: b[0], omegaNew: b[1], omega: b[2], g: b[3], c: b[4],
			sHat: b[5], back: b[6], tau: b[7], kappa: b[8]}
		if parts[j].Chunk > 0 {
			m.xc, m.backChunk = b[9], b[10]
		}
		ms[j] = m
	}
	lb := bufs[0][len(bufs[0])-6:]
	sNew, rMat, vecs, vals, fvals, w0 := lb[0], lb[1], lb[2], lb[3], lb[4], lb[5]
	sHats, backs := make([]device.Buffer, g.Len()), make([]device.Buffer, g.Len())
	for j, m := range ms {
		sHats[j], backs[j] = m.sHat, m.back
	}
	view := device.MustView
	tauH, kappaH := make([]float64, T*T), make([]float64, T*T)
	for a := 0; a < T; a++ {
		for bb := 0; bb < T; bb++ {
			tauH[a*T+bb], kappaH[a*T+bb] = math.Sqrt2, 1/math.Sqrt2
			if a == bb {
				tauH[a*T+bb], kappaH[a*T+bb] = 1, 1
			}
		}
	}
	if err := g.Each(func(j int, dev device.Device) error {
		return device.Seq(
			func() error { return dev.Upload(ms[j].tau, tauH) },
			func() error { return dev.Upload(ms[j].kappa, kappaH) },
		)
	}); err != nil {
		return Result{}, fmt.Errorf("amp: %w", err)
	}
	var cHat, V float64
	if o.PaperInit {
		// S-hat: a random draw from the prior; c-hat = omega = V = 10.
		cHat, V = 10, 10
		if err := device.Seq(
			func() error { return lead.GaussianFill(w0, p.Seed, stream.Init, 1) },
			func() error {
				return lead.Gemm(false, true, D, D, R, 1/math.Sqrt(float64(R)*float64(D)), w0, w0, 0, ms[0].sHat)
			},
			func() error { return g.Sum.Broadcast(g.Members, sHats) },
			func() error {
				return g.Each(func(j int, dev device.Device) error {
					n := parts[j].Samples()
					tens := make([]float64, n*T*T)
					for i := range tens {
						tens[i] = 10
					}
					if err := dev.Upload(ms[j].omega, tens); err != nil {
						return err
					}
					_, err := dev.ChannelGOut(gOut, ms[j].g, parts[j].Y, ms[j].omega, n, V)
					return err
				})
			},
		); err != nil {
			return Result{}, fmt.Errorf("amp: init: %w", err)
		}
	} else {
		// S-hat = E S = sqrt(rho) I with error c-hat = 1 (the known mean removed; in general the
		// teacher's mean and Q0 - mean^2); g = 0, so the
		// first step has no Onsager term, and damping starts from Omega itself.
		mean := prior.Mean()
		if err := g.Each(func(j int, dev device.Device) error { return dev.AddDiag(ms[j].sHat, 1, D, mean) }); err != nil {
			return Result{}, fmt.Errorf("amp: init: %w", err)
		}
		cHat = prior.Q0() - mean*mean
		V = 2 * cHat
	}
	first := !o.PaperInit
	var steps fixedpoint.Steps
	theta, since := o.Damping, 0 // the damping, and the iteration from which it holds
	sqrtD := math.Sqrt(float64(D))
	lambda, f := make([]float64, D), make([]float64, D)
	start := time.Now()
	res := Result{}
	diverged := func(it int, what string, v float64) (Result, error) {
		res.Seconds = time.Since(start).Seconds()
		return res, fmt.Errorf("%w at iteration %d: %s = %g", ErrDiverged, it, what, v)
	}
	for it := 1; it <= o.MaxIter; it++ {
		vNew := 2 * cHat
		damp := !first
		vOld := V
		if first {
			V, first = vNew, false // nothing to damp against yet
		} else {
			V = (1-theta)*vNew + theta*V
		}
		trS, err := lead.SumDiag(ms[0].sHat, 1, D)
		if err != nil {
			return res, fmt.Errorf("amp: %w", err)
		}
		// One pass over each member's samples, chunk by chunk of tokens (one chunk when they
		// are stored, so that streamed tokens are regenerated once per iteration):
		//   Omega = tau o (X S-hat X^T - Tr S-hat I)/sqrt(D) - V_new g   (the old g: Onsager)
		//   omega <- (1 - theta) Omega + theta omega,  g = g_out(y, omega, V),  C = kappa o g,
		//   B += X^T C X / sqrt(D),
		// with sum g^2 and Tr C summed over the chunks in order.
		err = g.Each(func(j int, dev device.Device) error {
			m := ms[j]
			m.sumSq, m.sumJ, m.trC = 0, 0, 0
			return m.data.EachChunkSum(dev, m.xc, m.back, m.backChunk, func(lo, n int, x, out device.Buffer) error {
				om, omc := view(m.omegaNew, lo*T*T, n*T*T), view(m.omega, lo*T*T, n*T*T)
				gc, cc, yc := view(m.g, lo*T*T, n*T*T), view(m.c, lo*T*T, n*T*T), view(m.data.Y, lo*T*T, n*T*T)
				sc := view(m.scratch, 0, n*T*D)
				return device.Seq(
					func() error { return aim.IndicesAt(dev, o.Precision, om, sc, x, m.sHat, trS, n, T, D) },
					func() error { return dev.MulPattern(om, m.tau, n, T*T) },
					func() error { return dev.Axpby(om, -vNew, gc, 1) },
					func() error {
						if damp {
							return dev.Axpby(omc, 1-theta, om, theta)
						}
						return dev.Copy(omc, om)
					},
					func() error {
						if prox != nil {
							sq, sj, err := prox.run(dev, gc, yc, omc, n, V)
							m.sumSq += sq
							m.sumJ += sj
							return err
						}
						sq, err := dev.ChannelGOut(gOut, gc, yc, omc, n, V)
						m.sumSq += sq
						return err
					},
					func() error { return dev.Copy(cc, gc) },
					func() error { return dev.MulPattern(cc, m.kappa, n, T*T) },
					func() error { tr, err := dev.SumDiag(cc, n, T); m.trC += tr; return err },
					func() error { return aim.BackProject(dev, o.Precision, out, cc, x, sc, n, T, D, 1/sqrtD) },
				)
			})
		})
		if err == nil {
			err = g.Sum.Reduce(g.Members, backs)
		}
		if err != nil {
			return res, fmt.Errorf("amp: iteration %d: forward, channel and back-projection: %w", it, err)
		}
		var sumSq, sumJ, trC float64
		for _, m := range ms {
			sumSq += m.sumSq
			sumJ += m.sumJ
			trC += m.trC
		}
		A := 2 * p.Alpha / float64(N) * sumSq
		switch {
		case prox != nil:
			A = 2 * p.Alpha / float64(N) * sumJ / V
		case o.ERM:
			A = 2 * p.Alpha / (V + squareLoss.Noise)
		}
		if !(A > 0) || math.IsInf(A, 0) {
			return diverged(it, "q-hat/2", A)
		}
		delta := 1 / (2 * A)
		// B = (1/sqrt(D)) (sum_mu X_mu^T C_mu X_mu - sum_mu Tr C_mu I); R = S-hat + B/(A D).
		sHat, back := ms[0].sHat, ms[0].back
		if err := device.Seq(
			func() error { return lead.AddDiag(back, 1, D, -trC/sqrtD) },
			func() error { return lead.Copy(rMat, sHat) },
			func() error { return lead.Axpby(rMat, 1/(A*float64(D)), back, 1) },
		); err != nil {
			return res, fmt.Errorf("amp: iteration %d: back-projection: %w", it, err)
		}
		// The denoiser, on the lead: the RIE, or ERM's proximal map.
		if err := device.Seq(
			func() error { return lead.EighSym(vals, vecs, rMat, D) },
			func() error { return lead.Download(lambda, vals) },
		); err != nil {
			return res, fmt.Errorf("amp: iteration %d: eigendecomposition: %w", it, err)
		}
		if o.ERM {
			cHat = delta * proxNuclear(f, lambda, o.WeightDecay/A)
		} else {
			spec, err := prior.Noisy(delta)
			if err != nil {
				return diverged(it, "Delta", delta)
			}
			for i, l := range lambda {
				f[i] = spec.Denoise(l)
			}
			cHat = spec.MMSE()
		}
		if err := device.Seq(
			func() error { return lead.Upload(fvals, f) },
			func() error { return lead.SpectralCompose(sNew, vecs, fvals, D) },
		); err != nil {
			return res, fmt.Errorf("amp: iteration %d: denoiser: %w", it, err)
		}
		moved, err1 := lead.SqDist(sNew, sHat)
		errS, err2 := lead.SqDist(sNew, ld.S)
		if err := errors.Join(err1, err2); err != nil {
			return res, fmt.Errorf("amp: iteration %d: %w", it, err)
		}
		if o.Spectrum {
			res.Eigenvalues = append(res.Eigenvalues[:0], f...)
			slices.Sort(res.Eigenvalues)
		}
		ms[0].sHat, sNew = sNew, sHat
		sHats[0] = ms[0].sHat
		if err := g.Sum.Broadcast(g.Members, sHats); err != nil {
			return res, fmt.Errorf("amp: iteration %d: S-hat to the group: %w", it, err)
		}
		rec := Iteration{Iter: it, Error: errS / float64(D), Step: moved / float64(D), Damping: theta, Delta: delta, Seconds: time.Since(start).Seconds()}
		rec.Distance, _ = steps.Add(rec.Step)
		res.Trace = append(res.Trace, rec)
		if o.Adaptive && theta < MaxAdaptiveDamping && stalled(res.Trace[since:]) {
			theta, since = math.Min((1+theta)/2, MaxAdaptiveDamping), len(res.Trace)
			steps.Reset() // the rate changes with the damping
		}
		res.Error, res.Iterations, res.Distance = rec.Error, it, rec.Distance
		if o.Progress != nil {
			o.Progress(rec)
		}
		if math.IsNaN(rec.Error) || math.IsNaN(rec.Step) || rec.Error > o.BlowUp {
			return diverged(it, "||S-hat - S||^2/D", rec.Error)
		}
		// ERM's soft threshold can hold S-hat exactly still (at 0, say) while V still moves, so
		// there the variance must have settled too.
		if rec.Distance < o.Tol && (!o.ERM || math.Abs(V-vOld) <= 1e-6*math.Abs(V)) {
			res.Converged = true
			break
		}
	}
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// MaxAdaptiveDamping is the largest damping Options.Adaptive raises to; a run that starts above
// it keeps its damping.
const MaxAdaptiveDamping = 0.75

// stalled says whether the last six iterations of trace made no progress: the smallest of the
// last three steps is not 1% below the smallest of the three before (Options.Adaptive).
func stalled(trace []Iteration) bool {
	n := len(trace)
	if n < 6 {
		return false
	}
	least := func(it []Iteration) float64 {
		return math.Min(it[0].Step, math.Min(it[1].Step, it[2].Step))
	}
	return !(least(trace[n-3:]) < 0.99*least(trace[n-6:n-3]))
}

// proxNuclear writes f_i = max(lambda_i - tau, 0), the proximal map of tau Tr S on PSD matrices
// applied to the eigenvalues lambda of R, and returns the divergence of the spectral map per D^2,
// (1/D^2) [sum_{i != j} (f_i - f_j)/(lambda_i - lambda_j) + 2 sum_i f'(lambda_i)] (the GOE
// weights: 2 on the diagonal), with the pairs of equal eigenvalues counted at the derivative.
// The eigenvalues are ascending, so the pairs above the threshold each count 1 and the pairs
// below it 0: only the pairs across it are summed.
func proxNuclear(f, lambda []float64, tau float64) float64 {
	D := len(lambda)
	k := D // the first index above the threshold
	for i, l := range lambda {
		f[i] = math.Max(l-tau, 0)
		if f[i] > 0 && k == D {
			k = i
		}
	}
	up := float64(D - k)
	div := up*(up-1) + 2*up
	for i := k; i < D; i++ {
		for j := 0; j < k; j++ {
			if d := lambda[i] - lambda[j]; d > 0 {
				div += 2 * f[i] / d
			}
		}
	}
	return div / float64(D*D)
}
