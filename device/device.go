// Package device defines the Device interface: float64 buffers that live on a compute device
// (the CPU, a CUDA GPU) and the operation set that GAMP-RIE and gradient descent are written
// in (../shared/docs/DESIGN.md). Backends (package cpu, package device/cuda) implement it;
// device/auto opens one by name. The engine never touches a backend directly.
//
// Conventions: every matrix is row-major and packed (leading dimension = row length). A batch
// of N matrices of shape r x c is one buffer of N*r*c values, sample after sample. Operations
// check their sizes and return errors that name the operation; a backend's own failures (a
// CUDA status, an allocation) come back as errors with context, never as panics.
//
// Aliasing: the output of Gemm (C), TokenDots (H), TokenMix (Z) and SpectralCompose (out) must
// not be one of the inputs, EighSym's three buffers must be distinct, and ChannelGOut's g must
// not be y. Allowed: A = B in Gemm, y = h in ChannelOutput, g = omega in ChannelGOut. The
// element-wise operations Axpby, Dot and SqDist take buffers of equal length; Copy needs dst
// at least as long as src.
package device

import (
	"fmt"
)

// Buffer is an array of float64 on a device. Only the device that allocated it may use it.
type Buffer interface {
	// Len is the number of float64 values.
	Len() int
}

// Info describes a device for humans and for manifests.
type Info struct {
	Name        string // "cpu", "cuda"
	Description string // e.g. "cpu: 2 goroutines, gonum v0.17 (pure Go BLAS/LAPACK)"
	TotalBytes  uint64 // memory of the device
	FreeBytes   uint64 // memory available for new buffers now
}

// ChannelKind names an AIM output channel.
type ChannelKind int

const (
	// Softmax is y = row-softmax(beta h) (docs/AIM.md 2.2).
	Softmax ChannelKind = iota
	// Hardmax is y = one-hot row argmax of h, T = 2 (docs/AIM.md 2.3).
	Hardmax
)

// Channel specifies an output channel for the channel operations.
type Channel struct {
	Kind        ChannelKind
	T           int     // tokens
	Beta        float64 // softmax inverse temperature
	PaperCompat bool    // hardmax: the published g_out formula instead of the exact one
}

// String returns "softmax" or "hardmax" (with "-paper" for the published formula).
func (c Channel) String() string {
	switch c.Kind {
	case Softmax:
		return "softmax"
	case Hardmax:
		if c.PaperCompat {
			return "hardmax-paper"
		}
		return "hardmax"
	}
	return fmt.Sprintf("channel(%d)", int(c.Kind))
}

// Device is a compute device with its buffers and the operation set of GAMP-RIE.
//
// Coordinates of the channel operations: per sample the T x T matrices omega and g are stored
// full and symmetric in the z-coordinates of docs/AIM.md section 3, z_ab = tau_ab h_ab with
// tau_aa = 1 and tau_ab = sqrt(2) (a != b); V is the z-coordinate variance V_z = 2 V_u.
type Device interface {
	// Info describes the device and its memory.
	Info() Info

	// Alloc returns a zeroed buffer of n values, or an error saying how many bytes were asked
	// for and how many are free.
	Alloc(n int) (Buffer, error)
	// Free releases a buffer; using it afterwards is an error.
	Free(b Buffer)
	// Upload copies src into dst[0:len(src)].
	Upload(dst Buffer, src []float64) error
	// Download copies src[0:len(dst)] into dst.
	Download(dst []float64, src Buffer) error
	// Copy sets dst[0:src.Len()] = src.
	Copy(dst, src Buffer) error

	// Gemm computes C = alpha op(A) op(B) + beta C with op(A) m x k, op(B) k x n and C m x n.
	// A is stored m x k, or k x m when transA; B is stored k x n, or n x k when transB.
	Gemm(transA, transB bool, m, n, k int, alpha float64, a, b Buffer, beta float64, c Buffer) error
	// TokenDots computes H_mu,ab = sum_i Y_mu,a,i X_mu,b,i for N samples: Y, X are N x T x D,
	// H is N x T x T.
	TokenDots(h, y, x Buffer, n, t, d int) error
	// TokenMix computes Z_mu = C_mu X_mu: Z_mu,a,i = sum_b C_mu,a,b X_mu,b,i, with C N x T x T
	// and X, Z N x T x D.
	TokenMix(z, c, x Buffer, n, t, d int) error

	// ChannelOutput computes y_mu = g(h_mu) for N samples of T x T indices h (the teacher's
	// outputs): the row softmax of beta h, or the one-hot row argmax.
	ChannelOutput(ch Channel, y, h Buffer, n int) error
	// ChannelGOut computes g_out(y_mu; omega_mu, V) for N samples in z-coordinates and returns
	// sum_mu sum_{a<=b} g_mu,ab^2. Only the upper triangle of each omega_mu is read; g_mu is
	// written full and symmetric.
	ChannelGOut(ch Channel, g, y, omega Buffer, n int, v float64) (float64, error)

	// EighSym computes the eigendecomposition A = O diag(lambda) O^T of the symmetric D x D
	// matrix A (unchanged): vals holds lambda in ascending order and vecs holds O, column k the
	// unit eigenvector of lambda_k.
	EighSym(vals, vecs, a Buffer, d int) error
	// SpectralCompose computes out = O diag(f) O^T for D x D O and D values f.
	SpectralCompose(out, vecs, f Buffer, d int) error

	// Scal computes x = alpha x.
	Scal(x Buffer, alpha float64) error
	// Axpby computes y = a x + b y.
	Axpby(y Buffer, a float64, x Buffer, b float64) error
	// Dot returns sum_k x_k y_k.
	Dot(x, y Buffer) (float64, error)
	// SqDist returns sum_k (x_k - y_k)^2.
	SqDist(x, y Buffer) (float64, error)
	// AddDiag adds v to the diagonal of each of the N stacked T x T matrices in x.
	AddDiag(x Buffer, n, t int, v float64) error
	// SumDiag returns the sum of the diagonals of the N stacked T x T matrices in x.
	SumDiag(x Buffer, n, t int) (float64, error)
	// MulPattern computes x_mu,k *= p_k for N stacked blocks of m values (p has m values).
	MulPattern(x, p Buffer, n, m int) error

	// GaussianFill sets x_k = scale * G(seed, offset + k), where G(seed, i) is the i-th
	// standard normal of the counter-based stream of NormalAt: the same seed and offset give
	// the same bits on every device.
	GaussianFill(x Buffer, seed, offset uint64, scale float64) error
}

