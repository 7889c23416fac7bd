// Package device defines the Device interface: float64 buffers that live on a compute device
// (the CPU, a CUDA GPU) and the operation set that GAMP-RIE and gradient descent are written
// in (docs/design.md). Backends (package cpu, package device/cuda) implement Backend;
// New puts the checked front before one, and that front is the Device the engine uses;
// package backend opens one by name. The engine never touches a backend directly.
//
// Conventions: every matrix is row-major and packed (leading dimension = row length). A batch
// of N matrices of shape r x c is one buffer of N*r*c values, sample after sample. The front
// checks every operation's arguments once, here, before the backend is called, and returns
// errors that name the device and the operation ("cpu Gemm: buffer a holds 12 values, needs
// 16: inconsistent sizes"); a backend's own failures (a CUDA status, an allocation) come back
// as errors with context, never as panics.
//
// Views: View(b, off, n) is the sub-range [off, off+n) of a buffer, usable as any argument of
// any operation, so work can proceed chunk by chunk. It shares the buffer's memory and
// belongs to the same device; Free of a view does nothing, and freeing the buffer ends its
// views.
//
// Overlap: each operation reads or writes a range of each buffer (its first values, as many as
// the sizes say; the whole buffer for the element-wise operations), and two ranges overlap
// when they share a value of one allocation (two views of one buffer may). Outputs must not
// overlap inputs: C of Gemm, H of TokenDots, Z of TokenMix, out of SpectralCompose, out and
// scratch of QuadFormSum; EighSym's three ranges must not overlap; ChannelGOut's g must not
// overlap y, nor MulPattern's p x. In place is allowed where the range is the same: Copy's dst
// and src (then nothing is done), ChannelOutput's y and h, ChannelGOut's g and omega, Axpby's
// x and y, SoftmaxLossGrad's gamma and yhat or y, and any two of AdamStep's w, g, m, v must be
// the same range or not overlap. Inputs may overlap each other (A = B in Gemm). The
// element-wise operations Axpby, Dot and SqDist take buffers of equal length; Copy needs dst
// at least as long as src.
package device

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/aimtheory/aim/channel"
)

// Buffer is an array of float64 on a device, or a view of one (View). Only the device that
// allocated it may use it.
type Buffer interface {
	// Len is the number of float64 values; 0 once the buffer (or the buffer a view is of) is
	// freed.
	Len() int
}

// Info describes a device for humans and for manifests.
type Info struct {
	Name        string // "cpu", "cuda"
	Description string // e.g. "cpu: 2 goroutines, gonum v0.17 (pure Go BLAS/LAPACK)"
	TotalBytes  uint64 // memory of the device
	FreeBytes   uint64 // memory available for new buffers now
}

