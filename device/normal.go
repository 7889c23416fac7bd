package device

import "math"

// The Gaussian stream G(seed, i): "same seed, same data, on every device".
//
// G is specified bit for bit below, so that a CUDA C port compiled with --fmad=false (or any
// other IEEE-754 binary64 implementation) reproduces it exactly. It uses only integer
// arithmetic, exact bit manipulation, and the binary64 operations +, -, *, / and sqrt, each
// correctly rounded to nearest-even (IEEE-754 requires this of all five, in Go and in CUDA
// alike). No library transcendental function is called: Log and SinCos2Pi are written here from
// those operations, in a fixed evaluation order.
//
// Rounding discipline. Every floating-point operation written below is one IEEE operation,
// rounded on its own; no fused multiply-add is used anywhere. Go allows a compiler to fuse x*y+z
// into an FMA (arm64, ppc64, s390x, riscv64, and amd64 with GOAMD64=v3 do), and an explicit
// conversion float64(x*y) forbids that (Go spec, "Floating-point operators"), so in this file
// every product that is not immediately a final result is written float64(x * y). In CUDA C,
// compile with --fmad=false (or write __dmul_rn/__dadd_rn) to get the same. Parenthesization is
// significant: evaluate exactly as written, left to right where no parentheses are given.
//
// Stream G(seed, i), i = 0, 1, 2, ... (i is a uint64; offsets wrap modulo 2^64):
//
//	key     = (uint32(seed), uint32(seed >> 32))
//	j, lane = i / 2, i % 2
//	(r0, r1, r2, r3) = Philox4x32-10(counter = (uint32(j), uint32(j >> 32), 0, 0), key)  [philox.go]
//	a  = ((uint64(r0) << 32) | uint64(r1)) >> 11        53-bit integer
//	b  = ((uint64(r2) << 32) | uint64(r3)) >> 11        53-bit integer
//	u1 = double(a + 1) * 0x1p-53                        in (0, 1], exact
//	u2 = double(b) * 0x1p-53                            in [0, 1), exact
//	rad = sqrt(-2 * Log(u1))                            (-2 * L is exact; sqrt correctly rounded)
//	(s, c) = SinCos2Pi(u2)
//	G(seed, 2j)   = rad * c                             lane 0
//	G(seed, 2j+1) = rad * s                             lane 1
//
// The largest |G| is sqrt(-2 Log(2^-53)) = sqrt(106 ln 2) ≈ 8.572 (u1 = 2^-53). When u1 = 1,
// Log gives +0, -2 * +0 = -0, and rad = sqrt(-0) = -0 (IEEE), so that pair is a pair of signed
// zeros; a port must keep IEEE signed-zero semantics (CUDA does).
//
// Log(x), for x in the stream's domain (0, 1] (valid for every finite x > 0; see Log):
//
//	e  = biased exponent field of x - 1023; m = x with its exponent field set to 1023, m in [1, 2)
//	     (subnormal x only: x = x * 0x1p54 first, and e -= 54 afterwards; never reached by G)
//	if m >= 0x1.6a09e667f3bcdp+0 (sqrt 2 rounded up) { m = 0.5 * m; e = e + 1 }   exact
//	f    = m - 1                                        exact (Sterbenz)
//	k    = double(e)
//	s    = f / (2 + f)
//	z    = s * s
//	w    = z * z
//	t1   = z * (L1 + w * (L3 + w * (L5 + w * L7)))
//	t2   = w * (L2 + w * (L4 + w * L6))
//	R    = t1 + t2
//	hfsq = 0.5 * f * f                                  ((0.5 * f) * f)
//	Log  = k * Ln2Hi - ((hfsq - (s * (hfsq + R) + k * Ln2Lo)) - f)
//
// with the constants (hex-float literals are exact; the decimals round to them):
//
//	Ln2Hi = 0x1.62e42feep-01       (6.93147180369123816490e-01; 21 trailing zero bits: k*Ln2Hi exact)
//	Ln2Lo = 0x1.a39ef35793c76p-33  (1.90821492927058770002e-10)
//	L1 = 0x1.5555555555593p-01  L2 = 0x1.999999997fa04p-02  L3 = 0x1.2492494229359p-02
//	L4 = 0x1.c71c51d8e78afp-03  L5 = 0x1.7466496cb03dep-03  L6 = 0x1.39a09d078c69fp-03
//	L7 = 0x1.2f112df3e5244p-03
//
// This is the algorithm and the minimax coefficients (|error of the polynomial| < 2^-58.45) of
// fdlibm's e_log.c (Sun Microsystems, 1993; as in Go's math.log), with the reduction written
// by bit manipulation.
//
// SinCos2Pi(u) = (sin 2 pi u, cos 2 pi u), for u in [0, 1]:
//
//	v = 8 * u                                           exact
//	q = int(v)                                          octant, floor(v): 0..7 (8 when u = 1)
//	x = v - double(q)  if q is even                     exact, in [0, 1)
//	x = double(q + 1) - v  if q is odd                  exact (Sterbenz), in (0, 1]
//	q = q & 7
//	angle t = (pi/4) x in [0, pi/4], as a double-double th + tl (error < 2^-100 relative):
//	  xh = x with the low 27 bits of its 64-bit pattern cleared (its leading 26 bits)
//	  xl = x - xh                                       exact
//	  A  = P1 * xh; B = P1 * xl                         both exact (26 x 25, 27 x 25 bits)
//	  C  = P2 * x
//	  hi = A + B
//	  lo = ((A - hi) + B) + C                           (A - hi) + B is the exact error of hi
//	  th = hi + lo
//	  tl = lo - (th - hi)
//	  P1 = 0x1.921fb5p-01 (pi/4 truncated to 25 bits), P2 = 0x1.110b4611a6263p-27 (pi/4 - P1,
//	  rounded; |pi/4 - P1 - P2| < 3.2e-25)
//	kernels on [0, pi/4] with tail (fdlibm k_sin.c / k_cos.c, Horner order):
//	  z  = th * th
//	  v3 = z * th
//	  rs = S2 + z * (S3 + z * (S4 + z * (S5 + z * S6)))
//	  sn = th - ((z * (0.5 * tl - v3 * rs) - tl) - v3 * S1)
//	  rc = z * (C1 + z * (C2 + z * (C3 + z * (C4 + z * (C5 + z * C6)))))
//	  hz = 0.5 * z
//	  w  = 1 - hz
//	  cs = w + (((1 - w) - hz) + (z * rc - th * tl))
//	octant symmetries (negation is an exact sign flip):
//	  q:    0    1    2    3    4    5    6    7
//	  sin:  sn   cs   cs   sn  -sn  -cs  -cs  -sn
//	  cos:  cs   sn  -sn  -cs  -cs  -sn   sn   cs
//
// with the constants
//
//	S1 = -0x1.5555555555549p-03  S2 =  0x1.111111110f8a6p-07  S3 = -0x1.a01a019c161d5p-13
//	S4 =  0x1.71de357b1fe7dp-19  S5 = -0x1.ae5e68a2b9cebp-26  S6 =  0x1.5d93a5acfd57cp-33
//	C1 =  0x1.555555555554cp-05  C2 = -0x1.6c16c16c15177p-10  C3 =  0x1.a01a019cb159p-16
//	C4 = -0x1.27e4f809c52adp-22  C5 =  0x1.1ee9ebdb4b1c4p-29  C6 = -0x1.8fae9be8838d4p-37
//
// (fdlibm's minimax coefficients for sin and cos on [-pi/4, pi/4], |error| < 2^-58).
//
// Accuracy, measured by normal_test.go (amd64, Go 1.26): Log is bit-identical to math.Log on
// 10^6 inputs in (0, 1] (uniform on the 2^-53 grid and log-uniform down to 2^-60; math.Log is the
// same fdlibm algorithm, < 1 ulp); SinCos2Pi is within 0.76 ulp of sin and cos of 2 pi u computed
// to 300 bits (3.2 x 10^5 random u, edge cases included), relative also near the zeros, and exact
// (±0, ±1) at multiples of 1/4.
//
// A Go port need not follow the statement order above, only the operations and their operands:
// the functions below select octants with bit masks instead of branches, which is equivalent.

