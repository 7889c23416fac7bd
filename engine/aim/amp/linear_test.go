package amp

import (
	"math"
	"testing"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/internal/devtest"
)

// publishedAMP reads one of the authors' GAMP-RIE result files (engine/aim/se/testdata/quadratic,
// README there): alpha (rounded to 1e-6) -> (mean, std) of ||S-hat - S||_F^2 / D over their runs.
func publishedAMP(t *testing.T, name string) map[float64][2]float64 {
	t.Helper()
	col, rows := devtest.QuadraticCSV(t, name)
	out := map[float64][2]float64{}
	for _, r := range rows {
		out[math.Round(r[col["alpha"]]*1e6)/1e6] = [2]float64{r[col["AMP_mean"]], r[col["AMP_std"]]}
	}
	return out
}

// TestAMPLinearAgainstPublished: GAMP-RIE of the quadratic network (the linear channel at T = 1,
// docs/theory/aim.md 2.8) at D = 100, kappa = rho = 0.5, started as the authors' notebook
// starts (PaperInit) and run for their 100 iterations at damping 0.5, against their published
// runs (AMP_100_0.5_0.0.csv, AMP_100_0.5_0.25.csv): the mean of 8 seeds lies within 2 published
// standard deviations (the spread of one run) of the published mean. Over all 18 alphas of
// each file the measured distance was at most 1.5 of them (docs/validation/quadratic.md).
func TestAMPLinearAgainstPublished(t *testing.T) {
	if testing.Short() {
		t.Skip("about 20 s")
	}
	dev := cpu.New(0)
	seeds := []uint64{1, 2, 3, 4, 5, 6, 7, 8}
	for _, c := range []struct {
		file   string
		delta  float64
		alphas []float64
	}{
		{"AMP_100_0.5_0.0.csv", 0, []float64{0.1, 0.2, 0.3, 0.4}},
		{"AMP_100_0.5_0.25.csv", 0.25, []float64{0.1, 0.2, 0.3, 0.4}},
	} {
		pub := publishedAMP(t, c.file)
		spec := channel.Spec{Kind: channel.KindLinear, T: 1, Noise: c.delta}
		o := ChannelOptions(spec)
		o.PaperInit = true
		for _, alpha := range c.alphas {
			want, ok := pub[alpha]
			if !ok {
				t.Fatalf("%s has no alpha = %g", c.file, alpha)
			}
			got := meanError(t, dev, aim.Params{D: 100, Alpha: alpha, Rho: 0.5, Channel: spec}, seeds, o)
			z := (got - want[0]) / want[1]
			t.Logf("%s alpha = %g: aim %.5f (8 seeds), published %.5f +- %.5f: %+.2f std", c.file, alpha, got, want[0], want[1], z)
			if math.Abs(z) > 2 {
				t.Errorf("%s alpha = %g: aim %.5f, published %.5f +- %.5f (%+.2f std; tolerance 2)", c.file, alpha, got, want[0], want[1], z)
			}
		}
	}
}
