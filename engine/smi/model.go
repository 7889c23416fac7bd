package smi

import (
	"fmt"
	"math"

	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/stream"
)

// Params are the sizes and parameters of one sequence multi-index (SMI) teacher with deep
// tied rank-1 attention output (docs/theory/smi.md 1.1, 1.2).
type Params struct {
	D     int     // token dimension
	Alpha float64 // N = floor(alpha D)
	M     int     // tokens per sequence
	L     int     // attention layers, each of rank 1: P = L
	C     float64 // skip strength c
	Beta  float64 // inverse temperature beta
	// Noise Delta >= 0 is the variance of Gaussian noise added to every pre-activation before
	// the forward map: y = g(Z + sqrt(Delta) xi). This is the model whose state evolution is
	// the SE with epsilon = Delta (V = I - Q + epsilon I is then the exact posterior variance
	// of Z + sqrt(Delta) xi given omega); 0 is the noiseless model of the paper.
	Noise float64
	Seed  uint64 // fixes W*, X and the noise
}

// N returns the number of samples floor(alpha D).
func (p Params) N() int { return int(math.Floor(p.Alpha * float64(p.D))) }

// P returns the number of rows of W*, the sum of the layer ranks.
func (p Params) P() int { return p.L }

// Channel returns the deep attention channel of the parameters.
func (p Params) Channel() (*Deep, error) { return NewDeep(p.L, p.M, p.C, p.Beta) }

// Validate checks the parameters before anything is allocated.
func (p Params) Validate() error {
	if _, err := p.Channel(); err != nil {
		return err
	}
	switch {
	case p.D < 2:
		return fmt.Errorf("D = %d: need D >= 2", p.D)
	case !(p.Alpha > 0) || math.IsInf(p.Alpha, 0):
		return fmt.Errorf("alpha = %g: need alpha > 0", p.Alpha)
	case p.N() < 1:
		return fmt.Errorf("alpha = %g at D = %d gives N = floor(alpha D) = 0 samples", p.Alpha, p.D)
	case !(p.Noise >= 0) || math.IsInf(p.Noise, 0):
		return fmt.Errorf("noise = %g: need 0 <= noise < inf", p.Noise)
	}
	return nil
}

// Bytes returns the memory of the teacher and its data set: W* (P x D), X (N x M x D), the raw
// projections Z (N x P x M), the last pre-activations U (N x M) and, with Noise > 0, the noise
// drawn while generating them (N x P x M).
func (p Params) Bytes() uint64 {
	D, N, M, P := uint64(p.D), uint64(p.N()), uint64(p.M), uint64(p.P())
	b := P*D + N*M*D + N*P*M + N*M
	if p.Noise > 0 {
		b += N * P * M
	}
	return 8 * b
}

// Data is an SMI teacher and its data set, in host memory.
type Data struct {
	P Params
	W []float64 // P x D teacher weights W*, iid N(0, 1)
	X []float64 // N x M x D tokens, iid N(0, 1); sample mu, token l is X[(mu M + l) D:][:D]
	Z []float64 // N x P x M raw projections Z_mu = W* X_mu^T / sqrt(D)
	// U (N x M) holds the last pre-activations u_mu = v_L(Z_mu + sqrt(Noise) xi_mu);
	// y_mu = softmax_row(beta u u^T).
	U []float64
}

