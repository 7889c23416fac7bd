package cpu

import (
	"fmt"
	"sync"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/aimtheory/aim/device"
)

// precisionScratch holds the float32 arrays of GemmPrecision, grown to the largest shape seen
// and reused, so that an iteration that repeats its shapes allocates nothing here.
type precisionScratch struct {
	mu   sync.Mutex
	a, b []float32 // the rounded inputs in their stored layout; BF16x9: hi, mid, lo one after another
	c    []float32 // the float32 product
}

// grow32 returns s[:n], reallocating only when the capacity is short.
func grow32(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// precisionSizes returns the float32 values GemmPrecision holds for a product {m, n, k} at p:
// the rounded inputs, m k and k n (three times over at BF16x9, its bfloat16 parts), and the
// product, m n.
func precisionSizes(p device.Precision, m, n, k int) (a, b, c int) {
	parts := 1
	if p == device.BF16x9 {
		parts = 3
	}
	return parts * m * k, parts * k * n, m * n
}

// Precisions: the CPU emulates every reduced precision (device.Precision).
func (d *backend) Precisions() []device.Precision {
	return []device.Precision{device.FP32, device.TF32, device.BF16x9}
}

// GemmPrecision computes C = alpha op(A) op(B) + beta C with the product P = op(A) op(B) at
// precision p (device.Precision), then C = alpha float64(P) + beta C in float64:
//
//	FP32    a = fl32(A), b = fl32(B), P = sgemm(a, b) (float32 accumulation).
//	TF32    a = RoundTF32(fl32(A)), b likewise, P = sgemm(a, b): each product of two TF32
//	        values is exact in float32, so this is the tensor cores' arithmetic but for the
//	        order of the float32 sums.
//	BF16x9  a = fl32(A) split into bfloat16 parts a_hi + a_mid + a_lo (device.SplitBF16), b
//	        likewise; P = sum of the nine sgemm(a_s, b_t), each exact term product accumulated
//	        in float32 within a call and the nine results added into one float32 accumulator in
//	        the order device.BF16x9Order (smallest parts first). cuBLAS adds the same exact products
//	        in float32 in an order of its own (inside its tensor-core tiles), so the emulation agrees with the GPU to float32
//	        rounding, not bit for bit.
//
// sgemm is the native library's sgemm_ where it has one, else gonum's pure-Go Sgemm. The
// rounding is element-wise (results do not depend on the worker count); the float32 arrays
// (m k + k n + m n values, three times for the inputs at BF16x9) are kept between calls.
// With beta = 0, C is overwritten. At FP64 it is Gemm.
func (d *backend) GemmPrecision(p device.Precision, transA, transB bool, m, n, k int, alpha float64, a, b device.Buffer, beta float64, c device.Buffer) (err error) {
	const op = "cpu GemmPrecision"
	if p == device.FP64 || m == 0 || n == 0 || k == 0 {
		return d.Gemm(transA, transB, m, n, k, alpha, a, b, beta, c)
	}
	if p != device.FP32 && p != device.TF32 && p != device.BF16x9 {
		return fmt.Errorf("%s: precision %v", op, p)
	}
	as, bs, cs := data(a)[:m*k], data(b)[:k*n], data(c)[:m*n]
	sc := &d.prec
	sc.mu.Lock()
	defer sc.mu.Unlock()
	na, nb, nc := precisionSizes(p, m, n, k)
	sc.a, sc.b, sc.c = grow32(sc.a, na), grow32(sc.b, nb), grow32(sc.c, nc)
	if err := d.round32(op, p, sc.a, as); err != nil {
		return err
	}
	if err := d.round32(op, p, sc.b, bs); err != nil {
		return err
	}
	lda, ldb := k, n
	if transA {
		lda = m
	}
	if transB {
		ldb = k
	}
	if p == device.BF16x9 {
		for i, st := range device.BF16x9Order {
			beta32 := float32(1)
			if i == 0 {
				beta32 = 0
			}
			ap := sc.a[st[0]*m*k : (st[0]+1)*m*k]
			bp := sc.b[st[1]*k*n : (st[1]+1)*k*n]
			if err := d.sgemm(transA, transB, m, n, k, ap, lda, bp, ldb, beta32, sc.c); err != nil {
				return fmt.Errorf("%s: %w", op, err)
			}
		}
	} else if err := d.sgemm(transA, transB, m, n, k, sc.a, lda, sc.b, ldb, 0, sc.c); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	c32 := sc.c
	return d.forChunks(op, chunks(m*n, chunkElems), same(func(ch int) {
		lo, hi := span(ch, m*n, chunkElems)
		if beta == 0 {
			for i := lo; i < hi; i++ {
				cs[i] = alpha * float64(c32[i])
			}
			return
		}
		for i := lo; i < hi; i++ {
			cs[i] = alpha*float64(c32[i]) + beta*cs[i]
		}
	}))
}

// round32 writes the float32 inputs of precision p for the float64 values src into dst:
// fl32 (FP32), RoundTF32(fl32) (TF32), or the bfloat16 parts of fl32 at BF16x9, hi in
// dst[:len(src)], mid and lo in the next two ranges.
func (d *backend) round32(op string, p device.Precision, dst []float32, src []float64) error {
	n := len(src)
	return d.forChunks(op, chunks(n, chunkElems), same(func(ch int) {
		lo, hi := span(ch, n, chunkElems)
		switch p {
		case device.TF32:
			for i := lo; i < hi; i++ {
				dst[i] = device.RoundTF32(float32(src[i]))
			}
		case device.BF16x9:
			for i := lo; i < hi; i++ {
				dst[i], dst[n+i], dst[2*n+i] = device.SplitBF16(float32(src[i]))
			}
		default:
			for i := lo; i < hi; i++ {
				dst[i] = float32(src[i])
			}
		}
	}))
}

// sgemm sets c = op(a) op(b) + beta c in float32 (alpha 1) for packed row-major matrices with
// the given row strides: the native library's sgemm_, or gonum's Sgemm where there is no
// library or it has no sgemm_.
func (d *backend) sgemm(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, beta float32, c []float32) (err error) {
	l, done := d.native()
	defer done()
	if l != nil && l.HasSgemm() {
		return l.Sgemm(transA, transB, m, n, k, 1, a, max(1, lda), b, max(1, ldb), beta, c, max(1, n))
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("gonum Sgemm: %v", r)
		}
	}()
	blas32.Implementation().Sgemm(transpose(transA), transpose(transB), m, n, k,
		1, a, max(1, lda), b, max(1, ldb), beta, c, max(1, n))
	return nil
}
