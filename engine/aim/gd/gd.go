// Package gd trains the gradient-descent students of the attention-indexed model on a device
// (docs/AIM.md section 4): W in R^{R x D}, S = W^T W / sqrt(R D), h = (X S X^T - Tr S I)/sqrt(D),
// y-hat = row-softmax(beta h), full-batch loss sum_mu sum_ab (y-hat - y)^2 / D, Adam or plain
// gradient descent, and the average of the final S over independent initialisations.
package gd

import (
	"errors"
	"fmt"
	"math"
	"time"

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
	// TraceEvery records loss and error of the first student every that many steps (0: none).
	TraceEvery int
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
	Loss  float64 // sum (y-hat - y)^2 / D
	Error float64 // ||S - S*||_F^2 / D
}

// Result is the outcome of one training.
type Result struct {
	Error        float64   // ||S-bar - S*||_F^2 / D of the average over restarts
	SingleErrors []float64 // ||S_k - S*||_F^2 / D of each student
	FinalLoss    []float64 // each student's final loss
	Seconds      float64
	Trace        []Point
}

// Bytes returns the device memory of one training beside the data: W, its gradient and Adam's
// moments (R x D each), S, the gradient G_S and the running average (D x D), and the N x T x D
// and three N x T x T work arrays.
func Bytes(p aim.Params, o Options) uint64 {
	D, N, T := uint64(p.D), uint64(p.N()), uint64(p.T())
	return 8 * (4*studentRank(p, o)*D + 3*D*D + N*T*D + 3*N*T*T)
}

// StreamedBytes returns the device memory of one training on streamed tokens
// (aim.GenerateStreamed with chunks of chunk samples) beside the data: as Bytes, with the
// scratch and the tokens of one chunk (2 chunk T D) in place of the N x T x D scratch, and one
// more D x D matrix (a chunk's part of G_S).
func StreamedBytes(p aim.Params, o Options, chunk int) uint64 {
	D, N, T, C := uint64(p.D), uint64(p.N()), uint64(p.T()), uint64(min(chunk, p.N()))
	return 8 * (4*studentRank(p, o)*D + 4*D*D + 2*C*T*D + 3*N*T*T)
}

// studentRank is the student's width R (o.R, or the teacher's rank when 0).
func studentRank(p aim.Params, o Options) uint64 {
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
	case o.R < 0:
		return fmt.Errorf("gd: student width R = %d, need >= 0", o.R)
	case o.Adam && !(o.Beta1 >= 0 && o.Beta1 < 1 && o.Beta2 >= 0 && o.Beta2 < 1 && o.Eps > 0):
		return fmt.Errorf("gd: Adam parameters beta1 = %g, beta2 = %g, eps = %g out of range", o.Beta1, o.Beta2, o.Eps)
	}
	return nil
}

