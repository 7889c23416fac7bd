package device

// Philox4x32-10, the counter-based generator of Salmon, Moraes, Dror and Shaw, "Parallel random
// numbers: as easy as 1, 2, 3", SC 2011 (the Random123 library of D. E. Shaw Research). It is the
// integer half of the Gaussian stream G(seed, i) of normal.go; all arithmetic is on uint32 words,
// modulo 2^32, so every language and device computes the same bits.
//
// Specification (bit for bit):
//
//	constants  M0 = 0xD2511F53, M1 = 0xCD9E8D57   (round multipliers)
//	           W0 = 0x9E3779B9, W1 = 0xBB67AE85   (Weyl key increments)
//	mulhilo(a, b) = (hi, lo) with hi = uint32((uint64(a)*uint64(b)) >> 32), lo = uint32(a*b)
//	input      counter c = (c0, c1, c2, c3), key k = (k0, k1), all uint32
//	repeat 10 times, round r = 1..10:
//	    if r > 1 { k0 += W0; k1 += W1 }        (mod 2^32: the key is bumped between rounds)
//	    (hi0, lo0) = mulhilo(M0, c0)
//	    (hi1, lo1) = mulhilo(M1, c2)
//	    c = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0)
//	output     c
//
// This is Random123's philox4x32_R(10, ctr, key) (include/Random123/philox.h); the known-answer
// vectors of its tests/kat_vectors are checked in philox_test.go. A CUDA C twin:
//
//	__device__ uint4 philox4x32_10(uint4 c, uint2 k) {
//	    for (int r = 0; r < 10; r++) {
//	        if (r > 0) { k.x += 0x9E3779B9u; k.y += 0xBB67AE85u; }
//	        unsigned hi0 = __umulhi(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;
//	        unsigned hi1 = __umulhi(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;
//	        c = make_uint4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
//	    }
//	    return c;
//	}

const (
	philoxM0 = 0xD2511F53
	philoxM1 = 0xCD9E8D57
	philoxW0 = 0x9E3779B9
	philoxW1 = 0xBB67AE85
)

// Philox4x32 returns Philox4x32-10 of the counter ctr under key: 10 rounds of the Random123
// philox4x32 round function with the key bumped by (W0, W1) between rounds (see the package
// specification above).
func Philox4x32(ctr [4]uint32, key [2]uint32) [4]uint32 {
	c0, c1, c2, c3 := ctr[0], ctr[1], ctr[2], ctr[3]
	k0, k1 := key[0], key[1]
	c0, c1, c2, c3 = philoxRound(c0, c1, c2, c3, k0, k1) // round 1
	for r := 2; r <= 10; r++ {
		k0 += philoxW0
		k1 += philoxW1
		c0, c1, c2, c3 = philoxRound(c0, c1, c2, c3, k0, k1)
	}
	return [4]uint32{c0, c1, c2, c3}
}

// philoxRound is one Philox4x32 round under the round key (k0, k1).
func philoxRound(c0, c1, c2, c3, k0, k1 uint32) (uint32, uint32, uint32, uint32) {
	p0 := uint64(philoxM0) * uint64(c0)
	p1 := uint64(philoxM1) * uint64(c2)
	return uint32(p1>>32) ^ c1 ^ k0, uint32(p1), uint32(p0>>32) ^ c3 ^ k1, uint32(p0)
}

// philox4x32Pair computes Philox4x32 of the counters (j, jh, 0, 0) and (j+1, jh', 0, 0) of two
// consecutive blocks at once (interleaved for instruction-level parallelism); it returns exactly
// Philox4x32 of each.
func philox4x32Pair(ja, jb uint64, key [2]uint32) (ra, rb [4]uint32) {
	a0, a1, a2, a3 := uint32(ja), uint32(ja>>32), uint32(0), uint32(0)
	b0, b1, b2, b3 := uint32(jb), uint32(jb>>32), uint32(0), uint32(0)
	k0, k1 := key[0], key[1]
	a0, a1, a2, a3 = philoxRound(a0, a1, a2, a3, k0, k1)
	b0, b1, b2, b3 = philoxRound(b0, b1, b2, b3, k0, k1)
	for r := 2; r <= 10; r++ {
		k0 += philoxW0
		k1 += philoxW1
		a0, a1, a2, a3 = philoxRound(a0, a1, a2, a3, k0, k1)
		b0, b1, b2, b3 = philoxRound(b0, b1, b2, b3, k0, k1)
	}
	return [4]uint32{a0, a1, a2, a3}, [4]uint32{b0, b1, b2, b3}
}
