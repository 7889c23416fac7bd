package aim

import (
	"fmt"
	"math"

	"github.com/aimtheory/aim/channel"
)

// Linear is the noiseless linear channel y = h at T = 1, the extensive-width quadratic network
// (docs/theory/aim.md 2.8), as the state evolution sees it. It observes its one field
// exactly, so it counts K = 2 directions and reaches perfect recovery at
// alpha_PR = rho - rho^2/2 (rho < 1), 1/2 (rho >= 1).
type Linear struct{ *channel.Linear }

// NoisyLinear is the linear channel with label noise Delta > 0, y = h + sqrt(Delta) xi: no
// perfect recovery.
type NoisyLinear struct{ *channel.Linear }

// NewLinear returns the linear channel with label noise Delta >= 0: a *Linear at Delta = 0, a
// *NoisyLinear otherwise.
func NewLinear(delta float64) (Channel, error) {
	l, err := channel.NewLinear(delta)
	if err != nil {
		return nil, err
	}
	if delta == 0 {
		return &Linear{l}, nil
	}
	return &NoisyLinear{l}, nil
}

// Name returns "linear".
func (l *Linear) Name() string { return "linear" }

// Directions returns K = 2: the channel observes its M = 1 field exactly.
func (l *Linear) Directions() int { return 2 }

// FisherSum returns 1/V (linearFisher at Delta = 0).
func (l *Linear) FisherSum(q, V float64) (float64, error) { return linearFisher(q, V, 0) }

// OutputEntropy returns -(1/2)(log(4 pi V) + 1) (linearEntropy at Delta = 0).
func (l *Linear) OutputEntropy(q, V float64) (float64, error) { return linearEntropy(q, V, 0) }

// Name returns "linear".
func (l *NoisyLinear) Name() string { return "linear" }

// FisherSum returns 1/(V + Delta/2) (linearFisher).
func (l *NoisyLinear) FisherSum(q, V float64) (float64, error) {
	return linearFisher(q, V, l.Noise())
}

// OutputEntropy returns -(1/2)(log(2 pi (2V + Delta)) + 1) (linearEntropy).
func (l *NoisyLinear) OutputEntropy(q, V float64) (float64, error) {
	return linearEntropy(q, V, l.Noise())
}

// linearFisher returns E g_out^2 = 2/(2V + Delta) = 1/(V + Delta/2): y - sqrt(2) omega has
// variance 2V + Delta whatever q is (channel.Linear.GOut), so q-hat = 2 alpha/(V + Delta/2),
// the authors' Theory_noise.py equation (docs/theory/aim.md 2.8).
func linearFisher(q, V, delta float64) (float64, error) {
	if !(q >= 0) || !(V >= 0) || math.IsInf(q, 0) || math.IsInf(V, 0) || !(2*V+delta > 0) {
		return 0, fmt.Errorf("linear FisherSum: need q >= 0 and V > 0 (or Delta > 0), got q = %g, V = %g, Delta = %g", q, V, delta)
	}
	return 2 / (2*V + delta), nil
}

// linearEntropy returns psi_out(q, V) = E log Z_out with Z_out the Gaussian density of y,
// N(y; sqrt(2) omega, 2V + Delta): -(1/2)(log(2 pi (2V + Delta)) + 1), exactly (no constant
// dropped). Its q-derivative along V = Q0 - q is 1/(2V + Delta) = FisherSum/2.
func linearEntropy(q, V, delta float64) (float64, error) {
	if !(q >= 0) || !(V >= 0) || math.IsInf(q, 0) || math.IsInf(V, 0) || !(2*V+delta > 0) {
		return 0, fmt.Errorf("linear OutputEntropy: need q >= 0 and V > 0 (or Delta > 0), got q = %g, V = %g, Delta = %g", q, V, delta)
	}
	return -(math.Log(2*math.Pi*(2*V+delta)) + 1) / 2, nil
}

// ExactGenError is a Channel whose Bayes-optimal generalisation error on the outputs
// (docs/theory/aim.md 2.4) has a closed form.
type ExactGenError interface {
	Channel
	// GenError returns e_gen = E_omega tr Cov(g(h(u)) | omega) at the overlaps (q, V).
	GenError(q, V float64) float64
}

// GenError returns e_gen = 2V: g(h) = h = sqrt(2) u and Var(u | omega) = V.
func (l *Linear) GenError(q, V float64) float64 { return 2 * V }

// GenError returns e_gen = 2V on the noiseless outputs h (the label noise Delta, which no
// predictor can remove, is not counted).
func (l *NoisyLinear) GenError(q, V float64) float64 { return 2 * V }

// Linear and NoisyLinear implement Entropic and ExactGenError.
var (
	_ Entropic      = (*Linear)(nil)
	_ Entropic      = (*NoisyLinear)(nil)
	_ ExactGenError = (*Linear)(nil)
	_ ExactGenError = (*NoisyLinear)(nil)
)
