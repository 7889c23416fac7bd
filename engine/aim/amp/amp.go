// Package amp runs GAMP-RIE, the approximate message passing algorithm of Bayes-optimal
// learning in the attention-indexed model (docs/AIM.md section 3), on a device. Every step is
// written with the device's contractions, so memory is O(N T D + D^2) and the cost per
// iteration is O(N T D^2 + D^3): the forward product X S-hat X^T is Gemm then TokenDots, the
// back-projection sum_mu X_mu^T C_mu X_mu is TokenMix then Gemm, and the RIE denoiser is
// EighSym, the spectral map of package rie on the host, and SpectralCompose.
package amp

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/rie"
	"github.com/aimtheory/aim/engine/stream"
)

// ErrDiverged is wrapped by the error Run returns when the iteration produces NaN or blows up.
var ErrDiverged = errors.New("GAMP-RIE diverged")

// Options control one GAMP-RIE run.
type Options struct {
	MaxIter int     // iteration cap (the paper: 100 for softmax, 500 for hardmax)
	Damping float64 // theta: omega <- (1 - theta) Omega + theta omega, and the same for V
	Tol     float64 // stop when ||S-hat_new - S-hat||_F^2 / D < Tol
	BlowUp  float64 // divergence when ||S-hat - S||_F^2 / D exceeds it
	// PaperInit starts as the authors' code does: S-hat a random draw from the prior (W0 from
	// the seed's stream at stream.Init), c-hat = 10, omega = 10, V = 10. The default
	// starts where state evolution does: S-hat = E S = sqrt(rho) I, c-hat = 1 (its error),
	// and no Onsager term in the first step.
	PaperInit bool
	// Progress, when set, is called after every iteration.
	Progress func(it Iteration)
}

// DefaultOptions returns the paper's settings: 100 iterations, damping 0.5, tolerance 1e-5, and
// a blow-up threshold of 1e6.
func DefaultOptions() Options {
	return Options{MaxIter: 100, Damping: 0.5, Tol: 1e-5, BlowUp: 1e6}
}

// Iteration records one GAMP-RIE iteration.
type Iteration struct {
	Iter    int     // 1, 2, ...
	Error   float64 // ||S-hat - S||_F^2 / D after the iteration
	Step    float64 // ||S-hat_new - S-hat_old||_F^2 / D
	Delta   float64 // the denoiser's noise variance 1/q-hat
	Seconds float64 // wall time since the run started
}

// Result is the outcome of one run.
type Result struct {
	Error      float64 // final ||S-hat - S||_F^2 / D
	Iterations int
	Converged  bool // the step fell below Tol before MaxIter
	Seconds    float64
	Trace      []Iteration
}

// Bytes returns the device memory a run needs beside the data: the N x T x D scratch of the
// contractions, four N x T x T arrays (Omega, omega, g_out, C), five D x D matrices (S-hat, its
// update, R, B, the eigenvectors), the spectra, and W0 (D x R) for the start.
func Bytes(p aim.Params) uint64 {
	D, N, T, R := uint64(p.D), uint64(p.N()), uint64(p.T()), uint64(p.R())
	return 8 * (N*T*D + 4*N*T*T + 5*D*D + 2*D + 2*T*T + D*R)
}

// StreamedBytes returns the device memory a run on streamed tokens (aim.GenerateStreamed with
// chunks of chunk samples) needs beside its data: as Bytes, with the scratch and the tokens of
// one chunk (2 chunk T D) in place of the N x T x D scratch, and one more D x D matrix (a
// chunk's back-projection).
func StreamedBytes(p aim.Params, chunk int) uint64 {
	D, N, T, R, C := uint64(p.D), uint64(p.N()), uint64(p.T()), uint64(p.R()), uint64(min(chunk, p.N()))
	return 8 * (2*C*T*D + 4*N*T*T + 6*D*D + 2*D + 2*T*T + D*R)
}

