package channel

import (
	"errors"
	"fmt"
	"math"
)

// Kind names an AIM output channel.
type Kind int

const (
	// KindSoftmax is y = row-softmax(beta h) (docs/theory/aim.md 2.2): Softmax, and with label noise
	// NoisySoftmax at T = 2 and NoisySoftmaxT for 3 <= T <= NoisyTMax.
	KindSoftmax Kind = iota
	// KindHardmax is y = one-hot row argmax of h (docs/theory/aim.md 2.3): in closed form at T = 2
	// (Hardmax), by a Gaussian polytope integral per sample for 3 <= T <= HardmaxTMax
	// (HardmaxT, with the lattice rule of Spec.Points and Spec.Tol).
	KindHardmax
	// KindLinear is y = h + sqrt(Delta) xi at T = 1 (docs/theory/aim.md 2.8): the extensive-width
	// network with quadratic activation (Linear).
	KindLinear
)

// DefaultHardmaxTol is the target standard error of each sample's g_out estimate of the
// hardmax channel at T > 2 (and of the noisy softmax at T > 2) when Spec.Tol is 0.
const DefaultHardmaxTol = 1e-3

// MaxHardmaxPoints bounds Spec.Points (per shift; 8 shifts): beyond it a sample costs more
// than a second.
const MaxHardmaxPoints = 1 << 20

// Spec specifies an output channel: what the device operations, the CPU backend (New) and the
// theory (engine/aim) build their channel from.
//
// Hardmax at 3 <= T <= 6: per sample, Z_out = P(A xi >= -A omega/sqrt(V)) over the T(T-1)
// winner constraints and g_out = E[xi | .]/sqrt(V) (HardmaxT) are estimated by HardmaxTShifts
// randomised shifts of a lattice of up to Points points each, doubling from 64 points until
// the standard errors of log Z and of E[xi | .] (relative to max(1, |E[xi | .]|_inf)) are
// below Tol. The noisy softmax at T > 2 (NoisySoftmaxT: importance sampling on the same kind
// of lattice) takes the same Points and Tol. Points and Tol are ignored otherwise.
type Spec struct {
	Kind        Kind
	T           int     // tokens
	Beta        float64 // softmax inverse temperature
	PaperCompat bool    // hardmax at T = 2: the published g_out formula instead of the exact one
	Points      int     // hardmax or noisy softmax, T > 2: lattice points per shift at most; 0: HardmaxTPoints
	Tol         float64 // hardmax or noisy softmax, T > 2: target error of each estimate; 0: DefaultHardmaxTol; < 0: every point
	// Noise is Delta >= 0, the variance of the Gaussian label noise of the softmax channel,
	// y = softmax_row(beta h) + sqrt(Delta) xi (NoisySoftmax at T = 2, NoisySoftmaxT for
	// 3 <= T <= NoisyTMax), and of the linear channel, y = h + sqrt(Delta) xi. The device
	// channel operations' outputs stay noiseless (engine/aim adds the noise to the data from
	// its own stream); ChannelGOut is the noisy channel's g_out.
	Noise float64
}

// Name returns the kind's name on the command line: "softmax", "hardmax" or "linear".
func (k Kind) Name() string {
	switch k {
	case KindSoftmax:
		return "softmax"
	case KindHardmax:
		return "hardmax"
	case KindLinear:
		return "linear"
	}
	return fmt.Sprintf("channel(%d)", int(k))
}

// Lattice returns the lattice rule of the hardmax channel and of the noisy softmax at T > 2 as
// NewHardmaxT and NewNoisySoftmaxT and their Tol take it: the points per shift (Points, or
// HardmaxTPoints for 0) and the tolerance (Tol, DefaultHardmaxTol for 0, and 0 = every point
// for Tol < 0).
func (s Spec) Lattice() (points int, tol float64) {
	points, tol = s.Points, s.Tol
	if points == 0 {
		points = HardmaxTPoints
	}
	switch {
	case tol == 0:
		tol = DefaultHardmaxTol
	case tol < 0:
		tol = 0
	}
	return points, tol
}

