package se

import (
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
)

// TestPsiInNaive compares the closed form psi_in(q-hat) = (q-hat - log(1 + q-hat))/2 with a
// naive evaluation of its definition, E_{w*, xi} log int dw N(w; 0, 1)
// exp(-q-hat w^2/2 + w (q-hat w* + sqrt(q-hat) xi)), w*, xi ~ N(0, 1): every integral by the
// trapezoid rule on a fine grid (the integrands are smooth and decay as Gaussians), to 1e-9.
// The form tr[q-hat (1 + q-hat)^{-1}]/2 - log(1 + q-hat)/2 (docs/theory/smi.md 2.1) is far off.
func TestPsiInNaive(t *testing.T) {
	grid := func(lo, hi float64, n int) (x, w []float64) {
		h := (hi - lo) / float64(n-1)
		for i := 0; i < n; i++ {
			x = append(x, lo+h*float64(i))
			w = append(w, h)
		}
		w[0], w[n-1] = h/2, h/2
		return x, w
	}
	normal := func(x float64) float64 { return math.Exp(-x*x/2) / math.Sqrt(2*math.Pi) }
	ox, ow := grid(-9, 9, 121)
	for _, qh := range []float64{0.05, 0.7, 3, 20} {
		ix, iw := grid(-12, 12, 401)
		var naive float64
		for a, ws := range ox {
			for b, xi := range ox {
				bb := qh*ws + math.Sqrt(qh)*xi
				// log of the inner integral, with its largest exponent taken out.
				mx := math.Inf(-1)
				for _, w := range ix {
					mx = math.Max(mx, -w*w/2-qh*w*w/2+w*bb)
				}
				var in float64
				for k, w := range ix {
					in += iw[k] * math.Exp(-w*w/2-qh*w*w/2+w*bb-mx)
				}
				naive += ow[a] * ow[b] * normal(ws) * normal(xi) * (math.Log(in/math.Sqrt(2*math.Pi)) + mx)
			}
		}
		got := PsiIn([]float64{qh})
		if math.Abs(got-naive) > 1e-9 {
			t.Errorf("q-hat = %g: psi_in = %.12f, naive %.12f", qh, got, naive)
		}
		docs := qh/(1+qh)/2 - math.Log1p(qh)/2
		if math.Abs(docs-naive) < 0.5*math.Abs(naive) {
			t.Errorf("q-hat = %g: the docs' form %.6f is near the naive %.6f", qh, docs, naive)
		}
	}
	if got, want := PsiIn([]float64{0.7, 3}), PsiIn([]float64{0.7})+PsiIn([]float64{3}); got != want {
		t.Errorf("psi_in of two layers = %g, want the sum %g", got, want)
	}
}

// TestPsiInStationarity: d psi_in/d q-hat_l = Q_l/2 with Q_l = q-hat_l/(1 + q-hat_l) (central
// differences, to 1e-8), so the stationarity of Phi in q-hat is the SE's prior update; and
// dPhi/dQ_l = -q-hat_l/2 + alpha d psi_out/dQ_l vanishes where q-hat = alpha F.
func TestPsiInStationarity(t *testing.T) {
	for _, qh := range []float64{0.01, 0.5, 2, 50} {
		h := 1e-5 * (1 + qh)
		d := (PsiIn([]float64{qh + h}) - PsiIn([]float64{qh - h})) / (2 * h)
		if want := qh / (1 + qh) / 2; math.Abs(d-want) > 1e-8 {
			t.Errorf("q-hat = %g: d psi_in/d q-hat = %.10f, want Q/2 = %.10f", qh, d, want)
		}
	}
	// FreeEntropy's bookkeeping: Phi = psi_in - sum Q q-hat/2 + alpha psi_out.
	Q, qh := []float64{0.2, 0.9}, []float64{0.25, 9}
	want := (0.25-math.Log1p(0.25))/2 + (9-math.Log1p(9))/2 - (0.2*0.25+0.9*9)/2 + 1.5*(-0.75)
	if got := FreeEntropy(1.5, Q, qh, -0.75); math.Abs(got-want) > 1e-14 {
		t.Errorf("FreeEntropy = %.16g, want %.16g", got, want)
	}
}

