package aim

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/aimtheory/aim/channel"
)

// The output free entropy of hardmax at T = 2 (Entropic).
//
// y is one of four sign patterns s = (s1, s2) (s_a = +1 iff y_aa = 1) and, in the notation of
// FisherH, Z_out(s; omega, V) = Phi2(s1 b1, s2 b2; s1 s2/3) with b = (sqrt2 omega11 - omega12,
// sqrt2 omega22 - omega12)/sqrt(3V) ~ N(0, lambda C), lambda = q/V, C = [[1, 1/3], [1/3, 1]].
// So psi_out depends on q and V only through lambda:
//
//	psi_out(q, V) = E(lambda) = E_b sum_s Z_s(b) log Z_s(b),
//
// with E(0) = 2 Z+ log Z+ + 2 Z- log Z-, Z+- = 1/4 +- asin(1/3)/(2 pi), and E(lambda) -> 0 as
// lambda -> inf (the pattern becomes certain). The q-derivative of psi_out at V = Q0 - q is
// FisherSum/2 = H/(6V) (the GLM identity behind q-hat = 2 alpha FisherSum), i.e.
// E'(lambda) = H(lambda)/(6 (1 + lambda)); the tests check it by finite differences.
//
// E is integrated like H: Gauss-Hermite in whitened coordinates below lambda = hGHMax, above
// it the split f = band(b1) + band(b2) + g on the fixed grid of FisherH, where
// band(b) = sum_{t = +-1} Phi(t b) log Phi(t b) is the limit of the integrand as |b2| -> inf
// and g decays like a Gaussian in every direction.

// ErrNoEntropy is wrapped by the error of an OutputEntropy that the channel cannot give.
var ErrNoEntropy = errors.New("no output free entropy")

// eTerm is Z log Z for one sign pattern.
func eTerm(k1, k2, rho float64) float64 {
	lz, _, _, _ := channel.BVNRatios(k1, k2, rho)
	if math.IsInf(lz, -1) {
		return 0
	}
	return math.Exp(lz) * lz
}

// eIntegrand is sum_s Z_s log Z_s at b = (b1, b2); it is even in b.
func eIntegrand(b1, b2 float64) float64 {
	return eTerm(b1, b2, 1.0/3) + eTerm(-b1, -b2, 1.0/3) + eTerm(b1, -b2, -1.0/3) + eTerm(-b1, b2, -1.0/3)
}

// eBand is the limit of eIntegrand(b, b2) as |b2| -> inf: Phi(b) log Phi(b) + Phi(-b) log Phi(-b).
func eBand(b float64) float64 {
	lp, lm := channel.LogNormCDF(b), channel.LogNormCDF(-b)
	return math.Exp(lp)*lp + math.Exp(lm)*lm
}

// eZero is E(0) in closed form.
func eZero() float64 {
	zp := 0.25 + math.Asin(1.0/3)/(2*math.Pi)
	zm := 0.25 - math.Asin(1.0/3)/(2*math.Pi)
	return 2*zp*math.Log(zp) + 2*zm*math.Log(zm)
}

// eQuad holds the rules of E: the Gauss-Hermite nodes and, on FisherH's grid, the band and
// localised parts with their weights folded in.
type eQuad struct {
	ghx, ghw []float64
	bx       []float64
	band, g  []float64
}

var eQuadOnce struct {
	once sync.Once
	q    *eQuad
}

func eQuadRule() *eQuad {
	eQuadOnce.once.Do(func() { eQuadOnce.q = newEQuad(hGHPoints, hGLPoints, hGridEdges[:]) })
	return eQuadOnce.q
}

func newEQuad(ghN, glN int, edges []float64) *eQuad {
	e := &eQuad{}
	e.ghx, e.ghw = channel.HermiteNormal(ghN)
	var bw []float64
	e.bx, bw = gridNodes(glN, edges) // the nodes of FisherH's grid
	n := len(e.bx)
	e.band = make([]float64, n)
	for i, b := range e.bx {
		e.band[i] = eBand(b) * bw[i]
	}
	e.g = make([]float64, n*n)
	for i := 0; i < n/2; i++ {
		for j := 0; j < n; j++ {
			v := (eIntegrand(e.bx[i], e.bx[j]) - eBand(e.bx[i]) - eBand(e.bx[j])) * bw[i] * bw[j]
			e.g[i*n+j] = v
			e.g[(n-1-i)*n+(n-1-j)] = v
		}
	}
	return e
}

// eval returns E(lambda).
func (e *eQuad) eval(lambda float64) float64 {
	switch {
	case lambda == 0:
		return eZero()
	case math.IsInf(lambda, 1):
		return 0
	case lambda < hGHMax:
		return gaussHermiteEven(e.ghx, e.ghw, lambda, eIntegrand)
	}
	return gridGauss(e.bx, e.band, e.g, lambda, true)
}

// OutputEntropy returns psi_out(q, V) = E_{omega, y} log Z_out(y; omega, V) =
// E_b sum_s Z_s log Z_s (see the comment above; exact derivative convention of docs/theory/aim.md 2.3),
// a function of lambda = q/V only, to about 1e-12 absolute: E(0) = 2 Z+ log Z+ + 2 Z- log Z-,
// E -> 0 as lambda -> inf, and dpsi_out/dq at V = Q0 - q is FisherSum/2. No constant is dropped
// (y is discrete). The paper-compatible mode (docs/theory/aim.md 2.3) has no free entropy: its
// FisherSum uses phi2 in place of the derivatives of Phi2, so it is not the q-derivative of any
// E log Z_out, and OutputEntropy returns an error wrapping ErrNoEntropy.
func (h *Hardmax) OutputEntropy(q, V float64) (float64, error) {
	if h.PaperCompat() {
		return math.NaN(), fmt.Errorf("hardmax (paper-compat): %w: its SE integral is not the derivative of an output free entropy (docs/theory/aim.md 2.3)", ErrNoEntropy)
	}
	if math.IsNaN(q) || math.IsNaN(V) || math.IsInf(q, 0) || math.IsInf(V, 0) || q < 0 || V <= 0 {
		return math.NaN(), fmt.Errorf("hardmax: OutputEntropy(q = %v, V = %v): need finite q >= 0 and V > 0", q, V)
	}
	return eQuadRule().eval(q / V), nil
}

// Hardmax implements Entropic.
var _ Entropic = (*Hardmax)(nil)