// Run trains o.Restarts students on the data (softmax teachers only: the hardmax output has no
// useful gradient) and returns the error of the averaged S. Student k starts from
// W ~ N(0, 1), drawn from the data's seed at stream.Init + k 2^40.
func Run(dev device.Device, data *aim.Data, o Options) (Result, error) {
	if err := o.validate(); err != nil {
		return Result{}, err
	}
	p := data.P
	if p.Channel.Kind != device.Softmax {
		return Result{}, fmt.Errorf("gd: the %v channel has no useful gradient; students are softmax only", p.Channel)
	}
	tr := dev.Capabilities().Trainer
	if tr == nil {
		return Result{}, fmt.Errorf("gd: device %s does not implement the training operations", dev.Info().Name)
	}
	R := o.R
	if R == 0 {
		R = p.R()
	}
	st, err := newStudent(dev, tr, data, R)
	if err != nil {
		return Result{}, err
	}
	defer st.free()
	D := p.D
	w, grad, m, v, s, sBar := st.w, st.grad, st.m, st.v, st.s, st.sBar
	zeros := make([]float64, R*D)
	start := time.Now()
	res := Result{}
	lossAndGrad := st.lossAndGrad

	for k := 0; k < o.Restarts; k++ {
		if err := device.Seq(
			func() error { return dev.GaussianFill(w, p.Seed, stream.Restart(k), 1) },
			func() error { return dev.Upload(m, zeros) },
			func() error { return dev.Upload(v, zeros) },
		); err != nil {
			return res, fmt.Errorf("gd: student %d: init: %w", k, err)
		}
		var loss float64
		for t := 1; t <= o.Steps; t++ {
			if loss, err = lossAndGrad(); err != nil {
				return res, fmt.Errorf("gd: student %d step %d: %w", k, t, err)
			}
			if math.IsNaN(loss) || math.IsInf(loss, 0) {
				res.Seconds = time.Since(start).Seconds()
				return res, fmt.Errorf("%w: student %d step %d: loss = %g", ErrDiverged, k, t, loss)
			}
			if k == 0 && o.TraceEvery > 0 && (t-1)%o.TraceEvery == 0 {
				e, err := dev.SqDist(s, data.S)
				if err != nil {
					return res, fmt.Errorf("gd: %w", err)
				}
				res.Trace = append(res.Trace, Point{Step: t - 1, Loss: loss, Error: e / float64(D)})
			}
			if o.Adam {
				err = tr.AdamStep(w, grad, m, v, o.LR, o.Beta1, o.Beta2, o.Eps, t)
			} else {
				err = dev.Axpby(w, -o.LR, grad, 1)
			}
			if err != nil {
				return res, fmt.Errorf("gd: student %d step %d: %w", k, t, err)
			}
			if ww, err := dev.Dot(w, w); err != nil || math.IsNaN(ww) || math.IsInf(ww, 0) {
				res.Seconds = time.Since(start).Seconds()
				return res, errors.Join(err, fmt.Errorf("%w: student %d step %d: ||W||^2 = %g", ErrDiverged, k, t, ww))
			}
			if o.Progress != nil {
				o.Progress()
			}
		}
		// The final S and loss of student k.
		if loss, err = lossAndGrad(); err != nil {
			return res, fmt.Errorf("gd: student %d: %w", k, err)
		}
		e, err := dev.SqDist(s, data.S)
		if err != nil {
			return res, fmt.Errorf("gd: %w", err)
		}
		if math.IsNaN(e) {
			return res, fmt.Errorf("%w: student %d: final S is NaN", ErrDiverged, k)
		}
		res.SingleErrors = append(res.SingleErrors, e/float64(D))
		res.FinalLoss = append(res.FinalLoss, loss)
		if k == 0 && o.TraceEvery > 0 {
			res.Trace = append(res.Trace, Point{Step: o.Steps, Loss: loss, Error: e / float64(D)})
		}
		if err := dev.Axpby(sBar, 1/float64(o.Restarts), s, 1); err != nil {
			return res, fmt.Errorf("gd: %w", err)
		}
	}
	e, err := dev.SqDist(sBar, data.S)
	if err != nil {
		return res, fmt.Errorf("gd: %w", err)
	}
	res.Error = e / float64(D)
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// student holds one student's buffers on a device and computes its loss and gradient.
type student struct {
	dev                        device.Device
	tr                         device.Trainer
	data                       *aim.Data
	R                          int
	bufs                       []device.Buffer
	w, grad, m, v, s, gS, sBar device.Buffer
	scratch, h, yhat, gamma    device.Buffer
	xc, gChunk                 device.Buffer // streamed data: a chunk's tokens and its G_S part
}

func newStudent(dev device.Device, tr device.Trainer, data *aim.Data, R int) (*student, error) {
	D, N, T := data.P.D, data.P.N(), data.P.T()
	chunk := N // samples whose tokens are in memory at once
	if data.Chunk > 0 {
		chunk = data.Chunk
	}
	sizes := []int{R * D, R * D, R * D, R * D, D * D, D * D, D * D, chunk * T * D, N * T * T, N * T * T, N * T * T}
	if data.Chunk > 0 {
		sizes = append(sizes, chunk*T*D, D*D)
	}
	b, err := device.AllocAll(dev, sizes...)
	if err != nil {
		return nil, fmt.Errorf("gd: %w", err)
	}
	st := &student{dev: dev, tr: tr, data: data, R: R, bufs: b,
		w: b[0], grad: b[1], m: b[2], v: b[3], s: b[4], gS: b[5], sBar: b[6],
		scratch: b[7], h: b[8], yhat: b[9], gamma: b[10]}
	if data.Chunk > 0 {
		st.xc, st.gChunk = b[11], b[12]
	}
	return st, nil
}

// view is device.MustView: the ranges lie inside the student's buffers.
var view = device.MustView

func (st *student) free() { device.FreeAll(st.dev, st.bufs...) }

// lossAndGrad sets S = W^T W / sqrt(R D) from W and returns the loss
// L = sum_mu sum_ab (y-hat - y)^2 / D, writing grad = dL/dW = W (G_S + G_S^T) / sqrt(R D) with
// G_S = (1/sqrt(D)) (sum_mu X_mu^T Gamma_mu X_mu - sum_mu Tr Gamma_mu I) and Gamma = dL/dh.
func (st *student) lossAndGrad() (float64, error) {
	dev, p := st.dev, st.data.P
	D, T, R := p.D, p.T(), st.R
	cSW := 1 / math.Sqrt(float64(R)*float64(D))
	sqrtD := math.Sqrt(float64(D))
	if err := dev.Gemm(true, false, D, D, R, cSW, st.w, st.w, 0, st.s); err != nil {
		return 0, err
	}
	trS, err := dev.SumDiag(st.s, 1, D)
	if err != nil {
		return 0, err
	}
	// One pass over the samples, chunk by chunk of tokens (one chunk when they are stored, so
	// that streamed tokens are regenerated once per step): the indices, the outputs, the loss
	// and Gamma, and G_S = (1/sqrt(D)) sum_mu X_mu^T Gamma_mu X_mu, the loss, Tr Gamma and the
	// chunks' parts of G_S summed in chunk order.
	var loss, trG float64
	if err := st.data.EachChunk(dev, st.xc, func(lo, n int, x device.Buffer) error {
		hc, yh, gc, yc := view(st.h, lo*T*T, n*T*T), view(st.yhat, lo*T*T, n*T*T), view(st.gamma, lo*T*T, n*T*T), view(st.data.Y, lo*T*T, n*T*T)
		sc := view(st.scratch, 0, n*T*D)
		out := st.gS
		if lo > 0 {
			out = st.gChunk
		}
		return device.Seq(
			func() error { return aim.Indices(dev, hc, sc, x, st.s, trS, n, T, D) },
			func() error { return dev.ChannelOutput(p.Channel, yh, hc, n) },
			func() error {
				l, err := st.tr.SoftmaxLossGrad(p.Channel, gc, yh, yc, n, 1/float64(D))
				loss += l
				return err
			},
			func() error { t, err := dev.SumDiag(gc, n, T); trG += t; return err },
			func() error { return dev.TokenMix(sc, gc, x, n, T, D) },
			func() error { return dev.Gemm(true, false, D, D, n*T, 1/sqrtD, x, sc, 0, out) },
			func() error {
				if lo == 0 {
					return nil
				}
				return dev.Axpby(st.gS, 1, st.gChunk, 1)
			},
		)
	}); err != nil {
		return 0, err
	}
	return loss, device.Seq(
		func() error { return dev.AddDiag(st.gS, 1, D, -trG/sqrtD) },
		func() error { return dev.Gemm(false, false, R, D, D, cSW, st.w, st.gS, 0, st.grad) },
		func() error { return dev.Gemm(false, true, R, D, D, cSW, st.w, st.gS, 1, st.grad) },
	)
}
