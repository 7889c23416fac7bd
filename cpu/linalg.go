package cpu

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack"
	"gonum.org/v1/gonum/lapack/lapack64"

	"github.com/aimtheory/aim/cpu/nativeblas"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/internal/par"
)

// transpose maps a flag to the gonum transpose enum.
func transpose(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

// GemmStridedBatched computes C_p = alpha op(A_p) op(B_p) + beta C_p for p < batch, one Gemm
// after another on the slices of the buffers (device.Ops): each product is Gemm's, bit for
// bit.
func (d *backend) GemmStridedBatched(transA, transB bool, m, n, k int, alpha float64, a device.Buffer, strideA int, b device.Buffer, strideB int,
	beta float64, c device.Buffer, strideC int, batch int) error {
	for p := 0; p < batch; p++ {
		if err := d.Gemm(transA, transB, m, n, k, alpha, d.Slice(a, p*strideA, m*k), d.Slice(b, p*strideB, k*n),
			beta, d.Slice(c, p*strideC, m*n)); err != nil {
			return fmt.Errorf("cpu GemmStridedBatched, product %d: %w", p, err)
		}
	}
	return nil
}

// Gemm computes C = alpha op(A) op(B) + beta C with op(A) m x k, op(B) k x n and C m x n, all
// row-major and packed: A is stored m x k (k x m when transA), B k x n (n x k when transB).
// It calls the native library's dgemm: for a C of two row blocks or more (blockRows) once per
// block, on one thread, over Options.Threads goroutines (gemmRowBlocks); for a product of at
// most smallProduct multiply-adds once on one thread; else once on Options.Threads threads. Without a library it calls gonum's Dgemm, which is parallel on its
// own (over GOMAXPROCS goroutines, not the device's worker count). C does not overlap A or B. With beta = 0, C is overwritten (NaNs in C do not propagate).
func (d *backend) Gemm(transA, transB bool, m, n, k int, alpha float64, a, b device.Buffer, beta float64, c device.Buffer) (err error) {
	const op = "cpu Gemm"
	as, bs, cs := data(a), data(b), data(c)
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
	if d.blas.lib != nil {
		rows := blockRows(k)
		var l *nativeblas.Lib
		var done func()
		switch {
		case d.splits() && m >= 2*rows:
			return d.gemmRowBlocks(op, transA, transB, m, n, k, rows, alpha, as[:m*k], lda, bs[:k*n], ldb, beta, cs[:m*n])
		case d.splits() && m*n*k <= smallProduct:
			l, done = d.serial()
		default:
			l, done = d.native()
		}
		defer done()
		if err := l.Dgemm(transA, transB, m, n, k, alpha, as[:m*k], max(1, lda), bs[:k*n], max(1, ldb), beta, cs[:m*n], max(1, n)); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		return nil
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

// blockElems is the size, in values, of the row blocks of the split products (gemmRowBlocks,
// QuadFormSum): 1 MiB, about a core's L2 cache, where a block stays between being written and
// being read, and large enough that a block's library call costs far more than its setup (packing op(B),
// the call's few allocations).
const blockElems = 1 << 17

// blockRows returns the rows of a split product's block of rows of width values: blockElems
// values, and at least 256 rows.
func blockRows(width int) int { return max(256, blockElems/max(1, width)) }

// smallProduct is the most multiply-adds of a Gemm that runs on one library thread (under a
// millisecond): waking the library's other threads would save less than they then cost,
// spinning against the per-sample loops for a while after the call.
const smallProduct = 1 << 24

// gemmRowBlocks is the native Gemm of a tall C (two blocks of rows or more): C is cut into
// blocks of rows rows, and each block, C[lo:hi] = alpha op(A)[lo:hi] op(B) + beta C[lo:hi], is
// one dgemm on one library thread, the blocks spread over blasWorkers goroutines. The library's
// own threads stay parked, so they do not spin against the per-sample loops that run between
// the products, and every element of C is the same dot product whatever the number of workers.
func (d *backend) gemmRowBlocks(op string, transA, transB bool, m, n, k, rows int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64) error {
	l, done := d.serial()
	defer done()
	err := par.For(d.blasWorkers(), chunks(m, rows), par.NoState, func(_ struct{}, ch int) error {
		lo, hi := span(ch, m, rows)
		var ab []float64
		if transA { // the rows lo..hi-1 of op(A) are columns of the k x m A
			ab = a[lo:]
		} else {
			ab = a[lo*k : hi*k]
		}
		return l.Dgemm(transA, transB, hi-lo, n, k, alpha, ab, max(1, lda), b, max(1, ldb), beta, c[lo*n:hi*n], max(1, n))
	})
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// serial returns the native library held at one thread (nativeblas.Lib.Hold), for calls that
// several goroutines make at once, and the release of the hold; nil and a no-op on the gonum
// path.
func (d *backend) serial() (*nativeblas.Lib, func()) {
	l := d.blas.lib
	if l == nil {
		return nil, func() {}
	}
	return l, l.Hold(1)
}

// serialOrder is the order below which EighSym and SpectralCompose call the library on one
// thread: their many small calls (dsyevd's tridiagonal reduction and back-transformation) cost
// less on one thread than waking and synchronising the library's others (at order 200 dsyevd
// takes 2.4 ms on one thread and 4.1 ms on two, at 400 12 ms and 19 ms, on the 2-core
// development machine).
const serialOrder = 600

// denseLib returns the native library for a d x d dense step (EighSym, SpectralCompose), held
// on one thread below serialOrder, else on the device's threads, and the release of the hold;
// nil and a no-op on the gonum path.
func (d *backend) denseLib(dd int) (*nativeblas.Lib, func()) {
	if dd < serialOrder {
		return d.serial()
	}
	return d.native()
}

// splits says whether the device cuts its large products (tall Gemm, QuadFormSum) into blocks
// computed by one-thread library calls on its own goroutines: with a native library whose
// thread count can be set. The blocks are the same whatever the number of goroutines, so the
// results are too.
func (d *backend) splits() bool {
	return d.blas.lib != nil && d.blas.lib.CanSetThreads()
}

// blasWorkers is the number of goroutines that make concurrent one-thread library calls: the
// library's thread count (Options.Threads), else the device's workers.
func (d *backend) blasWorkers() int {
	if d.threads > 0 {
		return d.threads
	}
	return d.workers
}

// EighSym computes A = O diag(lambda) O^T for the symmetric d x d matrix A, which is left
// unchanged (only its upper triangle is read): vals gets lambda in ascending order, vecs the
// orthogonal O (column k is the unit eigenvector of lambda_k; its sign is LAPACK's). A is
// copied into vecs, and LAPACK overwrites that copy with the eigenvectors: the native library's
// divide-and-conquer dsyevd, or gonum's Dsyev (lapack64.Syev, what mat.EigenSym calls). The
// workspace is kept by the backend between calls. The three buffers do not overlap.
func (d *backend) EighSym(vals, vecs, a device.Buffer, dd int) (err error) {
	const op = "cpu EighSym"
	ws, vs, as := data(vals), data(vecs), data(a)
	if dd == 0 {
		return nil
	}
	o := vs[:dd*dd]
	copy(o, as[:dd*dd])
	w := ws[:dd]
	d.scratchMu.Lock()
	defer d.scratchMu.Unlock()
	l, done := d.denseLib(dd)
	defer done()
	if l != nil {
		lw, liw := nativeblas.DsyevdWork(dd)
		d.eigWork, d.eigIWork = grow(d.eigWork, lw), growInt32(d.eigIWork, liw)
		if err := l.Dsyevd(dd, o, dd, w, d.eigWork[:lw], d.eigIWork[:liw]); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: gonum Dsyev: %v", op, r)
		}
	}()
	sym := blas64.Symmetric{Uplo: blas.Upper, N: dd, Stride: dd, Data: o}
	var query [1]float64
	lapack64.Syev(lapack.EVCompute, sym, w, query[:], -1)
	lw := int(query[0])
	d.eigWork = grow(d.eigWork, lw)
	if !lapack64.Syev(lapack.EVCompute, sym, w, d.eigWork[:lw], lw) {
		return fmt.Errorf("%s: Dsyev did not converge (d = %d)", op, dd)
	}
	return nil
}

// grow returns s with length at least n, reallocating only when its capacity is short.
func grow(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// growInt32 is grow for int32 slices.
func growInt32(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}

// SpectralCompose computes out = O diag(f) O^T for d x d O and d values f. With a native
// library it uses the symmetry of the result: out = P P^T - Q Q^T, where P holds the columns of
// O with f_k > 0 scaled by sqrt(f_k) and Q those with f_k < 0 scaled by sqrt(-f_k), as two
// dsyrk updates of the upper triangle (d^3 multiply-adds in all instead of dgemm's 2 d^3), then
// mirrored: out is exactly symmetric. On the gonum path it is the scaled copy (O diag f) times
// O^T with one Dgemm, symmetric up to rounding. The scaled copies live in a scratch buffer of
// the backend that is reused across calls; concurrent calls on one Device are serialised by a
// mutex. out does not overlap vecs or f.
func (d *backend) SpectralCompose(out, vecs, f device.Buffer, dd int) (err error) {
	const op = "cpu SpectralCompose"
	rs, vs, fs := data(out), data(vecs), data(f)
	if dd == 0 {
		return nil
	}
	d.scratchMu.Lock()
	defer d.scratchMu.Unlock()
	l, done := d.denseLib(dd)
	defer done()
	if l != nil {
		return d.spectralSyrk(op, l, rs[:dd*dd], vs[:dd*dd], fs[:dd], dd)
	}
	d.scratch = grow(d.scratch, d.composeScratch(dd))
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

// composeScratch is the size of SpectralCompose's scratch at order dd: the scaled columns
// (dd^2 values), and on the native library the square roots of |f| (dd more).
func (d *backend) composeScratch(dd int) int {
	if d.blas.lib != nil {
		return dd*dd + dd
	}
	return dd * dd
}

// spectralSyrk is SpectralCompose on the native library: out = P P^T - Q Q^T (see
// SpectralCompose), with P and Q gathered into the backend's scratch. The caller holds
// scratchMu.
func (d *backend) spectralSyrk(op string, l *nativeblas.Lib, out, o, f []float64, dd int) error {
	d.scratch = grow(d.scratch, d.composeScratch(dd))
	s := d.scratch
	root := s[dd*dd : dd*dd+dd]
	np, nn := 0, 0
	for k, v := range f {
		switch {
		case v > 0:
			root[k] = math.Sqrt(v)
			np++
		case v < 0:
			root[k] = math.Sqrt(-v)
			nn++
		case v == 0:
			root[k] = 0
		default: // NaN: the result is NaN, as a product would make it
			for i := range out {
				out[i] = math.NaN()
			}
			return nil
		}
	}
	p, q := s[:dd*np], s[dd*np:dd*(np+nn)]
	per := max(1, chunkElems/dd)
	if err := d.forChunks(op, chunks(dd, per), same(func(c int) {
		lo, hi := span(c, dd, per)
		for i := lo; i < hi; i++ {
			src := o[i*dd : (i+1)*dd]
			pi, qi := p[i*np:(i+1)*np], q[i*nn:(i+1)*nn]
			a, b := 0, 0
			for k, v := range f {
				switch {
				case v > 0:
					pi[a] = src[k] * root[k]
					a++
				case v < 0:
					qi[b] = src[k] * root[k]
					b++
				}
			}
		}
	})); err != nil {
		return err
	}
	// Upper triangle: P P^T, then - Q Q^T.
	if err := l.Dsyrk(true, false, dd, np, 1, p, max(1, np), 0, out, dd); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if nn > 0 {
		if err := l.Dsyrk(true, false, dd, nn, -1, q, nn, 1, out, dd); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
	}
	return d.mirrorUpper(op, out, dd)
}

// mirrorUpper copies the upper triangle of the row-major dd x dd matrix a onto its lower one.
func (d *backend) mirrorUpper(op string, a []float64, dd int) error {
	per := max(1, chunkElems/dd)
	return d.forChunks(op, chunks(dd, per), same(func(c int) {
		lo, hi := span(c, dd, per)
		for i := lo; i < hi; i++ {
			row := a[i*dd : i*dd+i]
			for j := range row {
				row[j] = a[j*dd+i]
			}
		}
	}))
}
