// Package sgd trains the deep tied attention architecture of the SMI teacher by stochastic
// gradient descent (docs/theory/smi.md 4): the student's layers, the overlaps with the teacher's and
// the test error per epoch.
package sgd

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/smi"
	"github.com/aimtheory/aim/engine/stream"
	"github.com/aimtheory/aim/internal/par"
)

// ErrDiverged is wrapped by the error Run returns when the loss or the weights become NaN.
var ErrDiverged = errors.New("SMI SGD diverged")

// SGD for the deep tied attention student of the sequence multi-index model (docs/theory/smi.md 4),
// on the host CPU.
//
// Batching of the authors' notebook (SPOC-group/SequenceIndexModels, GD_2w.ipynb, commit
// a454a08): the training set is wrapped in torch.utils.data.DataLoader(X_train, batch_size=200)
// with the defaults shuffle=False and drop_last=False, so every epoch visits the samples in
// the same fixed order and the last mini-batch holds the N mod 200 leftover samples (100 at
// N = 7500: 38 mini-batches per epoch). On each mini-batch it takes n_passes = 3 consecutive
// optimizer.step() calls of torch.optim.SGD(lr=15, weight_decay=0.07/d) on
// loss = sum((y_pred - y)^2)/d (a sum, not a mean, over the mini-batch, so the short last batch
// takes a smaller step), and after the 3 steps it logs M_l, Q_l and the last step's loss (plus
// wd/2 ||Q1||^2): 1700 epochs give 1700 x 38 = 64,600 logged mini-batches. Every 20 epochs it
// logs torch.mean((y_test - y_hat)^2) on 2000 fresh test samples, a mean over the M^2 entries
// as well as the samples. Run does the same batching by default (Options.Shuffle false);
// with Shuffle it reshuffles the order each epoch, reproducibly from the student seed.

// Options control the SGD student of the deep tied attention model (docs/theory/smi.md 4).
type Options struct {
	LR float64 // learning rate eta (15)
	// WeightDecay is the coefficient lambda (0.07); the decay applied is lambda / D, so an
	// update is What <- What - eta (grad + (lambda / D) What), as torch.optim.SGD.
	WeightDecay float64
	// Batch is the mini-batch size B (200). An epoch cuts the (possibly shuffled) sample order
	// into ceil(N / B) consecutive mini-batches, the last one holding the remaining samples.
	Batch         int
	StepsPerBatch int     // consecutive SGD updates on each mini-batch (3)
	Epochs        int     // passes over the training set (1700)
	InitScale     float64 // What_0 = InitScale * N(0, 1) entrywise (0.9)
	// StudentSeed is the seed whose Gaussian stream at stream.Init draws What_0 (P x D,
	// row l = layer l) and whose PCG stream shuffles the samples; nil means the data's seed.
	StudentSeed *uint64
	Shuffle     bool // reshuffle the sample order each epoch (false: the notebook's fixed order)
	// Every records the state after every Every-th update; 0 records once per epoch, after its
	// last update. The initial state (update 0) and the last update are always recorded.
	Every int
	// TestSamples is the size of a fresh test set for the test error (2000); 0: none. Its
	// tokens come from the data's seed at offset stream.Data + 2^51, beyond the N M D
	// training tokens at stream.Data and below stream.Init = stream.Data + 2^52.
	TestSamples int
	// Workers is the number of goroutines per mini-batch (0: GOMAXPROCS). The samples are cut
	// into fixed chunks of smiChunk whose partial sums are added in order, so the results do
	// not depend on it.
	Workers int
	// Progress, when set, is called after every update with the number of updates done.
	Progress func(update int)
}

// DefaultOptions returns the notebook's settings (docs/theory/smi.md 4): lr 15, weight decay
// 0.07/D, mini-batches of 200 in a fixed order, 3 updates per mini-batch, 1700 epochs,
// What_0 = 0.9 N(0, 1), a 2000-sample test set and one record per epoch.
func DefaultOptions() Options {
	return Options{LR: 15, WeightDecay: 0.07, Batch: 200, StepsPerBatch: 3, Epochs: 1700, InitScale: 0.9, TestSamples: 2000}
}