// TestSMIPsiOutMonteCarlo compares psi_out at Q = 0 with a brute-force estimate that knows
// nothing of the channel quadrature. At Q = 0, omega = 0 and V = (1 + epsilon) I, so
// Z_out(y) = p(u) + p(-u) = 2 p(u) (the law of u = v_L(Z) is symmetric: Z -> -Z flips u), and
// psi_out(0) = log 2 - h(u) with h the differential entropy of u. h is estimated from n draws
// of u by the Kozachenko-Leonenko k-nearest-neighbour estimator (in the plane,
// h = psi(n) - psi(k) + log pi + (2/n) sum_i log r_ik, r_ik the distance from u_i to its k-th
// neighbour). Tolerance: 4 combined standard errors (the quadrature's over its replicates, the
// estimator's from independent batches) plus 0.01 for the estimator's bias. Measured: L = 2,
// -3.122 +- 0.006 against -3.126 +- 0.003; L = 3 (skipped in -short mode), see the log.
func TestSMIPsiOutMonteCarlo(t *testing.T) {
	if raceEnabled {
		t.Skip("a Monte Carlo accuracy check, ten times slower under -race: runs in the plain go test")
	}
	cases := []struct {
		L       int
		samples int
	}{{2, 4000}, {3, 400}}
	for _, tc := range cases {
		if tc.L == 3 && testing.Short() {
			continue
		}
		ch := deep(t, tc.L, 1)
		o := DefaultOptions(tc.L)
		o.Samples = tc.samples
		psi, se, err := PsiOut(ch, make([]float64, tc.L), o)
		if err != nil {
			t.Fatal(err)
		}
		const batches, n, k = 4, 50000, 4
		r := rand.New(rand.NewPCG(11, uint64(tc.L)))
		s := ch.NewScratch()
		sd := math.Sqrt(1 + o.Epsilon)
		z := make([]float64, 2*tc.L)
		var hs []float64
		for b := 0; b < batches; b++ {
			us := make([][2]float64, n)
			for i := range us {
				for j := range z {
					z[j] = sd * r.NormFloat64()
				}
				u := make([]float64, 2)
				ch.Forward(u, z, nil, s)
				us[i] = [2]float64{u[0], u[1]}
			}
			hs = append(hs, klEntropy(us, k))
		}
		var mean, v float64
		for _, h := range hs {
			mean += h / batches
		}
		for _, h := range hs {
			v += (h - mean) * (h - mean) / (batches - 1)
		}
		want := math.Ln2 - mean
		wantErr := math.Sqrt(v / batches)
		if d := math.Abs(psi - want); d > 4*math.Hypot(se, wantErr)+0.01 {
			t.Errorf("L = %d: psi_out(0) = %.4f +- %.4f, brute force log 2 - h(u) = %.4f +- %.4f", tc.L, psi, se, want, wantErr)
		}
		t.Logf("L = %d: psi_out(0) = %.4f +- %.4f, brute force %.4f +- %.4f", tc.L, psi, se, want, wantErr)
	}
}

