package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/aimtheory/aim/channel"
)

var testChannels = []channel.Spec{
	{Kind: channel.KindSoftmax, T: 2, Beta: 1},
	{Kind: channel.KindSoftmax, T: 3, Beta: 0.7},
	{Kind: channel.KindSoftmax, T: 5, Beta: 1.3},
	{Kind: channel.KindHardmax, T: 2},
	{Kind: channel.KindHardmax, T: 2, PaperCompat: true},
}

// randSymBatch returns n random symmetric t x t matrices with entries of standard deviation s.
func randSymBatch(r *rand.Rand, n, t int, s float64) []float64 {
	v := make([]float64, n*t*t)
	for mu := 0; mu < n; mu++ {
		for a := 0; a < t; a++ {
			for b := a; b < t; b++ {
				x := s * r.NormFloat64()
				v[(mu*t+a)*t+b], v[(mu*t+b)*t+a] = x, x
			}
		}
	}
	return v
}

func TestChannelOutput(t *testing.T) {
	d := New(3)
	r := rand.New(rand.NewPCG(11, 12))
	me := &maxErr{t: t, op: "ChannelOutput softmax"}
	for _, ch := range testChannels {
		T := ch.T
		for _, n := range []int{1, 7, 300} {
			h := randSymBatch(r, n, T, 2)
			hb := up(t, d, h)
			yb, _ := d.Alloc(n * T * T)
			if err := d.ChannelOutput(ch, yb, hb, n); err != nil {
				t.Fatal(err)
			}
			y := down(t, d, yb)
			want := make([]float64, n*T*T)
			for mu := 0; mu < n; mu++ {
				for a := 0; a < T; a++ {
					row := h[(mu*T+a)*T : (mu*T+a+1)*T]
					out := want[(mu*T+a)*T : (mu*T+a+1)*T]
					best := 0
					for b := range row {
						if row[b] > row[best] {
							best = b
						}
					}
					if ch.Kind == channel.KindHardmax {
						out[best] = 1
						continue
					}
					var z float64
					for b := range row {
						out[b] = math.Exp(ch.Beta * row[b])
						z += out[b]
					}
					var sum float64
					for b := range out {
						out[b] /= z
						sum += y[(mu*T+a)*T+b]
					}
					if math.Abs(sum-1) > 1e-15*float64(T) {
						t.Errorf("%v: row %d of sample %d sums to %v", ch, a, mu, sum)
					}
				}
			}
			if ch.Kind == channel.KindHardmax {
				if relErr(y, want) != 0 {
					t.Errorf("%v n=%d: not one-hot at the argmax", ch, n)
				}
			} else {
				me.check(relErr(y, want), tol, "%v n=%d", ch, n)
			}
			// In place (y = h) gives the same.
			if err := d.ChannelOutput(ch, hb, hb, n); err != nil {
				t.Fatal(err)
			}
			if relErr(down(t, d, hb), y) != 0 {
				t.Errorf("%v: in-place ChannelOutput differs", ch)
			}
		}
	}
	me.report()
}

// refGOut is the per-sample reference: the channel package called directly, with the
// z <-> u coordinate conversion written out (omega_u = omega_z/sqrt2, V_u = V_z/2,
// g_z = g_u/sqrt2 on both (a,b) and (b,a)).
func refGOut(t *testing.T, ch channel.Spec, y, omega []float64, n int, vz float64) ([]float64, float64) {
	var sc interface {
		GOut(g, y, omega []float64, V float64)
	}
	var err error
	if ch.Kind == channel.KindSoftmax {
		sc, err = channel.NewSoftmax(ch.T, ch.Beta)
	} else {
		sc, err = channel.NewHardmax(ch.T, ch.PaperCompat)
	}
	if err != nil {
		t.Fatal(err)
	}
	T := ch.T
	M := channel.Fields(T)
	g := make([]float64, n*T*T)
	var sum float64
	for mu := 0; mu < n; mu++ {
		ou, gu := make([]float64, M), make([]float64, M)
		for a := 0; a < T; a++ {
			for b := a; b < T; b++ {
				ou[channel.Index(T, a, b)] = omega[(mu*T+a)*T+b] / math.Sqrt2
			}
		}
		sc.GOut(gu, y[mu*T*T:(mu+1)*T*T], ou, vz/2)
		for a := 0; a < T; a++ {
			for b := a; b < T; b++ {
				gz := gu[channel.Index(T, a, b)] / math.Sqrt2
				g[(mu*T+a)*T+b] = gz
				g[(mu*T+b)*T+a] = gz
				sum += gz * gz
			}
		}
	}
	return g, sum
}