func (o Options) validate() error {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case !(o.LR > 0) || !finite(o.LR):
		return fmt.Errorf("gd: SMI learning rate %g, need 0 < lr < inf", o.LR)
	case !(o.WeightDecay >= 0) || !finite(o.WeightDecay):
		return fmt.Errorf("gd: SMI weight decay %g, need 0 <= lambda < inf", o.WeightDecay)
	case o.Batch < 1:
		return fmt.Errorf("gd: SMI batch size %d, need at least 1", o.Batch)
	case o.StepsPerBatch < 1:
		return fmt.Errorf("gd: SMI steps per batch %d, need at least 1", o.StepsPerBatch)
	case o.Epochs < 1:
		return fmt.Errorf("gd: SMI epochs %d, need at least 1", o.Epochs)
	case !(o.InitScale > 0) || !finite(o.InitScale):
		return fmt.Errorf("gd: SMI init scale %g, need 0 < scale < inf (What = 0 is a stationary point)", o.InitScale)
	case o.Every < 0:
		return fmt.Errorf("gd: SMI record interval %d, need >= 0 (0: once per epoch)", o.Every)
	case o.TestSamples < 0:
		return fmt.Errorf("gd: SMI test samples %d, need >= 0", o.TestSamples)
	case o.Workers < 0:
		return fmt.Errorf("gd: SMI workers %d, need >= 0 (0: GOMAXPROCS)", o.Workers)
	}
	return nil
}

// Point is one recorded state of the SGD student. Per layer l (row l of What and W*), from
// smi.Data.Overlaps, as for GAMP: M_l = |What_l . W*_l| / D (each layer's sign is not
// identifiable), Q_l = ||What_l||^2 / D and the cosine C_l = M_l / sqrt(Q_l ||W*_l||^2 / D),
// 0 at Q_l = 0 (with the teacher's actual norm; the notebook divides by sqrt(Q_l) only, taking
// ||W*_l||^2 / D = 1).
type Point struct {
	Update int // SGD updates done (0: the initialisation)
	Batch  int // mini-batches started, ceil(Update / StepsPerBatch): the notebook's log index
	Epoch  int // epoch of update Update, from 1 (0 for the initialisation)
	M      []float64
	Q      []float64
	Cos    []float64
	// Loss is the mini-batch loss sum_{mu in batch} ||yhat_mu - y_mu||_F^2 / D that update
	// Update computed at the weights before it (for Update 0: the first mini-batch's loss at
	// What_0). Weight decay is not included.
	Loss float64
	// TrainError is the same loss per sample: Loss D / |batch| = mean_batch ||yhat - y||_F^2.
	TrainError float64
	// TestError is e_gen = mean over the test set of ||yhat - y||_F^2 at the recorded weights
	// (NaN without a test set). The notebook's torch.mean is this divided by M^2.
	TestError float64
}

// Result is the outcome of Run.
type Result struct {
	Trace   []Point
	W       []float64 // final student weights What, P x D (row l = layer l)
	Updates int       // SGD updates done
	Seconds float64
}

// Bytes estimates the host memory of one Run with options o beyond the data (smi.Params.Bytes):
// the labels (N M M), the test set of n_test = o.TestSamples samples (n_test (M D + M M)), and
// the weights with their gradient and one partial gradient per chunk of smiChunk samples
// ((2 + chunks) P D).
func Bytes(p smi.Params, o Options) uint64 {
	N, M, D, P, nTest := uint64(p.N()), uint64(p.M), uint64(p.D), uint64(p.P()), uint64(max(o.TestSamples, 0))
	chunks := uint64(par.Chunks(max(min(o.Batch, p.N()), o.TestSamples), smiChunk))
	return 8 * (N*M*M + nTest*(M*D+M*M) + (2+chunks)*P*D)
}

// smiChunk is the number of samples whose gradients one goroutine sums; fixed so that the
// floating-point sums, and hence the trajectory, do not depend on the number of workers.
const smiChunk = 50

