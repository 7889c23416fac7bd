// Package smi is the sequence multi-index model and deep tied attention (docs/theory/smi.md): its
// teachers and data (model.go), the deep attention channel y = g(W x^T / sqrt(D)) with L tied
// rank-1 layers (deep.go) and its posterior integrals by adaptive cubature (deepmoments.go,
// cubature.go) and, at L = 3 and 4, by importance sampling (deepsample.go), with the state evolution
// and thresholds, GAMP and SGD in the sub-packages se, amp and sgd.
package smi

import (
	"errors"
	"fmt"
	"math"

	"github.com/aimtheory/aim/channel"
)

// Deep is the output channel of deep tied low-rank attention seen as a sequence multi-index
// model (docs/theory/smi.md 1.2): L rank-1 layers, M tokens, skip strength c and inverse temperature
// beta. Its input is Z (P x M, P = L, row-major: row l is z_l = W_l x^T / sqrt(D), the raw
// projection of the M tokens on layer l's weight vector) and its output the last layer's
// attention matrix y = softmax_row(beta v_L v_L^T), M x M, by the recursion
//
//	A(v) = softmax_row(beta v v^T) + c I_M,
//	v_1 = z_1,  B_1 = A(v_1),  v_l = B_{l-1} z_l,  B_l = A(v_l) B_{l-1}  (l = 2..L).
//
// v_l is layer l's actual pre-activation (layer l sees h_{l-1} = B_{l-1} x). For L = 2 this is
// u = A(z_1) z_2 and for L = 3 u = A(A(z_1) z_2) A(z_1) z_3 (docs/theory/smi.md 1.2). The forward map
// works for every L and M; the posterior moments (DeepMoments) need M = 2, where y fixes u = v_L
// up to a global sign (docs/theory/smi.md 1.3), and L <= MaxDeepLayers.
type Deep struct {
	L, M int     // layers (P = L rank-1 layers) and tokens
	C    float64 // skip strength c >= 0
	Beta float64 // inverse temperature beta > 0
}

// MaxDeepLayers is the deepest network whose posterior moments DeepMoments integrates: the
// quadrature runs over the 2(L-1) free pre-activations, 4-dimensional at L = 3.
const MaxDeepLayers = 3

// NewDeep checks the parameters of a deep tied attention channel.
func NewDeep(L, M int, c, beta float64) (*Deep, error) {
	switch {
	case L < 1:
		return nil, fmt.Errorf("L = %d layers: need L >= 1", L)
	case M < 2:
		return nil, fmt.Errorf("M = %d tokens: need M >= 2", M)
	case !(c >= 0) || math.IsInf(c, 0):
		return nil, fmt.Errorf("skip c = %g: need 0 <= c < inf", c)
	case !(beta > 0) || math.IsInf(beta, 0):
		return nil, fmt.Errorf("beta = %g: need 0 < beta < inf", beta)
	}
	return &Deep{L: L, M: M, C: c, Beta: beta}, nil
}

// CheckInvertible reports whether the posterior over Z given y can be computed for this
// channel: M = 2 (the inversion of docs/theory/smi.md 1.3) and L <= MaxDeepLayers.
func (d *Deep) CheckInvertible() error {
	if d.M != 2 {
		return fmt.Errorf("M = %d tokens: the inversion y -> u (docs/theory/smi.md 1.3) and the channel "+
			"quadrature are implemented for M = 2 only", d.M)
	}
	if d.L > MaxDeepLayers {
		return fmt.Errorf("L = %d layers: the channel quadrature runs over 2(L-1) = %d dimensions; "+
			"at most L = %d is supported (the forward map and SGD work for any L)", d.L, 2*(d.L-1), MaxDeepLayers)
	}
	return nil
}

// MaxSampledLayers is the deepest network whose posterior moments the importance sampler
// (channel.DeepSampler, DeepSampler) estimates: 2(L-1) = 6 free pre-activations at L = 4.
const MaxSampledLayers = channel.DeepMaxL

// CheckPosterior reports whether the posterior over Z given y can be computed for this channel
// by the cubature (sampled false: CheckInvertible) or by importance sampling (sampled true:
// M = 2 and 2 <= L <= MaxSampledLayers).
func (d *Deep) CheckPosterior(sampled bool) error {
	if !sampled || d.M != 2 {
		return d.CheckInvertible()
	}
	if d.L < channel.DeepMinL || d.L > MaxSampledLayers {
		return fmt.Errorf("L = %d layers: the sampled channel integrals run over 2(L-1) = %d dimensions; "+
			"%d <= L <= %d is supported (the forward map and SGD work for any L)", d.L, 2*(d.L-1), channel.DeepMinL, MaxSampledLayers)
	}
	return nil
}