// softmaxGOutZ is the softmax g_out written directly in z-coordinates (docs/theory/aim.md section 3):
// phi_ab = log(y_ab/y_aT)/beta, z^p_ab = tau_ab (phi_Ta + phi_ab), and
// g = [(z^p - omega) - tau (tau . (z^p - omega))/T^2]/V, an independent check of the coordinate
// conversion.
func softmaxGOutZ(y, omega []float64, T int, beta, vz float64) []float64 {
	phi := func(a, b int) float64 { return math.Log(y[a*T+b]/y[a*T+T-1]) / beta }
	tau := func(a, b int) float64 {
		if a == b {
			return 1
		}
		return math.Sqrt2
	}
	r := make([]float64, T*T)
	var dot float64
	for a := 0; a < T; a++ {
		for b := a; b < T; b++ {
			r[a*T+b] = tau(a, b)*(phi(T-1, a)+phi(a, b)) - omega[a*T+b]
			dot += tau(a, b) * r[a*T+b]
		}
	}
	g := make([]float64, T*T)
	for a := 0; a < T; a++ {
		for b := a; b < T; b++ {
			g[a*T+b] = (r[a*T+b] - tau(a, b)*dot/float64(T*T)) / vz
			g[b*T+a] = g[a*T+b]
		}
	}
	return g
}

// hardmaxLogZ returns log Z_out for T = 2 in z-coordinates: Phi2(kappa1, kappa2; s1 s2/3) with
// kappa_a = s_a (sqrt2 omega_u,aa - omega_u,12)/sqrt(3 V_u) (docs/theory/aim.md 2.3).
func hardmaxLogZ(y []float64, o11, o12, o22, vz float64) float64 {
	s1, s2 := -1.0, -1.0
	if y[0] > 0.5 {
		s1 = 1
	}
	if y[3] > 0.5 {
		s2 = 1
	}
	vu := vz / 2
	u11, u12, u22 := o11/math.Sqrt2, o12/math.Sqrt2, o22/math.Sqrt2
	r := math.Sqrt(3 * vu)
	k1 := s1 * (math.Sqrt2*u11 - u12) / r
	k2 := s2 * (math.Sqrt2*u22 - u12) / r
	return math.Log(channel.BivariateNormalCDF(k1, k2, s1*s2/3))
}

