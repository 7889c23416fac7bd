package cuda

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/kernels"
)

// launch launches kernel name with grid blocks of kernels.Block threads on the device's stream.
// Arguments are passed by value in their C types: uint64 (pointers, unsigned long long), int64
// (long long), int32 (int) and float64 (double). Executor only.
func (d *backend) launch(name string, grid uint32, args ...any) error {
	return d.launchOn(d.stream, name, grid, args...)
}

// launchOn is launch on the given stream (the device's, or its second: side). Executor only.
func (d *backend) launchOn(stream uintptr, name string, grid uint32, args ...any) error {
	f, ok := d.fn[name]
	if !ok {
		return fmt.Errorf("kernel %s is not loaded", name)
	}
	if err := checkArgs(name, args); err != nil {
		return err
	}
	params := make([]unsafe.Pointer, len(args))
	var pin runtime.Pinner
	defer pin.Unpin()
	for i, a := range args {
		switch v := a.(type) {
		case uint64:
			p := new(uint64)
			*p = v
			params[i] = unsafe.Pointer(p)
		case int64:
			p := new(int64)
			*p = v
			params[i] = unsafe.Pointer(p)
		case int32:
			p := new(int32)
			*p = v
			params[i] = unsafe.Pointer(p)
		case float64:
			p := new(float64)
			*p = v
			params[i] = unsafe.Pointer(p)
		default:
			return fmt.Errorf("kernel %s: argument %d has unsupported type %T", name, i, a)
		}
		pin.Pin(params[i])
	}
	var pp unsafe.Pointer
	if len(params) > 0 {
		pin.Pin(&params[0])
		pp = unsafe.Pointer(&params[0])
	}
	r := d.drv.cuLaunchKernel(f, grid, 1, 1, kernels.Block, 1, 1, 0, stream, pp, nil)
	runtime.KeepAlive(params)
	return d.drv.cuErr("cuLaunchKernel("+name+")", r)
}

// sync waits for the device's stream. Executor only.
func (d *backend) sync(what string) error {
	if err := d.drv.cuErr("cuStreamSynchronize", d.drv.cuStreamSynchronize(d.stream)); err != nil {
		return fmt.Errorf("after %s: %w", what, err)
	}
	return nil
}

// launchSync launches one kernel and waits for it. Executor only.
func (d *backend) launchSync(name string, grid uint32, args ...any) error {
	if err := d.launch(name, grid, args...); err != nil {
		return err
	}
	return d.sync(name)
}

// partials launches a reduction kernel that writes nPart partials into the scratch d.part,
// downloads them and returns their sum in order. args gives the kernel arguments for the
// device pointer of the partials. Executor only.
func (d *backend) partials(name string, grid uint32, nPart int, args func(part uint64) []any) (float64, error) {
	if err := d.part.grow(d, nPart); err != nil {
		return 0, err
	}
	if err := d.launchSync(name, grid, args(d.part.ptr)...); err != nil {
		return 0, err
	}
	host := make([]float64, nPart)
	if err := d.drv.cuErr("cuMemcpyDtoH_v2", d.drv.cuMemcpyDtoH(unsafe.Pointer(&host[0]), d.part.ptr, 8*uint64(nPart))); err != nil {
		return 0, err
	}
	var s float64
	for _, v := range host {
		s += v
	}
	return s, nil
}

// fitsInt32 checks that every size fits a C int.
func fitsInt32(op string, names string, vals ...int) error {
	for _, v := range vals {
		if v > math.MaxInt32 {
			return fmt.Errorf("%s: size %d of (%s) exceeds a C int: %w", op, v, names, device.ErrSize)
		}
	}
	return nil
}

// ---------------------------------------------------------------------------------------
// BLAS and LAPACK.

// rowMajor returns cuBLAS's operations and leading dimensions for the row-major product
// C = op(A) op(B) (m x n, inner k) computed as the column-major C^T = op(B)^T op(A)^T: the
// operation of A and its leading dimension, then B's (each at least 1).
func rowMajor(transA, transB bool, m, n, k int) (ta, lda, tb, ldb int32) {
	ta, tb, lda, ldb = cublasOpN, cublasOpN, int32(max(1, k)), int32(max(1, n))
	if transA {
		ta, lda = cublasOpT, int32(max(1, m))
	}
	if transB {
		tb, ldb = cublasOpT, int32(max(1, k))
	}
	return ta, lda, tb, ldb
}