// Log constants (fdlibm e_log.c).
const (
	logLn2Hi = 0x1.62e42feep-01
	logLn2Lo = 0x1.a39ef35793c76p-33
	logL1    = 0x1.5555555555593p-01
	logL2    = 0x1.999999997fa04p-02
	logL3    = 0x1.2492494229359p-02
	logL4    = 0x1.c71c51d8e78afp-03
	logL5    = 0x1.7466496cb03dep-03
	logL6    = 0x1.39a09d078c69fp-03
	logL7    = 0x1.2f112df3e5244p-03
	logSqrt2 = 0x1.6a09e667f3bcdp+00
)

// SinCos2Pi constants: pi/4 = trigP1 + trigP2 (+ < 3.2e-25), and fdlibm's k_sin.c / k_cos.c.
const (
	trigP1 = 0x1.921fb5p-01
	trigP2 = 0x1.110b4611a6263p-27
	trigS1 = -0x1.5555555555549p-03
	trigS2 = 0x1.111111110f8a6p-07
	trigS3 = -0x1.a01a019c161d5p-13
	trigS4 = 0x1.71de357b1fe7dp-19
	trigS5 = -0x1.ae5e68a2b9cebp-26
	trigS6 = 0x1.5d93a5acfd57cp-33
	trigC1 = 0x1.555555555554cp-05
	trigC2 = -0x1.6c16c16c15177p-10
	trigC3 = 0x1.a01a019cb159p-16
	trigC4 = -0x1.27e4f809c52adp-22
	trigC5 = 0x1.1ee9ebdb4b1c4p-29
	trigC6 = -0x1.8fae9be8838d4p-37
)

