package smi

import (
	"math"
	"testing"

	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/stream"
)

// TestTestSetAtDataOffset: a test set drawn at the training data's offset is the training set:
// the same tokens and the outputs of Data.Y, bit for bit.
func TestTestSetAtDataOffset(t *testing.T) {
	d, err := Generate(Params{D: 30, Alpha: 1, M: 2, L: 2, C: 1, Beta: 1, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	N, M, D := d.P.N(), d.P.M, d.P.D
	x, y := d.TestSet(N, stream.Data)
	want := make([]float64, M*M)
	for mu := 0; mu < N; mu++ {
		d.Y(want, mu)
		for i := range want {
			if y[mu*M*M+i] != want[i] {
				t.Fatalf("sample %d: y %v, want %v", mu, y[mu*M*M:(mu+1)*M*M], want)
			}
		}
	}
	for i := range x {
		if x[i] != d.X[i] {
			t.Fatalf("token value %d: %g, want %g", i, x[i], d.X[i])
		}
	}
	if len(x) != N*M*D {
		t.Errorf("%d tokens, want %d", len(x), N*M*D)
	}
}

// TestOverlaps: hand-computed overlaps, the sign of a layer dropped, and Q = 0 gives a zero
// cosine, not NaN.
func TestOverlaps(t *testing.T) {
	d := &Data{P: Params{D: 2, Alpha: 1, M: 2, L: 2}, W: []float64{1, 1, 2, 0}}
	what := []float64{-3, -1, 0, 0} // layer 1 anti-aligned-ish, layer 2 zero
	Q, M, C := d.Overlaps(what)
	wantQ, wantM := []float64{5, 0}, []float64{2, 0}
	wantC := []float64{2 / math.Sqrt(5*1), 0}
	for l := range Q {
		if math.Abs(Q[l]-wantQ[l]) > 1e-15 || math.Abs(M[l]-wantM[l]) > 1e-15 || math.Abs(C[l]-wantC[l]) > 1e-15 {
			t.Errorf("layer %d: Q %g M %g C %g, want %g %g %g", l+1, Q[l], M[l], C[l], wantQ[l], wantM[l], wantC[l])
		}
	}
}

// TestNoisyData: with Noise = Delta, u is the forward map of Z + sqrt(Delta) xi, xi read from
// stream.SMINoise (recomputed here from the stream); the teacher, tokens and Z are those of the
// noiseless data; the noise's sample variance is Delta; a negative noise is refused.
func TestNoisyData(t *testing.T) {
	p := Params{D: 40, Alpha: 5, M: 2, L: 3, C: 1, Beta: 1, Seed: 3}
	clean, err := Generate(p)
	if err != nil {
		t.Fatal(err)
	}
	p.Noise = 0.01
	noisy, err := Generate(p)
	if err != nil {
		t.Fatal(err)
	}
	N, P, M := p.N(), p.P(), p.M
	xi := make([]float64, N*P*M)
	device.FillNormals(xi, p.Seed, stream.SMINoise)
	ch, _ := p.Channel()
	s := ch.NewScratch()
	z, u := make([]float64, P*M), make([]float64, M)
	var ss float64
	for mu := 0; mu < N; mu++ {
		for k := range z {
			if noisy.Z[mu*P*M+k] != clean.Z[mu*P*M+k] {
				t.Fatalf("sample %d: Z differs from the noiseless data's", mu)
			}
			z[k] = clean.Z[mu*P*M+k] + 0.1*xi[mu*P*M+k]
			ss += 0.01 * xi[mu*P*M+k] * xi[mu*P*M+k]
		}
		ch.Forward(u, z, nil, s)
		for l := range u {
			if math.Abs(u[l]-noisy.U[mu*M+l]) > 1e-12 {
				t.Fatalf("sample %d: u = %v, want %v", mu, noisy.U[mu*M:(mu+1)*M], u)
			}
		}
	}
	if v := ss / float64(N*P*M); math.Abs(v/0.01-1) > 4*math.Sqrt(2/float64(N*P*M)) {
		t.Errorf("noise variance %.5f, want 0.01", v)
	}
	clean.P.Noise = 0
	if got, want := p.Bytes()-clean.P.Bytes(), uint64(8*N*P*M); got != want {
		t.Errorf("the noise adds %d bytes, want %d", got, want)
	}
	p.Noise = -1
	if _, err := Generate(p); err == nil {
		t.Error("noise -1 accepted")
	}
}