// gemm computes row-major C = alpha op(A) op(B) + beta C with cuBLAS's column-major Dgemm on
// swapped operands: C^T = op(B)^T op(A)^T. Executor only.
func (d *backend) gemm(transA, transB bool, m, n, k int, alpha float64, a, b uint64, beta float64, c uint64) error {
	ta, lda, tb, ldb := rowMajor(transA, transB, m, n, k)
	al, be := alpha, beta
	st := d.blas.cublasDgemm(d.cublasH, tb, ta, int32(n), int32(m), int32(k),
		&al, b, ldb, a, lda, &be, c, int32(max(1, n)))
	return cublasErr("cublasDgemm_v2", st)
}

// Gemm computes C = alpha op(A) op(B) + beta C (row-major) with cuBLAS Dgemm. C does not
// overlap A or B; m, n and k must fit a C int.
func (d *backend) Gemm(transA, transB bool, m, n, k int, alpha float64, a, b device.Buffer, beta float64, c device.Buffer) error {
	const op = "cuda Gemm"
	if err := fitsInt32(op, "m, n, k", m, n, k); err != nil {
		return err
	}
	ab, bb, cb := buf(a), buf(b), buf(c)
	if m == 0 || n == 0 {
		return nil
	}
	return wrap(op, d.do(func() error {
		if k == 0 { // op(A) op(B) = 0: C = beta C, with beta = 0 overwriting (as the cpu does)
			if beta == 0 {
				if err := d.drv.cuErr("cuMemsetD8_v2", d.drv.cuMemsetD8(cb.ptr, 0, 8*uint64(m*n))); err != nil {
					return err
				}
				return d.drv.cuErr("cuCtxSynchronize", d.drv.cuCtxSynchronize())
			}
			return d.launchSync("scal", kernels.GridElems(int64(m*n)), cb.ptr, int64(m*n), beta)
		}
		if err := d.gemm(transA, transB, m, n, k, alpha, ab.ptr, bb.ptr, beta, cb.ptr); err != nil {
			return err
		}
		return d.sync("cublasDgemm_v2")
	}))
}

// GemmStridedBatched computes, for every p < batch, C_p = alpha op(A_p) op(B_p) + beta C_p
// (row-major, packed, with A_p at a + p strideA values and so on) with one
// cublasDgemmStridedBatched call, on swapped operands as gemm. m, n, k, batch and the leading
// dimensions must fit a C int.
func (d *backend) GemmStridedBatched(transA, transB bool, m, n, k int, alpha float64, a device.Buffer, strideA int,
	b device.Buffer, strideB int, beta float64, c device.Buffer, strideC int, batch int) error {
	const op = "cuda GemmStridedBatched"
	if err := fitsInt32(op, "m, n, k, batch", m, n, k, batch); err != nil {
		return err
	}
	if batch == 0 || m == 0 || n == 0 {
		return nil
	}
	if k == 0 { // op(A) op(B) = 0: C_p = beta C_p, product by product as Gemm does it
		for p := 0; p < batch; p++ {
			if err := d.Gemm(transA, transB, m, n, 0, alpha, a, b, beta, d.Slice(c, p*strideC, m*n)); err != nil {
				return err
			}
		}
		return nil
	}
	ab, bb, cb := buf(a), buf(b), buf(c)
	ta, lda, tb, ldb := rowMajor(transA, transB, m, n, k)
	return wrap(op, d.do(func() error {
		al, be := alpha, beta
		st := d.blas.cublasDgemmStridedBatched(d.cublasH, tb, ta, int32(n), int32(m), int32(k),
			&al, bb.ptr, ldb, int64(strideB), ab.ptr, lda, int64(strideA),
			&be, cb.ptr, int32(max(1, n)), int64(strideC), int32(batch))
		if err := cublasErr("cublasDgemmStridedBatched", st); err != nil {
			return err
		}
		return d.sync("cublasDgemmStridedBatched")
	}))
}