// Log returns the natural logarithm of x, computed as specified in the package comment of this
// file (fdlibm's algorithm, no fused multiply-add), for finite x > 0; it is within 1 ulp of the
// true value. The stream uses it on (0, 1]. Outside the domain: Log(0) = -Inf, Log(+Inf) = +Inf,
// and Log(x) = NaN for x < 0 or NaN.
func Log(x float64) float64 {
	bits := math.Float64bits(x)
	adj := 0
	if bits-(1<<52) >= 0x7fe<<52 { // not a positive normal number (one unsigned comparison)
		switch {
		case x > 0 && x < 0x1p-1022: // subnormal: scale exactly by 2^54
			bits = math.Float64bits(float64(x * 0x1p54))
			adj = -54
		case x == 0:
			return math.Inf(-1)
		case x > 0: // +Inf
			return x
		default: // x < 0 or NaN
			return math.NaN()
		}
	}
	// Branch-free reduction: c = 1 when the mantissa field is >= that of logSqrt2, i.e. when
	// the m in [1, 2) of the specification is >= logSqrt2; then m is halved (exponent field
	// 1022 instead of 1023) and e incremented, as specified.
	mant := bits & (1<<52 - 1)
	c := (mant + (1<<52 - (math.Float64bits(logSqrt2) & (1<<52 - 1)))) >> 52
	e := int(bits>>52) - 1023 + int(c) + adj
	m := math.Float64frombits(mant | (1023-c)<<52)
	f := m - 1
	k := float64(e)
	s := f / (2 + f)
	z := float64(s * s)
	w := float64(z * z)
	t1 := float64(z * (logL1 + float64(w*(logL3+float64(w*(logL5+float64(w*logL7)))))))
	t2 := float64(w * (logL2 + float64(w*(logL4+float64(w*logL6)))))
	r := t1 + t2
	hfsq := float64(float64(0.5*f) * f)
	return float64(k*logLn2Hi) - ((hfsq - (float64(s*(hfsq+r)) + float64(k*logLn2Lo))) - f)
}

// SinCos2Pi returns sin(2 pi u) and cos(2 pi u) for u in [0, 1], computed as specified in the
// package comment of this file: the octant and the offset in it are exact, the angle pi/4 x is
// formed in double-double, and fdlibm's kernels evaluate it. Both are within 1 ulp of the true
// values (relative error also near their zeros; exact at multiples of 1/4). The result for u
// outside [0, 1] is unspecified.
func SinCos2Pi(u float64) (sin, cos float64) {
	// Branch-free form of the specification (the octant is random in the stream, so branches
	// would be mispredicted): selections are by bit masks, negations are sign-bit flips.
	v := float64(8 * u)
	q := int(v)
	xe := v - float64(q)   // q even
	xo := float64(q+1) - v // q odd
	odd := -uint64(q & 1)
	x := math.Float64frombits(math.Float64bits(xe)&^odd | math.Float64bits(xo)&odd)
	q &= 7
	sn, cs := sinCosPi4(x)
	swap := -uint64((q + 1) >> 1 & 1) // q = 1, 2, 5, 6
	sb, cb := math.Float64bits(sn), math.Float64bits(cs)
	sb, cb = sb&^swap|cb&swap, cb&^swap|sb&swap
	sb ^= uint64(q&4) << 61     // q = 4, 5, 6, 7: sin < 0
	cb ^= uint64((q+2)&4) << 61 // q = 2, 3, 4, 5: cos < 0
	return math.Float64frombits(sb), math.Float64frombits(cb)
}

