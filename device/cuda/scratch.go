package cuda

import (
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/kernels"
)

// Scratch returns the bytes of the arrays the backend keeps between calls once it has run the
// operations of w, each grown to the largest it has needed (cuda.go's scratch arrays):
//
//	square  D x D: EighSym's working copy, SpectralCompose's scaled copy, QuadFormSum's
//	        triangle
//	work    cuSOLVER's Dsyevd workspace at order D (its _bufferSize query)
//	part    the partial sums of the reductions: at most one per sample (ChannelGOut of the
//	        hardmax at T > 2, the largest) and one per kernels.ReduceChunk values of Dot
//	        and SqDist
//	info    cuSOLVER's status, one value, held from Open
//	lowp    GemmPrecision's float32 and bfloat16 arrays, the largest product's layout
//
// Should the workspace query fail (a device closed, a cuSOLVER that refuses a query ahead of
// the buffers), LAPACK's dsyevd workspace, 1 + 6 D + 2 D^2 values, stands in for it.
func (d *backend) Scratch(w device.Work) uint64 {
	var square, work, part, lowp int
	if D := w.Eigh; D > 0 {
		square = D * D
		work = 1 + 6*D + 2*D*D
		if D <= 1<<15 { // beyond, lwork overflows cuSOLVER's C int
			d.do(func() error {
				if n, err := d.eighWork(eighSyevd, D, 0, 0); err == nil {
					work = max(int(n), 1)
				}
				return nil
			})
		}
	}
	square = max(square, w.Compose*w.Compose, w.QuadForm[2]*w.QuadForm[2])
	if w.Samples > 0 || w.Reduce > 0 {
		part = max(w.Samples, int(kernels.GridReduce(int64(w.Reduce))))
	}
	if w.Precision != device.FP64 {
		for _, s := range w.Products {
			lowp = max(lowp, lowpLayoutOf(w.Precision, s[0], s[1], s[2]).words())
		}
	}
	return 8 * uint64(square+work+part+1+lowp)
}
