package device

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Precision is the arithmetic of a matrix product C = alpha op(A) op(B) + beta C computed by
// GemmPrecision (Caps.PrecisionGemmer). Only the product op(A) op(B) is affected: the inputs
// are float64 buffers, the result is converted back to float64, and alpha, beta and the sum
// with beta C are applied in float64. The zero value FP64 is the ordinary Gemm.
//
// The rounding of each precision is specified here bit for bit, as normal.go specifies the
// Gaussian stream, so that the CPU backend emulates a GPU's tensor-core arithmetic exactly up
// to the order in which the float32 accumulator adds the products:
//
//	FP64    A, B and the sums in float64 (Gemm, cuBLAS Dgemm).
//	FP32    a = fl32(A), b = fl32(B) (round to nearest even); c = sum_l a_il b_lj accumulated
//	        in float32 (sgemm, cuBLAS Sgemm with CUBLAS_COMPUTE_32F).
//	TF32    a = RoundTF32(fl32(A)), b = RoundTF32(fl32(B)); each product a_il b_lj of two
//	        11-bit significands is exact in float32, and the sum is accumulated in float32
//	        (the tensor cores' TF32 MMA, cuBLAS CUBLAS_COMPUTE_32F_FAST_TF32).
//	BF16x9  a = fl32(A) split as a = a_hi + a_mid + a_lo (SplitBF16), b likewise; c = sum over
//	        the 9 pairs (p, q) of sum_l a_p,il b_q,lj, each product of two 8-bit significands
//	        exact in float32, accumulated in float32 (cuBLAS
//	        CUBLAS_COMPUTE_32F_EMULATED_16BFX9, the BF16 tensor cores emulating FP32).
//
// fl32 is Go's float64 -> float32 conversion: round to nearest even, overflow to +-Inf,
// underflow to float32 subnormals and zero.
type Precision uint8

// The precisions of GemmPrecision.
const (
	FP64   Precision = iota // float64 throughout (the default)
	FP32                    // float32 inputs and accumulation
	TF32                    // TF32 inputs (10 explicit significand bits), float32 accumulation
	BF16x9                  // float32 inputs as three bfloat16 parts, 9 products, float32 accumulation
)

// precisionNames are the names of String and ParsePrecision, indexed by Precision.
var precisionNames = [...]string{FP64: "fp64", FP32: "fp32", TF32: "tf32", BF16x9: "bf16x9"}

// AllPrecisions returns every precision, FP64 first.
func AllPrecisions() []Precision { return []Precision{FP64, FP32, TF32, BF16x9} }

// String returns the precision's name: "fp64", "fp32", "tf32" or "bf16x9".
func (p Precision) String() string {
	if int(p) < len(precisionNames) {
		return precisionNames[p]
	}
	return fmt.Sprintf("Precision(%d)", uint8(p))
}

// Valid reports whether p is one of the four precisions.
func (p Precision) Valid() bool { return int(p) < len(precisionNames) }

// ParsePrecision parses a precision's name (case-insensitive; "" is fp64).
func ParsePrecision(s string) (Precision, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "" {
		return FP64, nil
	}
	for p, name := range precisionNames {
		if t == name {
			return Precision(p), nil
		}
	}
	return FP64, fmt.Errorf("unknown precision %q: want one of %s", s, strings.Join(precisionNames[:], ", "))
}

// Float32 bit layout: sign 1, exponent 8, significand 23.
const (
	f32Sign  = 0x80000000
	f32Exp   = 0x7f800000
	f32Frac  = 0x007fffff
	f32Quiet = 0x00400000
)

