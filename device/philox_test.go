package device

import "testing"

// Known-answer vectors of Random123 (D. E. Shaw Research), file tests/kat_vectors of
// https://github.com/DEShawResearch/random123 (commit 9545ff6413f258be2f04c1d319d99aaef7521150),
// lines 27-29, the "philox4x32 10" lines; columns are CTR (4 words), KEY (2 words), EXPECTED
// (4 words):
//
//	philox4x32 10 00000000 00000000 00000000 00000000 00000000 00000000   6627e8d5 e169c58d bc57ac4c 9b00dbd8
//	philox4x32 10 ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff   408f276d 41c83b0e a20bc7c6 6d5451fd
//	philox4x32 10 243f6a88 85a308d3 13198a2e 03707344 a4093822 299f31d0   d16cfe09 94fdcceb 5001e420 24126ea1
func TestPhilox4x32KnownAnswers(t *testing.T) {
	cases := []struct {
		ctr  [4]uint32
		key  [2]uint32
		want [4]uint32
	}{
		{[4]uint32{0, 0, 0, 0}, [2]uint32{0, 0},
			[4]uint32{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
		{[4]uint32{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, [2]uint32{0xffffffff, 0xffffffff},
			[4]uint32{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
		{[4]uint32{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, [2]uint32{0xa4093822, 0x299f31d0},
			[4]uint32{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
	}
	for _, c := range cases {
		if got := Philox4x32(c.ctr, c.key); got != c.want {
			t.Errorf("Philox4x32(%08x, %08x) = %08x, want %08x", c.ctr, c.key, got, c.want)
		}
	}
}

// TestPhiloxStreamLayout checks the counter and key layout of G: block j of seed is
// Philox4x32((uint32(j), uint32(j>>32), 0, 0), (uint32(seed), uint32(seed>>32))), lane 0 from
// words 0-1 and lane 1 from words 2-3, by recomputing two normals from the raw words.
func TestPhiloxStreamLayout(t *testing.T) {
	const seed = 0x0123456789abcdef
	const j = 0x0000000500000007 // exercises the high counter word
	r := Philox4x32([4]uint32{7, 5, 0, 0}, [2]uint32{0x89abcdef, 0x01234567})
	a := (uint64(r[0])<<32 | uint64(r[1])) >> 11
	b := (uint64(r[2])<<32 | uint64(r[3])) >> 11
	rad := 0.0
	{
		u1 := float64(a+1) * 0x1p-53
		l := Log(u1)
		rad = sqrtNeg2(l)
	}
	s, c := SinCos2Pi(float64(b) * 0x1p-53)
	if got, want := NormalAt(seed, 2*j), float64(rad*c); got != want {
		t.Errorf("lane 0: %x, want %x", got, want)
	}
	if got, want := NormalAt(seed, 2*j+1), float64(rad*s); got != want {
		t.Errorf("lane 1: %x, want %x", got, want)
	}
}

// TestPhiloxPair checks the two-block interleaved Philox of FillNormals against Philox4x32.
func TestPhiloxPair(t *testing.T) {
	key := [2]uint32{0xa4093822, 0x299f31d0}
	for _, j := range []uint64{0, 1, 1<<32 - 1, 1 << 32, 1<<63 - 1, 0x243f6a8885a308d3} {
		ra, rb := philox4x32Pair(j, j+1, key)
		wa := Philox4x32([4]uint32{uint32(j), uint32(j >> 32), 0, 0}, key)
		wb := Philox4x32([4]uint32{uint32(j + 1), uint32((j + 1) >> 32), 0, 0}, key)
		if ra != wa || rb != wb {
			t.Errorf("philox4x32Pair(%#x) = %08x %08x, want %08x %08x", j, ra, rb, wa, wb)
		}
	}
}

func BenchmarkPhilox(b *testing.B) {
	var acc uint32
	key := [2]uint32{0x243f6a88, 0x85a308d3}
	for i := 0; i < b.N; i++ {
		r := Philox4x32([4]uint32{uint32(i), 0, 0, 0}, key)
		acc ^= r[0] ^ r[3]
	}
	sinkU32 = acc
}

var sinkU32 uint32
