package channel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestHardmaxTMatchesT2: at T = 2 the polytope estimate of g_out equals the closed form of
// Hardmax (exact mode) within 4 reported standard errors, on random omega, V and outputs.
func TestHardmaxTMatchesT2(t *testing.T) {
	h, err := NewHardmaxT(2, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	ex, _ := NewHardmax(2, false)
	r := rand.New(rand.NewPCG(1, 2))
	worst := 0.0
	for n := 0; n < 40; n++ {
		omega := []float64{r.NormFloat64(), r.NormFloat64(), r.NormFloat64()}
		V := 0.05 + 2*r.Float64()
		y := make([]float64, 4)
		y[r.IntN(2)] = 1
		y[2+r.IntN(2)] = 1
		g, want := make([]float64, 3), make([]float64, 3)
		est := h.GOut(g, y, omega, V)
		ex.GOut(want, y, omega, V)
		se := est.ErrM / math.Sqrt(V)
		for j := range g {
			d := math.Abs(g[j] - want[j])
			worst = math.Max(worst, d/math.Max(se, 1e-300))
			if d > 4*se+1e-12 {
				t.Errorf("y %v omega %v V %.3g: g[%d] = %.10g +- %.2g, closed form %.10g", y, omega, V, j, g[j], se, want[j])
			}
		}
	}
	t.Logf("largest difference %.2f reported standard errors", worst)
}

// rejectionGOut estimates E[u - omega | y, omega]/V by drawing u = omega + sqrt(V) xi until
// draws of them reproduce y, and returns it with its standard errors.
func rejectionGOut(h *HardmaxT, r *rand.Rand, y, omega []float64, V float64, accept int) (mean, se []float64) {
	T, M := h.t, h.m
	u, hm, yy := make([]float64, M), make([]float64, T*T), make([]float64, T*T)
	sum, sum2 := make([]float64, M), make([]float64, M)
	for n := 0; n < accept; {
		for j := range u {
			u[j] = omega[j] + math.Sqrt(V)*r.NormFloat64()
		}
		HFromU(hm, u, T)
		h.Output(yy, hm)
		same := true
		for i := range yy {
			same = same && yy[i] == y[i]
		}
		if !same {
			continue
		}
		n++
		for j := range u {
			x := (u[j] - omega[j]) / V
			sum[j] += x
			sum2[j] += x * x
		}
	}
	mean, se = make([]float64, M), make([]float64, M)
	for j := range mean {
		mean[j] = sum[j] / float64(accept)
		se[j] = math.Sqrt((sum2[j]/float64(accept) - mean[j]*mean[j]) / float64(accept))
	}
	return mean, se
}

// TestHardmaxTRejection: g_out at T = 3 and 4 against a brute-force Monte Carlo posterior mean
// (rejection sampling of u given y and omega, 40 000 accepted draws), within 4 combined
// standard errors, on random inputs; the outputs y are drawn from the model.
func TestHardmaxTRejection(t *testing.T) {
	if testing.Short() {
		t.Skip("several seconds of rejection sampling")
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, T := range []int{3, 4} {
		h, err := NewHardmaxT(T, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		M := Fields(T)
		for n := 0; n < 3; n++ {
			omega := make([]float64, M)
			for j := range omega {
				omega[j] = 0.7 * r.NormFloat64()
			}
			V := 0.3 + r.Float64()
			// y from the model: u = omega + sqrt(V) xi.
			u, hm, y := make([]float64, M), make([]float64, T*T), make([]float64, T*T)
			for j := range u {
				u[j] = omega[j] + math.Sqrt(V)*r.NormFloat64()
			}
			HFromU(hm, u, T)
			h.Output(y, hm)
			g := make([]float64, M)
			est := h.GOut(g, y, omega, V)
			mc, mcse := rejectionGOut(h, r, y, omega, V, 40000)
			for j := range g {
				se := math.Hypot(mcse[j], est.ErrM/math.Sqrt(V))
				if math.Abs(g[j]-mc[j]) > 4*se {
					t.Errorf("T = %d, case %d: g[%d] = %.5f +- %.2g, rejection %.5f +- %.2g", T, n, j, g[j], est.ErrM/math.Sqrt(V), mc[j], mcse[j])
				}
			}
			t.Logf("T = %d, case %d: Z_out %.4g (rel err %.2g), g err %.2g", T, n, math.Exp(est.LogZ), est.ErrLogZ, est.ErrM/math.Sqrt(V))
		}
	}
}

// TestHardmaxTPermutation: relabelling the tokens by one permutation pi of both y and omega
// leaves Z_out unchanged and permutes g_out alike, within 4 reported standard errors (the
// two estimates integrate in different orders).
func TestHardmaxTPermutation(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, T := range []int{3, 4} {
		h, _ := NewHardmaxT(T, 0, 0)
		M := Fields(T)
		for n := 0; n < 4; n++ {
			omega := make([]float64, M)
			for j := range omega {
				omega[j] = r.NormFloat64()
			}
			V := 0.2 + r.Float64()
			y := make([]float64, T*T)
			for a := 0; a < T; a++ {
				y[a*T+r.IntN(T)] = 1
			}
			pi := r.Perm(T)
			// (pi y)_{pi(a), pi(c)} = y_ac; the same for omega's pairs.
			py, pomega := make([]float64, T*T), make([]float64, M)
			for a := 0; a < T; a++ {
				for c := 0; c < T; c++ {
					py[pi[a]*T+pi[c]] = y[a*T+c]
					if a <= c {
						pomega[Index(T, pi[a], pi[c])] = omega[Index(T, a, c)]
					}
				}
			}
			g, pg := make([]float64, M), make([]float64, M)
			e1 := h.GOut(g, y, omega, V)
			e2 := h.GOut(pg, py, pomega, V)
			if d := math.Abs(e1.LogZ - e2.LogZ); d > 4*math.Hypot(e1.ErrLogZ, e2.ErrLogZ) {
				t.Errorf("T = %d: log Z_out %.8g and %.8g after a permutation (errors %.2g, %.2g)", T, e1.LogZ, e2.LogZ, e1.ErrLogZ, e2.ErrLogZ)
			}
			se := math.Hypot(e1.ErrM, e2.ErrM) / math.Sqrt(V)
			for a := 0; a < T; a++ {
				for c := a; c < T; c++ {
					x, px := g[Index(T, a, c)], pg[Index(T, pi[a], pi[c])]
					if math.Abs(x-px) > 4*se {
						t.Errorf("T = %d: g_(%d,%d) = %.6g, permuted %.6g (+- %.2g)", T, a, c, x, px, se)
					}
				}
			}
		}
	}
}

// BenchmarkHardmaxTGOut times one g_out evaluation (one sample) at T = 2, 3, 4 with the default
// rule (1024 points x 8 shifts), all points (tol 0) or until the errors reach 1e-3, and reports
// the points per shift used and the reported relative error of Z_out.
func BenchmarkHardmaxTGOut(b *testing.B) {
	for _, T := range []int{2, 3, 4} {
		for _, tol := range []float64{0, 1e-3} {
			b.Run(fmt.Sprintf("T=%d/tol=%g", T, tol), func(b *testing.B) {
				h, _ := NewHardmaxT(T, 0, 0)
				h.Tol = tol
				M := Fields(T)
				r := rand.New(rand.NewPCG(1, uint64(T)))
				omega, g, y := make([]float64, M), make([]float64, M), make([]float64, T*T)
				for j := range omega {
					omega[j] = 0.5 * r.NormFloat64()
				}
				for a := 0; a < T; a++ {
					y[a*T] = 1 // every row picks token 0: a feasible pattern
				}
				var est Estimate
				for b.Loop() {
					est = h.GOut(g, y, omega, 0.5)
				}
				b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/sample")
				b.ReportMetric(float64(est.Points), "points")
				b.ReportMetric(est.ErrLogZ, "relerr-Z")
			})
		}
	}
}

// TestHardmaxTInfeasible: a cyclic pattern (row a picks token a+1 mod 3) is impossible, since
// h_01 > h_02 = h_20 > h_21 = h_12 > h_10 = h_01; its Z_out is 0 (log Z = -Inf), which the
// estimate says, with g NaN, rather than a number.
func TestHardmaxTInfeasible(t *testing.T) {
	h, _ := NewHardmaxT(3, 0, 0)
	y := make([]float64, 9)
	for a := 0; a < 3; a++ {
		y[a*3+(a+1)%3] = 1
	}
	g := make([]float64, 6)
	est := h.GOut(g, y, make([]float64, 6), 1)
	if !math.IsInf(est.LogZ, -1) || !math.IsNaN(g[0]) {
		t.Errorf("cyclic pattern: log Z %g, g %v; want -Inf and NaN", est.LogZ, g)
	}
}

// TestHardmaxTErrorsHonest: the reported errors are honest and Tol stops early. A rerun with 4x
// the points (4096 against 1024 per shift) moves log Z_out and every g_out by no more than 4
// of the smaller rule's reported standard errors, at T = 3 on random inputs; with Tol = 1e-2 the
// estimate stops before the rule's end and stays within 4 of its reported errors of the
// 4096-point value.
func TestHardmaxTErrorsHonest(t *testing.T) {
	small, _ := NewHardmaxT(3, 1024, 8)
	big, _ := NewHardmaxT(3, 4096, 8)
	quick, _ := NewHardmaxT(3, 4096, 8)
	quick.Tol = 1e-2
	r := rand.New(rand.NewPCG(11, 12))
	M := 6
	early := 0
	for n := 0; n < 8; n++ {
		omega := make([]float64, M)
		for j := range omega {
			omega[j] = r.NormFloat64()
		}
		V := 0.2 + r.Float64()
		u, hm, y := make([]float64, M), make([]float64, 9), make([]float64, 9)
		for j := range u {
			u[j] = omega[j] + math.Sqrt(V)*r.NormFloat64()
		}
		HFromU(hm, u, 3)
		small.Output(y, hm)
		gs, gb, gq := make([]float64, M), make([]float64, M), make([]float64, M)
		es, eb, eq := small.GOut(gs, y, omega, V), big.GOut(gb, y, omega, V), quick.GOut(gq, y, omega, V)
		if d := math.Abs(es.LogZ - eb.LogZ); d > 4*es.ErrLogZ {
			t.Errorf("case %d: log Z moved by %.3g with 4x the points, reported error %.3g", n, d, es.ErrLogZ)
		}
		if d := math.Abs(eq.LogZ - eb.LogZ); d > 4*eq.ErrLogZ {
			t.Errorf("case %d: Tol's log Z is %.3g from the full rule's, reported error %.3g", n, d, eq.ErrLogZ)
		}
		for j := range gs {
			if d := math.Abs(gs[j] - gb[j]); d > 4*es.ErrM/math.Sqrt(V) {
				t.Errorf("case %d: g[%d] moved by %.3g with 4x the points, reported error %.3g", n, j, d, es.ErrM/math.Sqrt(V))
			}
			if d := math.Abs(gq[j] - gb[j]); d > 4*eq.ErrM/math.Sqrt(V) {
				t.Errorf("case %d: Tol's g[%d] is %.3g from the full rule's, reported error %.3g", n, j, d, eq.ErrM/math.Sqrt(V))
			}
		}
		if eq.Points < 4096 {
			early++
		}
	}
	if early == 0 {
		t.Error("Tol = 1e-2 never stopped before the rule's 4096 points")
	}
	t.Logf("Tol = 1e-2 stopped early in %d of 8 cases", early)
}

// TestHardmaxTNoAllocations: once a pattern's constraints are prepared, an estimate of g_out
// allocates nothing (it runs once per sample per iteration).
func TestHardmaxTNoAllocations(t *testing.T) {
	h, _ := NewHardmaxT(3, 128, 4)
	h.Tol = 1e-2
	y, omega, g := make([]float64, 9), []float64{0.1, -0.2, 0.3, 0, 0.5, -0.1}, make([]float64, 6)
	y[0], y[3], y[6] = 1, 1, 1
	h.GOut(g, y, omega, 0.7)
	if n := testing.AllocsPerRun(20, func() { h.GOut(g, y, omega, 0.7) }); n != 0 {
		t.Errorf("GOut allocates %g times per call, want 0", n)
	}
}