// Run runs GAMP-RIE on the data (docs/AIM.md section 3, z-coordinates):
//
//	init  S-hat = sqrt(rho) I, c-hat = 1, g = 0 (or, with PaperInit, the authors' start:
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
//	      stop when ||S-hat_new - S-hat||^2 / D < Tol.
//
// It returns ErrDiverged (wrapped) when a quantity becomes NaN or the error exceeds BlowUp.
func Run(dev device.Device, data *aim.Data, o Options) (Result, error) {
	p := data.P
	D, N, T, R := p.D, p.N(), p.T(), p.R()
	if o.MaxIter < 1 || !(o.Damping >= 0 && o.Damping < 1) || !(o.Tol > 0) || !(o.BlowUp > 0) {
		return Result{}, fmt.Errorf("amp: options out of range: %+v", o)
	}
	chunk := N // samples whose tokens are in memory at once
	if data.Chunk > 0 {
		chunk = data.Chunk
	}
	sizes := []int{chunk * T * D, N * T * T, N * T * T, N * T * T, N * T * T, D * D, D * D, D * D, D * D, D * D, D, D, T * T, T * T, D * R}
	if data.Chunk > 0 {
		sizes = append(sizes, chunk*T*D, D*D) // the chunk's tokens, a chunk's back-projection
	}
	b, err := device.AllocAll(dev, sizes...)
	if err != nil {
		return Result{}, fmt.Errorf("amp: %w", err)
	}
	defer device.FreeAll(dev, b...)
	scratch, omegaNew, omega, g, c := b[0], b[1], b[2], b[3], b[4]
	sHat, sNew, rMat, back, vecs := b[5], b[6], b[7], b[8], b[9]
	vals, fvals, tau, kappa, w0 := b[10], b[11], b[12], b[13], b[14]
	var xc, backChunk device.Buffer
	if data.Chunk > 0 {
		xc, backChunk = b[15], b[16]
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
	if err := device.Seq(
		func() error { return dev.Upload(tau, tauH) },
		func() error { return dev.Upload(kappa, kappaH) },
	); err != nil {
		return Result{}, fmt.Errorf("amp: %w", err)
	}
	var cHat, V float64
	if o.PaperInit {
		// S-hat: a random draw from the prior; c-hat = omega = V = 10.
		if err := device.Seq(
			func() error { return dev.GaussianFill(w0, p.Seed, stream.Init, 1) },
			func() error {
				return dev.Gemm(false, true, D, D, R, 1/math.Sqrt(float64(R)*float64(D)), w0, w0, 0, sHat)
			},
		); err != nil {
			return Result{}, fmt.Errorf("amp: init: %w", err)
		}
		tens := make([]float64, N*T*T)
		for i := range tens {
			tens[i] = 10
		}
		cHat, V = 10, 10
		if err := dev.Upload(omega, tens); err != nil {
			return Result{}, fmt.Errorf("amp: init: %w", err)
		}
		if _, err := dev.ChannelGOut(p.Channel, g, data.Y, omega, N, V); err != nil {
			return Result{}, fmt.Errorf("amp: init: %w", err)
		}
	} else {
		// S-hat = sqrt(rho) I with error c-hat = 1 (the known mean removed); g = 0, so the
		// first step has no Onsager term, and damping starts from Omega itself.
		if err := dev.AddDiag(sHat, 1, D, math.Sqrt(p.Rho)); err != nil {
			return Result{}, fmt.Errorf("amp: init: %w", err)
		}
		cHat, V = 1, 2
	}
	first := !o.PaperInit
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
		if first {
			V, first = vNew, false // nothing to damp against yet
		} else {
			V = (1-o.Damping)*vNew + o.Damping*V
		}
		trS, err := dev.SumDiag(sHat, 1, D)
		if err != nil {
			return res, fmt.Errorf("amp: %w", err)
		}
		// One pass over the samples, chunk by chunk of tokens (one chunk when they are stored,
		// so that streamed tokens are regenerated once per iteration):
		//   Omega = tau o (X S-hat X^T - Tr S-hat I)/sqrt(D) - V_new g   (the old g: Onsager)
		//   omega <- (1 - theta) Omega + theta omega,  g = g_out(y, omega, V),  C = kappa o g,
		//   B += X^T C X / sqrt(D),
		// with sum g^2 and Tr C summed over the chunks in order.
		var sumSq, trC float64
		err = data.EachChunk(dev, xc, func(lo, n int, x device.Buffer) error {
			om, omc := view(omegaNew, lo*T*T, n*T*T), view(omega, lo*T*T, n*T*T)
			gc, cc, yc := view(g, lo*T*T, n*T*T), view(c, lo*T*T, n*T*T), view(data.Y, lo*T*T, n*T*T)
			sc := view(scratch, 0, n*T*D)
			out := back
			if lo > 0 {
				out = backChunk
			}
			var sq, tr float64
			return device.Seq(
				func() error { return aim.Indices(dev, om, sc, x, sHat, trS, n, T, D) },
				func() error { return dev.MulPattern(om, tau, n, T*T) },
				func() error { return dev.Axpby(om, -vNew, gc, 1) },
				func() error {
					if damp {
						return dev.Axpby(omc, 1-o.Damping, om, o.Damping)
					}
					return dev.Copy(omc, om)
				},
				func() (err error) { sq, err = dev.ChannelGOut(p.Channel, gc, yc, omc, n, V); sumSq += sq; return err },
				func() error { return dev.Copy(cc, gc) },
				func() error { return dev.MulPattern(cc, kappa, n, T*T) },
				func() (err error) { tr, err = dev.SumDiag(cc, n, T); trC += tr; return err },
				func() error { return backProject(dev, out, cc, x, sc, n, T, D, 1/sqrtD) },
				func() error {
					if lo == 0 {
						return nil
					}
					return dev.Axpby(back, 1, backChunk, 1)
				},
			)
		})
		if err != nil {
			return res, fmt.Errorf("amp: iteration %d: forward, channel and back-projection: %w", it, err)
		}
		A := 2 * p.Alpha / float64(N) * sumSq
		if !(A > 0) || math.IsInf(A, 0) {
			return diverged(it, "q-hat/2", A)
		}
		delta := 1 / (2 * A)
		// B = (1/sqrt(D)) (sum_mu X_mu^T C_mu X_mu - sum_mu Tr C_mu I); R = S-hat + B/(A D).
		if err := device.Seq(
			func() error { return dev.AddDiag(back, 1, D, -trC/sqrtD) },
			func() error { return dev.Copy(rMat, sHat) },
			func() error { return dev.Axpby(rMat, 1/(A*float64(D)), back, 1) },
		); err != nil {
			return res, fmt.Errorf("amp: iteration %d: back-projection: %w", it, err)
		}
		// The RIE denoiser.
		spec, err := rie.New(p.Rho, delta)
		if err != nil {
			return diverged(it, "Delta", delta)
		}
		if err := device.Seq(
			func() error { return dev.EighSym(vals, vecs, rMat, D) },
			func() error { return dev.Download(lambda, vals) },
		); err != nil {
			return res, fmt.Errorf("amp: iteration %d: eigendecomposition: %w", it, err)
		}
		for i, l := range lambda {
			f[i] = spec.Denoise(l)
		}
		if err := device.Seq(
			func() error { return dev.Upload(fvals, f) },
			func() error { return dev.SpectralCompose(sNew, vecs, fvals, D) },
		); err != nil {
			return res, fmt.Errorf("amp: iteration %d: denoiser: %w", it, err)
		}
		cHat = spec.MMSE()
		moved, err1 := dev.SqDist(sNew, sHat)
		errS, err2 := dev.SqDist(sNew, data.S)
		if err := errors.Join(err1, err2); err != nil {
			return res, fmt.Errorf("amp: iteration %d: %w", it, err)
		}
		sHat, sNew = sNew, sHat
		rec := Iteration{Iter: it, Error: errS / float64(D), Step: moved / float64(D), Delta: delta, Seconds: time.Since(start).Seconds()}
		res.Trace = append(res.Trace, rec)
		res.Error, res.Iterations = rec.Error, it
		if o.Progress != nil {
			o.Progress(rec)
		}
		if math.IsNaN(rec.Error) || math.IsNaN(rec.Step) || rec.Error > o.BlowUp {
			return diverged(it, "||S-hat - S||^2/D", rec.Error)
		}
		if rec.Step < o.Tol {
			res.Converged = true
			break
		}
	}
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// backProject sets out = alpha sum_mu X_mu^T C_mu X_mu: through QuadFormSum where the device
// has it, else as TokenMix (scratch = C X) then Gemm (out = alpha X^T scratch).
func backProject(dev device.Device, out, c, x, scratch device.Buffer, n, t, d int, alpha float64) error {
	if q := dev.Capabilities().QuadFormSummer; q != nil {
		return q.QuadFormSum(out, c, x, scratch, n, t, d, alpha)
	}
	if err := dev.TokenMix(scratch, c, x, n, t, d); err != nil {
		return err
	}
	return dev.Gemm(true, false, d, d, n*t, alpha, x, scratch, 0, out)
}
