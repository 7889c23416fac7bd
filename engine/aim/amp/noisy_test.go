package amp

import (
	"math"
	"testing"

	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/aim"
)

// TestAMPNoisyFollowsSE: GAMP-RIE with the noisy softmax's g_out (CPU backend) at D = 150,
// rho = 0.5, Delta = 0.01 reaches the noisy state evolution's error at three alphas: the mean
// of three seeds within 0.04 (the finite-size spread of one run at D = 100-150 is about 0.03),
// and clearly above the noiseless SE where the two differ by more than 0.1.
func TestAMPNoisyFollowsSE(t *testing.T) {
	if testing.Short() {
		t.Skip("5 to 10 minutes")
	}
	dev := cpu.New(0)
	const delta = 0.01
	noisy, err := aim.NewNoisySoftmax(2, 1, delta)
	if err != nil {
		t.Fatal(err)
	}
	clean, _ := aim.NewSoftmax(2, 1)
	for _, alpha := range []float64{0.05, 0.1, 0.2} {
		want, noiseless := seMMSE(t, noisy, 0.5, alpha), seMMSE(t, clean, 0.5, alpha)
		p := aim.Params{D: 150, Alpha: alpha, Rho: 0.5, Channel: device.Channel{Kind: device.Softmax, T: 2, Beta: 1, Noise: delta}}
		seeds := []uint64{1, 2, 3}
		var s, s2 float64
		for _, seed := range seeds {
			p.Seed = seed
			e := runOnce(t, dev, p, DefaultOptions()).Error
			s, s2 = s+e, s2+e*e
		}
		n := float64(len(seeds))
		got := s / n
		sd := math.Sqrt(math.Max(0, s2/n-got*got) / (n - 1))
		t.Logf("noisy softmax Delta = %g, alpha = %g, D = 150: AMP %.4f +- %.4f (3 seeds), noisy SE %.4f, noiseless SE %.4f", delta, alpha, got, sd, want, noiseless)
		if math.Abs(got-want) > 0.04 {
			t.Errorf("alpha = %g: AMP %.4f, noisy SE %.4f", alpha, got, want)
		}
		if want-noiseless > 0.1 && got-noiseless < 0.05 {
			t.Errorf("alpha = %g: AMP %.4f is at the noiseless SE %.4f, not the noisy %.4f", alpha, got, noiseless, want)
		}
	}
}
