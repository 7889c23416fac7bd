package aim

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/internal/devtest"
	"github.com/aimtheory/aim/engine/stream"
)

func download(t *testing.T, dev device.Device, b device.Buffer) []float64 {
	t.Helper()
	out := make([]float64, b.Len())
	if err := dev.Download(out, b); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGenerateAgainstNaive recomputes the teacher's indices and outputs from the downloaded S
// and X with plain loops, h_ab = (x_a^T S x_b - delta_ab Tr S)/sqrt(D), and checks S's moments.
func TestGenerateAgainstNaive(t *testing.T) {
	dev := devtest.NewCounting(cpu.New(0))
	for _, ch := range []channel.Spec{{Kind: channel.KindSoftmax, T: 3, Beta: 1.5}, {Kind: channel.KindHardmax, T: 2}} {
		p := Params{D: 60, Alpha: 0.05, Rho: 0.5, Channel: ch, Seed: 9}
		data, err := Generate(dev, p)
		if err != nil {
			t.Fatal(err)
		}
		if peak := dev.Peak(); peak != p.Bytes(p.N()) {
			t.Errorf("%v: Generate peaked at %d bytes, Params.Bytes says %d", ch, peak, p.Bytes(p.N()))
		}
		D, N, T := p.D, p.N(), p.T()
		if N != 180 || p.R() != 30 {
			t.Fatalf("N = %d, R = %d; want 180, 30", N, p.R())
		}
		S, X, Y := download(t, dev, data.S), download(t, dev, data.X), download(t, dev, data.Y)
		var tr, fro float64
		for i := 0; i < D; i++ {
			tr += S[i*D+i]
			for j := 0; j < D; j++ {
				fro += S[i*D+j] * S[i*D+j]
				if S[i*D+j] != S[j*D+i] {
					t.Fatalf("S is not symmetric at (%d, %d)", i, j)
				}
			}
		}
		if math.Abs(tr-data.TrS) > 1e-12*tr {
			t.Errorf("TrS = %g, trace of S = %g", data.TrS, tr)
		}
		// E Tr S / D = sqrt(rho) and E ||S||_F^2 / D = (D + R + 1)/D, with fluctuations O(1/D).
		if math.Abs(tr/float64(D)-math.Sqrt(0.5)) > 0.02 || math.Abs(fro/float64(D)-float64(D+p.R()+1)/float64(D)) > 0.05 {
			t.Errorf("Tr S / D = %.4f (want %.4f), ||S||^2/D = %.4f (want %.4f)", tr/float64(D), math.Sqrt(0.5), fro/float64(D), float64(D+p.R()+1)/float64(D))
		}
		var scalar Channel
		if ch.Kind == channel.KindSoftmax {
			scalar, _ = NewSoftmax(T, ch.Beta)
		} else {
			scalar, _ = NewHardmax(T, false)
		}
		h, y := make([]float64, T*T), make([]float64, T*T)
		for mu := 0; mu < N; mu++ {
			x := X[mu*T*D : (mu+1)*T*D]
			for a := 0; a < T; a++ {
				for b := 0; b < T; b++ {
					var s float64
					for i := 0; i < D; i++ {
						for j := 0; j < D; j++ {
							s += x[a*D+i] * S[i*D+j] * x[b*D+j]
						}
					}
					if a == b {
						s -= tr
					}
					h[a*T+b] = s / math.Sqrt(float64(D))
				}
			}
			scalar.Output(y, h)
			for k := range y {
				if math.Abs(y[k]-Y[mu*T*T+k]) > 1e-12 {
					t.Fatalf("%v sample %d: y[%d] = %.15g, naive %.15g", ch, mu, k, Y[mu*T*T+k], y[k])
				}
			}
		}
		data.Free(dev)
		if dev.Live() != 0 {
			t.Errorf("%d bytes still allocated after Free", dev.Live())
		}
	}
}

// TestGenerateReproducible checks that a seed fixes the data bit for bit and that another seed
// changes it.
func TestGenerateReproducible(t *testing.T) {
	dev := cpu.New(0)
	p := Params{D: 30, Alpha: 0.1, Rho: 0.3, Channel: channel.Spec{Kind: channel.KindSoftmax, T: 2, Beta: 1}, Seed: 5}
	a, err := Generate(dev, p)
	if err != nil {
		t.Fatal(err)
	}
	dev1 := cpu.New(1)
	b, err := Generate(dev1, p)
	if err != nil {
		t.Fatal(err)
	}
	xa, xb := download(t, dev, a.X), download(t, dev1, b.X)
	ya, yb := download(t, dev, a.Y), download(t, dev1, b.Y)
	for i := range xa {
		if xa[i] != xb[i] {
			t.Fatalf("X differs at %d with the same seed", i)
		}
	}
	for i := range ya {
		if ya[i] != yb[i] {
			t.Fatalf("y differs at %d with the same seed (1 and 2 workers)", i)
		}
	}
	p.Seed = 6
	c, err := Generate(dev, p)
	if err != nil {
		t.Fatal(err)
	}
	if xc := download(t, dev, c.X); xc[0] == xa[0] && xc[1] == xa[1] {
		t.Errorf("seed 6 gives the same X as seed 5")
	}
}

func TestParamsValidate(t *testing.T) {
	soft := channel.Spec{Kind: channel.KindSoftmax, T: 2, Beta: 1}
	good := Params{D: 10, Alpha: 0.1, Rho: 0.5, Channel: soft}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []Params{
		{D: 1, Alpha: 0.1, Rho: 0.5, Channel: soft},
		{D: 10, Alpha: 0, Rho: 0.5, Channel: soft},
		{D: 10, Alpha: 0.001, Rho: 0.5, Channel: soft}, // N = 0
		{D: 10, Alpha: 0.1, Rho: 0.05, Channel: soft},  // R = 0
		{D: 10, Alpha: 0.1, Rho: -1, Channel: soft},
		{D: 10, Alpha: 0.1, Rho: 0.5, Channel: channel.Spec{Kind: channel.KindSoftmax, T: 1, Beta: 1}},
		{D: 10, Alpha: 0.1, Rho: 0.5, Channel: channel.Spec{Kind: channel.KindSoftmax, T: 2, Beta: 0}},
		{D: 10, Alpha: 0.1, Rho: 0.5, Channel: channel.Spec{Kind: channel.KindHardmax, T: 7}},
	}
	for _, p := range bad {
		if err := p.Validate(); err == nil {
			t.Errorf("Validate(%+v) accepted", p)
		}
	}
}

// TestGenerateGroup: the parts of a data set drawn on a group of k CPU devices are the samples
// of the one-device data set: the teacher S and the tokens X bit for bit (their place in the
// seed's stream), and the outputs y bit for bit those of one device streaming chunks of N/k
// samples (the same products on the same samples). Streamed parts hold no X and the same y. A
// group with more devices than samples is refused. Bit for bit holds on gonum's pure-Go BLAS;
// an optimised BLAS (OpenBLAS) may round a product of another shape (a streamed chunk of 7
// samples against one of N/k) differently in the last bits, and its run with the default
// devices is held to 1e-14 relative in y.
func TestGenerateGroup(t *testing.T) {
	for _, blas := range []string{cpu.GonumBLAS, "auto"} {
		t.Run(blas, func(t *testing.T) { testGenerateGroup(t, blas) })
	}
}

func testGenerateGroup(t *testing.T, blas string) {
	p := Params{D: 30, Alpha: 0.2, Rho: 0.5, Channel: channel.Spec{Kind: channel.KindSoftmax, T: 3, Beta: 1}, Seed: 4}
	N, T, D := p.N(), p.T(), p.D // N = 180
	open := func() *cpu.Device {
		d, err := cpu.Open(cpu.Options{BLAS: blas})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	one := open()
	sameY := same
	if one.BLAS().Native {
		sameY = func(t *testing.T, what string, got, want []float64) {
			t.Helper()
			near(t, what, got, want, 1e-14)
		}
	}
	whole, err := Generate(one, p)
	if err != nil {
		t.Fatal(err)
	}
	S, X := download(t, one, whole.S), download(t, one, whole.X)
	for _, k := range []int{2, 3, 5} {
		ref, err := GenerateStreamed(one, p, N/k)
		if err != nil {
			t.Fatal(err)
		}
		Y := download(t, one, ref.Y)
		members := make([]device.Device, k)
		for j := range members {
			members[j] = open()
		}
		g, err := device.NewGroup(members, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, chunk := range []int{0, 7} {
			parts, err := GenerateGroup(g, p, chunk)
			if err != nil {
				t.Fatal(err)
			}
			for j, d := range parts {
				lo, hi := g.Shard(j, N)
				if d.Lo != lo || d.Hi != hi || d.Samples() != N/k || d.TrS != whole.TrS {
					t.Fatalf("k = %d, part %d: samples [%d, %d), TrS %g; want [%d, %d), %g", k, j, d.Lo, d.Hi, d.TrS, lo, hi, whole.TrS)
				}
				same(t, "S", download(t, members[j], d.S), S)
				sameY(t, "y", download(t, members[j], d.Y), Y[lo*T*T:hi*T*T])
				if chunk == 0 {
					same(t, "X", download(t, members[j], d.X), X[lo*T*D:hi*T*D])
				} else if d.X != nil || d.Chunk != chunk {
					t.Errorf("streamed part %d: X %v, chunk %d", j, d.X, d.Chunk)
				}
			}
			FreeGroup(g, parts)
		}
		ref.Free(one)
	}
	big := &device.Group{Members: make([]device.Device, N+1)}
	if _, err := GenerateGroup(big, p, 0); err == nil || !strings.Contains(err.Error(), "at least one sample per device") {
		t.Errorf("GenerateGroup on %d devices for %d samples: %v", N+1, N, err)
	}
}

// near checks |got_i - want_i| <= tol max(|want_i|, 1) for every i.
func near(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > tol*math.Max(math.Abs(want[i]), 1) {
			t.Fatalf("%s[%d] = %.17g, want %.17g (tolerance %g)", what, i, got[i], want[i], tol)
		}
	}
}

// same fails the test unless got and want hold the same bits.
func same(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s[%d] = %.17g, want %.17g", what, i, got[i], want[i])
		}
	}
}

