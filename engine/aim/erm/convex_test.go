package erm

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/engine/aim"
)

// sample is one data set of the quadratic network, on the host: tokens X (N x D), labels y,
// teacher S*.
type sample struct {
	D     int
	X     *mat.Dense
	Y     []float64
	SStar *mat.SymDense
}

// draw generates the data set of (D, alpha, rho, Delta, seed) with the engine's generator on the
// CPU device and downloads it.
func draw(t testing.TB, D int, alpha, rho, noise float64, seed uint64) sample {
	t.Helper()
	dev := cpu.New(0)
	p := aim.Params{D: D, Alpha: alpha, Rho: rho, Seed: seed, Channel: channel.Spec{Kind: channel.KindLinear, T: 1, Noise: noise}}
	data, err := aim.Generate(dev, p)
	if err != nil {
		t.Fatal(err)
	}
	defer data.Free(dev)
	N := p.N()
	x, y, s := make([]float64, N*D), make([]float64, N), make([]float64, D*D)
	if err := dev.Download(x, data.X); err != nil {
		t.Fatal(err)
	}
	if err := dev.Download(y, data.Y); err != nil {
		t.Fatal(err)
	}
	if err := dev.Download(s, data.S); err != nil {
		t.Fatal(err)
	}
	return sample{D: D, X: mat.NewDense(N, D, x), Y: y, SStar: mat.NewSymDense(D, s)}
}

// convexERM minimises F(S) = (1/D) sum_mu (h_mu(S) - y_mu)^2 + lambda Tr S over PSD S by
// accelerated proximal gradient (FISTA with restarts), written independently of the state
// evolution: the gradient (2/D) sum_mu r_mu (x_mu x_mu^T - I)/sqrt(D) from dense products, the
// proximal map the eigenvalue soft threshold max(nu - lambda/L, 0), the step 1/L with L the
// gradient's Lipschitz constant from power iteration. It returns S-hat and the data loss per
// sample (1/N) sum_mu (h_mu - y_mu)^2.
func convexERM(s sample, lambda float64, iters int) (*mat.SymDense, float64) {
	D := s.D
	N, _ := s.X.Dims()
	sqrtD := math.Sqrt(float64(D))
	h := make([]float64, N)
	xs := mat.NewDense(N, D, nil)
	forward := func(S *mat.SymDense) {
		xs.Mul(s.X, S)
		tr := mat.Trace(S)
		for mu := 0; mu < N; mu++ {
			h[mu] = (mat.Dot(xs.RowView(mu), s.X.RowView(mu)) - tr) / sqrtD
		}
	}
	rx := mat.NewDense(N, D, nil)
	g := mat.NewDense(D, D, nil)
	// adjoint returns (c/sqrt(D)) sum_mu r_mu (x_mu x_mu^T - I) as a symmetric matrix.
	adjoint := func(r []float64, c float64) *mat.SymDense {
		sum := 0.0
		for mu := 0; mu < N; mu++ {
			row := rx.RawRowView(mu)
			copy(row, s.X.RawRowView(mu))
			for j := range row {
				row[j] *= r[mu]
			}
			sum += r[mu]
		}
		g.Mul(s.X.T(), rx)
		out := mat.NewSymDense(D, nil)
		for i := 0; i < D; i++ {
			for j := i; j < D; j++ {
				v := 0.5 * (g.At(i, j) + g.At(j, i))
				if i == j {
					v -= sum
				}
				out.SetSym(i, j, c*v/sqrtD)
			}
		}
		return out
	}
	// Lipschitz constant of grad = (2/D) A^T A: power iteration on S -> A^T A S.
	v := mat.NewSymDense(D, nil)
	for i := 0; i < D; i++ {
		v.SetSym(i, i, 1)
	}
	lmax := 0.0
	for it := 0; it < 50; it++ {
		forward(v)
		w := adjoint(h, 1)
		nrm := mat.Norm(w, 2)
		lmax = nrm / mat.Norm(v, 2)
		v.ScaleSym(1/nrm, w)
	}
	L := 1.05 * 2 / float64(D) * lmax
	var eig mat.EigenSym
	prox := func(z *mat.SymDense) *mat.SymDense {
		if !eig.Factorize(z, true) {
			panic("EigenSym failed")
		}
		vals := eig.Values(nil)
		var vecs mat.Dense
		eig.VectorsTo(&vecs)
		out := mat.NewSymDense(D, nil)
		for k, nu := range vals {
			f := nu - lambda/L
			if f <= 0 {
				continue
			}
			col := vecs.ColView(k)
			out.SymRankOne(out, f, col)
		}
		return out
	}
	loss := func(S *mat.SymDense) float64 {
		forward(S)
		l := 0.0
		for mu := range h {
			d := h[mu] - s.Y[mu]
			l += d * d
		}
		return l/float64(D) + lambda*mat.Trace(S)
	}
	S := mat.NewSymDense(D, nil)
	Z := mat.NewSymDense(D, nil)
	Z.CopySym(S)
	t := 1.0
	prev := loss(S)
	r := make([]float64, N)
	for it := 0; it < iters; it++ {
		forward(Z)
		for mu := range r {
			r[mu] = h[mu] - s.Y[mu]
		}
		grad := adjoint(r, 2/float64(D))
		step := mat.NewSymDense(D, nil)
		step.AddSym(Z, scaled(grad, -1/L))
		Snew := prox(step)
		cur := loss(Snew)
		tn := (1 + math.Sqrt(1+4*t*t)) / 2
		if cur > prev { // restart the momentum when the objective rises
			tn = 1
			Z.CopySym(Snew)
		} else {
			diff := mat.NewSymDense(D, nil)
			diff.AddSym(Snew, scaled(S, -1))
			Z.AddSym(Snew, scaled(diff, (t-1)/tn))
		}
		S, t, prev = Snew, tn, cur
	}
	forward(S)
	l := 0.0
	for mu := range h {
		d := h[mu] - s.Y[mu]
		l += d * d
	}
	return S, l / float64(N)
}

func scaled(a *mat.SymDense, c float64) *mat.SymDense {
	out := mat.NewSymDense(a.SymmetricDim(), nil)
	out.ScaleSym(c, a)
	return out
}

// testError returns ||S - S*||_F^2 / D.
func testError(S, sStar *mat.SymDense) float64 {
	d := mat.NewSymDense(S.SymmetricDim(), nil)
	d.AddSym(S, scaled(sStar, -1))
	n := mat.Norm(d, 2)
	return n * n / float64(S.SymmetricDim())
}

func meanSD(x []float64) (float64, float64) {
	m := 0.0
	for _, v := range x {
		m += v
	}
	m /= float64(len(x))
	s := 0.0
	for _, v := range x {
		s += (v - m) * (v - m)
	}
	return m, math.Sqrt(s / float64(len(x)-1))
}