// Validate checks the channel by the rules of its constructors: softmax T >= 2 and
// 0 < beta < inf, with noise 0 <= Delta < inf (Delta > 0 at T <= NoisyTMax); linear T = 1
// (beta is not read); hardmax
// 2 <= T <= HardmaxTMax, PaperCompat at T = 2 only, and at T > 2 0 <= Points <= 2^20 and a
// finite Tol.
func (s Spec) Validate() error {
	if math.IsNaN(s.Noise) || s.Noise < 0 || math.IsInf(s.Noise, 0) {
		return fmt.Errorf("label noise Delta = %g: need a finite Delta >= 0", s.Noise)
	}
	switch s.Kind {
	case KindSoftmax:
		if s.Noise > 0 && s.T > 2 {
			_, err := NewNoisySoftmaxT(s.T, s.Beta, s.Noise, s.Points, 0)
			return err
		}
		if s.Noise > 0 {
			_, err := NewNoisySoftmax(s.T, s.Beta, s.Noise)
			return err
		}
		_, err := NewSoftmax(s.T, s.Beta)
		return err
	case KindLinear:
		if s.T != 1 {
			return fmt.Errorf("linear channel: T = %d, need T = 1 (the quadratic network)", s.T)
		}
		_, err := NewLinear(s.Noise)
		return err
	case KindHardmax:
		if s.Noise != 0 {
			return fmt.Errorf("hardmax channel: label noise (Delta = %g) is implemented for softmax and linear only", s.Noise)
		}
		if s.T == 2 {
			_, err := NewHardmax(s.T, s.PaperCompat)
			return err
		}
		switch {
		case s.T < 2 || s.T > HardmaxTMax:
			return fmt.Errorf("hardmax channel: T = %d, need 2 <= T <= %d", s.T, HardmaxTMax)
		case s.PaperCompat:
			return fmt.Errorf("hardmax channel: the published (paper-compat) formula exists for T = 2 only (got T = %d)", s.T)
		case s.Points < 0 || s.Points > MaxHardmaxPoints:
			return fmt.Errorf("hardmax channel: %d lattice points, need 0 (the default) to %d", s.Points, MaxHardmaxPoints)
		case math.IsNaN(s.Tol) || math.IsInf(s.Tol, 0):
			return fmt.Errorf("hardmax channel: tolerance %g, need a finite value", s.Tol)
		}
		return nil
	}
	return fmt.Errorf("unknown channel %v", s)
}

// String returns the kind's Name, with "-noise" and Delta for label noise (softmax, linear)
// and "-paper" for the published hardmax formula.
func (s Spec) String() string {
	switch {
	case s.Kind == KindHardmax && s.PaperCompat:
		return "hardmax-paper"
	case s.Noise > 0 && s.Kind != KindHardmax:
		return fmt.Sprintf("%s-noise%g", s.Kind.Name(), s.Noise)
	}
	return s.Kind.Name()
}

// Scalar is the per-sample math of a channel as New builds it from a Spec: y = g(h) for one
// T x T index matrix (Output) and g_out(y; omega, V) = E[u - omega | y, omega]/V in packed unit
// coordinates (GOut, docs/theory/aim.md section 3). The lattice estimates (hardmax and the noisy
// softmax at T > 2) drop their reported errors, which the stopping rule holds below the Spec's
// Tol (up to its points), and leave g NaN where the estimate fails (Z = 0: no lattice point
// inside), so that a square-sum of g is NaN and GAMP-RIE reports the divergence.
type Scalar interface {
	// Tokens is T.
	Tokens() int
	// Output writes y = g(h); y and h are T x T, row-major, and must not overlap.
	Output(y, h []float64)
	// GOut writes g_out(y; omega, V) for one sample (y T x T; omega and g packed, M values).
	GOut(g, y, omega []float64, V float64)
	// Clone returns the same channel for use concurrently with this one: the channel itself
	// where it holds no state (softmax, the noisy softmax at T = 2, the closed-form hardmax), a
	// copy with its own work space for the lattice estimates, which are not safe for
	// concurrent use.
	Clone() Scalar
}