// Generate draws W* (offset stream.Teacher) and X (offset stream.Data) from the seed's
// Gaussian stream and computes Z = W* X^T / sqrt(D) and u = v_L(Z + sqrt(Noise) xi) (docs/theory/smi.md
// 1.2), xi from offset stream.SMINoise (drawn only when Noise > 0). The
// labels y are not stored: they are softmax_row(beta u u^T), and u is what the posterior needs
// (it carries the teacher's sign, which y forgets).
func Generate(p Params) (*Data, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	D, N, M, P := p.D, p.N(), p.M, p.P()
	d := &Data{P: p, W: make([]float64, P*D), X: make([]float64, N*M*D), Z: make([]float64, N*P*M), U: make([]float64, N*M)}
	device.FillNormals(d.W, p.Seed, stream.Teacher)
	device.FillNormals(d.X, p.Seed, stream.Data)
	var xi []float64
	if p.Noise > 0 {
		xi = make([]float64, N*P*M)
		device.FillNormals(xi, p.Seed, stream.SMINoise)
	}
	ch, _ := p.Channel()
	s := ch.NewScratch()
	zn := make([]float64, P*M)
	for mu := 0; mu < N; mu++ {
		z := d.Z[mu*P*M : (mu+1)*P*M]
		Project(z, d.W, d.X[mu*M*D:(mu+1)*M*D], P, M, D)
		copy(zn, z)
		if xi != nil {
			for k := range zn {
				zn[k] += math.Sqrt(p.Noise) * xi[mu*P*M+k]
			}
		}
		ch.Forward(d.U[mu*M:(mu+1)*M], zn, nil, s)
	}
	return d, nil
}

// Project writes z = W x^T / sqrt(D) (P x M) for one sample's tokens x (M x D) and weights W
// (P x D).
func Project(z, w, x []float64, P, M, D int) {
	sc := 1 / math.Sqrt(float64(D))
	for k := 0; k < P; k++ {
		wk := w[k*D : (k+1)*D]
		for l := 0; l < M; l++ {
			xl := x[l*D : (l+1)*D]
			var s float64
			for i, v := range wk {
				s += v * xl[i]
			}
			z[k*M+l] = s * sc
		}
	}
}

// Y writes sample mu's output y = softmax_row(beta u u^T) (M x M).
func (d *Data) Y(y []float64, mu int) {
	ch, _ := d.P.Channel()
	M := d.P.M
	ch.OutputU(y, d.U[mu*M:(mu+1)*M])
}

// TestSet draws n fresh samples of the teacher to measure a student's generalisation error:
// the tokens X (n x M x D, from the seed's Gaussian stream at offset off, one of the test
// ranges of package stream) and the teacher's outputs Y = softmax_row(beta u u^T) (n x M x M).
func (d *Data) TestSet(n int, off uint64) (x, y []float64) {
	p := d.P
	D, M, P := p.D, p.M, p.P()
	x, y = make([]float64, n*M*D), make([]float64, n*M*M)
	device.FillNormals(x, p.Seed, off)
	ch, _ := p.Channel()
	s := ch.NewScratch()
	z, u := make([]float64, P*M), make([]float64, M)
	for mu := 0; mu < n; mu++ {
		Project(z, d.W, x[mu*M*D:(mu+1)*M*D], P, M, D)
		ch.Forward(u, z, nil, s)
		ch.OutputU(y[mu*M*M:(mu+1)*M*M], u)
	}
	return x, y
}

// Overlaps returns, for a student What (P x D, row l = layer l), the overlaps per layer with
// the teacher: Q_l = |w-hat_l|^2 / D, M_l = |w-hat_l . w*_l| / D (in absolute value: each
// layer's sign is not identifiable, w_l -> -w_l leaves y unchanged) and the cosine
// C_l = M_l / sqrt(Q_l |w*_l|^2 / D), which is 0 when Q_l = 0.
func (d *Data) Overlaps(what []float64) (Q, M, Cos []float64) {
	D, P := d.P.D, d.P.P()
	Q, M, Cos = make([]float64, P), make([]float64, P), make([]float64, P)
	dot := func(a, b []float64) float64 {
		var s float64
		for i, v := range a {
			s += v * b[i]
		}
		return s
	}
	for l := 0; l < P; l++ {
		w, ws := what[l*D:(l+1)*D], d.W[l*D:(l+1)*D]
		Q[l] = dot(w, w) / float64(D)
		M[l] = math.Abs(dot(w, ws)) / float64(D)
		if den := Q[l] * (dot(ws, ws) / float64(D)); den > 0 {
			Cos[l] = M[l] / math.Sqrt(den)
		}
	}
	return Q, M, Cos
}
