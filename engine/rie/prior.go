package rie

import (
	"errors"
	"math"
)

// Noisy is the spectrum of Y = S + sqrt(Delta) Z for a rotationally invariant S and Z GOE, as
// the prior sides of the state evolutions use it: Spectrum (S Marchenko-Pastur) and Discrete (S
// of any spectrum).
type Noisy interface {
	Noise() float64                 // Delta
	Edges() []float64               // the support, in pairs, ascending
	Density(x float64) float64      // mu(x)
	Stieltjes(x float64) complex128 // g(x - i0): Hilbert part and pi mu
	Denoise(lambda float64) float64 // the RIE map lambda - 2 Delta Re g(lambda - i0)
	MMSE() float64                  // the RIE's error per D
	Integrate(F Integrand, from, relTol float64) (val, err float64)
}

// Prior is the law of a rotationally invariant target S: its first two moments and its spectrum
// under Gaussian noise of any variance.
type Prior interface {
	Q0() float64                        // (1/D) Tr S^2
	Mean() float64                      // (1/D) Tr S
	Noisy(delta float64) (Noisy, error) // the spectrum of S + sqrt(delta) Z
}

// MP is the Marchenko-Pastur prior of rank ratio Rho: S = W W^T / sqrt(R D), Q0 = 1 + rho, mean
// sqrt(rho).
type MP struct{ Rho float64 }

// Q0 returns 1 + rho.
func (m MP) Q0() float64 { return 1 + m.Rho }

// Mean returns sqrt(rho).
func (m MP) Mean() float64 { return math.Sqrt(m.Rho) }

// Noisy returns MP(rho) ⊞ SC(delta).
func (m MP) Noisy(delta float64) (Noisy, error) { return New(m.Rho, delta) }

// Eigenvalues is the prior of a target with these eigenvalues and Haar eigenvectors (a power
// law, a bulk with outliers): Q0 and the mean are the eigenvalues' moments.
type Eigenvalues []float64

// Q0 returns the mean of the squared eigenvalues.
func (e Eigenvalues) Q0() float64 {
	s := 0.0
	for _, w := range e {
		s += w * w
	}
	return s / float64(len(e))
}

// Mean returns the mean eigenvalue.
func (e Eigenvalues) Mean() float64 {
	s := 0.0
	for _, w := range e {
		s += w
	}
	return s / float64(len(e))
}

// Noisy returns the eigenvalues' measure ⊞ SC(delta) (Discrete).
func (e Eigenvalues) Noisy(delta float64) (Noisy, error) {
	if len(e) == 0 {
		return nil, errors.New("rie: a prior without eigenvalues")
	}
	return NewDiscrete(e, delta)
}

// Noise returns Delta.
func (sp *Spectrum) Noise() float64 { return sp.Delta }

// Noise returns Delta.
func (d *Discrete) Noise() float64 { return d.Delta }

var (
	_ Noisy = (*Spectrum)(nil)
	_ Noisy = (*Discrete)(nil)
	_ Prior = MP{}
	_ Prior = Eigenvalues{}
)
