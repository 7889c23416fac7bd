package nativeblas

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkDgemm reports the GFLOP/s of a square row-major product.
func BenchmarkDgemm(b *testing.B) {
	l := lib(b)
	for _, n := range []int{400, 1000, 2000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 1))
			x, y, z := randVec(r, n*n), randVec(r, n*n), make([]float64, n*n)
			for b.Loop() {
				if err := l.Dgemm(false, false, n, n, n, 1, x, n, y, n, 0, z, n); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(2*float64(n)*float64(n)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkDsyevd reports the seconds of one eigendecomposition with eigenvectors.
func BenchmarkDsyevd(b *testing.B) {
	l := lib(b)
	for _, n := range []int{400, 1000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			r := rand.New(rand.NewPCG(2, 2))
			a := make([]float64, n*n)
			for i := 0; i < n; i++ {
				for j := i; j < n; j++ {
					v := r.NormFloat64()
					a[i*n+j], a[j*n+i] = v, v
				}
			}
			o, w := make([]float64, n*n), make([]float64, n)
			lw, liw := DsyevdWork(n)
			work, iwork := make([]float64, lw), make([]int32, liw)
			for b.Loop() {
				copy(o, a)
				if err := l.Dsyevd(n, o, n, w, work, iwork); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/op")
		})
	}
}
