package smi

import (
	"math"
	"math/rand/v2"
	"testing"
)

// sampleCase is one channel input: u, omega (3 x 2) and V.
type sampleCase struct {
	name     string
	u, om, V []float64
}

// sampleCases returns SE-like inputs at the overlaps Q (V = I - Q + 1e-3 I, omega = Q^{1/2} xi,
// u from Z = omega + V^{1/2} eta), one per Q, and one with a non-diagonal V (GAMP's case).
func sampleCases(d *Deep) []sampleCase {
	r := rand.New(rand.NewPCG(11, 12))
	s := d.NewScratch()
	var cs []sampleCase
	for _, c := range []struct {
		name string
		Q    [3]float64
	}{{"broad", [3]float64{0, 0, 0}}, {"last layer half learned", [3]float64{0, 0, 0.5}},
		{"sharp last layer", [3]float64{0.3, 0.3, 0.995}}, {"all learned", [3]float64{0.95, 0.93, 0.999}}} {
		V, om, z := make([]float64, 9), make([]float64, 6), make([]float64, 6)
		for k := 0; k < 3; k++ {
			V[k*3+k] = 1 - c.Q[k] + 1e-3
			for l := 0; l < 2; l++ {
				om[k*2+l] = math.Sqrt(c.Q[k]) * r.NormFloat64()
				z[k*2+l] = om[k*2+l] + math.Sqrt(V[k*3+k])*r.NormFloat64()
			}
		}
		u := make([]float64, 2)
		d.Forward(u, z, nil, s)
		cs = append(cs, sampleCase{c.name, u, om, V})
	}
	// GAMP's V is a full P x P matrix.
	V := []float64{0.6, 0.15, 0.01, 0.15, 0.5, -0.005, 0.01, -0.005, 0.02}
	om := []float64{0.4, -0.3, 0.8, 0.1, -0.9, 1.1}
	z := []float64{0.2, -0.9, 0.5, 0.7, -1.0, 1.2}
	u := make([]float64, 2)
	d.Forward(u, z, nil, s)
	return append(cs, sampleCase{"correlated V", u, om, V})
}

// TestSampleAgainstCubature compares the sampler (2^15 draws) with the cubature at ten times
// its default budget on broad and sharp inputs and a correlated V: every posterior mean within 4.5 of the
// sampler's standard errors plus the cubature's own error at that budget (README: at most
// 0.009 of the prior scale), log Z_out within 0.02 and an effective sample size of at least 1%
// of the draws.
func TestSampleAgainstCubature(t *testing.T) {
	d, _ := NewDeep(3, 2, 1, 1)
	q, _ := d.NewPosterior()
	q.MaxEval = 200000
	smp, _ := d.NewSampler()
	mc, ms := d.NewMoments(), d.NewSampleMoments()
	r := rand.New(rand.NewPCG(5, 6))
	g := make([]float64, (1<<15)*SampleNormals)
	for _, c := range sampleCases(d) {
		if err := q.Moments(mc, c.u, c.om, c.V); err != nil {
			t.Fatal(err)
		}
		for i := range g {
			g[i] = r.NormFloat64()
		}
		if err := smp.Moments(ms, c.u, c.om, c.V, g); err != nil {
			t.Fatal(err)
		}
		for a := range ms.Mean {
			sd := math.Sqrt(c.V[(a/2)*3+a/2])
			if diff := math.Abs(ms.Mean[a] - mc.Mean[a]); diff > 4.5*ms.MeanErr[a]+0.01*sd {
				t.Errorf("%s: mean %d: sampler %.5f +- %.5f, cubature %.5f", c.name, a, ms.Mean[a], ms.MeanErr[a], mc.Mean[a])
			}
		}
		if math.Abs(ms.LogZ-mc.LogZ) > 0.02 {
			t.Errorf("%s: log Z_out: sampler %.5f, cubature %.5f", c.name, ms.LogZ, mc.LogZ)
		}
		if !(ms.ESS > float64(len(g)/SampleNormals)/100) {
			t.Errorf("%s: effective sample size %.0f of %d draws", c.name, ms.ESS, len(g)/SampleNormals)
		}
		t.Logf("%s: ESS %.0f, log Z %.5f / %.5f", c.name, ms.ESS, ms.LogZ, mc.LogZ)
	}
}

func worstZ(ms *SampleMoments, mc *DeepMoments) float64 {
	var w float64
	for a := range ms.Mean {
		w = math.Max(w, math.Abs(ms.Mean[a]-mc.Mean[a])/ms.MeanErr[a])
	}
	return w
}

// TestSampleHalvesUnbiased is the state evolution's use of the sampler: over SE samples at a
// sharp last layer, the product of two independent halves' posterior means estimates the
// cubature's E[g_out^2] layer by layer (paired on the same samples, within 4 standard errors
// of the paired difference), where the square of one estimate is biased upwards by its
// variance.
func TestSampleHalvesUnbiased(t *testing.T) {
	if testing.Short() {
		t.Skip("48 cubatures at 200 000 evaluations")
	}
	d, _ := NewDeep(3, 2, 1, 1)
	q, _ := d.NewPosterior()
	q.MaxEval = 200000
	smp, _ := d.NewSampler()
	mc, ma, mb := d.NewMoments(), d.NewSampleMoments(), d.NewSampleMoments()
	s := d.NewScratch()
	r := rand.New(rand.NewPCG(17, 18))
	const S, n = 48, 1000
	Q := [3]float64{0.3, 0.3, 0.995}
	g := make([]float64, n*SampleNormals)
	var sum, sum2, ref [3]float64
	for i := 0; i < S; i++ {
		V, om, z := make([]float64, 9), make([]float64, 6), make([]float64, 6)
		for k := 0; k < 3; k++ {
			V[k*3+k] = 1 - Q[k] + 1e-3
			for l := 0; l < 2; l++ {
				om[k*2+l] = math.Sqrt(Q[k]) * r.NormFloat64()
				z[k*2+l] = om[k*2+l] + math.Sqrt(V[k*3+k])*r.NormFloat64()
			}
		}
		u := make([]float64, 2)
		d.Forward(u, z, nil, s)
		if err := q.Moments(mc, u, om, V); err != nil {
			t.Fatal(err)
		}
		for _, m := range []*SampleMoments{ma, mb} {
			for j := range g {
				g[j] = r.NormFloat64()
			}
			if err := smp.Moments(m, u, om, V, g); err != nil {
				t.Fatal(err)
			}
		}
		for k := 0; k < 3; k++ {
			var h, c float64
			for l := 0; l < 2; l++ {
				vk := V[k*3+k]
				h += ma.Mean[k*2+l] * mb.Mean[k*2+l] / (vk * vk)
				c += mc.Mean[k*2+l] * mc.Mean[k*2+l] / (vk * vk)
			}
			sum[k] += h - c
			sum2[k] += (h - c) * (h - c)
			ref[k] += c
		}
	}
	for k := 0; k < 3; k++ {
		m := sum[k] / S
		se := math.Sqrt((sum2[k]/S - m*m) / (S - 1))
		t.Logf("layer %d: E g^2 = %.4f (cubature), halves - cubature %.4f +- %.4f", k+1, ref[k]/S, m, se)
		if math.Abs(m) > 4*se {
			t.Errorf("layer %d: halves - cubature = %.4f +- %.4f (E g^2 = %.4f)", k+1, m, se, ref[k]/S)
		}
	}
}