// RoundTF32 rounds x to TF32: 10 explicit significand bits (11 with the implicit one), the
// exponent range of float32, stored as a float32 whose 13 low significand bits are zero.
//
//	finite x: bits(x) + 0x1000 (half of the 13 dropped bits, added to the magnitude), then the
//	          13 low bits cleared: round to nearest, ties away from zero. A carry moves into the
//	          exponent (1.11...1 x 2^e rounds up to 2^(e+1)); |x| >= 0x1.ffep127 rounds to
//	          +-Inf. Subnormals round in the same way on their significand field (a multiple of
//	          2^-136 results, possibly the smallest normal 2^-126).
//	+-Inf:    unchanged.
//	NaN:      a quiet NaN of the same sign: the quiet bit set, the 13 low bits cleared.
//
// Ties away from zero is CUDA's conversion cvt.rna.tf32.f32, the one CUDA code uses to feed
// TF32 tensor cores (wmma's __float_to_tf32, CUTLASS's round-to-nearest converter). The
// rounding inside cuBLAS's CUBLAS_COMPUTE_32F_FAST_TF32 is not documented: the sources we read
// say only that the tensor cores read the first 10 significand bits of fp32 inputs (PyTorch's
// notes on TF32: a truncation where the inputs are not converted first), while other
// conversions to TF32 round to nearest even (Intel's SPIR-V OpRoundFToTF32INTEL). Ties away
// and ties to even differ only on exact ties (about one input in 2^13 of random data);
// truncation is biased towards zero by half a TF32 ulp on average. A GPU session should
// compare cuBLAS's product with this one and, where they differ, state which it does.
func RoundTF32(x float32) float32 {
	b := math.Float32bits(x)
	switch {
	case b&f32Exp == f32Exp && b&f32Frac != 0: // NaN
		return math.Float32frombits((b | f32Quiet) &^ 0x1fff)
	case b&f32Exp == f32Exp: // Inf
		return x
	}
	return math.Float32frombits((b + 0x1000) &^ 0x1fff)
}

// RoundBF16 rounds x to bfloat16: 7 explicit significand bits (8 with the implicit one), the
// exponent range of float32, stored as a float32 whose 16 low bits are zero.
//
//	finite x: round to nearest, ties to even, on the 16 dropped bits: bits(x) + 0x7fff + (bit
//	          16 of bits(x)), then the 16 low bits cleared. A carry moves into the exponent;
//	          |x| >= 0x1.ffp127 (the largest bfloat16 plus half its ulp) rounds to +-Inf.
//	          Subnormals round in the same way (multiples of 2^-133).
//	+-Inf:    unchanged.
//	NaN:      a quiet NaN of the same sign: the quiet bit set, the 16 low bits cleared.
func RoundBF16(x float32) float32 {
	b := math.Float32bits(x)
	switch {
	case b&f32Exp == f32Exp && b&f32Frac != 0: // NaN
		return math.Float32frombits((b | f32Quiet) &^ 0xffff)
	case b&f32Exp == f32Exp: // Inf
		return x
	}
	return math.Float32frombits((b + 0x7fff + (b>>16)&1) &^ 0xffff)
}

// maxBF16 is the largest finite bfloat16, 0x1.fep127.
const maxBF16 = 0x7f7f0000

// SplitBF16 splits x into three bfloat16 values (each a float32 with 16 low bits zero) with
// x = hi + mid + lo exactly wherever the parts are representable:
//
//	hi  = RoundBF16(x)
//	mid = RoundBF16(x - hi)        (x - hi is exact in float32)
//	lo  = RoundBF16((x - hi) - mid) (exact again)
//
// For a normal x with exponent e, x - hi is a multiple of 2^(e-23) of magnitude at most
// 2^(e-8), so it has at most 16 significant bits; the remainder after mid has at most 8, so lo
// is exact and hi + mid + lo = x. The sum is inexact only where a remainder falls below the
// bfloat16 subnormal grid (multiples of 2^-133; |x| < 2^-110 or so), where lo is rounded to
// nearest even.
//
// Special cases, handled before the split:
//
//	+-0, +-Inf: hi = x, mid = lo = +0.
//	NaN:        hi = RoundBF16(x) (a quiet NaN), mid = lo = +0.
//	overflow:   a finite x with |x| >= 0x1.ffp127, where RoundBF16 would give Inf, takes hi =
//	            +-0x1.fep127 (the largest bfloat16, rounding towards zero instead), so that the
//	            remainders stay finite and the sum stays exact.
//
// In a product of split operands, an infinite or NaN part times a zero part is NaN (IEEE): an
// infinite input of the BF16x9 product gives NaN where FP32 would give +-Inf. The engine's
// inputs are finite.
func SplitBF16(x float32) (hi, mid, lo float32) {
	b := math.Float32bits(x)
	if b&f32Exp == f32Exp || b&^f32Sign == 0 {
		return RoundBF16(x), 0, 0
	}
	hi = RoundBF16(x)
	if math.Float32bits(hi)&f32Exp == f32Exp { // overflow to Inf: round towards zero instead
		hi = math.Float32frombits(b&f32Sign | maxBF16)
	}
	r := x - hi
	mid = RoundBF16(r)
	lo = RoundBF16(r - mid)
	return hi, mid, lo
}

