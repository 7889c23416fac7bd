package amp

import (
	"fmt"
	"math"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/smi"
	"github.com/aimtheory/aim/engine/stream"
)

// Options control one GAMP run on an SMI data set (docs/theory/smi.md 3).
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
// docs/validation/smi-amp.md). A layer near its threshold needs more: layer 3 there is held only at 16 000 draws
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
	// map u = v_L(W x^T / sqrt(D)) (docs/theory/smi.md 2.1); NaN without a test set.
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
// channel.DeepIn(L) + channel.DeepOut(L) values).
// The per-worker work space (O(P M) numbers and the channel quadrature's regions) is not
// counted.
func Bytes(p smi.Params, o Options) uint64 {
	D, N, M, P := uint64(p.D), uint64(p.N()), uint64(p.M), uint64(p.P())
	nTest := uint64(max(o.TestSamples, 0))
	var sampled uint64 // the batch of sampled integrals (smi.SampleBatch)
	if p.L >= 3 && o.Draws > 0 {
		sampled = 2 * N * uint64(channel.DeepIn(p.L)+channel.DeepOut(p.L))
	}
	return 8*(3*P*D+3*N*P*M+N*P*P+nTest*M*D+nTest*M*M+nTest+sampled) + 2*N
}
