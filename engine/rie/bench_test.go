package rie

import (
	"fmt"
	"testing"
)

var benchSink float64

// BenchmarkMMSE times one MMSE(delta, rho) (New + adaptive ∫mu^3), reporting the number of
// density evaluations per call as evals/op.
func BenchmarkMMSE(b *testing.B) {
	for _, c := range []struct{ delta, rho float64 }{
		{1, 0.5}, {0.1, 0.5}, {10, 0.5}, {1, 1}, {1, 2}, {0.01, 1},
		{1e-4, 0.5}, {1e-4, 0.01}, {1e-4, 0.9}, {1e-4, 1}, {1e4, 10},
	} {
		b.Run(fmt.Sprintf("delta=%g/rho=%g", c.delta, c.rho), func(b *testing.B) {
			sp, _ := New(c.rho, c.delta)
			n := 0
			sp.integrate(func(_, mu float64) float64 { n++; return mu * mu * mu }, quadRelTol)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				m, _ := MMSE(c.delta, c.rho)
				benchSink += m
			}
			b.ReportMetric(float64(n), "evals/op")
		})
	}
}

// BenchmarkNew times the support computation alone.
func BenchmarkNew(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		sp, _ := New(0.5, 1e-4)
		benchSink += sp.edges[0]
	}
}

// BenchmarkDenoise times f(λ) = λ - 2 Delta Re g(λ) over D = 2000 points spread across and
// beyond the support (as for the eigenvalues of one AMP iteration), reporting ns per eigenvalue.
func BenchmarkDenoise(b *testing.B) {
	for _, c := range []struct{ delta, rho float64 }{{1, 0.5}, {1e-4, 0.5}, {0.05, 2}} {
		b.Run(fmt.Sprintf("delta=%g/rho=%g", c.delta, c.rho), func(b *testing.B) {
			sp, _ := New(c.rho, c.delta)
			e := sp.Edges()
			lo, hi := e[0], e[len(e)-1]
			w := hi - lo
			const D = 2000
			lam := make([]float64, D)
			for i := range lam {
				lam[i] = lo - 0.02*w + 1.04*w*float64(i)/(D-1)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for _, l := range lam {
					benchSink += sp.Denoise(l)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*D), "ns/eigenvalue")
		})
	}
}
