package aim

import (
	"math"
	"sync"

	"github.com/aimtheory/aim/internal/par"
	"github.com/aimtheory/aim/kernels"
)

// NoisySoftmax is the softmax channel at T = 2 with additive Gaussian label noise (issue 17),
// y = softmax_row(beta h) + sqrt(Delta) xi, xi_ab iid N(0, 1) (kernels.NoisySoftmax: the
// outputs, Z_out and g_out), with the state-evolution integrals FisherSum and OutputEntropy.
//
// In the notation of kernels.NoisySoftmax the channel sees d = (h11 - h12, h22 - h12) through
// y~_a = sigma(beta d_a) + sqrt(Delta/2) eta_a, and given omega, d ~ N(m, V C3) with
// m ~ N(0, q C3) (omega ~ N(0, q I_3)), C3 = [[3, 1], [1, 3]]. Both integrals are
//
//	E_m int dy~ Z(y~; m, V) F(Z, grad_m Z),   F = log Z (psi_out), G^T C3 G with G = grad log Z
//	(FisherSum),
//
// with Z(y~; m, V) the density of y~ given m. m is integrated by the tensor Gauss-Hermite rule
// of hardmax (gaussHermiteEven's whitening of N(0, 3q [[1, 1/3], [1/3, 1]]), using m -> -m,
// y~ -> 1 - y~), y~ by a composite Gauss-Legendre rule on the window where Z is not negligible
// (narrow end panels resolve the boundary layers of width sqrt(Delta/2) at 0 and 1), and Z on the y~ grid by the g_0 rule of kernels.NoisySoftmax over tables of the row
// integrals K. Delta -> 0 recovers the noiseless softmax: FisherSum -> K/(2V) = 2/V.
type NoisySoftmax struct {
	*kernels.NoisySoftmax
	// Rule sizes: Gauss-Hermite points per dimension of m and Gauss-Legendre points per panel
	// of y~ (yPanels panels per dimension).
	mPoints, yPoints int
	mx, mw           []float64
	yx, yw           []float64
	Workers          int // goroutines of the integrals (0: GOMAXPROCS); the values do not depend on it

	memo pairMemo[float64]
}

// Default sizes of the SE rule of NoisySoftmax.
const (
	noisyMPoints = 14
	noisyYPoints = 8
)

// NewNoisySoftmax returns the noisy softmax channel: T = 2, 0 < beta < inf, 0 < Delta < inf.
func NewNoisySoftmax(T int, beta, delta float64) (*NoisySoftmax, error) {
	return newNoisySoftmax(T, beta, delta, noisyMPoints, noisyYPoints)
}

func newNoisySoftmax(T int, beta, delta float64, mPoints, yPoints int) (*NoisySoftmax, error) {
	k, err := kernels.NewNoisySoftmax(T, beta, delta)
	if err != nil {
		return nil, err
	}
	n := &NoisySoftmax{NoisySoftmax: k, mPoints: mPoints, yPoints: yPoints}
	n.mx, n.mw = kernels.HermiteNormal(mPoints)
	n.yx, n.yw = kernels.GaussLegendre(yPoints)
	return n, nil
}

// Name returns "softmax".
func (n *NoisySoftmax) Name() string { return "softmax" }

// FisherSum returns E[sum_{a<=b} g_out,ab^2] = E[G^T C3 G] (see the type's comment): q-hat =
// 2 alpha FisherSum(q, V). It is below the noiseless K/(2V) = 2/V and tends to it as
// Delta -> 0; it stays bounded as V -> 0, so there is no perfect recovery at finite alpha (the
// channel does not count directions: se.AlphaPR is +Inf for it).
func (n *NoisySoftmax) FisherSum(q, V float64) (float64, error) {
	_, f, err := n.integrals("FisherSum", q, V)
	return f, err
}

// OutputEntropy returns psi_out(q, V) = E log Z_out(y~; m, V), Z_out the density of the
// sufficient statistics y~ (kernels.NoisySoftmax). The dropped constant is E log of the density
// of the uninformative combinations w_a = y_aa + y_ab ~ N(1, 2 Delta), independent of y~ (the
// map (y_aa, y_ab) -> (y~_a, w_a) has Jacobian 1): -log(4 pi Delta) - 1 per sample, independent
// of q and V (it cancels between fixed points and in the envelope identity). Its q-derivative along V = Q0 - q is FisherSum/2.
func (n *NoisySoftmax) OutputEntropy(q, V float64) (float64, error) {
	psi, _, err := n.integrals("OutputEntropy", q, V)
	return psi, err
}

// integrals returns (psi_out, FisherSum) at (q, V), remembering the last pair.
func (n *NoisySoftmax) integrals(op string, q, V float64) (psi, fisher float64, err error) {
	psi, fisher, err = n.memo.integrals("noisy softmax", op, q, V, [2]int{n.mPoints, n.yPoints},
		func() (float64, float64, error) { return n.integrate(q, V) })
	if err != nil {
		return math.NaN(), math.NaN(), err
	}
	return psi, fisher, nil
}

// noisyPair is one (psi, fisher) contribution.
type noisyPair struct{ psi, fisher float64 }

