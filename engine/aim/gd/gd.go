// Package gd trains the gradient-descent students of the attention-indexed model on a device
// (docs/theory/aim.md section 4): W in R^{R x D}, S = W^T W / sqrt(R D), h = (X S X^T - Tr S I)/sqrt(D),
// y-hat = row-softmax(beta h) (or y-hat = h for the linear channel of the quadratic network,
// T = 1), full-batch loss sum_mu sum_ab (y-hat - y)^2 / D, Adam or plain
// gradient descent, and the average of the final S over independent initialisations.
//
// With weight decay lambda >= 0 (Options.WeightDecay) the objective is
//
//	L_lambda(W) = sum_mu sum_ab (y-hat_mu,ab - y_mu,ab)^2 / D + lambda Tr S,
//	Tr S = ||W||_F^2 / sqrt(R D),
//
// whose gradient is that of the data loss plus (2 lambda / sqrt(R D)) W. S is positive
// semi-definite, so Tr S is its nuclear norm: this is the empirical risk minimisation with
// nuclear-norm regularisation of S (Erba, Troiani, Zdeborova, Krzakala, arXiv 2505.17958;
// Boncoraglio et al., arXiv 2509.24914). The losses reported (Result.FinalLoss, Point.Loss)
// are the data loss alone; the penalty lambda Tr S is reported beside them (Result.Penalty).
package gd

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/stream"
)

// ErrDiverged is wrapped by the error Run returns when the loss or the weights become NaN.
var ErrDiverged = errors.New("gradient descent diverged")

// Options control the students.
type Options struct {
	Steps    int     // full-batch steps (1000 in the paper)
	LR       float64 // learning rate (0.1)
	Adam     bool    // Adam (torch's defaults below) instead of plain gradient descent
	Beta1    float64 // Adam's first-moment decay (0.9)
	Beta2    float64 // Adam's second-moment decay (0.999)
	Eps      float64 // Adam's epsilon (1e-8)
	R        int     // student width; 0 means the teacher's R
	Restarts int     // independent initialisations whose final S are averaged (1 = single GD)
	// Batch is the number of students trained at once, in lockstep (0, or more than Restarts:
	// all of them). A batch shares each step's pass over the tokens: each chunk of tokens
	// (streamed tokens regenerated once per step for the whole batch) serves every student in
	// turn, and the lead's W^T W and gradient products are one strided-batched product each
	// (device.Ops.GemmStridedBatched) and Adam one update for all. Every student computes what
	// it computes alone, so the result does not depend on the batch (bit for bit on the CPU);
	// the students' buffers grow with it (Bytes).
	Batch int
	// TraceEvery records loss and error of the first student every that many steps (0: none).
	TraceEvery int
	// Uncentred trains, for the linear channel, on the outputs x^T S x / sqrt(D) of student and
	// teacher rather than on the centred indices h: the residual of every sample gains
	// (Tr S - Tr S*)/sqrt(D), and the gradient loses the centring's -Tr(Gamma) I / sqrt(D).
	// This is the authors' GD of the quadratic network (docs/theory/aim.md 2.8).
	Uncentred bool
	// Precision is the arithmetic of the two large contractions of each step (the forward
	// product X S and the gradient's back-projection sum_mu X_mu^T (Gamma_mu X_mu)); see
	// device.Precision. At FP64, the zero value, they are Gemm; at another precision the
	// device's GemmPrecision. The R x D products of W, the loss, its gradient through the
	// softmax and Adam stay float64.
	Precision device.Precision
	// WeightDecay is lambda >= 0: the students minimise the data loss plus lambda Tr S =
	// lambda ||W||_F^2 / sqrt(R D), and the gradient gains (2 lambda / sqrt(R D)) W (package
	// doc). 0, the zero value, is the data loss alone, computed exactly as without the option.
	WeightDecay float64
	// Direct trains S itself, a symmetric D x D matrix, element by element, instead of W: the
	// gradient is the symmetric part of the data loss's, (G_S + G_S^T)/2, and the weight decay
	// is then lambda ||S||_F^2 (ridge regularisation, not the nuclear norm; docs/theory/aim.md
	// 4.1). The student starts from S = 0, so that without weight decay gradient descent
	// converges to the minimal Frobenius-norm fit (the limit lambda -> 0+ of ridge); one start
	// only (Restarts = 1).
	Direct bool
	// Spectrum asks for the D eigenvalues of the first student's final S (Result.Eigenvalues),
	// computed on the lead device with EighSym.
	Spectrum bool
	// Progress, when set, is called after every step of every student.
	Progress func()
}