// EighSym computes A = O diag(lambda) O^T for the symmetric d x d matrix A, which is left
// unchanged (only its upper triangle is read): A is copied into a scratch matrix, cuSOLVER's
// Dsyevd overwrites the copy with the eigenvectors (column-major, its lower triangle being
// A's row-major upper triangle), its info output is checked, and cublasDgeam transposes the
// eigenvectors into vecs (row-major, column k the eigenvector of lambda_k). vals gets lambda
// in ascending order. The three buffers do not overlap; d must fit a C int.
func (d *backend) EighSym(vals, vecs, a device.Buffer, dd int) error {
	return d.eigh(eighSyevd, vals, vecs, a, dd)
}

// eighMethod is a dense symmetric eigensolver of cuSOLVER.
type eighMethod int

const (
	eighSyevd eighMethod = iota // Dsyevd: tridiagonalisation and divide and conquer (EighSym's)
	eighSyevj                   // Dsyevj: Jacobi rotations to machine precision (tolerance 0, at most 100 sweeps)
)

func (m eighMethod) String() string { return [...]string{"syevd", "syevj"}[m] }

// eigh is EighSym with the eigensolver m (BenchmarkEighSym times each; EighSym uses syevd).
func (d *backend) eigh(m eighMethod, vals, vecs, a device.Buffer, dd int) error {
	const op = "cuda EighSym"
	if err := fitsInt32(op, "d", dd); err != nil {
		return err
	}
	wb, vb, ab := buf(vals), buf(vecs), buf(a)
	if dd == 0 {
		return nil
	}
	call := "cusolverDnD" + m.String()
	return wrap(op, d.do(func() error {
		if err := d.square.grow(d, dd*dd); err != nil {
			return err
		}
		w := d.square.ptr
		if err := d.drv.cuErr("cuMemcpyDtoD_v2", d.drv.cuMemcpyDtoD(w, ab.ptr, 8*uint64(dd*dd))); err != nil {
			return err
		}
		if err := d.drv.cuErr("cuCtxSynchronize", d.drv.cuCtxSynchronize()); err != nil {
			return err
		}
		if m == eighSyevj && d.syevj == 0 {
			if d.sol.cusolverDnDsyevj == nil || d.sol.cusolverDnCreateSyevjInfo == nil || d.sol.cusolverDnDsyevjBufferSize == nil {
				return fmt.Errorf("%s: not in this cuSOLVER", call)
			}
			var info uintptr
			if err := cusolverErr("cusolverDnCreateSyevjInfo", d.sol.cusolverDnCreateSyevjInfo(&info)); err != nil {
				return err
			}
			d.syevj = info
			if d.sol.cusolverDnXsyevjSetTolerance != nil {
				if err := cusolverErr("cusolverDnXsyevjSetTolerance", d.sol.cusolverDnXsyevjSetTolerance(info, 0)); err != nil {
					return err
				}
			}
			if d.sol.cusolverDnXsyevjSetMaxSweeps != nil {
				if err := cusolverErr("cusolverDnXsyevjSetMaxSweeps", d.sol.cusolverDnXsyevjSetMaxSweeps(info, 100)); err != nil {
					return err
				}
			}
		}
		lwork, err := d.eighWork(m, dd, w, wb.ptr)
		if err != nil {
			return err
		}
		if err := d.work.grow(d, int(max(lwork, 1))); err != nil {
			return err
		}
		var st int32
		if m == eighSyevj {
			st = d.sol.cusolverDnDsyevj(d.cusolverH, cusolverEigModeVector, cublasFillLower, int32(dd), w, int32(dd), wb.ptr,
				d.work.ptr, lwork, d.info.ptr, d.syevj)
		} else {
			st = d.sol.cusolverDnDsyevd(d.cusolverH, cusolverEigModeVector, cublasFillLower, int32(dd), w, int32(dd), wb.ptr,
				d.work.ptr, lwork, d.info.ptr)
		}
		if err := cusolverErr(call, st); err != nil {
			return err
		}
		if err := d.sync(call); err != nil {
			return err
		}
		var info int32
		if err := d.drv.cuErr("cuMemcpyDtoH_v2", d.drv.cuMemcpyDtoH(unsafe.Pointer(&info), d.info.ptr, 4)); err != nil {
			return err
		}
		switch {
		case info < 0:
			return fmt.Errorf("%s: parameter %d is wrong (info = %d)", call, -info, info)
		case info > 0 && m == eighSyevj:
			return fmt.Errorf("%s did not converge (d = %d) to machine precision in 100 sweeps (info = %d)", call, dd, info)
		case info > 0:
			return fmt.Errorf("%s did not converge (d = %d): %d off-diagonal elements of an intermediate tridiagonal form did not converge to zero (info = %d)", call, dd, info, info)
		}
		one, zero := 1.0, 0.0
		if err := cublasErr("cublasDgeam", d.blas.cublasDgeam(d.cublasH, cublasOpT, cublasOpN, int32(dd), int32(dd),
			&one, w, int32(dd), &zero, w, int32(dd), vb.ptr, int32(dd))); err != nil {
			return err
		}
		return d.sync("cublasDgeam")
	}))
}

