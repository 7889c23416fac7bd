package cuda

import (
	"fmt"

	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/kernels"
)

var _ device.PrecisionGemmer = (*backend)(nil)

// Precisions: the GPU computes products at FP32, TF32 and BF16x9 through cuBLAS's GemmEx.
func (d *backend) Precisions() []device.Precision {
	return []device.Precision{device.FP32, device.TF32, device.BF16x9}
}

// lowpAlign is the alignment, in bytes, of each array of the reduced-precision scratch (every
// bfloat16 part too), so that cuBLAS may take its tensor-core paths.
const lowpAlign = 256

// alignUp rounds n up to a multiple of lowpAlign.
func alignUp(n uint64) uint64 { return (n + lowpAlign - 1) / lowpAlign * lowpAlign }

// lowpLayout is the layout, in bytes, of GemmPrecision's scratch for one product: the parts of
// the rounded A (strideA apart), then those of B from offB (strideB apart), then the float32
// product from offC, total in all.
type lowpLayout struct{ strideA, strideB, offB, offC, total uint64 }

// lowpLayoutOf returns the layout of the product {m, n, k} at p: float32 inputs, or three
// bfloat16 parts of each at BF16x9, and a float32 product, each array aligned to lowpAlign.
func lowpLayoutOf(p device.Precision, m, n, k int) lowpLayout {
	mk, kn, mn := uint64(m)*uint64(k), uint64(k)*uint64(n), uint64(m)*uint64(n)
	parts, elem := uint64(1), uint64(4)
	if p == device.BF16x9 {
		parts, elem = 3, 2
	}
	l := lowpLayout{strideA: alignUp(mk * elem), strideB: alignUp(kn * elem)}
	l.offB = parts * l.strideA
	l.offC = l.offB + parts*l.strideB
	l.total = l.offC + alignUp(4*mn)
	return l
}

// words is the scratch's size in the 8-byte values d.lowp counts.
func (l lowpLayout) words() int { return int((l.total + 7) / 8) }

// GemmPrecision computes C = alpha op(A) op(B) + beta C with the product op(A) op(B) at
// precision p (device.Precision), as the CPU backend's GemmPrecision specifies it, on the GPU:
//
//	FP32    a = fl32(A), b = fl32(B) (kernel to_f32); P = cublasGemmEx on float32 with
//	        CUBLAS_COMPUTE_32F (float32 products and sums, no tensor cores).
//	TF32    a = RoundTF32(fl32(A)), b likewise (to_f32 with tf32 = 1: CUDA's cvt.rna rounding,
//	        done here so that cuBLAS's own conversion, whatever it is, meets values it leaves
//	        unchanged); P = cublasGemmEx with CUBLAS_COMPUTE_32F_FAST_TF32 (the TF32 tensor
//	        cores: exact products, float32 sums).
//	BF16x9  a = fl32(A) split into bfloat16 parts a_hi + a_mid + a_lo (split_bf16), b likewise;
//	        P = the nine cublasGemmEx(a_s, b_t) on bfloat16 with CUBLAS_COMPUTE_32F (the BF16
//	        tensor cores: exact products, float32 sums) added into one float32 accumulator in
//	        the order device.BF16x9Order, the CPU's.
//
// Then C = alpha float64(P) + beta C in float64 (from_f32). The sums inside cuBLAS follow its
// own order, so the product agrees with the CPU's emulation to float32 rounding, not bit for
// bit. The float32 and bfloat16 arrays live in a scratch buffer of the backend, grown to the
// largest product seen and kept until Close: (m k + k n) 4 bytes, or 3 (m k + k n) 2 bytes at
// BF16x9, and 4 m n for P, each array aligned to 256 bytes.
func (d *backend) GemmPrecision(p device.Precision, transA, transB bool, m, n, k int, alpha float64, a, b device.Buffer, beta float64, c device.Buffer) error {
	const op = "cuda GemmPrecision"
	if p == device.FP64 || m == 0 || n == 0 || k == 0 {
		return d.Gemm(transA, transB, m, n, k, alpha, a, b, beta, c)
	}
	if p != device.FP32 && p != device.TF32 && p != device.BF16x9 {
		return fmt.Errorf("%s: precision %v", op, p)
	}
	if err := fitsInt32(op, "m, n, k", m, n, k); err != nil {
		return err
	}
	ab, bb, cb := buf(a), buf(b), buf(c)
	mk, kn, mn := uint64(m)*uint64(k), uint64(k)*uint64(n), uint64(m)*uint64(n)
	l := lowpLayoutOf(p, m, n, k)
	strideA, strideB, offB, offC := l.strideA, l.strideB, l.offB, l.offC
	ta, lda, tb, ldb := rowMajor(transA, transB, m, n, k)
	return wrap(op, d.do(func() error {
		if err := d.lowp.grow(d, l.words()); err != nil {
			return err
		}
		base := d.lowp.ptr
		pa, pb, pc := base, base+offB, base+offC
		switch p {
		case device.BF16x9:
			if err := d.launch("split_bf16", kernels.GridElems(int64(mk)), pa, ab.ptr, int64(mk), int64(strideA/2)); err != nil {
				return err
			}
			if err := d.launch("split_bf16", kernels.GridElems(int64(kn)), pb, bb.ptr, int64(kn), int64(strideB/2)); err != nil {
				return err
			}
		default:
			tf32 := int32(0)
			if p == device.TF32 {
				tf32 = 1
			}
			if err := d.launch("to_f32", kernels.GridElems(int64(mk)), pa, ab.ptr, int64(mk), tf32); err != nil {
				return err
			}
			if err := d.launch("to_f32", kernels.GridElems(int64(kn)), pb, bb.ptr, int64(kn), tf32); err != nil {
				return err
			}
		}
		gemm := func(a, b uint64, dtype, compute int32, beta float32) error {
			one := float32(1)
			st := d.blas.cublasGemmEx(d.cublasH, tb, ta, int32(n), int32(m), int32(k), &one,
				b, dtype, ldb, a, dtype, lda, &beta, pc, cudaR32F, int32(max(1, n)),
				compute, cublasGemmDefault)
			return cublasErr("cublasGemmEx", st)
		}
		switch p {
		case device.FP32:
			if err := gemm(pa, pb, cudaR32F, cublasCompute32F, 0); err != nil {
				return err
			}
		case device.TF32:
			if err := gemm(pa, pb, cudaR32F, cublasCompute32FFastTF32, 0); err != nil {
				return err
			}
		case device.BF16x9:
			for i, st := range device.BF16x9Order {
				beta := float32(1)
				if i == 0 {
					beta = 0
				}
				if err := gemm(pa+uint64(st[0])*strideA, pb+uint64(st[1])*strideB, cudaR16BF, cublasCompute32F, beta); err != nil {
					return err
				}
			}
		}
		return d.launchSync("from_f32", kernels.GridElems(int64(mn)), cb.ptr, pc, int64(mn), alpha, beta)
	}))
}