// TestGenerateNoise: with label noise Delta the teacher and the noiseless outputs of a seed are
// unchanged (the noise has its own stream, stream.AIMNoise), y - y_clean has mean 0 and
// variance Delta per entry (within 4 standard errors), and streamed chunks give the same values
// (to 1e-14: the same noise, the clean part up to the BLAS's rounding of another shape).
func TestGenerateNoise(t *testing.T) {
	dev := cpu.New(0)
	const delta = 0.04
	p := Params{D: 30, Alpha: 2, Rho: 0.5, Channel: channel.Spec{Kind: channel.KindSoftmax, T: 2, Beta: 1}, Seed: 5}
	clean, err := Generate(dev, p)
	if err != nil {
		t.Fatal(err)
	}
	defer clean.Free(dev)
	p.Channel.Noise = delta
	noisy, err := Generate(dev, p)
	if err != nil {
		t.Fatal(err)
	}
	defer noisy.Free(dev)
	streamed, err := GenerateStreamed(dev, p, 77)
	if err != nil {
		t.Fatal(err)
	}
	defer streamed.Free(dev)
	sc, sn := download(t, dev, clean.S), download(t, dev, noisy.S)
	for i := range sc {
		if sc[i] != sn[i] {
			t.Fatalf("S differs with noise at %d", i)
		}
	}
	yc, yn, ys := download(t, dev, clean.Y), download(t, dev, noisy.Y), download(t, dev, streamed.Y)
	var s, s2 float64
	for i := range yc {
		if math.Abs(yn[i]-ys[i]) > 1e-14 { // the chunks' products may round differently (1 ulp)
			t.Fatalf("streamed noisy y differs at %d: %v vs %v", i, ys[i], yn[i])
		}
		e := yn[i] - yc[i]
		s, s2 = s+e, s2+e*e
	}
	n := float64(len(yc))
	mean, v := s/n, s2/n
	if math.Abs(mean) > 4*math.Sqrt(delta/n) || math.Abs(v-delta) > 4*delta*math.Sqrt(2/n) {
		t.Errorf("noise: mean %.3g, variance %.5g over %d entries; want 0 and %g", mean, v, len(yc), delta)
	}
}

