package device

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestParsePrecision(t *testing.T) {
	for _, p := range AllPrecisions() {
		q, err := ParsePrecision(strings.ToUpper(p.String()))
		if err != nil || q != p {
			t.Errorf("ParsePrecision(%q) = %v, %v", p, q, err)
		}
	}
	if p, err := ParsePrecision(""); err != nil || p != FP64 {
		t.Errorf(`ParsePrecision("") = %v, %v`, p, err)
	}
	if _, err := ParsePrecision("fp16"); err == nil || !strings.Contains(err.Error(), "fp64, fp32, tf32, bf16x9") {
		t.Errorf(`ParsePrecision("fp16"): %v`, err)
	}
	if var0 := Precision(0); var0 != FP64 || Precision(7).Valid() || Precision(7).String() != "Precision(7)" {
		t.Error("zero value or invalid precision")
	}
}

func f32(b uint32) float32 { return math.Float32frombits(b) }

// TestRoundTF32Cases: hand-computed bit patterns.
func TestRoundTF32Cases(t *testing.T) {
	for _, c := range []struct {
		name    string
		in, out uint32
	}{
		{"one", 0x3f800000, 0x3f800000},
		{"below half ulp", 0x3f800fff, 0x3f800000},
		{"tie: away", 0x3f801000, 0x3f802000},
		{"tie negative: away", 0xbf801000, 0xbf802000},
		{"tie on odd: away", 0x3f803000, 0x3f804000},
		{"above half", 0x3f801001, 0x3f802000},
		{"carry into exponent", 0x3fffffff, 0x40000000},
		{"max float32 overflows", 0x7f7fffff, 0x7f800000},
		{"largest tf32 stays", 0x7f7fe000, 0x7f7fe000},
		{"just below overflow", 0x7f7fefff, 0x7f7fe000},
		{"+Inf", 0x7f800000, 0x7f800000},
		{"-Inf", 0xff800000, 0xff800000},
		{"signalling NaN quieted", 0x7f800001, 0x7fc00000},
		{"negative NaN payload", 0xffc12345, 0xffc12000},
		{"+0", 0, 0},
		{"-0", 0x80000000, 0x80000000},
		{"smallest subnormal to 0", 0x00000001, 0x00000000},
		{"subnormal tie away", 0x00001000, 0x00002000},
		{"largest subnormal to smallest normal", 0x007fffff, 0x00800000},
	} {
		if got := math.Float32bits(RoundTF32(f32(c.in))); got != c.out {
			t.Errorf("%s: RoundTF32(%#08x) = %#08x, want %#08x", c.name, c.in, got, c.out)
		}
	}
}

// TestRoundBF16Cases: hand-computed bit patterns.
func TestRoundBF16Cases(t *testing.T) {
	for _, c := range []struct {
		name    string
		in, out uint32
	}{
		{"one", 0x3f800000, 0x3f800000},
		{"tie to even (down)", 0x3f808000, 0x3f800000},
		{"tie to even (up)", 0x3f818000, 0x3f820000},
		{"above half", 0x3f808001, 0x3f810000},
		{"below half", 0xbf807fff, 0xbf800000},
		{"carry", 0x3fffffff, 0x40000000},
		{"overflow", 0x7f7fffff, 0x7f800000},
		{"largest bf16 stays", 0x7f7f0000, 0x7f7f0000},
		{"tie below overflow to even = Inf", 0x7f7f8000, 0x7f800000},
		{"-Inf", 0xff800000, 0xff800000},
		{"NaN", 0x7f800001, 0x7fc00000},
		{"subnormal", 0x00008000, 0x00000000},
		{"subnormal up", 0x00018000, 0x00020000},
	} {
		if got := math.Float32bits(RoundBF16(f32(c.in))); got != c.out {
			t.Errorf("%s: RoundBF16(%#08x) = %#08x, want %#08x", c.name, c.in, got, c.out)
		}
	}
}

// slowRound rounds a finite float32 to s significant bits with the float32 exponent range
// (subnormals on the fixed grid 2^(-126-(s-1))) in exact rational arithmetic: ties away from
// zero (away) or to even. It returns +-Inf past the largest value plus half its ulp.
func slowRound(x float32, s int, away bool) float32 {
	if x == 0 {
		return x
	}
	r := new(big.Rat).SetFloat64(float64(x))
	neg := r.Sign() < 0
	r.Abs(r)
	// The exponent e with 2^e <= |x| < 2^(e+1), floored at -126.
	e := math.Ilogb(math.Abs(float64(x)))
	if e < -126 {
		e = -126
	}
	ulp := new(big.Rat).SetFloat64(math.Ldexp(1, e-(s-1)))
	q := new(big.Rat).Quo(r, ulp) // |x| / ulp
	fl := new(big.Int).Quo(q.Num(), q.Denom())
	frac := new(big.Rat).Sub(q, new(big.Rat).SetInt(fl))
	half := big.NewRat(1, 2)
	switch c := frac.Cmp(half); {
	case c > 0, c == 0 && away, c == 0 && fl.Bit(0) == 1:
		fl.Add(fl, big.NewInt(1))
	}
	v, _ := new(big.Rat).Mul(new(big.Rat).SetInt(fl), ulp).Float64()
	if v > math.MaxFloat32 {
		v = math.Inf(1)
	}
	if neg {
		v = -v
	}
	return float32(v) // exact: v has at most s <= 24 significant bits
}

