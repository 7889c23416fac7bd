package aim

import (
	"math"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/engine/internal/devtest"
)

// TestPowerLawTeacher: a power-law teacher (Teacher.PowerLaw) has exactly the eigenvalues
// Teacher.Eigenvalues (w_k ∝ k^-gamma for k <= R, 0 beyond, (1/D) sum w^2 = 1) to 1e-12, is
// symmetric (exactly with a native library, whose SpectralCompose sums one triangle; to 1e-15
// of its largest entry on gonum, whose SpectralCompose is a general product), is drawn the same from the same seed and differently from another, its eigenvectors
// are spread over the coordinates (the largest |O_ik|^2 of the top eigenvector below 0.2 at
// D = 60, against 1 for the identity), and Generate's peak memory is Params.Bytes.
func TestPowerLawTeacher(t *testing.T) {
	dev := devtest.NewCounting(cpu.New(0))
	p := Params{D: 60, Alpha: 0.05, Rho: 0.5, Seed: 3, Channel: channel.Spec{Kind: channel.KindLinear, T: 1}, Teacher: Teacher{PowerLaw: true, Gamma: 1.25}}
	draw := func(seed uint64) []float64 {
		q := p
		q.Seed = seed
		data, err := Generate(dev, q)
		if err != nil {
			t.Fatal(err)
		}
		defer data.Free(dev)
		if peak := dev.Peak(); peak != q.Bytes(q.N()) {
			t.Errorf("Generate peaked at %d bytes, Params.Bytes says %d", peak, q.Bytes(q.N()))
		}
		return download(t, dev, data.S)
	}
	S := draw(3)
	D := p.D
	tol := 0.0
	if !dev.Device.(*cpu.Device).BLAS().Native {
		for _, v := range S {
			tol = max(tol, 1e-15*math.Abs(v))
		}
	}
	sym := mat.NewSymDense(D, nil)
	for i := 0; i < D; i++ {
		for j := 0; j < D; j++ {
			if math.Abs(S[i*D+j]-S[j*D+i]) > tol {
				t.Fatalf("S not symmetric at (%d, %d): %v and %v", i, j, S[i*D+j], S[j*D+i])
			}
		}
		for j := i; j < D; j++ {
			sym.SetSym(i, j, S[i*D+j])
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(sym, true) {
		t.Fatal("EigenSym")
	}
	got := eig.Values(nil)
	want := slices.Clone([]float64(p.Teacher.Eigenvalues(D, p.R())))
	slices.Sort(want)
	q0 := 0.0
	for k := range got {
		q0 += want[k] * want[k] / float64(D)
		if math.Abs(got[k]-want[k]) > 1e-12*math.Max(1, math.Abs(want[k])) {
			t.Errorf("eigenvalue %d: %.15g, want %.15g", k, got[k], want[k])
		}
	}
	if math.Abs(q0-1) > 1e-12 || math.Abs(p.Prior().Q0()-q0) > 1e-15 {
		t.Errorf("(1/D) sum w^2 = %.15g, Prior Q0 %.15g", q0, p.Prior().Q0())
	}
	var o mat.Dense
	eig.VectorsTo(&o)
	top := 0.0
	for i := 0; i < D; i++ {
		top = math.Max(top, o.At(i, D-1)*o.At(i, D-1))
	}
	if top > 0.2 {
		t.Errorf("the top eigenvector has a coordinate of weight %g", top)
	}
	if again := draw(3); !slices.Equal(again, S) {
		t.Error("the same seed drew another teacher")
	}
	if other := draw(4); slices.Equal(other, S) {
		t.Error("another seed drew the same teacher")
	}
	if err := (Params{D: 10, Alpha: 1, Rho: 0.5, Channel: p.Channel, Teacher: Teacher{PowerLaw: true, Gamma: -1}}).Validate(); err == nil {
		t.Error("gamma = -1 accepted")
	}
}