// sinCosPi4 returns sin(pi/4 x) and cos(pi/4 x) for x in [0, 1].
func sinCosPi4(x float64) (sin, cos float64) {
	xh := math.Float64frombits(math.Float64bits(x) &^ (1<<27 - 1))
	xl := x - xh
	a := float64(trigP1 * xh)
	b := float64(trigP1 * xl)
	c := float64(trigP2 * x)
	hi := a + b
	lo := ((a - hi) + b) + c
	th := hi + lo
	tl := lo - (th - hi)

	z := float64(th * th)
	v3 := float64(z * th)
	rs := trigS2 + float64(z*(trigS3+float64(z*(trigS4+float64(z*(trigS5+float64(z*trigS6)))))))
	sin = th - ((float64(z*(float64(0.5*tl)-float64(v3*rs))) - tl) - float64(v3*trigS1))
	rc := float64(z * (trigC1 + float64(z*(trigC2+float64(z*(trigC3+float64(z*(trigC4+float64(z*(trigC5+float64(z*trigC6)))))))))))
	hz := float64(0.5 * z)
	w := 1 - hz
	cos = w + (((1 - w) - hz) + (float64(z*rc) - float64(th*tl)))
	return sin, cos
}

// gaussPair returns lanes 0 and 1 of block j of the stream of key: G(seed, 2j), G(seed, 2j+1).
func gaussPair(j uint64, key [2]uint32) (z0, z1 float64) {
	return boxMuller(Philox4x32([4]uint32{uint32(j), uint32(j >> 32), 0, 0}, key))
}

// boxMuller turns the Philox words r of a block into its two normals (lanes 0 and 1).
func boxMuller(r [4]uint32) (z0, z1 float64) {
	a := (uint64(r[0])<<32 | uint64(r[1])) >> 11
	b := (uint64(r[2])<<32 | uint64(r[3])) >> 11
	u1 := float64(float64(int64(a+1)) * 0x1p-53) // a+1 <= 2^53: the conversion is exact
	u2 := float64(float64(int64(b)) * 0x1p-53)
	rad := math.Sqrt(float64(-2 * Log(u1)))
	s, c := SinCos2Pi(u2)
	return float64(rad * c), float64(rad * s)
}

func seedKey(seed uint64) [2]uint32 { return [2]uint32{uint32(seed), uint32(seed >> 32)} }

// NormalAt returns G(seed, i), the i-th standard normal of the counter-based stream of seed:
// Philox4x32-10 (philox.go) of block i/2 under the key seed, turned into two normals by
// Box-Muller with this package's Log and SinCos2Pi; lane i%2 is returned (0: the cosine, 1: the
// sine). The stream is specified bit for bit in the comment at the top of normal.go.
func NormalAt(seed, i uint64) float64 {
	z0, z1 := gaussPair(i>>1, seedKey(seed))
	if i&1 == 0 {
		return z0
	}
	return z1
}

// FillNormals sets dst[k] = G(seed, offset + k) (indices modulo 2^64), bit for bit the values of
// NormalAt, computing both lanes of each Philox block at once. It does not allocate and runs on
// the calling goroutine; filling a slice in pieces gives the same values as filling it at once.
func FillNormals(dst []float64, seed, offset uint64) {
	if len(dst) == 0 {
		return
	}
	key := seedKey(seed)
	i := offset
	if i&1 == 1 {
		_, z1 := gaussPair(i>>1, key)
		dst[0] = z1
		dst = dst[1:]
		i++
	}
	for len(dst) >= 4 {
		ra, rb := philox4x32Pair(i>>1, (i+2)>>1, key) // (i+2)>>1: indices wrap modulo 2^64
		dst[0], dst[1] = boxMuller(ra)
		dst[2], dst[3] = boxMuller(rb)
		dst = dst[4:]
		i += 4
	}
	for len(dst) >= 2 {
		z0, z1 := gaussPair(i>>1, key)
		dst[0], dst[1] = z0, z1
		dst = dst[2:]
		i += 2
	}
	if len(dst) == 1 {
		z0, _ := gaussPair(i>>1, key)
		dst[0] = z0
	}
}