// BF16x9Order is the order in which a BF16x9 product adds its nine products of split parts
// (0 = hi, 1 = mid, 2 = lo; the pair (s, t) is a_s b_t) into one float32 accumulator: the
// smallest first, so that the accumulator meets the large terms last. The CPU and CUDA
// backends both follow it.
var BF16x9Order = [9][2]int{{2, 2}, {2, 1}, {1, 2}, {2, 0}, {1, 1}, {0, 2}, {1, 0}, {0, 1}, {0, 0}}

// RoundInput returns the float32 that a product at precision p reads for the float64 value x:
// fl32(x) at FP32 and BF16x9 (which then splits it), RoundTF32(fl32(x)) at TF32. At FP64 it
// is fl32(x) too, which no product of FP64 uses.
func RoundInput(p Precision, x float64) float32 {
	if p == TF32 {
		return RoundTF32(float32(x))
	}
	return float32(x)
}

// PrecisionGemmer is the optional operation of matrix products at a reduced precision
// (Caps.PrecisionGemmer), for the large contractions of GAMP-RIE and gradient descent: the
// forward product X S and the back-projection sum_mu X_mu^T (C_mu X_mu).
type PrecisionGemmer interface {
	// Precisions returns the precisions the device computes besides FP64 (which Gemm is).
	Precisions() []Precision
	// GemmPrecision computes C = alpha op(A) op(B) + beta C as Gemm does, with the product
	// op(A) op(B) computed at precision p (Precision) and converted back to float64; alpha,
	// beta and the sum with beta C are float64. With beta = 0, C is overwritten.
	GemmPrecision(p Precision, transA, transB bool, m, n, k int, alpha float64, a, b Buffer, beta float64, c Buffer) error
}

// SupportsPrecision returns nil when dev computes products at precision p (FP64 always), else
// an error naming the device: "cuda: precision tf32 is not supported on this device yet
// (it computes fp64)".
func SupportsPrecision(dev Device, p Precision) error {
	if !p.Valid() {
		return fmt.Errorf("%s: %v: %w", dev.Info().Name, p, errBadPrecision)
	}
	if p == FP64 {
		return nil
	}
	have := []Precision{FP64}
	if g := dev.Capabilities().PrecisionGemmer; g != nil {
		ps := g.Precisions()
		if slices.Contains(ps, p) {
			return nil
		}
		have = append(have, ps...)
	}
	return fmt.Errorf("%s: %w", dev.Info().Name, unsupported(p, have))
}

// ErrPrecision is wrapped by the errors of a product at a precision the device does not
// compute.
var ErrPrecision = errors.New("precision not supported")

// unsupported is the error of a precision that a device does not declare.
func unsupported(p Precision, have []Precision) error {
	names := make([]string, len(have))
	for i, q := range have {
		names[i] = q.String()
	}
	return fmt.Errorf("precision %v is not supported on this device yet (it computes %s): %w", p, strings.Join(names, ", "), ErrPrecision)
}

var errBadPrecision = fmt.Errorf("not a precision (want %s)", strings.Join(precisionNames[:], ", "))

// GemmAt computes C = alpha op(A) op(B) + beta C with the product at precision p: Gemm at
// FP64, else the device's PrecisionGemmer, or the error of SupportsPrecision where the device
// does not compute p.
func GemmAt(dev Device, p Precision, transA, transB bool, m, n, k int, alpha float64, a, b Buffer, beta float64, c Buffer) error {
	if p == FP64 {
		return dev.Gemm(transA, transB, m, n, k, alpha, a, b, beta, c)
	}
	g := dev.Capabilities().PrecisionGemmer
	if g == nil {
		return SupportsPrecision(dev, p)
	}
	return g.GemmPrecision(p, transA, transB, m, n, k, alpha, a, b, beta, c)
}