// DefaultOptions returns the paper's settings: Adam, lr 0.1, 1000 steps, one student.
func DefaultOptions() Options {
	return Options{Steps: 1000, LR: 0.1, Adam: true, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Restarts: 1}
}

// Point is one traced step of the first student.
type Point struct {
	Step  int
	Loss  float64 // the data loss sum (y-hat - y)^2 / D, without the weight decay's lambda Tr S
	Error float64 // ||S - S*||_F^2 / D
}

// Result is the outcome of one training.
type Result struct {
	Error        float64   // ||S-bar - S*||_F^2 / D of the average over restarts
	SingleErrors []float64 // ||S_k - S*||_F^2 / D of each student
	FinalLoss    []float64 // each student's final data loss sum (y-hat - y)^2 / D (without lambda Tr S)
	Penalty      []float64 // each student's final lambda Tr S (0 when Options.WeightDecay is 0)
	// Eigenvalues, with Options.Spectrum, are the D eigenvalues of the first student's final S,
	// ascending.
	Eigenvalues []float64
	Seconds     float64
	Trace       []Point
}

// Bytes returns the device memory of one training beside the data on a device that holds n
// samples (all N on one device; a shard on a group's lead), for B = o.BatchSize() students
// at once: W, its gradient and Adam's moments (B R x D each), S and the gradient G_S (B D x D
// each) and the running average (D x D), the n x T x D scratch (shared by the students) and
// the 3 B n x T x T work arrays, and with o.Spectrum the eigenvectors and eigenvalues of S
// (D x D and D). The other members of a group hold no W, moments or average.
func Bytes(p aim.Params, o Options, n int) uint64 {
	D, N, T, B := uint64(p.D), uint64(n), uint64(p.T()), uint64(o.BatchSize())
	return 8*(4*B*studentRank(p, o)*D+(2*B+1)*D*D+N*T*D+3*B*N*T*T) + spectrumBytes(p, o) + directBytes(p, o)
}

// StreamedBytes returns the device memory of one training on streamed tokens (chunks of chunk
// samples) beside the data on a device that holds n samples: as Bytes, with the scratch of one
// chunk (chunk T D) and the buffer of the chunks' tokens (aim.ChunkTokens) in place of the
// n x T x D scratch, and B more D x D matrices (a chunk's parts of G_S).
func StreamedBytes(p aim.Params, o Options, n, chunk int) uint64 {
	D, N, T, C, B := uint64(p.D), uint64(n), uint64(p.T()), uint64(min(chunk, n)), uint64(o.BatchSize())
	xc := uint64(aim.ChunkTokens(p, n, chunk))
	return 8*(4*B*studentRank(p, o)*D+(3*B+1)*D*D+C*T*D+xc+3*B*N*T*T) + spectrumBytes(p, o) + directBytes(p, o)
}

// Scratch returns the memory dev keeps between calls (device.Device.Scratch) through a run at
// o.Precision on a device that holds n samples and computes its products rows samples at a
// time (n on stored tokens, a chunk on streamed ones): aim.Work with the per-sample
// reductions on rows samples (the loss is taken chunk by chunk), and EighSym at order D with
// o.Spectrum. A memory plan adds it to Bytes or StreamedBytes.
func Scratch(dev device.Device, p aim.Params, o Options, n, rows int) uint64 {
	w := aim.Work(dev, o.Precision, p, n, rows)
	w.Samples, w.Reduce = rows, max(p.D*p.D, rows*p.T()*p.T())
	if o.Spectrum {
		w.Eigh = p.D
	}
	return dev.Scratch(w)
}

// BatchSize is the number of students trained at once: Batch, or Restarts where Batch is 0
// or larger.
func (o Options) BatchSize() int {
	if o.Batch > 0 && o.Batch < o.Restarts {
		return o.Batch
	}
	return max(1, o.Restarts)
}

// directBytes is the D x D identity a direct student's symmetric gradient uses, 0 otherwise.
func directBytes(p aim.Params, o Options) uint64 {
	if !o.Direct {
		return 0
	}
	return 8 * uint64(p.D) * uint64(p.D)
}