// withoutPrefetch hides a device's Prefetcher.
type withoutPrefetch struct{ device.Device }

func (w withoutPrefetch) Capabilities() device.Caps {
	c := w.Device.Capabilities()
	c.Prefetcher = nil
	return c
}

// loggedPrefetch logs each fill a device's Prefetcher starts, as "fill LO" (LO the chunk's
// first sample), into log.
type loggedPrefetch struct {
	device.Device
	log *[]string
	p   Params
}

func (l loggedPrefetch) Capabilities() device.Caps {
	c := l.Device.Capabilities()
	c.Prefetcher = loggedFill(l)
	return c
}

type loggedFill loggedPrefetch

func (l loggedFill) GaussianFillAsync(x device.Buffer, seed, offset uint64, scale float64) (func() error, error) {
	*l.log = append(*l.log, fmt.Sprintf("fill %d", (offset-stream.Data)/uint64(l.p.T()*l.p.D)))
	return l.Device.Capabilities().Prefetcher.GaussianFillAsync(x, seed, offset, scale)
}

// TestEachChunkPrefetch: streamed chunks hold the stored tokens bit for bit, with and without
// a Prefetcher; with one, xc holds two chunks and the fill of each next chunk starts before f
// uses the current one. An error of f comes back with no fill left in flight.
func TestEachChunkPrefetch(t *testing.T) {
	p := Params{D: 30, Alpha: 0.2, Rho: 0.5, Channel: channel.Spec{Kind: channel.KindSoftmax, T: 3, Beta: 1}, Seed: 4}
	N, T, D := p.N(), p.T(), p.D // N = 180
	var log []string
	base := cpu.New(0)
	whole, err := Generate(base, p)
	if err != nil {
		t.Fatal(err)
	}
	X := download(t, base, whole.X)
	for _, tc := range []struct {
		name  string
		dev   device.Device
		chunk int
		want  string // the log of fills and uses
	}{
		{"prefetch", loggedPrefetch{base, &log, p}, 50, "fill 0, fill 50, use 0, fill 100, use 50, fill 150, use 100, use 150"},
		{"prefetch, one chunk", loggedPrefetch{base, &log, p}, N, "use 0"},
		{"no prefetch", withoutPrefetch{base}, 50, "use 0, use 50, use 100, use 150"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log = nil
			d, err := GenerateStreamed(tc.dev, p, tc.chunk)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Free(tc.dev)
			if want := min(tc.chunk, N) * T * D * map[bool]int{true: 2, false: 1}[tc.chunk < N]; d.ChunkTokens() != want {
				t.Errorf("ChunkTokens %d, want %d", d.ChunkTokens(), want)
			}
			xc, err := tc.dev.Alloc(d.ChunkTokens())
			if err != nil {
				t.Fatal(err)
			}
			defer tc.dev.Free(xc)
			log = nil
			err = d.EachChunk(tc.dev, xc, func(lo, n int, x device.Buffer) error {
				log = append(log, fmt.Sprintf("use %d", lo))
				if n != min(tc.chunk, N-lo) {
					t.Errorf("chunk at %d: %d samples", lo, n)
				}
				same(t, fmt.Sprintf("tokens of the chunk at %d", lo), download(t, tc.dev, x), X[lo*T*D:(lo+n)*T*D])
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(log, ", "); got != tc.want {
				t.Errorf("log %q, want %q", got, tc.want)
			}
			stop := errors.New("stop")
			err = d.EachChunk(tc.dev, xc, func(lo, n int, x device.Buffer) error { return stop }) // the next fill in flight
			if !errors.Is(err, stop) {
				t.Errorf("EachChunk with f failing: %v", err)
			}
			if err := tc.dev.Scal(xc, 1); err != nil {
				t.Errorf("xc after the failed pass: %v", err)
			}
		})
	}
}