// eighWork returns the cuSOLVER workspace, in values, of the eigensolver m at order dd
// (its _bufferSize query, asked once per method and order), for a matrix at a and eigenvalues
// at w: device pointers, or 0 for a query ahead of the buffers (Scratch). Executor only.
func (d *backend) eighWork(m eighMethod, dd int, a, w uint64) (int32, error) {
	key := [2]int{int(m), dd}
	if lwork, ok := d.lwork[key]; ok {
		return lwork, nil
	}
	var lwork, st int32
	if m == eighSyevj {
		st = d.sol.cusolverDnDsyevjBufferSize(d.cusolverH, cusolverEigModeVector, cublasFillLower, int32(dd), a, int32(dd), w, &lwork, d.syevj)
	} else {
		st = d.sol.cusolverDnDsyevdBufferSize(d.cusolverH, cusolverEigModeVector, cublasFillLower, int32(dd), a, int32(dd), w, &lwork)
	}
	if err := cusolverErr("cusolverDnD"+m.String()+"_bufferSize", st); err != nil {
		return 0, err
	}
	d.lwork[key] = lwork
	return lwork, nil
}

// SpectralCompose computes out = O diag(f) O^T for d x d O and d values f: the scale_columns
// kernel writes O diag f into a scratch matrix, then one Dgemm multiplies it by O^T. out does
// not overlap vecs or f; d must fit a C int.
func (d *backend) SpectralCompose(out, vecs, f device.Buffer, dd int) error {
	const op = "cuda SpectralCompose"
	if err := fitsInt32(op, "d", dd); err != nil {
		return err
	}
	rb, vb, fb := buf(out), buf(vecs), buf(f)
	if dd == 0 {
		return nil
	}
	return wrap(op, d.do(func() error {
		if err := d.square.grow(d, dd*dd); err != nil {
			return err
		}
		s := d.square.ptr
		if err := d.launch("scale_columns", kernels.GridElems(int64(dd)*int64(dd)), s, vb.ptr, fb.ptr, int32(dd)); err != nil {
			return err
		}
		if err := d.gemm(false, true, dd, dd, dd, 1, s, vb.ptr, 0, rb.ptr); err != nil {
			return err
		}
		return d.sync("scale_columns + cublasDgemm_v2")
	}))
}

// ---------------------------------------------------------------------------------------
// Tokens.

// TokenDots computes H_mu,ab = sum_i Y_mu,a,i X_mu,b,i with the token_dots kernel (one block
// per sample). H does not overlap Y or X; t and d must fit a C int.
func (d *backend) TokenDots(h, y, x device.Buffer, n, t, dd int) error {
	const op = "cuda TokenDots"
	if err := fitsInt32(op, "t, d", t, dd); err != nil {
		return err
	}
	hb, yb, xb := buf(h), buf(y), buf(x)
	if n == 0 || t == 0 {
		return nil
	}
	return wrap(op, d.do(func() error {
		return d.launchSync("token_dots", kernels.GridSamples(int64(n)), hb.ptr, yb.ptr, xb.ptr, int64(n), int32(t), int32(dd))
	}))
}

// TokenMix computes Z_mu = C_mu X_mu with the token_mix kernel (one thread per (mu, i)). Z does
// not overlap C or X; t and d must fit a C int.
func (d *backend) TokenMix(z, c, x device.Buffer, n, t, dd int) error {
	const op = "cuda TokenMix"
	if err := fitsInt32(op, "t, d", t, dd); err != nil {
		return err
	}
	zb, cb, xb := buf(z), buf(c), buf(x)
	if n == 0 || t == 0 || dd == 0 {
		return nil
	}
	return wrap(op, d.do(func() error {
		return d.launchSync("token_mix", kernels.GridElems(int64(n)*int64(dd)), zb.ptr, cb.ptr, xb.ptr, int64(n), int32(t), int32(dd))
	}))
}