// spectrumBytes is the memory of the eigendecomposition of S with o.Spectrum (D x D
// eigenvectors and D eigenvalues on the lead), 0 without.
func spectrumBytes(p aim.Params, o Options) uint64 {
	if !o.Spectrum {
		return 0
	}
	D := uint64(p.D)
	return 8 * (D*D + D)
}

// studentRank is the student's width R (o.R, or the teacher's rank when 0).
func studentRank(p aim.Params, o Options) uint64 {
	if o.Direct {
		return uint64(p.D)
	}
	if o.R > 0 {
		return uint64(o.R)
	}
	return uint64(p.R())
}

func (o Options) validate() error {
	switch {
	case o.Steps < 1:
		return fmt.Errorf("gd: steps = %d, need at least 1", o.Steps)
	case !(o.LR > 0) || math.IsInf(o.LR, 0):
		return fmt.Errorf("gd: learning rate %g, need > 0", o.LR)
	case o.Restarts < 1:
		return fmt.Errorf("gd: restarts = %d, need at least 1", o.Restarts)
	case o.Batch < 0:
		return fmt.Errorf("gd: batch = %d, need 0 (every restart at once) or more students", o.Batch)
	case o.R < 0:
		return fmt.Errorf("gd: student width R = %d, need >= 0", o.R)
	case o.Direct && o.Restarts != 1:
		return fmt.Errorf("gd: a direct student starts from S = 0, so %d restarts would repeat one training", o.Restarts)
	case o.Direct && o.R != 0:
		return fmt.Errorf("gd: a direct student has no width (R = %d given)", o.R)
	case !(o.WeightDecay >= 0) || math.IsInf(o.WeightDecay, 0):
		return fmt.Errorf("gd: weight decay lambda = %g, need 0 <= lambda < inf", o.WeightDecay)
	case !o.Precision.Valid():
		return fmt.Errorf("gd: precision %v", o.Precision)
	case o.Adam && !(o.Beta1 >= 0 && o.Beta1 < 1 && o.Beta2 >= 0 && o.Beta2 < 1 && o.Eps > 0):
		return fmt.Errorf("gd: Adam parameters beta1 = %g, beta2 = %g, eps = %g out of range", o.Beta1, o.Beta2, o.Eps)
	}
	return nil
}

// Run trains o.Restarts students on the data on one device: RunGroup on the group of dev alone.
func Run(dev device.Device, data *aim.Data, o Options) (Result, error) {
	return RunGroup(device.Single(dev), []*aim.Data{data}, o)
}