// Ops is the operation set of GAMP-RIE, shared by Device (what the engine calls) and Backend
// (what a backend implements). The argument rules stated here are checked once, by the checked
// front (New), before a backend is called.
//
// Coordinates of the channel operations: per sample the T x T matrices omega and g are stored
// full and symmetric in the z-coordinates of docs/theory/aim.md section 3, z_ab = tau_ab h_ab with
// tau_aa = 1 and tau_ab = sqrt(2) (a != b); V is the z-coordinate variance V_z = 2 V_u.
type Ops interface {
	// Upload copies src into dst[0:len(src)].
	Upload(dst Buffer, src []float64) error
	// Download copies src[0:len(dst)] into dst.
	Download(dst []float64, src Buffer) error
	// Copy sets dst[0:src.Len()] = src.
	Copy(dst, src Buffer) error

	// Gemm computes C = alpha op(A) op(B) + beta C with op(A) m x k, op(B) k x n and C m x n.
	// A is stored m x k, or k x m when transA; B is stored k x n, or n x k when transB.
	Gemm(transA, transB bool, m, n, k int, alpha float64, a, b Buffer, beta float64, c Buffer) error
	// GemmStridedBatched computes C_p = alpha op(A_p) op(B_p) + beta C_p for p < batch: the
	// Gemm of the matrices that start at value p strideA of a, p strideB of b and p strideC of
	// c, each stored as Gemm's. A stride of 0 makes every product share one A or one B; C's
	// matrices overlap neither one another (strideC >= m n when batch > 1) nor A or B. Each
	// product is the one Gemm computes, to the bit where a backend's Gemm is deterministic.
	GemmStridedBatched(transA, transB bool, m, n, k int, alpha float64, a Buffer, strideA int, b Buffer, strideB int,
		beta float64, c Buffer, strideC int, batch int) error
	// TokenDots computes H_mu,ab = sum_i Y_mu,a,i X_mu,b,i for N samples: Y, X are N x T x D,
	// H is N x T x T.
	TokenDots(h, y, x Buffer, n, t, d int) error
	// TokenMix computes Z_mu = C_mu X_mu: Z_mu,a,i = sum_b C_mu,a,b X_mu,b,i, with C N x T x T
	// and X, Z N x T x D.
	TokenMix(z, c, x Buffer, n, t, d int) error

	// ChannelOutput computes y_mu = g(h_mu) for N samples of T x T indices h (the teacher's
	// outputs): the row softmax of beta h, or the one-hot row argmax.
	ChannelOutput(ch channel.Spec, y, h Buffer, n int) error
	// ChannelGOut computes g_out(y_mu; omega_mu, V) for N samples in z-coordinates and returns
	// sum_mu sum_{a<=b} g_mu,ab^2. Only the upper triangle of each omega_mu is read; g_mu is
	// written full and symmetric.
	ChannelGOut(ch channel.Spec, g, y, omega Buffer, n int, v float64) (float64, error)

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
	// the same bits on every device. On a view at offset o of a buffer, GaussianFill(view,
	// seed, offset + o, scale) writes exactly the values a fill of the whole buffer from offset
	// writes there.
	GaussianFill(x Buffer, seed, offset uint64, scale float64) error
}

// Device is a compute device with its buffers and the operation set of GAMP-RIE: what the
// engine calls. Every Device is the checked front of a Backend (New), or a wrapper that embeds
// one (a counter in tests, later a device group), so every call has its arguments checked
// before a backend sees them, and its errors name the operation ("cpu Gemm: ...").
type Device interface {
	// Info describes the device and its memory.
	Info() Info
	// Capabilities returns the device's optional operation sets, checked like the others; a
	// nil field is a set the device lacks. A wrapper that embeds a Device forwards them all.
	Capabilities() Caps
	// Channels declares the output channels the device computes (its backend's): the channel
	// operations refuse the others, and a job asks before it allocates anything.
	Channels() channel.Support
	// Close releases what the device holds (a GPU context and its handles; the CPU's
	// scratch). Closing twice is not an error; after Close every operation and Alloc return
	// an error wrapping ErrClosed, and Free does nothing.
	Close() error

	// Alloc returns a zeroed buffer of n values, or an error saying how many bytes were asked
	// for and how many are free.
	Alloc(n int) (Buffer, error)
	// Free releases a buffer; using it, or a view of it, afterwards is an error. Freeing nil,
	// a buffer of another device, a freed buffer or a view does nothing: a view is released
	// with its buffer.
	Free(b Buffer)
	// Scratch returns the bytes of device memory the backend keeps between calls, grown on
	// demand and held until Close, once it has run the operations of w (the largest of each
	// kind): what a memory plan adds to the buffers it allocates.
	Scratch(w Work) uint64

	Ops

	// checked marks the implementations of package device (and wrappers that embed one).
	checked()
}