// QuadFormSum computes out = alpha sum_mu X_mu^T C_mu X_mu (device.QuadFormSummer): scratch =
// C X (token_mix, as TokenMix), then cuBLAS's Dsyrkx, which computes one triangle of a product
// known to be symmetric, here X^T (C X), with half of Gemm's multiply-adds, into the square
// scratch zeroed first; then out = L + L^T (Dgeam) with its diagonal, counted twice, halved
// (Dscal). n t and d must fit a C int.
func (d *backend) QuadFormSum(out, c, x, scratch device.Buffer, n, t, dd int, alpha float64) error {
	const op = "cuda QuadFormSum"
	if err := fitsInt32(op, "n t, d", n*t, dd); err != nil {
		return err
	}
	ob, cb, xb, sb := buf(out), buf(c), buf(x), buf(scratch)
	if dd == 0 {
		return nil
	}
	return wrap(op, d.do(func() error {
		if n > 0 && t > 0 {
			if err := d.launch("token_mix", kernels.GridElems(int64(n)*int64(dd)), sb.ptr, cb.ptr, xb.ptr, int64(n), int32(t), int32(dd)); err != nil {
				return err
			}
		}
		if err := d.square.grow(d, dd*dd); err != nil {
			return err
		}
		sq := d.square.ptr
		if err := d.drv.cuErr("cuMemsetD8_v2", d.drv.cuMemsetD8(sq, 0, 8*uint64(dd*dd))); err != nil {
			return err
		}
		al, zero, one, half := alpha, 0.0, 1.0, 0.5
		if n > 0 && t > 0 {
			if err := cublasErr("cublasDsyrkx", d.blas.cublasDsyrkx(d.cublasH, cublasFillLower, cublasOpN, int32(dd), int32(n*t),
				&al, xb.ptr, int32(dd), sb.ptr, int32(dd), &zero, sq, int32(dd))); err != nil {
				return err
			}
		}
		if err := cublasErr("cublasDgeam", d.blas.cublasDgeam(d.cublasH, cublasOpN, cublasOpT, int32(dd), int32(dd),
			&one, sq, int32(dd), &one, sq, int32(dd), ob.ptr, int32(dd))); err != nil {
			return err
		}
		if err := cublasErr("cublasDscal_v2", d.blas.cublasDscal(d.cublasH, int32(dd), &half, ob.ptr, int32(dd+1))); err != nil {
			return err
		}
		return d.sync("cublasDsyrkx")
	}))
}

// ---------------------------------------------------------------------------------------
// Channels.

// Channels declares the channels the CUDA backend computes, known without a GPU: the kernels
// of kernels/channel.cu compute every valid noiseless channel (softmax, hardmax at T = 2 and,
// by hardmaxt_gout, at 3 <= T <= 6); the softmax with label noise has no kernel.
var Channels = channel.Support{}

// Precisions declares the precisions of the CUDA backend's matrix products, known without a
// GPU: FP64 (Dgemm) and, through its device.PrecisionGemmer (GemmPrecision: cuBLAS's GemmEx),
// FP32, TF32 and BF16x9.
var Precisions = device.AllPrecisions()

// Channels returns the package's Channels: the front refuses the softmax with label noise
// before this backend is called.
func (d *backend) Channels() channel.Support { return Channels }

// checkChannel checks what only the kernels need of ch: T fits the kernels' int (the front has
// checked the channel's parameters, channel.Spec.Validate, and that it is one of Channels).
func checkChannel(op string, ch channel.Spec) error {
	return fitsInt32(op, "t", ch.T)
}

// ChannelOutput computes y_mu = g(h_mu) with the softmax_output or hardmax_output kernel (one
// thread per sample). y may be h.
func (d *backend) ChannelOutput(ch channel.Spec, y, h device.Buffer, n int) error {
	const op = "cuda ChannelOutput"
	if err := checkChannel(op, ch); err != nil {
		return err
	}
	yb, hb := buf(y), buf(h)
	if n == 0 {
		return nil
	}
	grid := kernels.GridThreads(int64(n))
	return wrap(op, d.do(func() error {
		if ch.Kind == channel.KindSoftmax {
			return d.launchSync("softmax_output", grid, yb.ptr, hb.ptr, int64(n), int32(ch.T), ch.Beta)
		}
		return d.launchSync("hardmax_output", grid, yb.ptr, hb.ptr, int64(n), int32(ch.T))
	}))
}