// klEntropy is the Kozachenko-Leonenko estimate of the differential entropy of a planar law
// from the points us, with the k-th neighbour distances found on a grid of cells.
func klEntropy(us [][2]float64, k int) float64 {
	n := len(us)
	lo, hi := [2]float64{math.Inf(1), math.Inf(1)}, [2]float64{math.Inf(-1), math.Inf(-1)}
	for _, u := range us {
		for d := 0; d < 2; d++ {
			lo[d], hi[d] = math.Min(lo[d], u[d]), math.Max(hi[d], u[d])
		}
	}
	cells := int(math.Sqrt(float64(n) / 4))
	w := [2]float64{(hi[0] - lo[0]) / float64(cells), (hi[1] - lo[1]) / float64(cells)}
	cell := func(u [2]float64) (int, int) {
		return min(int((u[0]-lo[0])/w[0]), cells-1), min(int((u[1]-lo[1])/w[1]), cells-1)
	}
	grid := make([][]int, cells*cells)
	for i, u := range us {
		a, b := cell(u)
		grid[a*cells+b] = append(grid[a*cells+b], i)
	}
	var sumLog float64
	ds := make([]float64, 0, 64)
	for i, u := range us {
		a, b := cell(u)
		for ring := 1; ; ring++ {
			ds = ds[:0]
			for x := max(a-ring, 0); x <= min(a+ring, cells-1); x++ {
				for y := max(b-ring, 0); y <= min(b+ring, cells-1); y++ {
					for _, j := range grid[x*cells+y] {
						if j != i {
							ds = append(ds, math.Hypot(us[j][0]-u[0], us[j][1]-u[1]))
						}
					}
				}
			}
			if len(ds) < k {
				continue
			}
			slices.Sort(ds)
			// Every point within ring cell widths of u has been seen.
			if ds[k-1] <= float64(ring)*math.Min(w[0], w[1]) || ring > 2*cells {
				sumLog += math.Log(ds[k-1])
				break
			}
		}
	}
	digamma := func(m int) float64 { // psi(m) = -gamma + sum_{j < m} 1/j
		s := -0.5772156649015329
		for j := 1; j < m; j++ {
			s += 1 / float64(j)
		}
		return s
	}
	return digamma(n) - digamma(k) + math.Log(math.Pi) + 2*sumLog/float64(n)
}

// envelopeAt solves the SE at alpha - h, alpha, alpha + h from the uninformed start and
// returns the centred difference (Phi(alpha + h) - Phi(alpha - h)) / 2h, the Simpson average
// of psi_out over [alpha - h, alpha + h] (what the difference equals if dPhi/dalpha = psi_out)
// and the middle point.
func envelopeAt(t *testing.T, L int, alpha, h float64, o Options) (fd, simpson float64, mid Point) {
	t.Helper()
	ch := deep(t, L, 1)
	var pts [3]Point
	for i, a := range []float64{alpha - h, alpha, alpha + h} {
		pt, err := Solve(ch, a, o)
		if err != nil || !pt.Converged {
			t.Fatalf("alpha = %g: %v (converged %v)", a, err, pt.Converged)
		}
		pts[i] = pt
	}
	fd = (pts[2].FreeEntropy - pts[0].FreeEntropy) / (2 * h)
	simpson = (pts[0].PsiOut + 4*pts[1].PsiOut + pts[2].PsiOut) / 6
	return fd, simpson, pts[1]
}