// Backend is what a compute device implements (package cpu, package device/cuda); New puts the
// checked front before it. The front calls a Backend only with arguments that satisfy the
// rules of Ops and Device: every buffer is one of its own live buffers, made by its Alloc or
// Slice, holding at least the values the operation reads or writes; sizes are non-negative and
// their products do not overflow; outputs do not overlap inputs except where Ops allows it;
// channels are valid (channel.Spec.Validate) and among those the backend declares (Channels),
// and V is positive and finite. So a backend checks nothing of that; what it reports are its
// own failures (a CUDA status, an allocation, a library error, a limit of its own such as a C
// int), as errors that name the operation.
type Backend interface {
	// Info describes the device and its memory; Info().Name ("cpu", "cuda") starts the
	// operation names of the front's errors.
	Info() Info
	// Capabilities returns the backend's optional operation sets (nil fields: absent), called
	// by the front with checked arguments like the rest.
	Capabilities() Caps
	// Channels declares the valid channels (channel.Spec) the backend computes; the front
	// reads it once and refuses the others before the backend is called.
	Channels() channel.Support
	// Close releases everything the backend holds. The front calls it once.
	Close() error
	// Alloc returns a zeroed buffer of n >= 0 values (n < 2^60), or an error saying how many
	// bytes were asked for and how many are free.
	Alloc(n int) (Buffer, error)
	// Free releases a buffer returned by Alloc (never a slice); the front calls it once.
	Free(b Buffer)
	// Scratch returns the bytes the backend keeps between calls once it has run the operations
	// of w (Device.Scratch); the front passes no negative size.
	Scratch(w Work) uint64
	// Slice returns a buffer of the n values of b (from Alloc) that start at value off, with
	// 0 <= off, 0 <= n and off + n <= b.Len(), sharing b's memory: a CPU sub-slice, a device
	// pointer plus an offset. It allocates nothing on the device and is never freed.
	Slice(b Buffer, off, n int) Buffer

	Ops
}

// Caps are the optional operation sets of a device, asked for by name: dev.Capabilities().
// Trainer is nil where the device has no training operations. A wrapper that embeds a Device
// forwards the whole struct, so it cannot lose one; the checked front wraps each set of its
// backend with the same argument checks as the rest.
type Caps struct {
	// Trainer: the softmax loss gradient and Adam of gradient descent (engine/gd).
	Trainer Trainer
	// QuadFormSummer: the symmetric back-projection of GAMP-RIE (engine/amp).
	QuadFormSummer QuadFormSummer
	// DeepSampler: the importance-sampled posterior moments of the SMI deep attention channel
	// at L = 3 (engine/smi/se and engine/smi/amp).
	DeepSampler DeepSampler
	// PrecisionGemmer: matrix products at reduced precision (FP32, TF32, BF16x9) for the large
	// contractions of engine/amp and engine/gd; absent, a device computes FP64 only.
	PrecisionGemmer PrecisionGemmer
	// Prefetcher: normals drawn while other operations run, for the next chunk of streamed
	// tokens (engine/aim's Data.EachChunk).
	Prefetcher Prefetcher
}

// Prefetcher is the optional operation that fills a buffer with normals while the device runs
// other operations (Caps.Prefetcher): streamed tokens draw the next chunk while the products of
// the current one run (on a GPU, on a second stream).
type Prefetcher interface {
	// GaussianFillAsync starts GaussianFill(x, seed, offset, scale) and returns without
	// waiting for it. wait blocks until x holds the values and returns the fill's error; it is
	// called exactly once. Until it returns no other operation may use x, which the checked
	// front enforces: it refuses them, and Free and Close wait for the fill first.
	GaussianFillAsync(x Buffer, seed, offset uint64, scale float64) (wait func() error, err error)
}

// Names returns the names of the capabilities present ("Trainer", "QuadFormSummer"), in the
// order of the struct's fields: every field counts, so a wrapper that drops one is seen.
func (c Caps) Names() []string {
	var names []string
	v := reflect.ValueOf(c)
	for i := 0; i < v.NumField(); i++ {
		if !v.Field(i).IsNil() {
			names = append(names, v.Type().Field(i).Name)
		}
	}
	return names
}

// ErrClosed is wrapped by the errors of operations on a closed device.
var ErrClosed = errors.New("device is closed")

// ErrSize is wrapped by the errors of operations called with inconsistent sizes.
var ErrSize = fmt.Errorf("inconsistent sizes")

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

