package smi

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// benchMoments times one posterior integral at the SE's typical inputs: Q = diag(q1, qL)
// (q1 for every layer but the last), with the default evaluation budget.
func benchMoments(b *testing.B, L int, q1, qL float64) { benchMomentsBudget(b, L, q1, qL, 0) }

// benchMomentsBudget is benchMoments with the evaluation budget maxEval (0: the default).
func benchMomentsBudget(b *testing.B, L int, q1, qL float64, maxEval int) {
	d, _ := NewDeep(L, 2, 1, 1)
	q, _ := d.NewPosterior()
	if maxEval > 0 {
		q.MaxEval = maxEval
	}
	m := d.NewMoments()
	s := d.NewScratch()
	r := rand.New(rand.NewPCG(1, 2))
	P := L
	type input struct{ V, om, u []float64 }
	var in []input
	for i := 0; i < 16; i++ {
		V, om, z := make([]float64, P*P), make([]float64, 2*P), make([]float64, 2*P)
		for k := 0; k < P; k++ {
			qq := q1
			if k == P-1 {
				qq = qL
			}
			V[k*P+k] = 1 - qq + 1e-3
			for l := 0; l < 2; l++ {
				om[k*2+l] = math.Sqrt(qq) * r.NormFloat64()
				z[k*2+l] = om[k*2+l] + math.Sqrt(V[k*P+k])*r.NormFloat64()
			}
		}
		u := make([]float64, 2)
		d.Forward(u, z, nil, s)
		in = append(in, input{V, om, u})
	}
	evals := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c := in[i%len(in)]
		if err := q.Moments(m, c.u, c.om, c.V); err != nil {
			b.Fatal(err)
		}
		evals += m.Evals
	}
	b.ReportMetric(float64(evals)/float64(b.N), "evals/op")
	b.ReportMetric(b.Elapsed().Seconds()/float64(evals)*1e9, "ns/eval")
}

func BenchmarkDeepMomentsL2(b *testing.B)        { benchMoments(b, 2, 0, 0.5) }
func BenchmarkDeepMomentsL2Learned(b *testing.B) { benchMoments(b, 2, 0.9, 0.999) }
func BenchmarkDeepMomentsL3(b *testing.B)        { benchMoments(b, 3, 0, 0.5) }

// BenchmarkDeepMomentsL3Budget times the L = 3 integral at the hard point of the README's
// error table, Q = (0.3, 0.3, 0.995), at the three budgets of that table.
func BenchmarkDeepMomentsL3Budget(b *testing.B) {
	for _, n := range []int{20000, 50000, 200000} {
		b.Run(fmt.Sprintf("max-eval=%d", n), func(b *testing.B) { benchMomentsBudget(b, 3, 0.3, 0.995, n) })
	}
}
