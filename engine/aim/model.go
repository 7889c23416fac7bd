// This file draws the teachers and data sets of the AIM on a device, reproducibly from a seed
// (docs/AIM.md section 1).

package aim

import (
	"fmt"
	"math"

	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/stream"
)

// Params are the sizes and parameters of one AIM teacher and its data set.
type Params struct {
	D       int            // token dimension
	Alpha   float64        // N = floor(alpha D^2)
	Rho     float64        // R = floor(rho D)
	Channel device.Channel // output channel, with T and beta
	Seed    uint64         // fixes W and X
}

// N returns the number of samples floor(alpha D^2).
func (p Params) N() int { return int(math.Floor(p.Alpha * float64(p.D) * float64(p.D))) }

// R returns the rank floor(rho D) of W.
func (p Params) R() int { return int(math.Floor(p.Rho * float64(p.D))) }

// T returns the number of tokens.
func (p Params) T() int { return p.Channel.T }

// Validate checks the parameters before anything is allocated.
func (p Params) Validate() error {
	switch {
	case p.D < 2:
		return fmt.Errorf("D = %d: need D >= 2", p.D)
	case p.Channel.T < 2:
		return fmt.Errorf("T = %d: need T >= 2", p.Channel.T)
	case p.Channel.Kind == device.Hardmax && p.Channel.T != 2:
		return fmt.Errorf("hardmax is implemented for T = 2 only (got T = %d)", p.Channel.T)
	case p.Channel.Kind == device.Softmax && !(p.Channel.Beta > 0 && !math.IsInf(p.Channel.Beta, 0)):
		return fmt.Errorf("beta = %g: need 0 < beta < inf", p.Channel.Beta)
	case !(p.Alpha > 0) || math.IsInf(p.Alpha, 0):
		return fmt.Errorf("alpha = %g: need alpha > 0", p.Alpha)
	case !(p.Rho > 0) || math.IsInf(p.Rho, 0):
		return fmt.Errorf("rho = %g: need rho > 0", p.Rho)
	case p.N() < 1:
		return fmt.Errorf("alpha = %g at D = %d gives N = floor(alpha D^2) = 0 samples", p.Alpha, p.D)
	case p.R() < 1:
		return fmt.Errorf("rho = %g at D = %d gives R = floor(rho D) = 0", p.Rho, p.D)
	}
	return nil
}

// Bytes returns the device memory of the teacher and the data set while they are drawn: S, W
// and X S (D x D, D x R, N x T x D), X (N x T x D), and the indices and outputs (N x T x T each).
func (p Params) Bytes() uint64 {
	D, N, T, R := uint64(p.D), uint64(p.N()), uint64(p.T()), uint64(p.R())
	return 8 * (D*D + D*R + 2*N*T*D + 2*N*T*T)
}

// DataBytes returns the device memory the data set holds once drawn: S, X and y.
func (p Params) DataBytes() uint64 {
	D, N, T := uint64(p.D), uint64(p.N()), uint64(p.T())
	return 8 * (D*D + N*T*D + N*T*T)
}

// Data is a teacher S and its data set on a device.
type Data struct {
	P   Params
	S   device.Buffer // D x D, S = W W^T / sqrt(R D)
	X   device.Buffer // N x T x D tokens, iid N(0, 1)
	Y   device.Buffer // N x T x T outputs y = g(h)
	TrS float64       // Tr S
}

// Generate draws W (D x R) and X (N x T x D) from the seed's Gaussian stream and computes
// S = W W^T / sqrt(R D), the trace-centred indices h_mu = (X_mu S X_mu^T - Tr S I)/sqrt(D)
// (Gemm then TokenDots) and the outputs y_mu = g(h_mu). Memory stays O(N T D + D^2): no
// N x D x D tensor is formed.
func Generate(dev device.Device, p Params) (*Data, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	D, N, T, R := p.D, p.N(), p.T(), p.R()
	b, err := device.AllocAll(dev, D*D, N*T*D, N*T*T, D*R, N*T*D, N*T*T)
	if err != nil {
		return nil, fmt.Errorf("teacher and data (D = %d, N = %d, T = %d): %w", D, N, T, err)
	}
	d := &Data{P: p, S: b[0], X: b[1], Y: b[2]}
	w, xs, h := b[3], b[4], b[5]
	defer device.FreeAll(dev, w, xs, h)
	fail := func(err error) (*Data, error) {
		d.Free(dev)
		return nil, fmt.Errorf("teacher and data: %w", err)
	}
	if err := dev.GaussianFill(w, p.Seed, stream.Teacher, 1); err != nil {
		return fail(err)
	}
	if err := dev.Gemm(false, true, D, D, R, 1/math.Sqrt(float64(R)*float64(D)), w, w, 0, d.S); err != nil {
		return fail(err)
	}
	tr, err := dev.SumDiag(d.S, 1, D)
	if err != nil {
		return fail(err)
	}
	d.TrS = tr
	if err := dev.GaussianFill(d.X, p.Seed, stream.Data, 1); err != nil {
		return fail(err)
	}
	if err := Indices(dev, h, xs, d.X, d.S, tr, N, T, D); err != nil {
		return fail(err)
	}
	if err := dev.ChannelOutput(p.Channel, d.Y, h, N); err != nil {
		return fail(err)
	}
	return d, nil
}

// Indices computes h_mu = (X_mu A X_mu^T - trA I)/sqrt(D) for the N samples of X (N x T x D)
// and a D x D matrix A with trace trA, using xa (N x T x D) as scratch: Gemm for X A, then
// TokenDots.
func Indices(dev device.Device, h, xa, x, a device.Buffer, trA float64, n, t, d int) error {
	if err := dev.Gemm(false, false, n*t, d, d, 1, x, a, 0, xa); err != nil {
		return err
	}
	if err := dev.TokenDots(h, xa, x, n, t, d); err != nil {
		return err
	}
	if err := dev.AddDiag(h, n, t, -trA); err != nil {
		return err
	}
	return dev.Scal(h, 1/math.Sqrt(float64(d)))
}

// Free releases the data's buffers.
func (d *Data) Free(dev device.Device) {
	device.FreeAll(dev, d.S, d.X, d.Y)
	d.S, d.X, d.Y = nil, nil, nil
}