// GemmBatch is GemmStridedBatched for a batch that may hold one product: two products or more
// are the device's batched product, one is Gemm on views (a library's tuned path for a single
// product, and on a GPU the same kernel as an unbatched caller's).
func GemmBatch(dev Device, transA, transB bool, m, n, k int, alpha float64, a Buffer, strideA int,
	b Buffer, strideB int, beta float64, c Buffer, strideC, batch int) error {
	if batch != 1 {
		return dev.GemmStridedBatched(transA, transB, m, n, k, alpha, a, strideA, b, strideB, beta, c, strideC, batch)
	}
	av, err1 := View(a, 0, m*k)
	bv, err2 := View(b, 0, k*n)
	cv, err3 := View(c, 0, m*n)
	if err := errors.Join(err1, err2, err3); err != nil {
		return fmt.Errorf("GemmBatch: %w", err)
	}
	return dev.Gemm(transA, transB, m, n, k, alpha, av, bv, beta, cv)
}

// FreeAll frees every non-nil buffer.
func FreeAll(dev Device, bufs ...Buffer) {
	for _, b := range bufs {
		if b != nil {
			dev.Free(b)
		}
	}
}

// Trainer is the optional operation set of gradient descent on the AIM student (docs/theory/aim.md
// section 4): Caps.Trainer, which engine/gd asks for.
type Trainer interface {
	// SoftmaxLossGrad takes the student's outputs yhat = row-softmax(beta h) and the targets
	// y (N stacked T x T matrices), returns the loss scale * sum (yhat - y)^2 and writes
	// gamma, the symmetric part of d loss / d h: through the softmax Jacobian, row by row,
	// g_ab = beta yhat_ab (G_ab - sum_c G_ac yhat_ac) with G = 2 scale (yhat - y), and
	// gamma_ab = (g_ab + g_ba) / 2. The indices h are symmetric, so only this part reaches the
	// gradient in S, and the back-projection sum_mu X_mu^T gamma_mu X_mu is symmetric.
	SoftmaxLossGrad(ch channel.Spec, gamma, yhat, y Buffer, n int, scale float64) (float64, error)
	// AdamStep applies one Adam update (step t >= 1, torch's form) to w with gradient g and
	// moments m, v (all of equal length): m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2,
	// w -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps).
	AdamStep(w, g, m, v Buffer, lr, b1, b2, eps float64, t int) error
}

// QuadFormSummer is the optional operation of the GAMP-RIE back-projection: out = alpha
// sum_mu X_mu^T C_mu X_mu (D x D) for N symmetric T x T matrices C_mu and N x T x D tokens X,
// with scratch of N T D values. A backend implements it where it beats TokenMix then Gemm with
// half the multiply-adds (the CPU: symmetric rank-k updates; the GPU: cuBLAS's Dsyrkx on one
// triangle of the symmetric X^T (C X)): Caps.QuadFormSummer, which engine/amp asks for.
type QuadFormSummer interface {
	// QuadFormSum computes out = alpha sum_mu X_mu^T C_mu X_mu, exactly symmetric, overwriting
	// scratch.
	QuadFormSum(out, c, x, scratch Buffer, n, t, d int, alpha float64) error
}

// DeepSampler is the optional operation of the sequence multi-index model's deep attention
// channel with M = 2 tokens and channel.DeepMinL <= L <= channel.DeepMaxL layers (docs/theory/smi.md
// 2.2): the posterior moments of many channel integrals at once by channel.DeepSampler's
// importance sampling (Caps.DeepSampler, which engine/smi/se and engine/smi/amp ask for). The
// CPU backend runs the CPU twin channel.DeepSampleBatch, the CUDA backend the kernel
// deep_sample (one task per thread, the same rule); results agree to rounding.
type DeepSampler interface {
	// DeepSample estimates n tasks' posterior moments at L layers, each from draws >= 2 draws,
	// with the channel's skip strength c and inverse temperature beta (both finite): task t
	// reads in[t channel.DeepIn(L) : (t+1) channel.DeepIn(L)] (its slot s, u, omega, V) and
	// writes channel.DeepOut(L) values to out, whose status entry says whether there is an
	// estimate. Draw i of a task takes the normals G(seed, offset + s stride + d i + k), k < d =
	// channel.DeepNormals(L), of the stream of NormalAt; offset and stride are even and
	// stride >= d draws, so tasks of distinct slots draw distinct normals. out must not overlap
	// in.
	DeepSample(out, in Buffer, n, L, draws int, c, beta float64, seed, offset, stride uint64) error
}
