package emu

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/aimtheory/aim/device"
)

// rawBuf is a buffer argument of n bytes, zero (a whole number of float64 for the emulator).
func rawBuf(t *testing.T, n int) *buf {
	return newBuf(t, make([]float64, (n+7)/8))
}

// bytesOf returns the buffer's bytes as the emulator left them.
func bytesOf(t *testing.T, b *buf) []byte {
	data, err := os.ReadFile(b.path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// precisionInputs are float64 values that exercise every branch of the roundings: zeros,
// infinities and NaN, float32 subnormals and overflow, the bfloat16 overflow threshold, exact
// TF32 and bfloat16 ties, and Gaussian values at scales from 2^-130 to 2^120.
func precisionInputs(r *rand.Rand) []float64 {
	v := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), -math.NaN(),
		1, -1, 0.1, 1e-40, -3e-42, 1e-46, 3.4e38, -3.4e38, 3.5e38, 1e39, 0x1.ffp127, 0x1.fefffep127, -0x1.ff8p127,
		float64(math.Float32frombits(0x3f801000)), float64(math.Float32frombits(0x3f803000)), // TF32 ties
		float64(math.Float32frombits(0x3f808000)), float64(math.Float32frombits(0x3f818000)), // bfloat16 ties
		float64(math.Float32frombits(0x00001000)), float64(math.Float32frombits(0x007fffff))}
	for _, scale := range []float64{0x1p-130, 0x1p-100, 1e-3, 1, 1e3, 0x1p100, 0x1p120} {
		for range 400 {
			v = append(v, scale*r.NormFloat64())
		}
	}
	return v
}

// TestPrecision runs the conversions of precision.cu against device/precision.go's roundings,
// bit for bit (a NaN input only has to give a NaN: its payload is the conversion's): to_f32 against fl32 (fp32) and RoundTF32(fl32) (tf32), split_bf16 against
// SplitBF16's three parts, and from_f32 against the CPU backend's last step of GemmPrecision,
// alpha float64(p) + beta c (beta = 0 over NaN too).
func TestPrecision(t *testing.T) {
	needEmu(t)
	r := rand.New(rand.NewPCG(11, 12))
	in := precisionInputs(r)
	n := len(in)
	x := newBuf(t, in)
	bits32 := func(b []byte, i int) uint32 { return binary.LittleEndian.Uint32(b[4*i:]) }
	for _, tf32 := range []int{0, 1} {
		out := rawBuf(t, 4*n)
		launch(t, "to_f32", 3, out, x, n, tf32)
		got := bytesOf(t, out)
		bad := 0
		for i, v := range in {
			p := device.FP32
			if tf32 == 1 {
				p = device.TF32
			}
			g := bits32(got, i)
			if math.IsNaN(v) && math.IsNaN(float64(math.Float32frombits(g))) {
				continue // a NaN's payload is the hardware's conversion's (CUDA: 0x7fffffff)
			}
			if want := math.Float32bits(device.RoundInput(p, v)); g != want {
				if bad < 5 {
					t.Errorf("to_f32 tf32=%d: %g gives %#08x, want %#08x", tf32, v, g, want)
				}
				bad++
			}
		}
		t.Logf("to_f32 tf32=%d: %d values, %d differ", tf32, n, bad)
	}
	stride := n + 5 // parts apart by more than their length, as the backend aligns them
	out := rawBuf(t, 6*stride)
	launch(t, "split_bf16", 2, out, x, n, stride)
	got := bytesOf(t, out)
	bad := 0
	for i, v := range in {
		hi, mid, lo := device.SplitBF16(float32(v))
		for part, want := range []float32{hi, mid, lo} {
			g := binary.LittleEndian.Uint16(got[2*(part*stride+i):])
			if math.IsNaN(v) && part == 0 && g&0x7f80 == 0x7f80 && g&0x7f != 0 {
				continue // a NaN, whatever its payload
			}
			if w := uint16(math.Float32bits(want) >> 16); g != w {
				if bad < 5 {
					t.Errorf("split_bf16: %g part %d is %#04x, want %#04x", v, part, g, w)
				}
				bad++
			}
		}
	}
	t.Logf("split_bf16: %d values, %d parts differ", n, bad)

	p32 := make([]byte, 4*((n+1)/2*2))
	for i, v := range in {
		binary.LittleEndian.PutUint32(p32[4*i:], math.Float32bits(float32(v)))
	}
	for _, beta := range []float64{0, -0.75} {
		c := randv(r, n)
		c[0], c[1] = math.NaN(), math.Inf(1)
		pb := rawBuf(t, len(p32))
		if err := os.WriteFile(pb.path, p32, 0o644); err != nil {
			t.Fatal(err)
		}
		cb := newBuf(t, c)
		launch(t, "from_f32", 2, cb, pb, n, 1.5, beta)
		want := make([]float64, n)
		for i, v := range in {
			want[i] = 1.5 * float64(float32(v))
			if beta != 0 {
				want[i] = 1.5*float64(float32(v)) + beta*c[i]
			}
		}
		sameBits(t, "from_f32", cb.read(t), want)
	}
}