func TestChannelGOut(t *testing.T) {
	d := New(3)
	r := rand.New(rand.NewPCG(13, 14))
	const vz = 0.8
	for _, ch := range testChannels {
		me := &maxErr{t: t, op: fmtSprintf("ChannelGOut %v T=%d vs channel package", ch, ch.T)}
		T := ch.T
		for _, n := range []int{1, 7, 300, 1000} {
			h := randSymBatch(r, n, T, 1)
			hb := up(t, d, h)
			yb, _ := d.Alloc(n * T * T)
			if err := d.ChannelOutput(ch, yb, hb, n); err != nil {
				t.Fatal(err)
			}
			y := down(t, d, yb)
			// omega: the teacher's h in z-coordinates plus noise.
			omega := randSymBatch(r, n, T, 0.5)
			for mu := 0; mu < n; mu++ {
				for a := 0; a < T; a++ {
					for b := 0; b < T; b++ {
						tau := 1.0
						if a != b {
							tau = math.Sqrt2
						}
						omega[(mu*T+a)*T+b] += tau * h[(mu*T+a)*T+b]
					}
				}
			}
			ob := up(t, d, omega)
			gb := up(t, d, randVec(r, n*T*T)) // garbage: overwritten
			sum, err := d.ChannelGOut(ch, gb, yb, ob, n, vz)
			if err != nil {
				t.Fatal(err)
			}
			g := down(t, d, gb)
			wantG, wantSum := refGOut(t, ch, y, omega, n, vz)
			me.check(relErr(g, wantG), tol, "n=%d g", n)
			me.check(relScalar(sum, wantSum), tol, "n=%d sum", n)

			// Independent formulas in z-coordinates, sample by sample.
			for mu := 0; mu < min(n, 50); mu++ {
				ys, os, gs := y[mu*T*T:(mu+1)*T*T], omega[mu*T*T:(mu+1)*T*T], g[mu*T*T:(mu+1)*T*T]
				switch {
				case ch.Kind == channel.KindSoftmax:
					if e := relErr(gs, softmaxGOutZ(ys, os, T, ch.Beta, vz)); e > 1e-10 {
						t.Errorf("%v: sample %d: g differs from the z-coordinate formula by %.3g", ch, mu, e)
					}
				case !ch.PaperCompat:
					// g_z,ab = d log Z_out / d omega_z,ab by central differences.
					const hs = 1e-5
					num := make([]float64, 4)
					for _, ab := range [][2]int{{0, 0}, {0, 1}, {1, 1}} {
						p := []float64{os[0], os[1], os[3]}
						q := []float64{os[0], os[1], os[3]}
						i := map[[2]int]int{{0, 0}: 0, {0, 1}: 1, {1, 1}: 2}[ab]
						p[i] += hs
						q[i] -= hs
						v := (hardmaxLogZ(ys, p[0], p[1], p[2], vz) - hardmaxLogZ(ys, q[0], q[1], q[2], vz)) / (2 * hs)
						num[ab[0]*2+ab[1]], num[ab[1]*2+ab[0]] = v, v
					}
					if e := relErr(gs, num); e > 1e-6 {
						t.Errorf("%v: sample %d: g differs from d log Z/d omega_z by %.3g", ch, mu, e)
					}
				default:
					// The published formula: phi2/Phi2 for both derivatives.
					s1, s2 := -1.0, -1.0
					if ys[0] > 0.5 {
						s1 = 1
					}
					if ys[3] > 0.5 {
						s2 = 1
					}
					rr := math.Sqrt(3 * vz / 2)
					k1 := s1 * (os[0] - os[1]/math.Sqrt2) / rr
					k2 := s2 * (os[3] - os[1]/math.Sqrt2) / rr
					p := channel.BivariateNormalPDF(k1, k2, s1*s2/3) / channel.BivariateNormalCDF(k1, k2, s1*s2/3)
					g11, g12, g22 := s1*p/rr, -(s1+s2)*p/rr/math.Sqrt2, s2*p/rr
					if e := relErr(gs, []float64{g11, g12, g12, g22}); e > 1e-10 {
						t.Errorf("%v: sample %d: g differs from the paper formula by %.3g", ch, mu, e)
					}
				}
			}
		}
		me.report()
	}
}

// TestLinearChannel: the device front's linear channel (composed from Copy, Axpby and Dot)
// writes y = h, and g_z = g_u/sqrt(2) of channel.Linear.GOut at omega_u = omega_z/sqrt(2),
// V_u = V/2 with its square-sum, out of place and in place (g = omega), noiseless and noisy.
func TestLinearChannel(t *testing.T) {
	d := New(3)
	r := rand.New(rand.NewPCG(21, 22))
	const n, vz = 257, 0.7
	for _, delta := range []float64{0, 0.25} {
		ch := channel.Spec{Kind: channel.KindLinear, T: 1, Noise: delta}
		sc, err := channel.NewLinear(delta)
		if err != nil {
			t.Fatal(err)
		}
		h := randVec(r, n)
		hb := up(t, d, h)
		yb, _ := d.Alloc(n)
		if err := d.ChannelOutput(ch, yb, hb, n); err != nil {
			t.Fatal(err)
		}
		y := down(t, d, yb)
		if relErr(y, h) != 0 {
			t.Fatalf("%v: ChannelOutput is not y = h", ch)
		}
		if err := d.ChannelOutput(ch, hb, hb, n); err != nil || relErr(down(t, d, hb), h) != 0 {
			t.Fatalf("%v: in place: %v", ch, err)
		}
		omega := randVec(r, n)
		want, wantSum := make([]float64, n), 0.0
		for mu := range want {
			g := []float64{0}
			sc.GOut(g, y[mu:mu+1], []float64{omega[mu] / math.Sqrt2}, vz/2)
			want[mu] = g[0] / math.Sqrt2
			wantSum += want[mu] * want[mu]
		}
		for _, inPlace := range []bool{false, true} {
			ob := up(t, d, omega)
			gb := ob
			if !inPlace {
				gb = up(t, d, randVec(r, n))
			}
			sum, err := d.ChannelGOut(ch, gb, yb, ob, n, vz)
			if err != nil {
				t.Fatal(err)
			}
			if e := relErr(down(t, d, gb), want); e > 1e-15 {
				t.Errorf("%v in place %v: g differs from channel.Linear by %.3g", ch, inPlace, e)
			}
			if e := relScalar(sum, wantSum); e > 1e-13 {
				t.Errorf("%v in place %v: sum %.17g, want %.17g", ch, inPlace, sum, wantSum)
			}
		}
	}
}
