package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/device"
)

// hardmaxTInputs returns n teacher outputs y = hardmax(h) of T x T indices h (standard
// deviation 1) and omega = tau o h + N(0, 0.5^2) in z-coordinates, on d.
func hardmaxTInputs(t *testing.T, d *Device, r *rand.Rand, ch channel.Spec, n int) (y, omega []float64, yb, ob device.Buffer) {
	T := ch.T
	h := randSymBatch(r, n, T, 1)
	yb, _ = d.Alloc(n * T * T)
	if err := d.ChannelOutput(ch, yb, up(t, d, h), n); err != nil {
		t.Fatal(err)
	}
	omega = randSymBatch(r, n, T, 0.5)
	for i := range omega {
		tau := math.Sqrt2
		if a, b := (i/T)%T, i%T; a == b {
			tau = 1
		}
		omega[i] += tau * h[i]
	}
	return down(t, d, yb), omega, yb, up(t, d, omega)
}

// TestChannelGOutHardmaxT: at T = 3 and 4, ChannelGOut equals channel.HardmaxT.GOut called
// sample by sample with the z <-> u conversion written out (omega_u = omega_z/sqrt2, V_u =
// V_z/2, g_z = g_u/sqrt2), bit for bit, for the default adaptive rule and a fixed one; the
// outputs are the one-hot row argmax; and 1 and 3 workers give the same bits.
func TestChannelGOutHardmaxT(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	const vz, n = 0.8, 70
	for _, ch := range []channel.Spec{
		{Kind: channel.KindHardmax, T: 3}, {Kind: channel.KindHardmax, T: 3, Points: 256, Tol: -1}, {Kind: channel.KindHardmax, T: 4, Points: 512},
	} {
		T, M := ch.T, channel.Fields(ch.T)
		d1, d3 := New(1), New(3)
		y, omega, yb, ob := hardmaxTInputs(t, d3, r, ch, n)
		for mu := 0; mu < n; mu++ {
			for a := 0; a < T; a++ {
				var ones float64
				for b := 0; b < T; b++ {
					ones += y[(mu*T+a)*T+b]
				}
				if ones != 1 {
					t.Fatalf("%v T=%d: sample %d row %d is not one-hot: %v", ch, T, mu, a, y[mu*T*T:(mu+1)*T*T])
				}
			}
		}
		gb, _ := d3.Alloc(n * T * T)
		sum, err := d3.ChannelGOut(ch, gb, yb, ob, n, vz)
		if err != nil {
			t.Fatal(err)
		}
		g := down(t, d3, gb)

		points, tol := ch.Lattice()
		k, err := channel.NewHardmaxT(T, points, channel.HardmaxTShifts)
		if err != nil {
			t.Fatal(err)
		}
		k.Tol = tol
		want := make([]float64, n*T*T)
		ou, gu := make([]float64, M), make([]float64, M)
		var worst float64
		for mu := 0; mu < n; mu++ {
			for a := 0; a < T; a++ {
				for b := a; b < T; b++ {
					ou[channel.Index(T, a, b)] = omega[(mu*T+a)*T+b] / math.Sqrt2
				}
			}
			est := k.GOut(gu, y[mu*T*T:(mu+1)*T*T], ou, vz/2)
			worst = math.Max(worst, est.ErrM/math.Sqrt(vz/2))
			for a := 0; a < T; a++ {
				for b := a; b < T; b++ {
					want[(mu*T+a)*T+b] = gu[channel.Index(T, a, b)] / math.Sqrt2
					want[(mu*T+b)*T+a] = want[(mu*T+a)*T+b]
				}
			}
		}
		for i := range g {
			if math.Float64bits(g[i]) != math.Float64bits(want[i]) {
				t.Fatalf("%v T=%d: g[%d] = %v, channel.HardmaxT gives %v", ch, T, i, g[i], want[i])
			}
		}
		if !(sum > 0) || math.IsInf(sum, 0) {
			t.Errorf("%v T=%d: square-sum %v", ch, T, sum)
		}
		t.Logf("%v T=%d points %d tol %g: sum g^2 = %.6g over %d samples, largest standard error of g_u %.2g", ch, T, points, tol, sum, n, worst)

		// One worker: the same bits.
		y1, o1 := up(t, d1, y), up(t, d1, omega)
		g1b, _ := d1.Alloc(n * T * T)
		sum1, err := d1.ChannelGOut(ch, g1b, y1, o1, n, vz)
		if err != nil {
			t.Fatal(err)
		}
		if sum1 != sum || relErr(down(t, d1, g1b), g) != 0 {
			t.Errorf("%v T=%d: 1 worker gives sum %v, 3 give %v", ch, T, sum1, sum)
		}
	}
}

// TestChannelGOutHardmaxTNaN: a sample whose estimate cannot be made (omega NaN) makes the
// square-sum NaN, which GAMP-RIE reports as a divergence.
func TestChannelGOutHardmaxTNaN(t *testing.T) {
	d := New(2)
	r := rand.New(rand.NewPCG(17, 18))
	ch := channel.Spec{Kind: channel.KindHardmax, T: 3, Points: 64}
	_, omega, yb, _ := hardmaxTInputs(t, d, r, ch, 40)
	omega[9*9+1] = math.NaN()
	gb, _ := d.Alloc(40 * 9)
	sum, err := d.ChannelGOut(ch, gb, yb, up(t, d, omega), 40, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(sum) {
		t.Errorf("square-sum with a NaN omega = %v, want NaN", sum)
	}
}