// P returns the number of rows of Z, the sum of the layer ranks (one per layer).
func (d *Deep) P() int { return d.L }

// DeepScratch holds the work space of Deep's forward map; one per goroutine.
type DeepScratch struct {
	a, b, t []float64 // M x M
	v       []float64 // M
}

// NewScratch returns work space for Forward.
func (d *Deep) NewScratch() *DeepScratch {
	M := d.M
	return &DeepScratch{a: make([]float64, M*M), b: make([]float64, M*M), t: make([]float64, M*M), v: make([]float64, M)}
}

// Attention writes A(v) = softmax_row(beta v v^T) + c I (M x M, row-major) into a.
func (d *Deep) Attention(a, v []float64) { d.attention(a, v, d.C) }

// attention writes softmax_row(beta v v^T) + c I into a.
func (d *Deep) attention(a, v []float64, c float64) {
	M := d.M
	for i := 0; i < M; i++ {
		row := a[i*M : (i+1)*M]
		mx := math.Inf(-1)
		for j := 0; j < M; j++ {
			row[j] = d.Beta * v[i] * v[j]
			mx = math.Max(mx, row[j])
		}
		var s float64
		for j := range row {
			row[j] = math.Exp(row[j] - mx)
			s += row[j]
		}
		for j := range row {
			row[j] /= s
		}
		row[i] += c
	}
}

// Forward writes u = v_L(Z) (length M) for Z (P x M, row-major). With b non-nil it also writes
// B_{L-1} (M x M; the identity for L = 1), the matrix with v_L = B_{L-1} z_L.
func (d *Deep) Forward(u, z []float64, b []float64, s *DeepScratch) {
	M := d.M
	B := s.b
	for i := range B {
		B[i] = 0
	}
	for i := 0; i < M; i++ {
		B[i*M+i] = 1
	}
	for l := 0; l < d.L; l++ {
		zl := z[l*M : (l+1)*M]
		v := s.v
		matVec(v, B, zl, M)
		if l == d.L-1 {
			copy(u, v)
			break
		}
		d.Attention(s.a, v)
		matMul(s.t, s.a, B, M)
		B, s.t = s.t, B
	}
	s.b = B
	if b != nil {
		copy(b, B)
	}
}

// OutputU writes y = softmax_row(beta u u^T) (M x M) for the last pre-activation u.
func (d *Deep) OutputU(y, u []float64) { d.attention(y, u, 0) }

// InvertM2 returns the canonical pre-activation u (u_0 >= u_1) with y = softmax_row(beta u u^T)
// for M = 2 (docs/theory/smi.md 1.3): p = log(y_00/y_01)/beta = u_0(u_0 - u_1) and
// r = log(y_11/y_10)/beta = u_1(u_1 - u_0), so p + r = (u_0 - u_1)^2 and
// u = (p, -r)/sqrt(p + r). The logarithms use log1p on the entry nearer 1, so saturated outputs
// (1 - y rounding to 1) keep their information as long as the small entry is representable.
func InvertM2(y []float64, beta float64) ([2]float64, error) {
	if len(y) != 4 {
		return [2]float64{}, fmt.Errorf("InvertM2: y has %d entries, want 4 (M = 2)", len(y))
	}
	p := logRatio(y[0], y[1]) / beta
	r := logRatio(y[3], y[2]) / beta
	s := p + r
	if !(s > 0) || math.IsInf(s, 0) || math.IsNaN(s) {
		return [2]float64{}, errors.New("InvertM2: y does not determine u (u_0 = u_1 or an entry is 0)")
	}
	d := math.Sqrt(s)
	return [2]float64{p / d, -r / d}, nil
}

// logRatio returns log(a/b) for a row (a, b) of a 2 x 2 softmax, a + b = 1, computing the
// logarithm of the larger entry as log1p(-smaller).
func logRatio(a, b float64) float64 {
	if a >= b {
		return math.Log1p(-b) - math.Log(b)
	}
	return math.Log(a) - math.Log1p(-a)
}

func matVec(dst, a, x []float64, M int) {
	for i := 0; i < M; i++ {
		var s float64
		for j := 0; j < M; j++ {
			s += a[i*M+j] * x[j]
		}
		dst[i] = s
	}
}

func matMul(dst, a, b []float64, M int) {
	for i := 0; i < M; i++ {
		for j := 0; j < M; j++ {
			var s float64
			for k := 0; k < M; k++ {
				s += a[i*M+k] * b[k*M+j]
			}
			dst[i*M+j] = s
		}
	}
}
