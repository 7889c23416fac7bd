package cpu

import (
	"fmt"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack"
	"gonum.org/v1/gonum/lapack/lapack64"

	"github.com/aimtheory/aim/device"
)

// transpose maps a flag to the gonum transpose enum.
func transpose(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

// Gemm computes C = alpha op(A) op(B) + beta C with op(A) m x k, op(B) k x n and C m x n, all
// row-major and packed: A is stored m x k (k x m when transA), B k x n (n x k when transB).
// It calls gonum's Dgemm, which is parallel on its own (over GOMAXPROCS goroutines, not the
// device's worker count). C must not be A or B. With beta = 0, C is overwritten (NaNs in C do
// not propagate).
func (d *Device) Gemm(transA, transB bool, m, n, k int, alpha float64, a, b device.Buffer, beta float64, c device.Buffer) (err error) {
	const op = "cpu Gemm"
	if m < 0 || n < 0 || k < 0 {
		return fmt.Errorf("%s: negative size m = %d, n = %d, k = %d: %w", op, m, n, k, device.ErrSize)
	}
	as, err := d.buf(op, "a", a, m*k)
	if err != nil {
		return err
	}
	bs, err := d.buf(op, "b", b, k*n)
	if err != nil {
		return err
	}
	cs, err := d.buf(op, "c", c, m*n)
	if err != nil {
		return err
	}
	if aliased(c, a) || aliased(c, b) {
		return fmt.Errorf("%s: output c must not be an input buffer", op)
	}
	if m == 0 || n == 0 {
		return nil
	}
	if k == 0 { // op(A) op(B) = 0; gonum's length checks reject empty A, B with transposes
		cs = cs[:m*n]
		for i := range cs {
			if beta == 0 {
				cs[i] = 0
			} else {
				cs[i] *= beta
			}
		}
		return nil
	}
	lda, ldb := k, n
	if transA {
		lda = m
	}
	if transB {
		ldb = k
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: gonum Dgemm: %v", op, r)
		}
	}()
	blas64.Implementation().Dgemm(transpose(transA), transpose(transB), m, n, k,
		alpha, as[:m*k], max(1, lda), bs[:k*n], max(1, ldb), beta, cs[:m*n], max(1, n))
	return nil
}

// EighSym computes A = O diag(lambda) O^T for the symmetric d x d matrix A, which is left
// unchanged (only its upper triangle is read): vals gets lambda in ascending order, vecs the
// orthogonal O (column k is the unit eigenvector of lambda_k; its sign is LAPACK's). A is
// copied into vecs, and LAPACK's Dsyev (gonum lapack64.Syev, what mat.EigenSym calls) overwrites
// that copy with the eigenvectors. vecs must not be a, and vals must not be a or vecs.
func (d *Device) EighSym(vals, vecs, a device.Buffer, dd int) (err error) {
	const op = "cpu EighSym"
	if dd < 0 {
		return fmt.Errorf("%s: negative size d = %d: %w", op, dd, device.ErrSize)
	}
	ws, err := d.buf(op, "vals", vals, dd)
	if err != nil {
		return err
	}
	vs, err := d.buf(op, "vecs", vecs, dd*dd)
	if err != nil {
		return err
	}
	as, err := d.buf(op, "a", a, dd*dd)
	if err != nil {
		return err
	}
	if aliased(vecs, a) || aliased(vals, a) || aliased(vals, vecs) {
		return fmt.Errorf("%s: vals, vecs and a must be distinct buffers", op)
	}
	if dd == 0 {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: gonum Dsyev: %v", op, r)
		}
	}()
	o := vs[:dd*dd]
	copy(o, as[:dd*dd])
	sym := blas64.Symmetric{Uplo: blas.Upper, N: dd, Stride: dd, Data: o}
	w := ws[:dd]
	query := []float64{0}
	lapack64.Syev(lapack.EVCompute, sym, w, query, -1)
	work := make([]float64, int(query[0]))
	if !lapack64.Syev(lapack.EVCompute, sym, w, work, len(work)) {
		return fmt.Errorf("%s: Dsyev did not converge (d = %d)", op, dd)
	}
	return nil
}

// SpectralCompose computes out = O diag(f) O^T for d x d O and d values f, as the scaled copy
// (O diag f) times O^T with one gonum Dgemm. The d x d scaled copy lives in a scratch buffer of
// the Device that is reused across calls; concurrent SpectralCompose calls on one Device are
// serialised by a mutex. out must not be vecs or f. The result is symmetric up to rounding.
func (d *Device) SpectralCompose(out, vecs, f device.Buffer, dd int) (err error) {
	const op = "cpu SpectralCompose"
	if dd < 0 {
		return fmt.Errorf("%s: negative size d = %d: %w", op, dd, device.ErrSize)
	}
	rs, err := d.buf(op, "out", out, dd*dd)
	if err != nil {
		return err
	}
	vs, err := d.buf(op, "vecs", vecs, dd*dd)
	if err != nil {
		return err
	}
	fs, err := d.buf(op, "f", f, dd)
	if err != nil {
		return err
	}
	if aliased(out, vecs) || aliased(out, f) {
		return fmt.Errorf("%s: output out must not be an input buffer", op)
	}
	if dd == 0 {
		return nil
	}
	d.scratchMu.Lock()
	defer d.scratchMu.Unlock()
	if cap(d.scratch) < dd*dd {
		d.scratch = make([]float64, dd*dd)
	}
	s := d.scratch[:dd*dd]
	fs = fs[:dd]
	if err := d.forChunks(op, chunks(dd, max(1, chunkElems/dd)), same(func(c int) {
		lo, hi := span(c, dd, max(1, chunkElems/dd))
		for i := lo; i < hi; i++ {
			src, dst := vs[i*dd:(i+1)*dd], s[i*dd:(i+1)*dd]
			for k, fk := range fs {
				dst[k] = src[k] * fk
			}
		}
	})); err != nil {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: gonum Dgemm: %v", op, r)
		}
	}()
	blas64.Implementation().Dgemm(blas.NoTrans, blas.Trans, dd, dd, dd, 1, s, dd, vs[:dd*dd], dd, 0, rs[:dd*dd], dd)
	return nil
}
