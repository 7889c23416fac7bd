package channel

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDeepAttentionCharts checks the two closed forms the sampler's charts rest on, on
// random inputs: solveAttention's v satisfies A(v) w = r (and so does -v), and
// logAttentionJacobian is log |det d(A(v)^{-1} r)/dv| by central differences.
func TestDeepAttentionCharts(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, cb := range [][2]float64{{1, 1}, {0.5, 1.3}, {2, 0.7}} {
		q := NewDeepSampler(3, cb[0], cb[1])
		for k := 0; k < 50; k++ {
			// The closed forms lose digits where the softmax saturates (|v| of 4 and more, where
			// the prior has no mass): draw v at the prior's scale.
			v := [2]float64{r.NormFloat64(), r.NormFloat64()}
			rr := [2]float64{r.NormFloat64(), r.NormFloat64()}
			h := func(v [2]float64) [2]float64 { return solve2(q.attention(v), rr) }
			// Round trip: w = A(v)^{-1} r, then solve A(v') w = r.
			w := h(v)
			got, ok := q.solveAttention(w, rr)
			if !ok {
				t.Fatalf("c = %g, beta = %g: no solution for w = A(v)^{-1} r at v = %v", cb[0], cb[1], v)
			}
			if math.Abs(math.Abs(got[0])-math.Abs(v[0])) > 1e-8*(1+math.Abs(v[0])) ||
				math.Abs(math.Abs(got[1])-math.Abs(v[1])) > 1e-8*(1+math.Abs(v[1])) || got[0]*got[1]*v[0]*v[1] < 0 {
				t.Errorf("c = %g, beta = %g: solveAttention gives %v, want +-%v", cb[0], cb[1], got, v)
			}
			for _, sg := range []float64{1, -1} {
				a := mul2(q.attention([2]float64{sg * got[0], sg * got[1]}), w)
				if math.Abs(a[0]-rr[0]) > 1e-9 || math.Abs(a[1]-rr[1]) > 1e-9 {
					t.Errorf("A(%g v) w = %v, want %v", sg, a, rr)
				}
			}
			const eps = 1e-6
			var J [4]float64
			for j := 0; j < 2; j++ {
				vp, vm := v, v
				vp[j] += eps
				vm[j] -= eps
				hp, hm := h(vp), h(vm)
				J[j], J[2+j] = (hp[0]-hm[0])/(2*eps), (hp[1]-hm[1])/(2*eps)
			}
			num := math.Abs(J[0]*J[3] - J[1]*J[2])
			if f := math.Exp(q.logAttentionJacobian(v, rr)); math.Abs(f-num) > 1e-6*num+1e-12 {
				t.Errorf("c = %g, beta = %g, v = %v: Jacobian %g, central differences %g", cb[0], cb[1], v, f, num)
			}
		}
	}
	// No solution where the token difference of w vanishes.
	q := NewDeepSampler(3, 1, 1)
	if _, ok := q.solveAttention([2]float64{0.3, 0.3}, [2]float64{1, 0}); ok {
		t.Error("solveAttention found a v for w_0 = w_1")
	}
}

// TestDeepReduce checks DeepSampler's one-pass reduction (add, endDraw, finish) against the
// two-pass formulas written out (the global maximum first, then plain sums), on random points
// whose log-weights span 60 units and rise and fall, with draws of 0 to 4 points.
func TestDeepReduce(t *testing.T) {
	const deepPM = 6
	r := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 20; trial++ {
		n := 2 + r.IntN(200)
		type pt struct {
			z    [deepMaxPM]float64
			lw   float64
			draw int
		}
		var pts []pt
		q := NewDeepSampler(3, 1, 1)
		q.reset()
		for i := 0; i < n; i++ {
			q.dw = 0
			clear(q.dn[:])
			for k := r.IntN(5); k > 0; k-- {
				var p pt
				for a := range p.z {
					p.z[a] = 3 * r.NormFloat64()
				}
				p.lw = 30*math.Sin(float64(i)/7) + 2*r.NormFloat64()
				p.draw = i
				pts = append(pts, p)
				q.add(&p.z, p.lw)
			}
			q.endDraw()
		}
		got := make([]float64, DeepOut(3))
		q.finish(got, n)
		if len(pts) == 0 {
			if got[DeepOutStatus(3)] != DeepNoPoint {
				t.Fatalf("no points: status %v", got[DeepOutStatus(3)])
			}
			continue
		}
		// Two passes.
		mx := math.Inf(-1)
		for _, p := range pts {
			mx = math.Max(mx, p.lw)
		}
		var sw, sw2 float64
		var m, bias, e2 [deepMaxPM]float64
		var sec [deepPM * deepPM]float64
		W := make([]float64, n)
		N := make([][deepMaxPM]float64, n)
		for _, p := range pts {
			w := math.Exp(p.lw - mx)
			sw += w
			W[p.draw] += w
			for a := 0; a < deepPM; a++ {
				N[p.draw][a] += w * p.z[a]
				m[a] += w * p.z[a]
				for b := 0; b < deepPM; b++ {
					sec[a*deepPM+b] += w * p.z[a] * p.z[b]
				}
			}
		}
		for a := range m {
			m[a] /= sw
		}
		for i := 0; i < n; i++ {
			sw2 += W[i] * W[i]
			for a := 0; a < deepPM; a++ {
				ra := W[i]*m[a] - N[i][a]
				bias[a] += W[i] * ra
				e2[a] += ra * ra
			}
		}
		want := make([]float64, DeepOut(3))
		for a := 0; a < deepPM; a++ {
			want[a] = m[a] - bias[a]/(sw*sw)
			want[DeepOutErr(3)+a] = math.Sqrt(e2[a]) / sw
			for b := 0; b < deepPM; b++ {
				want[DeepOutSecond(3)+a*deepPM+b] = sec[a*deepPM+b] / sw
			}
		}
		zhat := sw / float64(n)
		want[DeepOutLogZ(3)] = math.Log(zhat) + mx + (sw2/float64(n)-zhat*zhat)/float64(n)/(2*zhat*zhat)
		want[DeepOutESS(3)] = sw * sw / sw2
		for i := range want {
			if d := math.Abs(got[i] - want[i]); !(d <= 1e-12*(1+math.Abs(want[i]))) {
				t.Errorf("trial %d (%d draws, %d points): out[%d] = %.17g, two passes %.17g", trial, n, len(pts), i, got[i], want[i])
			}
		}
	}
}