// randomF32 returns float32 bit patterns: uniform over all finite patterns, with extra weight
// on subnormals, ties and the largest exponents.
func randomF32(rng *rand.Rand) float32 {
	b := rng.Uint32()
	switch rng.IntN(6) {
	case 0:
		b &= 0x807fffff // subnormal
	case 1:
		b = b&^0x1fff | 0x1000 // a TF32 tie
	case 2:
		b = b&^0xffff | 0x8000 // a BF16 tie
	case 3:
		b |= 0x7f000000 // huge
		b &^= 0x00800000
	}
	if b&f32Exp == f32Exp {
		b &^= 0x00800000
	}
	return f32(b)
}

// TestRoundingReference: RoundTF32 and RoundBF16 against exact rational rounding on a
// large random sample of finite float32 values (subnormals, ties and overflow weighted).
func TestRoundingReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 200000
	if testing.Short() {
		n = 20000
	}
	for i := 0; i < n; i++ {
		x := randomF32(rng)
		if got, want := RoundTF32(x), slowRound(x, 11, true); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("RoundTF32(%#08x) = %#08x, reference %#08x", math.Float32bits(x), math.Float32bits(got), math.Float32bits(want))
		}
		if got, want := RoundBF16(x), slowRound(x, 8, false); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("RoundBF16(%#08x) = %#08x, reference %#08x", math.Float32bits(x), math.Float32bits(got), math.Float32bits(want))
		}
	}
}

// isBF16 reports whether v is a bfloat16 value (its 16 low bits are zero).
func isBF16(v float32) bool { return math.Float32bits(v)&0xffff == 0 }

// TestSplitBF16: hand cases and, on a random sample, parts that are bfloat16, ordered by
// magnitude, and sum exactly to x (in exact arithmetic) wherever |x| >= 2^-100.
func TestSplitBF16(t *testing.T) {
	for _, c := range []struct {
		name        string
		in          uint32
		hi, mid, lo uint32
	}{
		{"one", 0x3f800000, 0x3f800000, 0, 0},
		// x = 1 + 2^-8 + 2^-16 + 2^-23: hi = 1 + 2^-7 (above the tie), mid = -(2^-8 - 2^-16), lo = 2^-23
		{"1+2^-8+2^-16+2^-23", 0x3f808081, 0x3f810000, 0xbb7f0000, 0x34000000},
		{"+Inf", 0x7f800000, 0x7f800000, 0, 0},
		{"NaN", 0xff800001, 0xffc00000, 0, 0},
		{"-0", 0x80000000, 0x80000000, 0, 0},
		// x = 2^128 - 2^104: hi = 2^128 - 2^120 (clamped), mid = 2^120, lo = -2^104
		{"max float32: hi clamps", 0x7f7fffff, 0x7f7f0000, 0x7b800000, 0xf3800000},
	} {
		hi, mid, lo := SplitBF16(f32(c.in))
		if math.Float32bits(hi) != c.hi || math.Float32bits(mid) != c.mid || math.Float32bits(lo) != c.lo {
			t.Errorf("%s: SplitBF16(%#08x) = %#08x %#08x %#08x, want %#08x %#08x %#08x", c.name, c.in,
				math.Float32bits(hi), math.Float32bits(mid), math.Float32bits(lo), c.hi, c.mid, c.lo)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 200000; i++ {
		x := randomF32(rng)
		hi, mid, lo := SplitBF16(x)
		if !isBF16(hi) || !isBF16(mid) || !isBF16(lo) {
			t.Fatalf("SplitBF16(%#08x): a part is not bfloat16", math.Float32bits(x))
		}
		// float64 holds hi + mid + lo exactly (parts within 2^24 of each other in scale, or zero).
		sum := float64(hi) + float64(mid) + float64(lo)
		if math.Abs(float64(x)) >= 0x1p-100 && sum != float64(x) {
			t.Fatalf("SplitBF16(%#08x = %g): %g + %g + %g = %g", math.Float32bits(x), x, hi, mid, lo, sum)
		}
		if d := math.Abs(sum - float64(x)); d > 0x1p-133 {
			t.Fatalf("SplitBF16(%#08x): sum off by %g, more than half the bfloat16 subnormal step", math.Float32bits(x), d)
		}
	}
}

// TestSupportsPrecision: the front declares FP64 and what the backend declares, and refuses
// the rest before the backend is called, naming the device.
func TestSupportsPrecision(t *testing.T) {
	d, r := newRec(t, "rec")
	if err := SupportsPrecision(d, FP32); err != nil {
		t.Error(err)
	}
	err := SupportsPrecision(d, BF16x9)
	if err == nil || !errors.Is(err, ErrPrecision) || !strings.Contains(err.Error(), "rec: precision bf16x9 is not supported on this device yet (it computes fp64, fp32)") {
		t.Errorf("SupportsPrecision bf16x9: %v", err)
	}
	r.caps.PrecisionGemmer = nil
	bare := New(r)
	a, _ := bare.Alloc(4)
	if err := GemmAt(bare, TF32, false, false, 2, 2, 1, 1, a, a, 0, a); err == nil || !strings.Contains(err.Error(), "not supported on this device yet (it computes fp64)") {
		t.Errorf("GemmAt tf32 on a device without the capability: %v", err)
	}
	before := len(r.calls)
	b, _ := bare.Alloc(4)
	if err := GemmAt(bare, FP64, false, false, 2, 2, 1, 1, a, a, 0, b); err != nil || len(r.calls) != before+2 || r.calls[len(r.calls)-1] != "Gemm" {
		t.Errorf("GemmAt fp64: %v, calls %v", err, r.calls[before:])
	}
}