// Run trains a deep tied attention student What (P x D, P = L rank-1 layers, the teacher's
// architecture) by mini-batch SGD on the data (docs/theory/smi.md 4). For each sample mu the student
// computes the raw projections z = What x_mu^T / sqrt(D) (P x M), v_L(z) by the recursion of
// smi.Deep and yhat = softmax_row(beta v_L v_L^T); the labels are the teacher's
// y_mu = softmax_row(beta u_mu u_mu^T). Each update on a mini-batch b is
//
//	What <- What - eta (grad_b + (lambda / D) What),  grad_b = d/dWhat sum_{mu in b} ||yhat_mu - y_mu||_F^2 / D,
//
// with the gradient by exact reverse-mode differentiation (smiWork.lossGrad). A NaN or Inf
// loss or weight stops the run with an error wrapping ErrDiverged that names the update; the
// result then holds the trace so far and the last weights.
func Run(data *smi.Data, o Options) (Result, error) {
	if err := o.validate(); err != nil {
		return Result{}, err
	}
	tr, err := newSMITrainer(data, o)
	if err != nil {
		return Result{}, err
	}
	return tr.run()
}

// smiTrainer holds the state of one SGD run.
type smiTrainer struct {
	o        Options
	ch       smi.Deep
	D, M, P  int
	N        int
	x, y     []float64 // training tokens (N x M x D, shared with data) and labels (N x M x M)
	xt, yt   []float64 // test tokens and labels
	nTest    int
	data     *smi.Data // the teacher, for the overlaps
	w, grad  []float64 // P x D
	seed     uint64
	perm     []int
	workers  int
	works    []*smiWork // one per worker
	parts    []smiPart  // one per chunk of the largest batch or test set
	batchBuf []int
}

// smiPart is one chunk's partial loss and gradient.
type smiPart struct {
	loss float64
	grad []float64
}

func newSMITrainer(data *smi.Data, o Options) (*smiTrainer, error) {
	if data == nil {
		return nil, fmt.Errorf("gd: SMI data is nil")
	}
	p := data.P
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("gd: SMI data: %w", err)
	}
	D, N, M, P := p.D, p.N(), p.M, p.P()
	if len(data.W) != P*D || len(data.X) != N*M*D || len(data.U) != N*M {
		return nil, fmt.Errorf("gd: SMI data sizes W %d, X %d, U %d do not match P %d, N %d, M %d, D %d",
			len(data.W), len(data.X), len(data.U), P, N, M, D)
	}
	ch, err := p.Channel()
	if err != nil {
		return nil, fmt.Errorf("gd: SMI data: %w", err)
	}
	t := &smiTrainer{o: o, ch: *ch, D: D, M: M, P: P, N: N, x: data.X,
		w: make([]float64, P*D), grad: make([]float64, P*D), seed: p.Seed}
	if o.StudentSeed != nil {
		t.seed = *o.StudentSeed
	}
	// Labels y = softmax_row(beta u u^T) of the training set.
	t.y = make([]float64, N*M*M)
	out := t.ch
	out.C = 0
	for mu := 0; mu < N; mu++ {
		out.Attention(t.y[mu*M*M:(mu+1)*M*M], data.U[mu*M:(mu+1)*M])
	}
	// A fresh test set from the data's seed, beyond the training tokens.
	if o.TestSamples > 0 {
		t.nTest = o.TestSamples
		t.xt, t.yt = data.TestSet(t.nTest, stream.SMISGDTest)
	}
	t.data = data
	// What_0 = InitScale N(0, 1) from the student seed's stream at stream.Init.
	device.FillNormals(t.w, t.seed, stream.Init)
	for i := range t.w {
		t.w[i] *= o.InitScale
	}
	t.perm = make([]int, N)
	for i := range t.perm {
		t.perm[i] = i
	}
	maxN := min(o.Batch, N)
	if t.nTest > maxN {
		maxN = t.nTest
	}
	nChunks := (maxN + smiChunk - 1) / smiChunk
	t.parts = make([]smiPart, nChunks)
	for i := range t.parts {
		t.parts[i].grad = make([]float64, P*D)
	}
	t.workers = max(1, min(par.Workers(o.Workers), nChunks))
	t.works = make([]*smiWork, t.workers)
	for i := range t.works {
		t.works[i] = newSMIWork(t.ch, D)
	}
	t.batchBuf = make([]int, min(o.Batch, N))
	return t, nil
}