// ChannelGOut computes g_mu = g_out(y_mu; omega_mu, V) with the softmax_gout or hardmax_gout
// kernel (one thread per sample), which also writes one partial square-sum per block, or, for
// hardmax at T > 2, hardmaxt_gout (one block per sample, one partial per sample); the partials
// are added on the host in order. g may be omega; g does not overlap y.
func (d *backend) ChannelGOut(ch channel.Spec, g, y, omega device.Buffer, n int, v float64) (float64, error) {
	const op = "cuda ChannelGOut"
	if err := checkChannel(op, ch); err != nil {
		return 0, err
	}
	gb, yb, ob := buf(g), buf(y), buf(omega)
	if n == 0 {
		return 0, nil
	}
	grid := kernels.GridThreads(int64(n))
	var s float64
	err := d.do(func() error {
		var err error
		switch {
		case ch.Kind == channel.KindSoftmax:
			s, err = d.partials("softmax_gout", grid, int(grid), func(part uint64) []any {
				return []any{gb.ptr, part, yb.ptr, ob.ptr, int64(n), int32(ch.T), ch.Beta, v}
			})
		case ch.T > 2:
			// Hardmax at T > 2: a block per sample, one partial per sample.
			points, tol := ch.Lattice()
			s, err = d.partials("hardmaxt_gout", kernels.GridSamples(int64(n)), n, func(part uint64) []any {
				return []any{gb.ptr, part, yb.ptr, ob.ptr, int64(n), int32(ch.T), v, int32(points), int32(channel.HardmaxTShifts), tol}
			})
		default:
			paper := int32(0)
			if ch.PaperCompat {
				paper = 1
			}
			s, err = d.partials("hardmax_gout", grid, int(grid), func(part uint64) []any {
				return []any{gb.ptr, part, yb.ptr, ob.ptr, int64(n), v, paper}
			})
		}
		return err
	})
	return s, wrap(op, err)
}

// ---------------------------------------------------------------------------------------
// Element-wise operations and reductions.

// Scal computes x = alpha x over the whole buffer.
func (d *backend) Scal(x device.Buffer, alpha float64) error {
	const op = "cuda Scal"
	xb := buf(x)
	if xb.n == 0 {
		return nil
	}
	return wrap(op, d.do(func() error {
		return d.launchSync("scal", kernels.GridElems(int64(xb.n)), xb.ptr, int64(xb.n), alpha)
	}))
}

// Axpby computes y = a x + b y; x and y have the same length.
func (d *backend) Axpby(y device.Buffer, a float64, x device.Buffer, b float64) error {
	const op = "cuda Axpby"
	xb, yb := buf(x), buf(y)
	if xb.n == 0 {
		return nil
	}
	return wrap(op, d.do(func() error {
		return d.launchSync("axpby", kernels.GridElems(int64(xb.n)), yb.ptr, a, xb.ptr, b, int64(xb.n))
	}))
}

// Dot returns sum_k x_k y_k (dot_partial, partials added on the host in order).
func (d *backend) Dot(x, y device.Buffer) (float64, error) {
	return d.reduce("cuda Dot", "dot_partial", x, y)
}

// SqDist returns sum_k (x_k - y_k)^2 (sqdist_partial, partials added on the host in order).
func (d *backend) SqDist(x, y device.Buffer) (float64, error) {
	return d.reduce("cuda SqDist", "sqdist_partial", x, y)
}

// reduce runs a two-vector reduction kernel.
func (d *backend) reduce(op, kernel string, x, y device.Buffer) (float64, error) {
	xb, yb := buf(x), buf(y)
	if xb.n == 0 {
		return 0, nil
	}
	grid := kernels.GridReduce(int64(xb.n))
	var s float64
	err := d.do(func() error {
		var err error
		s, err = d.partials(kernel, grid, int(grid), func(part uint64) []any {
			return []any{part, xb.ptr, yb.ptr, int64(xb.n)}
		})
		return err
	})
	return s, wrap(op, err)
}