// integrate runs the m rule (rows of the tensor Gauss-Hermite grid in whitened coordinates,
// m = sqrt(3q) L z, L = [[1, 0], [1/3, sqrt(8)/3]], half the grid by m -> -m), one chunk per
// row, folded in row order.
func (n *NoisySoftmax) integrate(q, V float64) (psi, fisher float64, err error) {
	sl := math.Sqrt(3 * q)
	l21, l22 := 1.0/3, math.Sqrt(8)/3
	nm := len(n.mx)
	rows := nm / 2
	if q == 0 {
		rows = 1 // m = 0 at every node
	}
	r, err := par.MapReduce(n.Workers, rows, func() (*noisyScratch, error) { return n.scratch(), nil },
		func(s *noisyScratch, i int) (noisyPair, error) {
			if q == 0 {
				p, f := n.atM(s, 0, 0, V)
				return noisyPair{p, f}, nil
			}
			var acc noisyPair
			for j := 0; j < nm; j++ {
				w := 2 * n.mw[i] * n.mw[j]
				if w < 1e-18 {
					continue
				}
				z1, z2 := n.mx[i], n.mx[j]
				p, f := n.atM(s, sl*z1, sl*(l21*z1+l22*z2), V)
				acc.psi += w * p
				acc.fisher += w * f
			}
			return acc, nil
		}, noisyPair{}, func(a, b noisyPair) noisyPair { return noisyPair{a.psi + b.psi, a.fisher + b.fisher} })
	return r.psi, r.fisher, err
}

// noisyScratch holds one goroutine's tables: per row a and g_0 node k, K and dlog K/dmu on
// the y~ grid, and the grids themselves.
type noisyScratch struct {
	y, w   [2][]float64   // y~ nodes and weights per row
	k, r   [2][][]float64 // [a][k][i]
	ng, ny int
}

func (n *NoisySoftmax) scratch() *noisyScratch {
	ng := kernels.NoisyHermitePoints
	ny := yPanels * n.yPoints
	s := &noisyScratch{ng: ng, ny: ny}
	for a := 0; a < 2; a++ {
		s.y[a], s.w[a] = make([]float64, ny), make([]float64, ny)
		s.k[a], s.r[a] = make([][]float64, ng), make([][]float64, ng)
		for k := 0; k < ng; k++ {
			s.k[a][k], s.r[a][k] = make([]float64, ny), make([]float64, ny)
		}
	}
	return s
}

// yPanels is the number of panels of the y~ rule per dimension.
const yPanels = 7

// yGrid writes the composite Gauss-Legendre rule of y~_a given m_a on the window
// [sigma(beta(m - 7 sqrt(3V))) - 7 sd, sigma(beta(m + 7 sqrt(3V))) + 7 sd], sd = sqrt(Delta/2):
// seven panels, the three at each end 7, 7 and 14 sd wide when the window is wider than 56 sd
// (they resolve the boundary layers of width sd where the outputs saturate), equal ones
// otherwise.
func (n *NoisySoftmax) yGrid(y, w []float64, m, V float64) {
	sd := math.Sqrt(n.Noise() / 2)
	r := 7 * math.Sqrt(3*V)
	lo := kernels.Logistic(n.Beta()*(m-r)) - 7*sd
	hi := kernels.Logistic(n.Beta()*(m+r)) + 7*sd
	var edges [yPanels + 1]float64
	if hi-lo > 56*sd {
		edges = [yPanels + 1]float64{lo, lo + 7*sd, lo + 14*sd, lo + 28*sd, hi - 28*sd, hi - 14*sd, hi - 7*sd, hi}
	} else {
		for p := range edges {
			edges[p] = lo + (hi-lo)*float64(p)/yPanels
		}
	}
	np := n.yPoints
	for p := 0; p < yPanels; p++ {
		c, h := (edges[p]+edges[p+1])/2, (edges[p+1]-edges[p])/2
		for i, t := range n.yx {
			y[p*np+i] = c + h*t
			w[p*np+i] = h * n.yw[i]
		}
	}
}

// atM returns int dy~ Z log Z and int dy~ Z G^T C3 G at one m = (m1, m2).
func (n *NoisySoftmax) atM(s *noisyScratch, m1, m2, V float64) (psi, fisher float64) {
	sv := math.Sqrt(V)
	ghx, ghw := noisyG0Rule()
	for a, m := range [2]float64{m1, m2} {
		n.yGrid(s.y[a], s.w[a], m, V)
		for k, g0 := range ghx {
			for i, y := range s.y[a] {
				lk, d := n.RowLog(y, m+sv*g0, 2*V)
				s.k[a][k][i] = ghw[k] * math.Exp(lk) // the g_0 weight folded into row 1's table
				s.r[a][k][i] = d
				if a == 1 {
					s.k[a][k][i] = math.Exp(lk)
				}
			}
		}
	}
	for i := 0; i < s.ny; i++ {
		for j := 0; j < s.ny; j++ {
			var z, n1, n2 float64
			for k := 0; k < s.ng; k++ {
				p := s.k[0][k][i] * s.k[1][k][j]
				z += p
				n1 += p * s.r[0][k][i]
				n2 += p * s.r[1][k][j]
			}
			if !(z > 0) {
				continue
			}
			g1, g2 := n1/z, n2/z
			w := s.w[0][i] * s.w[1][j] * z
			psi += w * math.Log(z)
			fisher += w * (3*g1*g1 + 2*g1*g2 + 3*g2*g2)
		}
	}
	return psi, fisher
}

var noisyG0 struct {
	once sync.Once
	x, w []float64
}

// noisyG0Rule is the g_0 rule of kernels.NoisySoftmax (NoisyHermitePoints nodes).
func noisyG0Rule() (x, w []float64) {
	noisyG0.once.Do(func() { noisyG0.x, noisyG0.w = kernels.HermiteNormal(kernels.NoisyHermitePoints) })
	return noisyG0.x, noisyG0.w
}

// NoisySoftmax implements Entropic.
var _ Entropic = (*NoisySoftmax)(nil)
