package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/aimtheory/aim/channel"
)

// AMP shapes: N = alpha D^2 samples, alpha = 0.2, T = 2.
const benchAlpha, benchT = 0.2, 2

func benchN(D int) int { return int(benchAlpha * float64(D*D)) }

func BenchmarkGemm(b *testing.B) {
	for _, D := range []int{100, 200} {
		b.Run(fmt.Sprintf("D=%d", D), func(b *testing.B) {
			d := New(0)
			r := rand.New(rand.NewPCG(1, 1))
			m := benchN(D) * benchT
			x, s := up(b, d, randVec(r, m*D)), up(b, d, randVec(r, D*D))
			y, _ := d.Alloc(m * D)
			b.ResetTimer()
			for b.Loop() {
				if err := d.Gemm(false, false, m, D, D, 1, x, s, 0, y); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(2*float64(m)*float64(D*D)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

func benchTokens(b *testing.B, mix bool) {
	for _, D := range []int{100, 200} {
		for _, T := range []int{benchT, 3} {
			b.Run(fmt.Sprintf("D=%d/T=%d", D, T), func(b *testing.B) {
				d := New(0)
				r := rand.New(rand.NewPCG(2, 2))
				n := benchN(D)
				x, y := up(b, d, randVec(r, n*T*D)), up(b, d, randVec(r, n*T*D))
				c := up(b, d, randVec(r, n*T*T))
				// Bytes moved: TokenDots reads X and Y; TokenMix reads X and writes Z.
				bytes := float64(2*n*T*D*8 + n*T*T*8)
				b.ResetTimer()
				for b.Loop() {
					var err error
					if mix {
						err = d.TokenMix(y, c, x, n, T, D)
					} else {
						err = d.TokenDots(c, y, x, n, T, D)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(bytes*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
	}
}

func BenchmarkTokenDots(b *testing.B) { benchTokens(b, false) }
func BenchmarkTokenMix(b *testing.B)  { benchTokens(b, true) }

func BenchmarkChannelGOut(b *testing.B) {
	chans := []channel.Spec{
		{Kind: channel.KindSoftmax, T: 2, Beta: 1},
		{Kind: channel.KindSoftmax, T: 3, Beta: 1},
		{Kind: channel.KindHardmax, T: 2},
		{Kind: channel.KindHardmax, T: 2, PaperCompat: true},
		{Kind: channel.KindHardmax, T: 3}, // the polytope estimates, the default rule (Tol 1e-3)
		{Kind: channel.KindHardmax, T: 4},
	}
	for _, ch := range chans {
		b.Run(fmt.Sprintf("%v/T=%d", ch, ch.T), func(b *testing.B) {
			d := New(0)
			r := rand.New(rand.NewPCG(3, 3))
			n := 8000
			if ch.Kind == channel.KindHardmax && ch.T > 2 {
				n = 400 // about a millisecond a sample
			}
			h := up(b, d, randSymBatch(r, n, ch.T, 1))
			y, _ := d.Alloc(n * ch.T * ch.T)
			if err := d.ChannelOutput(ch, y, h, n); err != nil {
				b.Fatal(err)
			}
			omega := up(b, d, randSymBatch(r, n, ch.T, 1.2))
			g, _ := d.Alloc(n * ch.T * ch.T)
			b.ResetTimer()
			for b.Loop() {
				if _, err := d.ChannelGOut(ch, g, y, omega, n, 0.8); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N)/float64(n), "ns/sample")
		})
	}
}

func BenchmarkEighSym(b *testing.B) {
	for _, D := range []int{200, 400} {
		b.Run(fmt.Sprintf("D=%d", D), func(b *testing.B) {
			d := New(0)
			r := rand.New(rand.NewPCG(4, 4))
			a := up(b, d, randSym(r, D))
			vals, _ := d.Alloc(D)
			vecs, _ := d.Alloc(D * D)
			b.ResetTimer()
			for b.Loop() {
				if err := d.EighSym(vals, vecs, a, D); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkSpectralCompose(b *testing.B) {
	for _, D := range []int{200, 400} {
		b.Run(fmt.Sprintf("D=%d", D), func(b *testing.B) {
			d := New(0)
			r := rand.New(rand.NewPCG(5, 5))
			o, f := up(b, d, randVec(r, D*D)), up(b, d, randVec(r, D))
			out, _ := d.Alloc(D * D)
			b.ResetTimer()
			for b.Loop() {
				if err := d.SpectralCompose(out, o, f, D); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(2*float64(D)*float64(D*D)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