// RunGroup trains o.Restarts students on data sharded over a device group (aim.GenerateGroup:
// parts[j] on member j; softmax or linear teachers: the hardmax output has no useful gradient) and
// returns the error of the averaged S. Student k starts from W ~ N(0, 1), drawn from the data's
// seed at stream.Restart(k). The students train o.BatchSize() at a time, in lockstep. The lead
// holds W and the optimiser: it computes S and broadcasts it; each member computes the losses
// and its shard's part of G_S; the parts are summed through the group's Collective and the
// losses in member order, and the lead takes the step. When a student diverges, the error
// names it and the step, and the students of its batch stop there.
func RunGroup(g *device.Group, parts []*aim.Data, o Options) (Result, error) {
	if err := o.validate(); err != nil {
		return Result{}, err
	}
	if len(parts) != g.Len() {
		return Result{}, fmt.Errorf("gd: %d parts of the data for a group of %d devices", len(parts), g.Len())
	}
	p := parts[0].P
	if p.Channel.Kind == channel.KindHardmax {
		return Result{}, fmt.Errorf("gd: the %v channel has no useful gradient; students are softmax or linear", p.Channel)
	}
	if o.Uncentred && p.Channel.Kind != channel.KindLinear {
		return Result{}, fmt.Errorf("gd: uncentred outputs are the linear channel's (the quadratic network), not the %v channel's", p.Channel)
	}
	for _, m := range g.Members {
		if err := device.SupportsPrecision(m, o.Precision); err != nil {
			return Result{}, fmt.Errorf("gd: %w", err)
		}
	}
	trs := make([]device.Trainer, g.Len())
	for j, m := range g.Members {
		if trs[j] = m.Capabilities().Trainer; trs[j] == nil {
			return Result{}, fmt.Errorf("gd: device %s does not implement the training operations", m.Info().Name)
		}
	}
	R := o.R
	if R == 0 {
		R = p.R()
	}
	if o.Direct {
		R = p.D // the parameter is S itself, D x D
	}
	B := o.BatchSize()
	st, err := newStudent(g, trs, parts, R, B)
	if err != nil {
		return Result{}, err
	}
	defer st.free()
	st.prec, st.uncentred, st.decay, st.direct = o.Precision, o.Uncentred, o.WeightDecay, o.Direct
	if o.Direct {
		// The identity, for the transpose in the symmetric gradient (G_S + G_S^T)/2.
		if st.eye, err = st.g.Lead().Alloc(R * R); err == nil {
			err = device.Seq(
				func() error { return st.g.Lead().Upload(st.eye, make([]float64, R*R)) },
				func() error { return st.g.Lead().AddDiag(st.eye, 1, R, 1) },
			)
		}
		if err != nil {
			return Result{}, fmt.Errorf("gd: %w", err)
		}
		defer st.g.Lead().Free(st.eye)
	}
	dev, tr, data := g.Lead(), trs[0], parts[0]
	D, RD, DD := p.D, R*p.D, p.D*p.D
	var eig []device.Buffer // the eigenvalues and eigenvectors of S, with o.Spectrum
	if o.Spectrum {
		if eig, err = device.AllocAll(dev, D, D*D); err != nil {
			return Result{}, fmt.Errorf("gd: spectrum: %w", err)
		}
		defer device.FreeAll(dev, eig...)
	}
	zeros := make([]float64, B*RD)
	start := time.Now()
	res := Result{}
	diverged := func(format string, args ...any) (Result, error) {
		res.Seconds = time.Since(start).Seconds()
		return res, fmt.Errorf("%w: "+format, append([]any{ErrDiverged}, args...)...)
	}

	for k0 := 0; k0 < o.Restarts; k0 += B {
		nb := min(B, o.Restarts-k0) // students k0, ..., k0 + nb - 1
		st.nb = nb
		w, grad, m, v := view(st.w, 0, nb*RD), view(st.grad, 0, nb*RD), view(st.m, 0, nb*RD), view(st.v, 0, nb*RD)
		if err := device.Seq(
			func() error {
				if o.Direct {
					return dev.Upload(w, zeros[:nb*RD]) // S = 0
				}
				for q := 0; q < nb; q++ {
					if err := dev.GaussianFill(view(w, q*RD, RD), p.Seed, stream.Restart(k0+q), 1); err != nil {
						return err
					}
				}
				return nil
			},
			func() error { return dev.Upload(m, zeros[:nb*RD]) },
			func() error { return dev.Upload(v, zeros[:nb*RD]) },
		); err != nil {
			return res, fmt.Errorf("gd: students %d to %d: init: %w", k0, k0+nb-1, err)
		}
		var losses []float64
		for t := 1; t <= o.Steps; t++ {
			if losses, err = st.lossAndGrad(); err != nil {
				return res, fmt.Errorf("gd: students %d to %d, step %d: %w", k0, k0+nb-1, t, err)
			}
			for q, loss := range losses {
				if math.IsNaN(loss) || math.IsInf(loss, 0) {
					return diverged("student %d step %d: loss = %g", k0+q, t, loss)
				}
			}
			if k0 == 0 && o.TraceEvery > 0 && (t-1)%o.TraceEvery == 0 {
				e, err := dev.SqDist(view(st.s, 0, DD), data.S)
				if err != nil {
					return res, fmt.Errorf("gd: %w", err)
				}
				res.Trace = append(res.Trace, Point{Step: t - 1, Loss: losses[0], Error: e / float64(D)})
			}
			if o.Adam {
				err = tr.AdamStep(w, grad, m, v, o.LR, o.Beta1, o.Beta2, o.Eps, t)
			} else {
				err = dev.Axpby(w, -o.LR, grad, 1)
			}
			if err != nil {
				return res, fmt.Errorf("gd: students %d to %d, step %d: %w", k0, k0+nb-1, t, err)
			}
			for q := 0; q < nb; q++ {
				wq := view(w, q*RD, RD)
				if ww, err := dev.Dot(wq, wq); err != nil {
					return res, fmt.Errorf("gd: student %d step %d: %w", k0+q, t, err)
				} else if math.IsNaN(ww) || math.IsInf(ww, 0) {
					return diverged("student %d step %d: ||W||^2 = %g", k0+q, t, ww)
				}
			}
			if o.Progress != nil {
				for range nb {
					o.Progress()
				}
			}
		}
		// The final S and loss of each student of the batch.
		if losses, err = st.lossAndGrad(); err != nil {
			return res, fmt.Errorf("gd: students %d to %d: %w", k0, k0+nb-1, err)
		}
		for q := 0; q < nb; q++ {
			k, sq := k0+q, view(st.s, q*DD, DD)
			e, err := dev.SqDist(sq, data.S)
			if err != nil {
				return res, fmt.Errorf("gd: %w", err)
			}
			if math.IsNaN(e) {
				return diverged("student %d: final S is NaN", k)
			}
			res.SingleErrors = append(res.SingleErrors, e/float64(D))
			res.FinalLoss = append(res.FinalLoss, losses[q])
			res.Penalty = append(res.Penalty, st.penalty[q])
			if k == 0 && o.Spectrum {
				res.Eigenvalues = make([]float64, D)
				if err := device.Seq(
					func() error { return dev.EighSym(eig[0], eig[1], sq, D) },
					func() error { return dev.Download(res.Eigenvalues, eig[0]) },
				); err != nil {
					return res, fmt.Errorf("gd: spectrum of S: %w", err)
				}
			}
			if k == 0 && o.TraceEvery > 0 {
				res.Trace = append(res.Trace, Point{Step: o.Steps, Loss: losses[q], Error: e / float64(D)})
			}
			if err := dev.Axpby(st.sBar, 1/float64(o.Restarts), sq, 1); err != nil {
				return res, fmt.Errorf("gd: %w", err)
			}
		}
	}
	e, err := dev.SqDist(st.sBar, data.S)
	if err != nil {
		return res, fmt.Errorf("gd: %w", err)
	}
	res.Error = e / float64(D)
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// student holds a batch of students' buffers on a device group and computes their losses and
// gradients. The lead holds the W of each, their gradients, Adam's moments and the average of
// S; every member holds its copy of each S, its parts of G_S and the work arrays of its shard.
// The batch's student q has its R x D matrices at q R D of w, grad, m and v, its S and G_S at
// q D^2, and its n x T x T arrays at q n T^2 of a shard's h, yhat and gamma; the students
// share a shard's scratch.
type student struct {
	g             *device.Group
	parts         []*aim.Data
	R             int
	nb            int              // students in the current batch (at most the batch size)
	prec          device.Precision // of the two large contractions (Options.Precision)
	uncentred     bool             // Options.Uncentred
	decay         float64          // Options.WeightDecay, lambda
	direct        bool             // Options.Direct: w is S itself
	eye           device.Buffer    // the D x D identity (direct)
	penalty       []float64        // each student's lambda Tr S of the S of the last lossAndGrad
	bufs          [][]device.Buffer
	w, grad, m, v device.Buffer // the lead's
	s, gS, sBar   device.Buffer // the lead's S and G_S (each student's) and the average
	shards        []*shard
}

// shard is one member's part of a batch of students.
type shard struct {
	dev                     device.Device
	tr                      device.Trainer
	data                    *aim.Data
	s, gS                   device.Buffer // each S (a copy of the lead's) and the shard's part of each G_S
	scratch, h, yhat, gamma device.Buffer
	xc, gChunk              device.Buffer // streamed data: a chunk's tokens and its parts of G_S
	loss, trG               []float64     // each student's
}

func newStudent(g *device.Group, trs []device.Trainer, parts []*aim.Data, R, B int) (*student, error) {
	D, T := parts[0].P.D, parts[0].P.T()
	b, err := g.AllocEach(func(j int) []int {
		n := parts[j].Samples()
		chunk := n // samples whose tokens are in memory at once
		if parts[j].Chunk > 0 {
			chunk = parts[j].Chunk
		}
		sizes := []int{B * D * D, B * D * D, chunk * T * D, B * n * T * T, B * n * T * T, B * n * T * T}
		if parts[j].Chunk > 0 {
			sizes = append(sizes, parts[j].ChunkTokens(), B*D*D)
		}
		if j == 0 {
			sizes = append(sizes, B*R*D, B*R*D, B*R*D, B*R*D, D*D)
		}
		return sizes
	})
	if err != nil {
		return nil, fmt.Errorf("gd: %w", err)
	}
	st := &student{g: g, parts: parts, R: R, nb: B, bufs: b, penalty: make([]float64, B)}
	for j, bj := range b {
		sh := &shard{dev: g.Members[j], tr: trs[j], data: parts[j], s: bj[0], gS: bj[1],
			scratch: bj[2], h: bj[3], yhat: bj[4], gamma: bj[5], loss: make([]float64, B), trG: make([]float64, B)}
		if parts[j].Chunk > 0 {
			sh.xc, sh.gChunk = bj[6], bj[7]
		}
		st.shards = append(st.shards, sh)
	}
	lb := b[0][len(b[0])-5:]
	st.w, st.grad, st.m, st.v, st.sBar = lb[0], lb[1], lb[2], lb[3], lb[4]
	st.s, st.gS = st.shards[0].s, st.shards[0].gS
	return st, nil
}

// view is device.MustView: the ranges lie inside the student's buffers.
var view = device.MustView

func (st *student) free() { st.g.FreeEach(st.bufs) }

// lossGrad returns the loss scale * sum (yhat - y)^2 of n samples and writes the symmetric part
// of its gradient with respect to the indices h into gamma: the Trainer's SoftmaxLossGrad for
// softmax students, and for the linear channel (T = 1, yhat = h + shift, shift 0 unless
// uncentred) gamma = 2 scale (yhat - y) from the vector operations.
func lossGrad(dev device.Device, tr device.Trainer, ch channel.Spec, gamma, yhat, y device.Buffer, n int, scale, shift float64) (float64, error) {
	if ch.Kind != channel.KindLinear {
		return tr.SoftmaxLossGrad(ch, gamma, yhat, y, n, scale)
	}
	if err := device.Seq(
		func() error { return dev.Copy(gamma, yhat) },
		func() error { return dev.Axpby(gamma, -1, y, 1) },
		func() error {
			if shift == 0 {
				return nil
			}
			return dev.AddDiag(gamma, n, 1, shift)
		},
	); err != nil {
		return 0, err
	}
	ss, err := dev.Dot(gamma, gamma)
	if err != nil {
		return 0, err
	}
	return scale * ss, dev.Scal(gamma, 2*scale)
}

// lossAndGrad sets, for each student of the batch, S = W^T W / sqrt(R D) from W and returns
// the data losses L = sum_mu sum_ab (y-hat - y)^2 / D, writing grad = dL_lambda/dW, the
// gradient of L_lambda = L + lambda Tr S:
//
//	grad = W (G_S + G_S^T) / sqrt(R D) + (2 lambda / sqrt(R D)) W
//
// with G_S = (1/sqrt(D)) (sum_mu X_mu^T Gamma_mu X_mu - sum_mu Tr Gamma_mu I) and Gamma = dL/dh
// (without the trace term, and with the trace offset in every residual, when uncentred). It
// sets st.penalty to each lambda Tr S; at lambda = 0 the decay term is not computed at all. A
// direct student (Options.Direct) holds S in W: then S = W, grad = (G_S + G_S^T)/2 + 2 lambda S
// and the penalty is lambda ||S||_F^2.
func (st *student) lossAndGrad() ([]float64, error) {
	g, lead, p := st.g, st.g.Lead(), st.parts[0].P
	D, T, R, nb := p.D, p.T(), st.R, st.nb
	DD, RD := D*D, R*D
	cSW := 1 / math.Sqrt(float64(R)*float64(D))
	sqrtD := math.Sqrt(float64(D))
	ss, gSs := make([]device.Buffer, len(st.shards)), make([]device.Buffer, len(st.shards))
	for j, sh := range st.shards {
		ss[j], gSs[j] = view(sh.s, 0, nb*DD), view(sh.gS, 0, nb*DD)
	}
	if err := device.Seq(
		func() error {
			if st.direct {
				return lead.Copy(ss[0], view(st.w, 0, DD))
			}
			return device.GemmBatch(lead, true, false, D, D, R, cSW, st.w, RD, st.w, RD, 0, st.s, DD, nb)
		},
		func() error { return g.Sum.Broadcast(g.Members, ss) },
	); err != nil {
		return nil, err
	}
	trS := make([]float64, nb)
	for q := range trS {
		sq := view(st.s, q*DD, DD)
		var err error
		if trS[q], err = lead.SumDiag(sq, 1, D); err != nil {
			return nil, err
		}
		st.penalty[q] = 0
		switch {
		case st.decay != 0 && st.direct:
			v, err := lead.Dot(sq, sq)
			if err != nil {
				return nil, err
			}
			st.penalty[q] = st.decay * v
		case st.decay != 0:
			st.penalty[q] = st.decay * trS[q]
		}
	}
	// One pass over each member's samples, chunk by chunk of tokens (one chunk when they are
	// stored, so that streamed tokens are regenerated once per step for the whole batch), each
	// chunk serving the students one after another (the chunk's scratch stays in cache between
	// its products): the indices, the outputs, the loss and Gamma of each student (symmetric:
	// the symmetric part of the loss's gradient in h, all that reaches S), and its
	// G_S = (1/sqrt(D)) sum_mu X_mu^T Gamma_mu X_mu (aim.BackProject, symmetric), the loss,
	// Tr Gamma and the chunks' parts of G_S summed in chunk order, then the members' in member
	// order.
	if err := g.Each(func(j int, dev device.Device) error {
		sh := st.shards[j]
		N := sh.data.Samples()
		clear(sh.loss)
		clear(sh.trG)
		var gChunk device.Buffer
		if sh.gChunk != nil {
			gChunk = view(sh.gChunk, 0, nb*DD)
		}
		return sh.data.EachChunkSum(dev, sh.xc, gSs[j], gChunk, func(lo, n int, x, out device.Buffer) error {
			ntt := n * T * T
			at := func(b device.Buffer, q int) device.Buffer { return view(b, q*N*T*T+lo*T*T, ntt) }
			sc := view(sh.scratch, 0, n*T*D)
			for q := 0; q < nb; q++ {
				hc, yh, gc := at(sh.h, q), at(sh.yhat, q), at(sh.gamma, q)
				if err := device.Seq(
					func() error { return aim.IndicesAt(dev, st.prec, hc, sc, x, view(ss[j], q*DD, DD), trS[q], n, T, D) },
					func() error { return dev.ChannelOutput(p.Channel, yh, hc, n) },
					func() error {
						shift := 0.0 // the uncentred residual's (Tr S - Tr S*)/sqrt(D)
						if st.uncentred {
							shift = (trS[q] - sh.data.TrS) / sqrtD
						}
						l, err := lossGrad(dev, sh.tr, p.Channel, gc, yh, view(sh.data.Y, lo*T*T, ntt), n, 1/float64(D), shift)
						sh.loss[q] += l
						return err
					},
					func() error { t, err := dev.SumDiag(gc, n, T); sh.trG[q] += t; return err },
					func() error {
						return aim.BackProject(dev, st.prec, view(out, q*DD, DD), gc, x, sc, n, T, D, 1/sqrtD)
					},
				); err != nil {
					return err
				}
			}
			return nil
		})
	}); err != nil {
		return nil, err
	}
	if err := g.Sum.Reduce(g.Members, gSs); err != nil {
		return nil, err
	}
	losses := make([]float64, nb)
	for q := range losses {
		var trG float64
		for _, sh := range st.shards {
			losses[q] += sh.loss[q]
			trG += sh.trG[q]
		}
		centre := -trG / sqrtD
		if st.uncentred {
			centre = 0
		}
		if err := lead.AddDiag(view(st.gS, q*DD, DD), 1, D, centre); err != nil {
			return nil, err
		}
	}
	return losses, device.Seq(
		func() error {
			if st.direct { // grad = (G_S + G_S^T)/2, the transpose as I G_S^T
				return device.GemmBatch(lead, false, false, D, D, D, 0.5, st.eye, 0, st.gS, DD, 0, st.grad, DD, nb)
			}
			return device.GemmBatch(lead, false, false, R, D, D, cSW, st.w, RD, st.gS, DD, 0, st.grad, RD, nb)
		},
		func() error {
			if st.direct {
				return device.GemmBatch(lead, false, true, D, D, D, 0.5, st.eye, 0, st.gS, DD, 1, st.grad, DD, nb)
			}
			return device.GemmBatch(lead, false, true, R, D, D, cSW, st.w, RD, st.gS, DD, 1, st.grad, RD, nb)
		},
		func() error {
			grad, w := view(st.grad, 0, nb*RD), view(st.w, 0, nb*RD)
			switch {
			case st.decay == 0:
				return nil
			case st.direct:
				// d(lambda ||S||_F^2)/dS = 2 lambda S.
				return lead.Axpby(grad, 2*st.decay, w, 1)
			}
			// d(lambda Tr S)/dW = d(lambda ||W||_F^2 / sqrt(R D)) / dW = (2 lambda / sqrt(R D)) W.
			return lead.Axpby(grad, 2*st.decay*cSW, w, 1)
		},
	)
}