// TestSMIEnvelope checks dPhi/dalpha = psi_out along the branch of fixed points (the envelope
// theorem: Phi is stationary in Q and q-hat there) at L = 2, c = 1, alpha = 0.4 (the last layer
// learned, Q_22 = 0.51), by the centred difference of Phi over alpha +- 0.05 against the
// Simpson average of psi_out over the same interval, within 3 Monte Carlo standard errors of
// psi_out. The same difference with the wrong prior part of docs/theory/smi.md 2.1 (tr[q-hat
// (1 + q-hat)^{-1}]/2 - log det(1 + q-hat)/2 in place of psi_in) misses by more than 4 (measured: -7.29 against
// -2.82). Every solve iterates the same draws, so Phi is smooth in alpha.
//
// Where a layer's overlap is near 1 the identity holds only as the draws grow: the stationarity
// d psi_out/dQ_ll = F_l/2 is then a difference of two averages of size F_l ~ 1/(1 - Q_ll), so
// its Monte Carlo error, times dQ_ll/dalpha, enters the difference (at alpha = 1, F_2 ~ 100:
// d psi_out/dQ_22 - F_2/2 = 7.4 at 200 draws, 2.1 at 1600, and the difference misses psi_out by
// 0.5 at 200 draws). With AIM_LONG_TESTS=1 (45 s more) the test checks, at alpha = 1, that the
// miss is that term: the difference equals the Simpson average plus
// alpha sum_l (d psi_out/dQ_ll - F_l/2) dQ_ll/dalpha, the derivatives on the same draws.
func TestSMIEnvelope(t *testing.T) {
	if raceEnabled {
		t.Skip("a Monte Carlo accuracy check, ten times slower under -race: runs in the plain go test")
	}
	o := DefaultOptions(2)
	o.Samples, o.Replicates, o.Tol = 200, 4, 1e-6
	fd, simpson, mid := envelopeAt(t, 2, 0.4, 0.05, o)
	if d := math.Abs(fd - simpson); d > 3*mid.PsiOutErr {
		t.Errorf("alpha = 0.4: dPhi/dalpha = %.4f, psi_out (Simpson) = %.4f, beyond 3 x %.4f", fd, simpson, mid.PsiOutErr)
	}
	t.Logf("alpha = 0.4: dPhi/dalpha = %.4f, psi_out %.4f +- %.4f", fd, simpson, mid.PsiOutErr)
	if os.Getenv("AIM_LONG_TESTS") != "1" {
		return // alpha = 1: about 45 s more
	}
	const alpha, h = 1.0, 0.05
	ch := deep(t, 2, 1)
	fd, simpson, mid = envelopeAt(t, 2, alpha, h, o)
	lo, err := Solve(ch, alpha-h, o)
	if err != nil {
		t.Fatal(err)
	}
	hi, err := Solve(ch, alpha+h, o)
	if err != nil {
		t.Fatal(err)
	}
	F, _, err := Fisher(ch, mid.Q, o)
	if err != nil {
		t.Fatal(err)
	}
	corr := 0.0
	for l := range mid.Q {
		d := 0.1 * (1 - mid.Q[l]) // well inside (0, 1)
		qp, qm := slices.Clone(mid.Q), slices.Clone(mid.Q)
		qp[l], qm[l] = qp[l]+d, qm[l]-d
		pp, _, err := PsiOut(ch, qp, o)
		if err != nil {
			t.Fatal(err)
		}
		pm, _, err := PsiOut(ch, qm, o)
		if err != nil {
			t.Fatal(err)
		}
		corr += alpha * ((pp-pm)/(2*d) - F[l]/2) * (hi.Q[l] - lo.Q[l]) / (2 * h)
	}
	if d := math.Abs(fd - simpson - corr); d > 3*mid.PsiOutErr {
		t.Errorf("alpha = 1: dPhi/dalpha = %.4f, psi_out (Simpson) %.4f + stationarity term %.4f, beyond 3 x %.4f", fd, simpson, corr, mid.PsiOutErr)
	}
	t.Logf("alpha = 1: dPhi/dalpha = %.4f, psi_out %.4f +- %.4f, stationarity term %.4f", fd, simpson, mid.PsiOutErr, corr)
}

// TestSMIStartsAgree: at L = 2, c = 1, alpha = 0.4 there is one fixed point; the uninformed
// (Q = 0.05 I) and informed (Q = (1 - 1e-4) I) starts reach it on the same draws within the
// Monte Carlo error of Q and of Phi (in fact within about the solver tolerance), Start = Both
// reports it as the uninformed point with Start = Both and no coexistence.
func TestSMIStartsAgree(t *testing.T) {
	if raceEnabled {
		t.Skip("a Monte Carlo accuracy check, ten times slower under -race: runs in the plain go test")
	}
	ch := deep(t, 2, 1)
	o := DefaultOptions(2)
	o.Samples, o.Replicates, o.Tol = 100, 4, 1e-5
	b, err := SolveBranches(ch, 0.4, o)
	if err != nil {
		t.Fatal(err)
	}
	u, i := b.Uninformed, b.Informed
	if !u.Converged || !i.Converged || u.Start != Uninformed || i.Start != Informed {
		t.Fatalf("uninformed %+v, informed %+v", u, i)
	}
	for l := range u.Q {
		if d := math.Abs(u.Q[l] - i.Q[l]); d > u.QErr[l] || d > 1e-3 {
			t.Errorf("Q_%d%d: uninformed %.6f, informed %.6f, Monte Carlo error %.4f", l+1, l+1, u.Q[l], i.Q[l], u.QErr[l])
		}
	}
	if d := math.Abs(u.FreeEntropy - i.FreeEntropy); d > u.FreeEntropyErr {
		t.Errorf("Phi: uninformed %.6f, informed %.6f, Monte Carlo error %.4f", u.FreeEntropy, i.FreeEntropy, u.FreeEntropyErr)
	}
	if b.Coexist {
		t.Error("Coexist at alpha = 0.4")
	}
	p := b.Optimal()
	if p.Start != Both || p.Coexist || p.Other != nil || !slices.Equal(p.Q, u.Q) || p.Iterations != u.Iterations+i.Iterations {
		t.Errorf("Optimal: %+v", p)
	}
	t.Logf("Q uninformed %.6f, informed %.6f; Phi %.6f, %.6f +- %.4f", u.Q, i.Q, u.FreeEntropy, i.FreeEntropy, u.FreeEntropyErr)
}