// ErrSize is wrapped by the errors of operations called with inconsistent sizes.
var ErrSize = fmt.Errorf("inconsistent sizes")

// CheckLen returns an ErrSize error naming op and the buffer when b holds fewer than n values.
func CheckLen(op, name string, b Buffer, n int) error {
	if b == nil {
		return fmt.Errorf("%s: buffer %s is nil", op, name)
	}
	if b.Len() < n {
		return fmt.Errorf("%s: buffer %s holds %d values, needs %d: %w", op, name, b.Len(), n, ErrSize)
	}
	return nil
}

// Bytes formats a byte count for messages: "3.2 GiB".
func Bytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// AllocAll allocates one buffer per size, or none: on an error it frees what it allocated and
// returns the error of the allocation that failed.
func AllocAll(dev Device, sizes ...int) ([]Buffer, error) {
	bufs := make([]Buffer, 0, len(sizes))
	for _, n := range sizes {
		b, err := dev.Alloc(n)
		if err != nil {
			FreeAll(dev, bufs...)
			return nil, err
		}
		bufs = append(bufs, b)
	}
	return bufs, nil
}

// FreeAll frees every non-nil buffer.
func FreeAll(dev Device, bufs ...Buffer) {
	for _, b := range bufs {
		if b != nil {
			dev.Free(b)
		}
	}
}

// Trainer is the optional operation set of gradient descent on the AIM student (docs/AIM.md
// section 4). Backends implement it beside Device; engine/gd asks for it by type assertion.
type Trainer interface {
	// SoftmaxLossGrad takes the student's outputs yhat = row-softmax(beta h) and the targets
	// y (N stacked T x T matrices), returns the loss scale * sum (yhat - y)^2 and writes
	// gamma = d loss / d h through the softmax Jacobian, row by row:
	// gamma_ab = beta yhat_ab (G_ab - sum_c G_ac yhat_ac) with G = 2 scale (yhat - y).
	SoftmaxLossGrad(ch Channel, gamma, yhat, y Buffer, n int, scale float64) (float64, error)
	// AdamStep applies one Adam update (step t >= 1, torch's form) to w with gradient g and
	// moments m, v (all of equal length): m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2,
	// w -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps).
	AdamStep(w, g, m, v Buffer, lr, b1, b2, eps float64, t int) error
}

// QuadFormSummer is the optional operation of the GAMP-RIE back-projection: out = alpha
// sum_mu X_mu^T C_mu X_mu (D x D) for N symmetric T x T matrices C_mu and N x T x D tokens X,
// with scratch of N T D values. A backend implements it where it beats TokenMix then Gemm (the
// CPU with a native BLAS: a symmetric rank-k update, half the multiply-adds); engine/amp asks
// for it by type assertion.
type QuadFormSummer interface {
	QuadFormSum(out, c, x, scratch Buffer, n, t, d int, alpha float64) error
}