// New validates s (Spec.Validate) and returns its scalar channel: *Linear, *Softmax,
// *NoisySoftmax (T = 2), the noisy softmax at T > 2 (NoisySoftmaxT with s.Lattice()'s points of
// NoisyTShifts shifts and tolerance), *Hardmax (T = 2) or the hardmax at T > 2 (HardmaxT with
// s.Lattice()'s points of HardmaxTShifts shifts and tolerance). It is the one constructor of
// a channel from its Spec: the CPU backend and the theory (engine/aim) build theirs with it,
// and the CUDA kernels compute the same values.
func New(s Spec) (Scalar, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	switch {
	case s.Kind == KindLinear:
		return NewLinear(s.Noise)
	case s.Kind == KindSoftmax && s.Noise > 0 && s.T > 2:
		points, tol := s.Lattice()
		k, err := NewNoisySoftmaxT(s.T, s.Beta, s.Noise, points, NoisyTShifts)
		if err != nil {
			return nil, err
		}
		k.Tol = tol
		return noisyTScalar{k}, nil
	case s.Kind == KindSoftmax && s.Noise > 0:
		return NewNoisySoftmax(s.T, s.Beta, s.Noise)
	case s.Kind == KindSoftmax:
		return NewSoftmax(s.T, s.Beta)
	case s.Kind == KindHardmax && s.T == 2:
		return NewHardmax(s.T, s.PaperCompat)
	case s.Kind == KindHardmax:
		points, tol := s.Lattice()
		k, err := NewHardmaxT(s.T, points, HardmaxTShifts)
		if err != nil {
			return nil, err
		}
		k.Tol = tol
		return hardmaxTScalar{k}, nil
	}
	return nil, fmt.Errorf("unknown channel %v", s)
}

// Clone returns s: the softmax channel holds no state.
func (s *Softmax) Clone() Scalar { return s }

// Clone returns n: the noisy softmax at T = 2 holds no state.
func (n *NoisySoftmax) Clone() Scalar { return n }

// Clone returns h: the closed-form hardmax holds no state.
func (h *Hardmax) Clone() Scalar { return h }

// hardmaxTScalar is the Scalar of HardmaxT: GOut drops the estimate's errors.
type hardmaxTScalar struct{ *HardmaxT }

func (h hardmaxTScalar) GOut(g, y, omega []float64, V float64) { h.HardmaxT.GOut(g, y, omega, V) }

func (h hardmaxTScalar) Clone() Scalar { return hardmaxTScalar{h.HardmaxT.Clone()} }

// noisyTScalar is the Scalar of NoisySoftmaxT: GOut drops the estimate's errors.
type noisyTScalar struct{ *NoisySoftmaxT }

func (n noisyTScalar) GOut(g, y, omega []float64, V float64) {
	n.NoisySoftmaxT.GOut(g, y, omega, V)
}

func (n noisyTScalar) Clone() Scalar { return noisyTScalar{n.NoisySoftmaxT.Clone()} }

// ErrUnsupported is wrapped by Support.Check's errors: a valid channel that a device does not
// compute.
var ErrUnsupported = errors.New("not supported by the device")

// Support declares the channels a device computes (device.Backend's Channels): every valid
// noiseless channel and the linear channel with label noise (the device front composes the
// linear channel from vector operations), and the softmax channel with label noise where
// Noise is set.
type Support struct {
	// Noise: the softmax channel with label noise (Spec.Noise > 0).
	Noise bool
}

// Check returns nil when the device computes s (a valid Spec), else an error wrapping
// ErrUnsupported that names what is missing.
func (u Support) Check(s Spec) error {
	if s.Kind == KindSoftmax && s.Noise != 0 && !u.Noise {
		return fmt.Errorf("the softmax channel with label noise (Delta = %g): %w", s.Noise, ErrUnsupported)
	}
	return nil
}