// run performs the epochs and records the trajectory.
func (t *smiTrainer) run() (Result, error) {
	o := t.o
	start := time.Now()
	res := Result{}
	B := min(o.Batch, t.N)
	nBatches := (t.N + B - 1) / B
	total := o.Epochs * nBatches * o.StepsPerBatch
	var rng *rand.Rand
	if o.Shuffle {
		rng = rand.New(rand.NewPCG(t.seed, 0x534d4953687566)) // "SMIShuf"
	}
	finish := func(err error) (Result, error) {
		res.W = append([]float64(nil), t.w...)
		res.Seconds = time.Since(start).Seconds()
		return res, err
	}
	update := 0
	for ep := 1; ep <= o.Epochs; ep++ {
		if rng != nil {
			shuffle(t.perm, rng)
		}
		for b := 0; b < nBatches; b++ {
			idx := t.perm[b*B : min((b+1)*B, t.N)]
			for s := 0; s < o.StepsPerBatch; s++ {
				loss := t.lossGrad(idx, t.x, t.y, true)
				if update == 0 {
					res.Trace = append(res.Trace, t.record(0, 0, 0, loss, len(idx)))
				}
				update++
				if math.IsNaN(loss) || math.IsInf(loss, 0) {
					res.Updates = update - 1
					return finish(fmt.Errorf("%w: SMI update %d (epoch %d, mini-batch %d): loss = %g",
						ErrDiverged, update, ep, b+1, loss))
				}
				ww := t.apply()
				res.Updates = update
				if math.IsNaN(ww) || math.IsInf(ww, 0) {
					return finish(fmt.Errorf("%w: SMI update %d (epoch %d, mini-batch %d): ||What||^2 = %g",
						ErrDiverged, update, ep, b+1, ww))
				}
				last := update == total
				if last || (o.Every > 0 && update%o.Every == 0) ||
					(o.Every == 0 && b == nBatches-1 && s == o.StepsPerBatch-1) {
					res.Trace = append(res.Trace, t.record(update, (update+o.StepsPerBatch-1)/o.StepsPerBatch, ep, loss, len(idx)))
				}
				if o.Progress != nil {
					o.Progress(update)
				}
			}
		}
	}
	return finish(nil)
}

// apply makes the SGD update What <- What - eta (grad + (lambda / D) What) and returns
// ||What||^2.
func (t *smiTrainer) apply() float64 {
	lr, decay := t.o.LR, t.o.WeightDecay/float64(t.D)
	var ww float64
	for i, g := range t.grad {
		w := t.w[i] - lr*(g+decay*t.w[i])
		t.w[i] = w
		ww += w * w
	}
	return ww
}

// record returns the overlaps of the current weights, the given mini-batch loss and the test
// error.
func (t *smiTrainer) record(update, batch, epoch int, loss float64, n int) Point {
	D := t.D
	pt := Point{Update: update, Batch: batch, Epoch: epoch, Loss: loss, TrainError: loss * float64(D) / float64(n), TestError: math.NaN()}
	pt.Q, pt.M, pt.Cos = t.data.Overlaps(t.w)
	if t.nTest > 0 {
		idx := make([]int, t.nTest)
		for i := range idx {
			idx[i] = i
		}
		pt.TestError = t.lossGrad(idx, t.xt, t.yt, false) * float64(D) / float64(t.nTest)
	}
	return pt
}

// lossGrad returns sum_{mu in idx} ||yhat_mu - y_mu||_F^2 / D at the current weights and, with
// wantGrad, writes its gradient with respect to What into t.grad. The samples are cut into
// chunks of smiChunk, spread over the workers; the chunks' sums are added in order.
func (t *smiTrainer) lossGrad(idx []int, x, y []float64, wantGrad bool) float64 {
	nChunks := (len(idx) + smiChunk - 1) / smiChunk
	do := func(wk *smiWork, c int) {
		part := &t.parts[c]
		if wantGrad {
			clear(part.grad)
		}
		part.loss = 0
		for _, mu := range idx[c*smiChunk : min((c+1)*smiChunk, len(idx))] {
			part.loss += wk.sample(t.w, x[mu*t.M*t.D:(mu+1)*t.M*t.D], y[mu*t.M*t.M:(mu+1)*t.M*t.M], part.grad, wantGrad)
		}
	}
	var k atomic.Int64
	// The bodies cannot fail; a panic (a bug) comes back as an error.
	if err := par.For(t.workers, nChunks, func() (*smiWork, error) { return t.works[k.Add(1)-1], nil },
		func(wk *smiWork, c int) error { do(wk, c); return nil }); err != nil {
		panic(err)
	}
	var loss float64
	if wantGrad {
		clear(t.grad)
	}
	for c := 0; c < nChunks; c++ {
		loss += t.parts[c].loss
		if wantGrad {
			for i, g := range t.parts[c].grad {
				t.grad[i] += g
			}
		}
	}
	return loss
}