// AddDiag adds v to the diagonal of each of the n stacked t x t matrices in x.
func (d *backend) AddDiag(x device.Buffer, n, t int, v float64) error {
	const op = "cuda AddDiag"
	if err := fitsInt32(op, "t", t); err != nil {
		return err
	}
	xb := buf(x)
	if n == 0 || t == 0 {
		return nil
	}
	return wrap(op, d.do(func() error {
		return d.launchSync("add_diag", kernels.GridElems(int64(n)*int64(t)), xb.ptr, int64(n), int32(t), v)
	}))
}

// SumDiag returns the sum of the diagonals of the n stacked t x t matrices in x
// (sumdiag_partial over chunks of samples, partials added on the host in order).
func (d *backend) SumDiag(x device.Buffer, n, t int) (float64, error) {
	const op = "cuda SumDiag"
	if err := fitsInt32(op, "t", t); err != nil {
		return 0, err
	}
	xb := buf(x)
	if n == 0 || t == 0 {
		return 0, nil
	}
	grid := kernels.GridReduce(int64(n))
	var s float64
	err := d.do(func() error {
		var err error
		s, err = d.partials("sumdiag_partial", grid, int(grid), func(part uint64) []any {
			return []any{part, xb.ptr, int64(n), int32(t)}
		})
		return err
	})
	return s, wrap(op, err)
}

// MulPattern computes x_mu,k *= p_k for n stacked blocks of m values.
func (d *backend) MulPattern(x, p device.Buffer, n, m int) error {
	const op = "cuda MulPattern"
	if err := fitsInt32(op, "m", m); err != nil {
		return err
	}
	xb, pb := buf(x), buf(p)
	if n == 0 || m == 0 {
		return nil
	}
	return wrap(op, d.do(func() error {
		return d.launchSync("mul_pattern", kernels.GridElems(int64(n)*int64(m)), xb.ptr, pb.ptr, int64(n), int32(m))
	}))
}

// GaussianFill sets x_k = scale * G(seed, offset + k) for the whole buffer with the
// gaussian_fill kernel, bit for bit device.FillNormals.
func (d *backend) GaussianFill(x device.Buffer, seed, offset uint64, scale float64) error {
	const op = "cuda GaussianFill"
	xb := buf(x)
	if xb.n == 0 {
		return nil
	}
	return wrap(op, d.do(func() error {
		return d.launchSync("gaussian_fill", kernels.GridElems(philoxBlocks(offset, xb.n)),
			xb.ptr, int64(xb.n), seed, offset, scale)
	}))
}

// GaussianFillAsync launches the gaussian_fill kernel (GaussianFill) on the device's second
// stream, which synchronises with no other, so that it runs beside the operations of the
// first, and records the event filled after it. wait makes the first stream wait for that
// event and synchronises it: the stall, if any, is on the first stream, where Time sees it.
// The checked front keeps every other operation off x until wait returns.
func (d *backend) GaussianFillAsync(x device.Buffer, seed, offset uint64, scale float64) (func() error, error) {
	const op = "cuda GaussianFillAsync"
	xb := buf(x)
	if xb.n == 0 {
		return func() error { return nil }, nil
	}
	err := wrap(op, d.do(func() error {
		if err := d.launchOn(d.side, "gaussian_fill", kernels.GridElems(philoxBlocks(offset, xb.n)),
			xb.ptr, int64(xb.n), seed, offset, scale); err != nil {
			return err
		}
		return d.drv.cuErr("cuEventRecord", d.drv.cuEventRecord(d.filled, d.side))
	}))
	if err != nil {
		return nil, err
	}
	return func() error {
		return wrap(op, d.do(func() error {
			if err := d.drv.cuErr("cuStreamWaitEvent", d.drv.cuStreamWaitEvent(d.stream, d.filled, 0)); err != nil {
				return err
			}
			return d.sync("the fill's wait")
		}))
	}, nil
}

// philoxBlocks returns the number of Philox blocks (pairs of normals) that the values
// offset .. offset+n-1 of the stream touch: ceil((offset mod 2 + n) / 2), wrap-free.
func philoxBlocks(offset uint64, n int) int64 {
	return (int64(offset%2) + int64(n) + 1) / 2
}
