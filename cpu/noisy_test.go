package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/aimtheory/aim/channel"
)

// TestChannelGOutNoisy: the CPU backend's g_out of the noisy softmax is the kernel's, sample
// by sample, in z-coordinates (g_z = g_u/sqrt2 at omega_u = omega_z/sqrt2, V_u = V/2), its
// returned sum is sum g_z^2, and both are the same bits with 1 and 2 workers.
func TestChannelGOutNoisy(t *testing.T) {
	const n, T, V = 300, 2, 0.8
	ch := channel.Spec{Kind: channel.KindSoftmax, T: T, Beta: 1, Noise: 0.02}
	k, _ := channel.NewNoisySoftmax(T, 1, 0.02)
	r := rand.New(rand.NewPCG(4, 5))
	y, om := make([]float64, n*T*T), make([]float64, n*T*T)
	for mu := 0; mu < n; mu++ {
		h := []float64{r.NormFloat64(), r.NormFloat64(), 0, r.NormFloat64()}
		h[2] = h[1]
		k.Output(y[mu*4:mu*4+4], h)
		for i := 0; i < 4; i++ {
			y[mu*4+i] += 0.14 * r.NormFloat64()
		}
		om[mu*4], om[mu*4+1], om[mu*4+3] = r.NormFloat64(), r.NormFloat64(), r.NormFloat64()
		om[mu*4+2] = om[mu*4+1]
	}
	var sums []float64
	var gs [][]float64
	for _, w := range []int{1, 2} {
		d := New(w)
		g, _ := d.Alloc(n * T * T)
		s, err := d.ChannelGOut(ch, g, up(t, d, y), up(t, d, om), n, V)
		if err != nil {
			t.Fatal(err)
		}
		sums, gs = append(sums, s), append(gs, down(t, d, g))
	}
	var want float64
	gu := make([]float64, 3)
	for mu := 0; mu < n; mu++ {
		o := om[mu*4:]
		k.GOut(gu, y[mu*4:mu*4+4], []float64{o[0] / math.Sqrt2, o[1] / math.Sqrt2, o[3] / math.Sqrt2}, V/2)
		for i, idx := range []int{0, 1, 3} {
			gz := gu[i] / math.Sqrt2
			want += gz * gz
			if gs[0][mu*4+idx] != gz || gs[0][mu*4+idx] != gs[1][mu*4+idx] {
				t.Fatalf("sample %d entry %d: g %v (1 worker) %v (2), kernel %v", mu, idx, gs[0][mu*4+idx], gs[1][mu*4+idx], gz)
			}
		}
		if gs[0][mu*4+2] != gs[0][mu*4+1] {
			t.Fatalf("sample %d: g not symmetric", mu)
		}
	}
	if sums[0] != sums[1] || math.Abs(sums[0]-want) > 1e-12*want {
		t.Errorf("sum g^2: %v (1 worker), %v (2), kernel %v", sums[0], sums[1], want)
	}
}
