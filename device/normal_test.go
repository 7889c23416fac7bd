package device

import (
	"math"
	"math/big"
	"math/rand/v2"
	"sort"
	"strconv"
	"testing"
)

func sqrtNeg2(l float64) float64 { return math.Sqrt(-2 * l) }

// ulp returns the spacing of float64 just above |y| (the unit in the last place of y); for y = 0
// it returns the smallest subnormal.
func ulp(y float64) float64 {
	y = math.Abs(y)
	return math.Nextafter(y, math.Inf(1)) - y
}

// ulpErr returns |got - want| in units of ulp(want), want a float64 reference.
func ulpErr(got, want float64) float64 {
	if got == want {
		return 0
	}
	return math.Abs(got-want) / ulp(want)
}

// ulpErrBig returns |got - want| in units of ulp(float64(want)), want a high-precision value.
func ulpErrBig(got float64, want *big.Float) float64 {
	w, _ := want.Float64()
	d := new(big.Float).SetPrec(want.Prec()).Sub(new(big.Float).SetFloat64(got), want)
	d.Abs(d)
	d.Quo(d, big.NewFloat(ulp(w)))
	e, _ := d.Float64()
	return e
}

const refPrec = 320

// bigPi is pi to 256 bits (hex digits of pi).
var bigPi, _, _ = big.ParseFloat("0x3.243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89452821E638D01377BE5466CF34E90C6CC0AC29B7C97C50DD3F84D5B5B5470917p0", 0, refPrec, big.ToNearestEven)

// bigSinCos2Pi returns sin(2 pi u) and cos(2 pi u) to about 300 bits by Taylor series on the
// angle reduced to [-pi, pi].
func bigSinCos2Pi(u float64) (sin, cos *big.Float) {
	nf := func() *big.Float { return new(big.Float).SetPrec(refPrec) }
	th := nf().Mul(bigPi, nf().SetFloat64(2*u))
	if th.Cmp(bigPi) > 0 {
		th.Sub(th, nf().Mul(bigPi, big.NewFloat(2)))
	}
	th2 := nf().Mul(th, th)
	eps := nf().SetMantExp(big.NewFloat(1), -310)
	series := func(first *big.Float, n0 int) *big.Float {
		sum := nf().Set(first)
		term := nf().Set(first)
		for n := n0; ; n += 2 {
			term.Mul(term, th2)
			term.Quo(term, nf().SetInt64(int64(-(n+1)*(n+2))))
			sum.Add(sum, term)
			if nf().Abs(term).Cmp(eps) < 0 {
				return sum
			}
		}
	}
	return series(th, 1), series(nf().SetInt64(1), 0)
}

func TestLogAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	maxErr, worst := 0.0, 0.0
	check := func(x float64) {
		got, want := Log(x), math.Log(x)
		if want == 0 {
			if got != 0 {
				t.Errorf("Log(%x) = %x, want 0", x, got)
			}
			return
		}
		if e := ulpErr(got, want); e > maxErr {
			maxErr, worst = e, x
		}
	}
	edges := []float64{1, 0x1p-53, 0x1p-52, 0.5, 0.25, 1 - 0x1p-53, 1 - 0x1p-52, 0.5 + 0x1p-53,
		math.Sqrt2 / 2, math.Nextafter(math.Sqrt2/2, 0), math.Nextafter(math.Sqrt2/2, 1),
		math.Sqrt2 / 4, 0x1p-1022, 2, 10, math.MaxFloat64,
		math.Sqrt2, math.Nextafter(math.Sqrt2, 0), math.E, 1 / math.E}
	for _, x := range edges {
		check(x)
	}
	const n = 1_000_000
	for k := 0; k < n; k++ {
		// Half as the stream draws u1 (uniform on the 2^-53 grid of (0, 1]), half log-uniform
		// down to 2^-60 (every binade of the stream, and below).
		var x float64
		if k%2 == 0 {
			x = float64(rng.Uint64()>>11+1) * 0x1p-53
		} else {
			x = math.Ldexp(1+rng.Float64(), -1-rng.IntN(60))
		}
		check(x)
	}
	t.Logf("Log: max error vs math.Log = %.3f ulp (at x = %x) over %d random and %d edge inputs",
		maxErr, worst, n, len(edges))
	if maxErr > 2 {
		t.Errorf("Log: max error %.3f ulp at x = %x, want <= 2", maxErr, worst)
	}
	// Subnormal powers of two against -n ln 2 to 300 bits (math.Log is no reference there: on
	// amd64, Go 1.26, math.Log(0x1p-1074) returns -709.09 instead of -744.44).
	ln2, _, _ := big.ParseFloat("0.6931471805599453094172321214581765680755001343602552541206800094933936219696947156", 10, refPrec, big.ToNearestEven)
	for _, n := range []int{1023, 1030, 1060, 1073, 1074} {
		want := new(big.Float).SetPrec(refPrec).Mul(ln2, big.NewFloat(float64(-n)))
		if e := ulpErrBig(Log(math.Ldexp(1, -n)), want); e > 1 {
			t.Errorf("Log(2^-%d) = %v: %.3f ulp from -%d ln 2", n, Log(math.Ldexp(1, -n)), e, n)
		}
	}
	for _, c := range []struct{ x, want float64 }{
		{0, math.Inf(-1)}, {math.Inf(1), math.Inf(1)},
	} {
		if got := Log(c.x); got != c.want {
			t.Errorf("Log(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	for _, x := range []float64{-1, math.NaN(), math.Inf(-1)} {
		if got := Log(x); !math.IsNaN(got) {
			t.Errorf("Log(%v) = %v, want NaN", x, got)
		}
	}
}

// sinCosEdges are the edge inputs of SinCos2Pi: octant boundaries, the ends of [0, 1) and tiny u.
func sinCosEdges() []float64 {
	e := []float64{0, 0x1p-53, 0x1p-30, 0x1p-1000, 1 - 0x1p-53, 1, 1.0 / 3, 2.0 / 3, 0.1}
	for k := 1; k < 16; k++ {
		u := float64(k) / 16
		e = append(e, u, math.Nextafter(u, 0), math.Nextafter(u, 1), u-0x1p-50, u+0x1p-50)
	}
	return e
}

// TestSinCos2PiAccuracy compares SinCos2Pi with sin and cos of 2 pi u to ~300 bits (Taylor series
// in math/big): within 1 ulp of the true value.
// ulpErrTrig is ulpErrBig where, at a true zero (zero: sin 2 pi u with 2u an integer, cos with
// 2u - 1/2 an integer), the result must be exactly ±0.
func ulpErrTrig(got float64, want *big.Float, zero bool) float64 {
	if zero {
		if got == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return ulpErrBig(got, want)
}

func TestSinCos2PiAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	inputs := sinCosEdges()
	for k := 0; k < 20000; k++ {
		inputs = append(inputs, float64(rng.Uint64()>>11)*0x1p-53)
	}
	maxS, maxC := 0.0, 0.0
	var worstS, worstC float64
	for _, u := range inputs {
		s, c := SinCos2Pi(u)
		bs, bc := bigSinCos2Pi(u)
		if e := ulpErrTrig(s, bs, 2*u == math.Trunc(2*u)); e > maxS {
			maxS, worstS = e, u
		}
		if e := ulpErrTrig(c, bc, 2*u-0.5 == math.Trunc(2*u-0.5)); e > maxC {
			maxC, worstC = e, u
		}
	}
	t.Logf("SinCos2Pi vs 300-bit reference (%d inputs): sin max %.3f ulp (u = %x), cos max %.3f ulp (u = %x)",
		len(inputs), maxS, worstS, maxC, worstC)
	if maxS > 1 || maxC > 1 {
		t.Errorf("SinCos2Pi: max error sin %.3f ulp (u = %x), cos %.3f ulp (u = %x), want <= 1",
			maxS, worstS, maxC, worstC)
	}
	// Exact values.
	for _, c := range []struct{ u, s, c float64 }{
		{0, 0, 1}, {0.25, 1, 0}, {0.5, 0, -1}, {0.75, -1, 0}, {1, 0, 1},
	} {
		if s, co := SinCos2Pi(c.u); s != c.s || co != c.c {
			t.Errorf("SinCos2Pi(%v) = (%v, %v), want (%v, %v)", c.u, s, co, c.s, c.c)
		}
	}
}

// TestSinCos2PiVsMath compares SinCos2Pi on 10^6 random u (the stream's 2^-53 grid) with two
// float64 references from package math:
//   - math.Sin/math.Cos of the angle 2 pi u carried in double-double (p + tl, p = 2*math.Pi*u):
//     sin(p) + cos(p) tl and cos(p) - sin(p) tl; within 2 ulp (2 * 2^-53 absolute where
//     |value| < 1/2, i.e. near the zeros);
//   - math.Sin/math.Cos(2*math.Pi*u) as written: its argument is itself off by up to
//     2 pi u 2^-53 (the rounding of the product and of pi), so the tolerance is 2 ulp + 2^-50
//     absolute.
func TestSinCos2PiVsMath(t *testing.T) {
	twoPiLo, _ := new(big.Float).SetPrec(refPrec).Sub(new(big.Float).SetPrec(refPrec).Mul(bigPi, big.NewFloat(2)),
		big.NewFloat(2*math.Pi)).Float64()
	rng := rand.New(rand.NewPCG(5, 6))
	inputs := sinCosEdges()
	for k := 0; k < 1_000_000; k++ {
		inputs = append(inputs, float64(rng.Uint64()>>11)*0x1p-53)
	}
	maxDD, maxLit, maxLitAbs, worstDD := 0.0, 0.0, 0.0, 0.0
	for _, u := range inputs {
		s, c := SinCos2Pi(u)
		p := 2 * math.Pi * u
		tl := math.FMA(2*math.Pi, u, -p) + twoPiLo*u
		sp, cp := math.Sin(p), math.Cos(p)
		rs, rc := sp+cp*tl, cp-sp*tl
		// Near the zeros of sin and cos, errors are measured absolutely, in units of 2^-53.
		if e := math.Max(math.Abs(s-rs)/math.Max(ulp(rs), 0x1p-53),
			math.Abs(c-rc)/math.Max(ulp(rc), 0x1p-53)); e > maxDD {
			maxDD, worstDD = e, u
		}
		for _, pr := range [][2]float64{{s, sp}, {c, cp}} {
			d := math.Abs(pr[0] - pr[1])
			if d > 2*ulp(pr[1])+0x1p-50 {
				t.Errorf("SinCos2Pi(%x): %x vs math %x", u, pr[0], pr[1])
			}
			maxLit = math.Max(maxLit, d/math.Max(ulp(pr[1]), 0x1p-53))
			maxLitAbs = math.Max(maxLitAbs, d)
		}
	}
	t.Logf("SinCos2Pi vs math.Sin/Cos, double-double angle: max %.3f ulp (u = %x); vs math.Sin/Cos(2*math.Pi*u): max %.3f ulp (abs. units 2^-53 near zeros), max |diff| %.3g = %.3f * 2^-53 (%d inputs)",
		maxDD, worstDD, maxLit, maxLitAbs, maxLitAbs/0x1p-53, len(inputs))
	if maxDD > 2 {
		t.Errorf("SinCos2Pi vs double-double math reference: max %.3f ulp, want <= 2", maxDD)
	}
}

// golden pins G(seed, i): computed once by this implementation (hex floats, strconv 'x'
// format); any change of the stream, and any port that differs in one bit, fails here.
var golden = []struct {
	seed, i uint64
	hex     string
}{
	{0, 0, "-0x1.f1bcd549837c3p-04"},
	{0, 1, "-0x1.599bbd8a9eda7p+00"},
	{0, 2, "-0x1.4f5b54df97ef4p-04"},
	{0, 3, "-0x1.c81bafe55414cp-03"},
	{0, 4, "0x1.c6c3bebeb4e5bp+00"},
	{0, 5, "0x1.1635ed724a52dp+01"},
	{42, 0, "0x1.c5e30047aa1d8p-01"},
	{42, 1, "0x1.c1e68eb623d6fp-02"},
	{42, 2, "-0x1.40bc8bc52b056p-03"},
	{42, 3, "-0x1.c1889e75c5396p-07"},
	{42, 4, "-0x1.f9f57c1b69dfcp-02"},
	{42, 5, "-0x1.7d194f46cb26ep-02"},
	{42, 1<<33 + 0, "0x1.42dfbd4c964a3p-01"}, // block 2^32: high counter word 1
	{42, 1<<33 + 1, "0x1.8323d5f81e9b6p+00"},
	{0x0123456789abcdef, 1_000_000_000_000, "0x1.5300bf3598aa3p+00"}, // both key words
	{math.MaxUint64, math.MaxUint64 - 1, "-0x1.0c4aac3fda04dp+00"},
	{math.MaxUint64, math.MaxUint64, "-0x1.3572e322c2f65p-01"},
}

func TestGoldenValues(t *testing.T) {
	for _, g := range golden {
		got := strconv.FormatFloat(NormalAt(g.seed, g.i), 'x', -1, 64)
		if got != g.hex {
			t.Errorf("G(%d, %d) = %s, want %s", g.seed, g.i, got, g.hex)
		}
	}
}

// TestStreamVsMath recomputes G(seed, i) from the Philox words with math.Log, math.Sqrt and
// math.Sin/math.Cos of the angle in double-double, an independent float64 Box-Muller: within 4 ulp
// (4 * 2^-53 absolute where |G| < 1/2).
func TestStreamVsMath(t *testing.T) {
	twoPiLo, _ := new(big.Float).SetPrec(refPrec).Sub(new(big.Float).SetPrec(refPrec).Mul(bigPi, big.NewFloat(2)),
		big.NewFloat(2*math.Pi)).Float64()
	const seed = 77
	maxErr := 0.0
	for j := uint64(0); j < 100_000; j++ {
		r := Philox4x32([4]uint32{uint32(j), uint32(j >> 32), 0, 0}, [2]uint32{seed, 0})
		u1 := float64((uint64(r[0])<<32|uint64(r[1]))>>11+1) / (1 << 53)
		u2 := float64((uint64(r[2])<<32|uint64(r[3]))>>11) / (1 << 53)
		p := 2 * math.Pi * u2
		tl := math.FMA(2*math.Pi, u2, -p) + twoPiLo*u2
		rad := math.Sqrt(-2 * math.Log(u1))
		want := [2]float64{rad * (math.Cos(p) - math.Sin(p)*tl), rad * (math.Sin(p) + math.Cos(p)*tl)}
		for lane := uint64(0); lane < 2; lane++ {
			got := NormalAt(seed, 2*j+lane)
			if e := math.Abs(got-want[lane]) / math.Max(ulp(want[lane]), 0x1p-53); e > maxErr {
				maxErr = e
			}
		}
	}
	t.Logf("G vs float64 math Box-Muller: max %.3f ulp over 200000 values", maxErr)
	if maxErr > 4 {
		t.Errorf("G vs float64 math Box-Muller: max %.3f ulp, want <= 4", maxErr)
	}
}

func TestFillNormalsMatchesNormalAt(t *testing.T) {
	for _, c := range []struct{ seed, offset uint64 }{
		{0, 0}, {42, 1}, {7, 1 << 40}, {7, 1<<40 + 1}, {9, math.MaxUint64 - 4}, {9, math.MaxUint64 - 5},
	} {
		for _, n := range []int{0, 1, 2, 3, 8, 11} {
			dst := make([]float64, n)
			FillNormals(dst, c.seed, c.offset)
			for k := range dst {
				want := NormalAt(c.seed, c.offset+uint64(k))
				if math.Float64bits(dst[k]) != math.Float64bits(want) {
					t.Fatalf("FillNormals(seed %d, offset %d, n %d)[%d] = %x, NormalAt = %x",
						c.seed, c.offset, n, k, dst[k], want)
				}
			}
		}
	}
}

func TestFillNormalsSplitInvariant(t *testing.T) {
	const n = 1001
	for _, offset := range []uint64{0, 1, 12345, 1<<33 + 1} {
		all := make([]float64, n)
		FillNormals(all, 5, offset)
		for _, m := range []int{1, 3, 7, 500, 501, 999} {
			parts := make([]float64, n)
			FillNormals(parts[:m], 5, offset)
			FillNormals(parts[m:], 5, offset+uint64(m))
			for k := range all {
				if math.Float64bits(all[k]) != math.Float64bits(parts[k]) {
					t.Fatalf("offset %d, split at %d: element %d differs: %x vs %x", offset, m, k, all[k], parts[k])
				}
			}
		}
	}
}

func TestFillNormalsNoAlloc(t *testing.T) {
	dst := make([]float64, 101)
	if a := testing.AllocsPerRun(10, func() { FillNormals(dst, 3, 1) }); a != 0 {
		t.Errorf("FillNormals allocates %v times per call", a)
	}
}

func moments(z []float64) (mean, variance, skew, exkurt float64) {
	n := float64(len(z))
	for _, v := range z {
		mean += v
	}
	mean /= n
	var m2, m3, m4 float64
	for _, v := range z {
		d := v - mean
		d2 := d * d
		m2 += d2
		m3 += d2 * d
		m4 += d2 * d2
	}
	m2, m3, m4 = m2/n, m3/n, m4/n
	return mean, m2, m3 / math.Pow(m2, 1.5), m4/(m2*m2) - 3
}

func corr(x, y []float64) float64 {
	n := float64(len(x))
	var mx, my float64
	for k := range x {
		mx += x[k]
		my += y[k]
	}
	mx, my = mx/n, my/n
	var sxy, sxx, syy float64
	for k := range x {
		dx, dy := x[k]-mx, y[k]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	return sxy / math.Sqrt(sxx*syy)
}

// TestDistribution checks 10^6 draws of G(2024, .) against N(0, 1). Tolerances: 4 standard errors
// (SE) of each statistic under the null hypothesis: mean SE 1/sqrt(n), variance sqrt(2/n),
// skewness sqrt(6/n), excess kurtosis sqrt(24/n), tail fraction sqrt(p(1-p)/n), correlations
// 1/sqrt(pairs); Kolmogorov-Smirnov distance below its 1% critical value 1.63/sqrt(n).
func TestDistribution(t *testing.T) {
	const n = 1_000_000
	z := make([]float64, n)
	FillNormals(z, 2024, 0)
	fn := float64(n)

	mean, variance, skew, kurt := moments(z)
	tail := 0
	for _, v := range z {
		if math.Abs(v) > 3 {
			tail++
		}
	}
	pTail := math.Erfc(3 / math.Sqrt2)
	fracTail := float64(tail) / fn
	lag1 := corr(z[:n-1], z[1:])
	lane0, lane1 := make([]float64, n/2), make([]float64, n/2)
	sq0, sq1 := make([]float64, n/2), make([]float64, n/2)
	for j := range lane0 {
		lane0[j], lane1[j] = z[2*j], z[2*j+1]
		sq0[j], sq1[j] = z[2*j]*z[2*j], z[2*j+1]*z[2*j+1]
	}
	lanes := corr(lane0, lane1)
	lanesSq := corr(sq0, sq1)
	other := make([]float64, n)
	FillNormals(other, 2025, 0)
	seeds := corr(z, other)
	FillNormals(other, 2024+1<<32, 0) // differs in the key's high word only
	seedsHi := corr(z, other)

	sorted := append([]float64(nil), z...)
	sort.Float64s(sorted)
	ks := 0.0
	for k, v := range sorted {
		cdf := 0.5 * math.Erfc(-v/math.Sqrt2)
		ks = math.Max(ks, math.Max(math.Abs(float64(k+1)/fn-cdf), math.Abs(cdf-float64(k)/fn)))
	}

	checks := []struct {
		name       string
		got, want  float64
		tol        float64
		tolComment string
	}{
		{"mean", mean, 0, 4 / math.Sqrt(fn), "4 SE"},
		{"variance", variance, 1, 4 * math.Sqrt(2/fn), "4 SE"},
		{"skewness", skew, 0, 4 * math.Sqrt(6/fn), "4 SE"},
		{"excess kurtosis", kurt, 0, 4 * math.Sqrt(24/fn), "4 SE"},
		{"fraction |z| > 3", fracTail, pTail, 4 * math.Sqrt(pTail*(1-pTail)/fn), "4 SE"},
		{"lag-1 correlation", lag1, 0, 4 / math.Sqrt(fn-1), "4 SE"},
		{"lane 0 vs lane 1 correlation", lanes, 0, 4 / math.Sqrt(fn/2), "4 SE"},
		{"lane 0 vs lane 1 correlation of squares", lanesSq, 0, 4 / math.Sqrt(fn/2), "4 SE"},
		{"seed 2024 vs 2025 correlation", seeds, 0, 4 / math.Sqrt(fn), "4 SE"},
		{"seed 2024 vs 2024+2^32 correlation", seedsHi, 0, 4 / math.Sqrt(fn), "4 SE"},
		{"Kolmogorov-Smirnov distance", ks, 0, 1.63 / math.Sqrt(fn), "1% critical value"},
	}
	for _, c := range checks {
		t.Logf("%-40s %+.6f (want %.6f within %.6f, %s)", c.name, c.got, c.want, c.tol, c.tolComment)
		if math.Abs(c.got-c.want) > c.tol {
			t.Errorf("%s = %.6f, want %.6f within %.6f (%s)", c.name, c.got, c.want, c.tol, c.tolComment)
		}
	}
	maxAbs := math.Max(-sorted[0], sorted[n-1])
	if bound := math.Sqrt(106 * math.Ln2); maxAbs > bound {
		t.Errorf("max |z| = %v beyond the stream's bound %v", maxAbs, bound)
	}
}

func BenchmarkFillNormals(b *testing.B) {
	dst := make([]float64, 4096)
	b.SetBytes(int64(8 * len(dst)))
	for i := 0; i < b.N; i++ {
		FillNormals(dst, 1, uint64(i)*uint64(len(dst)))
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(dst)), "ns/normal")
}

func BenchmarkNormalAt(b *testing.B) {
	acc := 0.0
	for i := 0; i < b.N; i++ {
		acc += NormalAt(1, uint64(i))
	}
	sinkF64 = acc
}

func BenchmarkLog(b *testing.B) {
	acc := 0.0
	for i := 0; i < b.N; i++ {
		acc += Log(float64(i+1) * 0x1p-40)
	}
	sinkF64 = acc
}

func BenchmarkSinCos2Pi(b *testing.B) {
	acc := 0.0
	for i := 0; i < b.N; i++ {
		s, c := SinCos2Pi(float64(i&(1<<30-1)) * 0x1p-30)
		acc += s + c
	}
	sinkF64 = acc
}

var sinkF64 float64
