package nativeblas

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/ebitengine/purego"
)

// The Fortran routines take every argument by address, integers as 32-bit ints (LP64), and
// character arguments as one byte followed (for gfortran-compiled LAPACK) by a hidden length
// argument at the end of the list. Row-major matrices are the column-major transposes: a
// row-major r x c matrix with row stride ld is a column-major c x r matrix with leading
// dimension ld.

func flag(b bool, yes, no byte) byte {
	if b {
		return yes
	}
	return no
}

// checkMat returns an error when a row-major rows x cols matrix with row stride ld does not fit
// in a slice of length n.
func checkMat(op, name string, rows, cols, ld, n int) error {
	if ld < max(1, cols) {
		return fmt.Errorf("%s: %s: row stride %d < %d columns", op, name, ld, cols)
	}
	if rows > 0 && cols > 0 && (rows-1)*ld+cols > n {
		return fmt.Errorf("%s: %s: %d x %d with stride %d needs %d values, has %d", op, name, rows, cols, ld, (rows-1)*ld+cols, n)
	}
	return nil
}

func checkInt(op string, vals ...int) error {
	for _, v := range vals {
		if v < 0 || v > math.MaxInt32 {
			return fmt.Errorf("%s: size %d outside the 32-bit range of the library's integers", op, v)
		}
	}
	return nil
}