// TestSMICoexist: the rule that tells two fixed points from one reached twice, and Optimal's
// choice of the larger free entropy, on constructed points.
func TestSMICoexist(t *testing.T) {
	o := DefaultOptions(2) // Tol 1e-5: CoexistGap 1e-3
	pt := func(q0, q1, phi float64, samples int, qerr float64) Point {
		return Point{Q: []float64{q0, q1}, QErr: []float64{qerr, qerr}, Converged: true, Samples: samples, FreeEntropy: phi, Iterations: 3}
	}
	// noisy marks a point stopped by the noise rule: its Q is known to about half its QErr.
	noisy := func(p Point) Point { p.NoiseLimited = true; return p }
	cases := []struct {
		u, i Point
		want bool
	}{
		{pt(0, 0.5, -1, 400, 0.01), pt(2e-5, 0.50001, -1, 400, 0.01), false},    // one point, to the tolerance
		{pt(0, 0.5, -1, 400, 0.01), pt(0.3, 0.5, -1.1, 400, 0.01), true},        // layer 1 differs
		{pt(0, 0.5, -1, 400, 0.01), pt(0.002, 0.5, -1, 400, 0.01), true},        // above the gap, same draws
		{pt(0, 0.5, -1, 400, 0.01), pt(0.02, 0.5, -1, 800, 0.01), false},        // within 4 errors, other draws
		{pt(0.5, 0.99, -1, 400, 0), pt(0.5, 0.9995, -1, 400, 0), false},         // below 1% of the larger
		{pt(0, 0.5, -1, 400, 0.01), noisy(pt(0.02, 0.5, -1, 400, 0.01)), false}, // within 4 errors, noise-limited
		{pt(0, 0.5, -1, 400, 0.01), noisy(pt(0.1, 0.5, -1, 400, 0.01)), true},   // beyond them
	}
	for k, c := range cases {
		if got := o.Coexist(c.u, c.i); got != c.want {
			t.Errorf("case %d: Coexist = %v, want %v", k, got, c.want)
		}
	}
	u, i := pt(0, 0.5, -1, 400, 0.01), pt(0.9, 0.99, -0.5, 400, 0.01)
	p := Branches{Uninformed: u, Informed: i, Coexist: true}.Optimal()
	if p.Q[0] != 0.9 || !p.Coexist || p.Other == nil || p.Other.Q[0] != 0 || p.Iterations != 6 {
		t.Errorf("Optimal picked %+v, want the informed point (Phi -0.5 > -1)", p)
	}
	i.Converged = false
	if o.Coexist(u, i) {
		t.Error("Coexist with an unconverged point")
	}
	// One start unconverged: nothing is known of a second branch, so the point is unconverged.
	if p := (Branches{Uninformed: u, Informed: i}).Optimal(); p.Converged || p.Start != Both || p.Q[0] != 0 || !math.IsNaN(p.FreeEntropy) {
		t.Errorf("Optimal with the informed start unconverged: %+v", p)
	}
}