// smiWork is one goroutine's work space for the per-sample forward and backward pass.
type smiWork struct {
	att, out smi.Deep // A(v) = softmax_row(beta v v^T) + c I and the plain softmax (c = 0)
	L, M, D  int
	z, gz    []float64 // P x M raw projections and dloss/dz
	v        []float64 // L x M pre-activations v_l
	s        []float64 // L x M x M softmax_row(beta v_l v_l^T); s_L = yhat
	b        []float64 // L x M x M: B_0 = I, ..., B_{L-1}
	g, ga    []float64 // M x M adjoints of a softmax output and of its logits
	gb, gbn  []float64 // M x M adjoints of B_l and B_{l-1}
	gv       []float64 // M
}

func newSMIWork(ch smi.Deep, D int) *smiWork {
	L, M := ch.L, ch.M
	out := ch
	out.C = 0
	w := &smiWork{att: ch, out: out, L: L, M: M, D: D, z: make([]float64, L*M), gz: make([]float64, L*M),
		v: make([]float64, L*M), s: make([]float64, L*M*M), b: make([]float64, L*M*M),
		g: make([]float64, M*M), ga: make([]float64, M*M), gb: make([]float64, M*M), gbn: make([]float64, M*M),
		gv: make([]float64, M)}
	for i := 0; i < M; i++ {
		w.b[i*M+i] = 1 // B_0 = I
	}
	return w
}

// sample returns one sample's loss ||yhat - y||_F^2 / D for tokens x (M x D) and label y
// (M x M) and, with wantGrad, adds its gradient dloss/dWhat_l = sum_tok dloss/dz_{l,tok} x_tok
// / sqrt(D) to grad (P x D).
func (w *smiWork) sample(wt, x, y, grad []float64, wantGrad bool) float64 {
	L, M, D := w.L, w.M, w.D
	smi.Project(w.z, wt, x, L, M, D)
	loss := w.lossGrad(y, wantGrad)
	if !wantGrad {
		return loss
	}
	sc := 1 / math.Sqrt(float64(D))
	for l := 0; l < L; l++ {
		gl := grad[l*D : (l+1)*D]
		for tok := 0; tok < M; tok++ {
			axpy(gl, w.gz[l*M+tok]*sc, x[tok*D:(tok+1)*D])
		}
	}
	return loss
}