// Dgemm computes C = alpha op(A) op(B) + beta C for row-major matrices: op(A) is m x k, op(B)
// is k x n and C is m x n. A is stored m x k (k x m when transA) with row stride lda, B k x n
// (n x k when transB) with row stride ldb, C with row stride ldc. With beta = 0, C need not be
// initialised. C must not overlap A or B.
func (l *Lib) Dgemm(transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) error {
	return gemm(l.dgemm, "dgemm", transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// HasSgemm reports whether the library exports sgemm_ (OpenBLAS and MKL do).
func (l *Lib) HasSgemm() bool { return l.sgemm != 0 }

// Sgemm is Dgemm in float32: C = alpha op(A) op(B) + beta C for row-major float32 matrices,
// the products accumulated in float32 by the library's sgemm. It fails when the library has no
// sgemm_ (HasSgemm).
func (l *Lib) Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) error {
	if l.sgemm == 0 {
		return fmt.Errorf("sgemm: the library %s exports no sgemm_", l.info.Soname)
	}
	return gemm(l.sgemm, "sgemm", transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// gemm checks the arguments of Dgemm or Sgemm (op) and calls the Fortran entry fn.
func gemm[F float32 | float64](fn uintptr, op string, transA, transB bool, m, n, k int, alpha F, a []F, lda int, b []F, ldb int, beta F, c []F, ldc int) error {
	if err := checkInt(op, m, n, k, lda, ldb, ldc); err != nil {
		return err
	}
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	if err := checkMat(op, "A", ar, ac, lda, len(a)); err != nil {
		return err
	}
	if err := checkMat(op, "B", br, bc, ldb, len(b)); err != nil {
		return err
	}
	if err := checkMat(op, "C", m, n, ldc, len(c)); err != nil {
		return err
	}
	if m == 0 || n == 0 {
		return nil
	}
	if k == 0 || len(a) == 0 || len(b) == 0 {
		scaleMat(c, m, n, ldc, beta)
		return nil
	}
	// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands.
	ta, tb := flag(transB, 'T', 'N'), flag(transA, 'T', 'N')
	mm, nn, kk := int32(n), int32(m), int32(k)
	la, lb, lc := int32(ldb), int32(lda), int32(ldc)
	purego.SyscallN(fn,
		uintptr(unsafe.Pointer(&ta)), uintptr(unsafe.Pointer(&tb)),
		uintptr(unsafe.Pointer(&mm)), uintptr(unsafe.Pointer(&nn)), uintptr(unsafe.Pointer(&kk)),
		uintptr(unsafe.Pointer(&alpha)),
		uintptr(unsafe.Pointer(&b[0])), uintptr(unsafe.Pointer(&la)),
		uintptr(unsafe.Pointer(&a[0])), uintptr(unsafe.Pointer(&lb)),
		uintptr(unsafe.Pointer(&beta)),
		uintptr(unsafe.Pointer(&c[0])), uintptr(unsafe.Pointer(&lc)),
		1, 1)
	return nil
}

// scaleMat sets C = beta C (C = 0 when beta = 0) for a row-major m x n matrix with stride ld.
func scaleMat[F float32 | float64](c []F, m, n, ld int, beta F) {
	for i := 0; i < m; i++ {
		row := c[i*ld : i*ld+n]
		for j := range row {
			if beta == 0 {
				row[j] = 0
			} else {
				row[j] *= beta
			}
		}
	}
}

// Dsyrk computes the upper (upper = true) or lower triangle of the symmetric n x n row-major
// C = alpha A A^T + beta C, with A n x k (trans = false), or C = alpha A^T A + beta C, with A
// k x n (trans = true); A has row stride lda and C row stride ldc. The other triangle of C is
// neither read nor written. It costs half the multiply-adds of the Dgemm that would give the
// full product.
func (l *Lib) Dsyrk(upper, trans bool, n, k int, alpha float64, a []float64, lda int, beta float64, c []float64, ldc int) error {
	const op = "dsyrk"
	if err := checkInt(op, n, k, lda, ldc); err != nil {
		return err
	}
	ar, ac := n, k
	if trans {
		ar, ac = k, n
	}
	if err := checkMat(op, "A", ar, ac, lda, len(a)); err != nil {
		return err
	}
	if err := checkMat(op, "C", n, n, ldc, len(c)); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	if k == 0 || len(a) == 0 {
		for i := 0; i < n; i++ {
			lo, hi := i, n
			if !upper {
				lo, hi = 0, i+1
			}
			row := c[i*ldc+lo : i*ldc+hi]
			for j := range row {
				if beta == 0 {
					row[j] = 0
				} else {
					row[j] *= beta
				}
			}
		}
		return nil
	}
	// Row-major upper is column-major lower, and a row-major A A^T (A n x k) is the
	// column-major A'^T A' of the column-major k x n A' = A^T.
	ul, tr := flag(upper, 'L', 'U'), flag(trans, 'N', 'T')
	nn, kk, la, lc := int32(n), int32(k), int32(lda), int32(ldc)
	purego.SyscallN(l.dsyrk,
		uintptr(unsafe.Pointer(&ul)), uintptr(unsafe.Pointer(&tr)),
		uintptr(unsafe.Pointer(&nn)), uintptr(unsafe.Pointer(&kk)),
		uintptr(unsafe.Pointer(&alpha)),
		uintptr(unsafe.Pointer(&a[0])), uintptr(unsafe.Pointer(&la)),
		uintptr(unsafe.Pointer(&beta)),
		uintptr(unsafe.Pointer(&c[0])), uintptr(unsafe.Pointer(&lc)),
		1, 1)
	return nil
}

// DsyevdWork returns the workspace lengths Dsyevd needs for an n x n matrix with eigenvectors:
// lwork = 1 + 6n + 2n^2 float64s and liwork = 3 + 5n int32s (LAPACK's minimum for JOBZ = 'V',
// which is also what OpenBLAS's and MKL's queries return).
func DsyevdWork(n int) (lwork, liwork int) {
	if n <= 1 {
		return 1, 1
	}
	return 1 + 6*n + 2*n*n, 3 + 5*n
}

// Dsyevd computes the eigendecomposition A = O diag(w) O^T of the symmetric n x n row-major
// matrix in a (row stride lda; only its upper triangle is read) with LAPACK's divide and
// conquer dsyevd: w gets the eigenvalues in ascending order and a is overwritten with O,
// row-major, column k the unit eigenvector of w[k]. work and iwork are the workspaces of
// DsyevdWork (allocated here when too short).
func (l *Lib) Dsyevd(n int, a []float64, lda int, w, work []float64, iwork []int32) error {
	const op = "dsyevd"
	if err := checkInt(op, n, lda); err != nil {
		return err
	}
	if err := checkMat(op, "A", n, n, lda, len(a)); err != nil {
		return err
	}
	if len(w) < n {
		return fmt.Errorf("%s: w holds %d values, needs %d", op, len(w), n)
	}
	if n == 0 {
		return nil
	}
	lw, liw := DsyevdWork(n)
	if len(work) < lw {
		work = make([]float64, lw)
	}
	if len(iwork) < liw {
		iwork = make([]int32, liw)
	}
	jobz, ul := byte('V'), byte('L') // row-major upper = column-major lower
	nn, la, lwork, liwork := int32(n), int32(lda), int32(len(work)), int32(len(iwork))
	if len(work) > math.MaxInt32 || len(iwork) > math.MaxInt32 {
		lwork, liwork = int32(lw), int32(liw)
	}
	var info int32
	purego.SyscallN(l.dsyevd,
		uintptr(unsafe.Pointer(&jobz)), uintptr(unsafe.Pointer(&ul)),
		uintptr(unsafe.Pointer(&nn)),
		uintptr(unsafe.Pointer(&a[0])), uintptr(unsafe.Pointer(&la)),
		uintptr(unsafe.Pointer(&w[0])),
		uintptr(unsafe.Pointer(&work[0])), uintptr(unsafe.Pointer(&lwork)),
		uintptr(unsafe.Pointer(&iwork[0])), uintptr(unsafe.Pointer(&liwork)),
		uintptr(unsafe.Pointer(&info)),
		1, 1)
	switch {
	case info < 0:
		return fmt.Errorf("%s: argument %d has an illegal value", op, -info)
	case info > 0:
		return fmt.Errorf("%s: did not converge (info = %d, n = %d)", op, info, n)
	}
	// Column-major eigenvectors are the rows of the row-major array: transpose in place.
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			a[i*lda+j], a[j*lda+i] = a[j*lda+i], a[i*lda+j]
		}
	}
	return nil
}
