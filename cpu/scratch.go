package cpu

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack"
	"gonum.org/v1/gonum/lapack/lapack64"

	"github.com/aimtheory/aim/cpu/nativeblas"
	"github.com/aimtheory/aim/device"
)

// Scratch returns the bytes of the arrays the backend keeps between calls once it has run the
// operations of w, each array grown to the largest it has needed:
//
//	EighSym          LAPACK's work space: dsyevd's 1 + 6 D + 2 D^2 values and 3 + 5 D int32
//	                 (nativeblas.DsyevdWork), or the workspace gonum's Dsyev asks for
//	SpectralCompose  the scaled columns and the roots (composeScratch)
//	QuadFormSum      the sums of the groups after the first, (g - 1) d^2 values for g groups
//	                 of chunks, and one chunk's rows per goroutine (quadFormLayout; native
//	                 library only)
//	GemmPrecision    the float32 inputs and product (precisionSizes), each the largest of the
//	                 shapes
//
// The per-sample reductions allocate per call and keep nothing.
func (d *backend) Scratch(w device.Work) uint64 {
	var f64, i32, f32 uint64
	if D := w.Eigh; D > 0 {
		lw, liw := d.eighWork(D)
		f64 += uint64(lw)
		i32 += uint64(liw)
	}
	if D := w.Compose; D > 0 {
		f64 += uint64(d.composeScratch(D))
	}
	if n, t, dd := w.QuadForm[0], w.QuadForm[1], w.QuadForm[2]; d.blas.lib != nil && n > 0 && t > 0 && dd > 0 {
		per, _, ng, workers := d.quadFormLayout(n, t, dd)
		f64 += uint64((ng-1)*dd*dd + workers*min(per, n)*t*dd)
	}
	if w.Precision != device.FP64 {
		var a, b, c int
		for _, s := range w.Products {
			na, nb, nc := precisionSizes(w.Precision, s[0], s[1], s[2])
			a, b, c = max(a, na), max(b, nb), max(c, nc)
		}
		f32 += uint64(a + b + c)
	}
	return 8*f64 + 4*(i32+f32)
}

// eighWork returns the work space EighSym asks for at order D: values and int32 (none on the
// gonum path).
func (d *backend) eighWork(D int) (lwork, liwork int) {
	if d.blas.lib != nil {
		return nativeblas.DsyevdWork(D)
	}
	var query [1]float64
	sym := blas64.Symmetric{Uplo: blas.Upper, N: D, Stride: D}
	lapack64.Syev(lapack.EVCompute, sym, nil, query[:], -1)
	return int(query[0]), 0
}

// Held returns the bytes of the arrays the backend keeps between calls now: what Scratch says
// of the operations it has run.
func (d *Device) Held() uint64 {
	b := d.b
	b.scratchMu.Lock()
	f64 := cap(b.scratch) + cap(b.eigWork) + cap(b.qfAcc) + cap(b.qfRows)
	i32 := cap(b.eigIWork)
	b.scratchMu.Unlock()
	b.prec.mu.Lock()
	f32 := cap(b.prec.a) + cap(b.prec.b) + cap(b.prec.c)
	b.prec.mu.Unlock()
	return 8*uint64(f64) + 4*uint64(i32+f32)
}