// lossGrad runs the recursion of smi.Deep on the raw projections w.z,
//
//	v_1 = z_1, B_0 = I,  v_l = B_{l-1} z_l,  S_l = softmax_row(beta v_l v_l^T),
//	A_l = S_l + c I,  B_l = A_l B_{l-1}  (l < L),  yhat = S_L,
//
// and returns loss = ||yhat - y||_F^2 / D. With wantGrad it writes gz = dloss/dz (L x M) by
// reverse-mode differentiation. Writing G_X for dloss/dX:
//
//	G_yhat = 2 (yhat - y) / D,
//	softmax rows: for S = softmax_row(T), (G_T)_ij = S_ij ((G_S)_ij - sum_k (G_S)_ik S_ik),
//	logits T = beta v v^T: G_v = beta (G_T + G_T^T) v,
//	v_l = B_{l-1} z_l: G_{z_l} = B_{l-1}^T G_{v_l}, G_{B_{l-1}} += G_{v_l} z_l^T,
//	B_l = A_l B_{l-1}: G_{A_l} = G_{B_l} B_{l-1}^T, G_{B_{l-1}} += A_l^T G_{B_l},
//
// taken for l = L, L-1, ..., 1 (G_{B_l} is complete once layers l+1..L are done).
func (w *smiWork) lossGrad(y []float64, wantGrad bool) float64 {
	L, M := w.L, w.M
	MM := M * M
	for l := 0; l < L; l++ {
		v := w.v[l*M : (l+1)*M]
		bl := w.b[l*MM : (l+1)*MM]
		matVecT(v, bl, w.z[l*M:(l+1)*M], M, false)
		s := w.s[l*MM : (l+1)*MM]
		w.out.Attention(s, v)
		if l < L-1 {
			next := w.b[(l+1)*MM : (l+2)*MM]
			for i := 0; i < M; i++ {
				for j := 0; j < M; j++ {
					var acc float64
					for k := 0; k < M; k++ {
						acc += s[i*M+k] * bl[k*M+j]
					}
					next[i*M+j] = acc + w.att.C*bl[i*M+j]
				}
			}
		}
	}
	yhat := w.s[(L-1)*MM : L*MM]
	scale := 2 / float64(w.D)
	var loss float64
	for i, yh := range yhat {
		d := yh - y[i]
		loss += d * d
		w.g[i] = scale * d
	}
	loss /= float64(w.D)
	if !wantGrad {
		return loss
	}
	for l := L - 1; l >= 0; l-- {
		v := w.v[l*M : (l+1)*M]
		s := w.s[l*MM : (l+1)*MM]
		bl := w.b[l*MM : (l+1)*MM] // B_{l-1} in 1-based layer numbering
		if l < L-1 {
			// w.gb = G_{B_l}: G_{A_l} = G_{B_l} B_{l-1}^T into w.g, and G_{B_{l-1}} = A_l^T G_{B_l}.
			for i := 0; i < M; i++ {
				for j := 0; j < M; j++ {
					var ga, gbn float64
					for k := 0; k < M; k++ {
						ga += w.gb[i*M+k] * bl[j*M+k]
						gbn += s[k*M+i] * w.gb[k*M+j]
					}
					w.g[i*M+j] = ga
					w.gbn[i*M+j] = gbn + w.att.C*w.gb[i*M+j]
				}
			}
		}
		// Softmax rows, then the logits beta v v^T.
		for i := 0; i < M; i++ {
			var dotGS float64
			for k := 0; k < M; k++ {
				dotGS += w.g[i*M+k] * s[i*M+k]
			}
			for j := 0; j < M; j++ {
				w.ga[i*M+j] = s[i*M+j] * (w.g[i*M+j] - dotGS)
			}
		}
		for k := 0; k < M; k++ {
			var acc float64
			for j := 0; j < M; j++ {
				acc += (w.ga[k*M+j] + w.ga[j*M+k]) * v[j]
			}
			w.gv[k] = w.att.Beta * acc
		}
		// v_l = B_{l-1} z_l.
		matVecT(w.gz[l*M:(l+1)*M], bl, w.gv, M, true)
		if l > 0 {
			z := w.z[l*M : (l+1)*M]
			if l == L-1 {
				clear(w.gbn)
			}
			for i := 0; i < M; i++ {
				for j := 0; j < M; j++ {
					w.gbn[i*M+j] += w.gv[i] * z[j]
				}
			}
			w.gb, w.gbn = w.gbn, w.gb
		}
	}
	return loss
}

// matVecT writes dst = a x (or a^T x with trans) for an M x M row-major a.
func matVecT(dst, a, x []float64, M int, trans bool) {
	for i := 0; i < M; i++ {
		var s float64
		for j := 0; j < M; j++ {
			if trans {
				s += a[j*M+i] * x[j]
			} else {
				s += a[i*M+j] * x[j]
			}
		}
		dst[i] = s
	}
}

func dot(a, b []float64) float64 {
	var s float64
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

func axpy(dst []float64, a float64, x []float64) {
	for i, v := range x {
		dst[i] += a * v
	}
}

// shuffle permutes p uniformly (Fisher-Yates with rejection-sampled indices, so the order
// depends only on the PCG stream, not on math/rand's helper methods).
func shuffle(p []int, r *rand.Rand) {
	for i := len(p) - 1; i > 0; i-- {
		n := uint64(i + 1)
		lim := -n % n // 2^64 mod n: draws below it are rejected
		var u uint64
		for {
			u = r.Uint64()
			if u >= lim {
				break
			}
		}
		j := int(u % n)
		p[i], p[j] = p[j], p[i]
	}
}
