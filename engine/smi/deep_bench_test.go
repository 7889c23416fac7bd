package smi

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/aimtheory/aim/device"
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
	in := benchInputs(d, q1, qL)
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

// benchInput is one channel input of the benchmarks.
type benchInput struct{ V, om, u []float64 }

// benchInputs returns 16 SE draws at Q = diag(q1, ..., q1, qL): V = I - Q + 1e-3 I,
// omega = Q^{1/2} xi and u from Z = omega + V^{1/2} eta.
func benchInputs(d *Deep, q1, qL float64) []benchInput {
	s := d.NewScratch()
	r := rand.New(rand.NewPCG(1, 2))
	P := d.L
	var in []benchInput
	Q := make([]float64, P)
	for k := range Q {
		Q[k] = q1
	}
	Q[P-1] = qL
	for i := 0; i < 16; i++ {
		u, om, V := seDraw(d, Q, r, s)
		in = append(in, benchInput{V, om, u})
	}
	return in
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

// BenchmarkDeepSample times the importance sampler (DeepSampler) at L = 3 and 4 at two halves
// of 1000 draws per channel integral (GAMP's default is two halves of 500, the SE's two of
// 2000), at a broad last layer and at the hard point of the README's error table, beside the
// cubature at its default budget at L = 3 (the ratio of the two ns/op is the SE's speed-up per
// sample; L = 4 has no cubature); ns/draw includes drawing the normals, ESS/half is the
// effective sample size of one half.
func BenchmarkDeepSample(b *testing.B) {
	for _, L := range []int{3, 4} {
		for _, c := range []struct {
			name   string
			q1, qL float64
		}{{"broad", 0, 0.5}, {"sharp", 0.3, 0.995}} {
			b.Run(fmt.Sprintf("L%d/%s/sampler", L, c.name), func(b *testing.B) {
				d, _ := NewDeep(L, 2, 1, 1)
				q, _ := d.NewSampler()
				m := d.NewSampleMoments()
				in := benchInputs(d, c.q1, c.qL)
				const n = 1000
				g := make([]float64, n*SampleNormals(L))
				var ess float64
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					cc := in[i%len(in)]
					for h := 0; h < 2; h++ {
						device.FillNormals(g, 1, uint64(2*i+h)*uint64(len(g)))
						if err := q.Moments(m, cc.u, cc.om, cc.V, g); err != nil {
							b.Fatal(err)
						}
						ess += m.ESS
					}
				}
				b.ReportMetric(b.Elapsed().Seconds()/float64(2*n*b.N)*1e9, "ns/draw")
				b.ReportMetric(ess/float64(2*b.N), "ESS/half")
			})
			if L == 3 {
				b.Run(fmt.Sprintf("L%d/%s/cubature", L, c.name), func(b *testing.B) { benchMoments(b, 3, c.q1, c.qL) })
			}
		}
	}
}
