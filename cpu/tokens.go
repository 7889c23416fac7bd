package cpu

import (
	"github.com/aimtheory/aim/device"
)

// tokenChunk returns the samples per chunk of a token operation (about tokenWork
// multiply-adds per chunk).
func tokenChunk(t, d int) int { return max(1, tokenWork/max(1, t*t*d)) }

// TokenDots computes H_mu,ab = sum_i Y_mu,a,i X_mu,b,i for n samples: Y, X are n x t x d and H
// is n x t x t. H does not overlap Y or X.
func (d *backend) TokenDots(h, y, x device.Buffer, n, t, dd int) error {
	const op = "cpu TokenDots"
	per := tokenChunk(t, dd)
	hs, ys, xs := data(h), data(y), data(x)
	return d.forChunks(op, chunks(n, per), same(func(c int) {
		lo, hi := span(c, n, per)
		for mu := lo; mu < hi; mu++ {
			tokenDots(hs[mu*t*t:(mu+1)*t*t], ys[mu*t*dd:(mu+1)*t*dd], xs[mu*t*dd:(mu+1)*t*dd], t, dd)
		}
	}))
}

// tokenDots computes one sample of TokenDots with 2 x 2 register blocking: two rows of Y are
// streamed against two rows of X at once (four dot products per pass, one load per product),
// so every row is read ceil(t/2) times, from L1 after the first.
func tokenDots(h, y, x []float64, t, d int) {
	a := 0
	for ; a+2 <= t; a += 2 {
		y0, y1 := y[a*d:(a+1)*d], y[(a+1)*d:(a+2)*d]
		b := 0
		for ; b+2 <= t; b += 2 {
			x0, x1 := x[b*d:(b+1)*d], x[(b+1)*d:(b+2)*d]
			s00, s01, s10, s11 := dot2x2(y0, y1, x0, x1)
			h[a*t+b], h[a*t+b+1] = s00, s01
			h[(a+1)*t+b], h[(a+1)*t+b+1] = s10, s11
		}
		if b < t {
			xb := x[b*d : (b+1)*d]
			h[a*t+b] = dot(y0, xb)
			h[(a+1)*t+b] = dot(y1, xb)
		}
	}
	if a < t {
		ya := y[a*d : (a+1)*d]
		for b := 0; b < t; b++ {
			h[a*t+b] = dot(ya, x[b*d:(b+1)*d])
		}
	}
}

// dot2x2 returns the four dot products y_i . x_j, i, j in {0, 1}, of equal-length rows: four
// loads feed four multiply-adds per step. (Eight accumulators measured slower: register spills.)
func dot2x2(y0, y1, x0, x1 []float64) (s00, s01, s10, s11 float64) {
	n := len(y0)
	y1, x0, x1 = y1[:n], x0[:n], x1[:n]
	for i := 0; i < n; i++ {
		a0, a1, b0, b1 := y0[i], y1[i], x0[i], x1[i]
		s00 += a0 * b0
		s01 += a0 * b1
		s10 += a1 * b0
		s11 += a1 * b1
	}
	return
}

// TokenMix computes Z_mu = C_mu X_mu, Z_mu,a,i = sum_b C_mu,a,b X_mu,b,i, for n samples: C is
// n x t x t, X and Z are n x t x d. Z does not overlap C or X.
func (d *backend) TokenMix(z, c, x device.Buffer, n, t, dd int) error {
	const op = "cpu TokenMix"
	per := tokenChunk(t, dd)
	zs, cs, xs := data(z), data(c), data(x)
	return d.forChunks(op, chunks(n, per), same(func(ch int) {
		lo, hi := span(ch, n, per)
		for mu := lo; mu < hi; mu++ {
			tokenMix(zs[mu*t*dd:(mu+1)*t*dd], cs[mu*t*t:(mu+1)*t*t], xs[mu*t*dd:(mu+1)*t*dd], t, dd)
		}
	}))
}

// tokenMix computes one sample of TokenMix: each output row is written once from two X rows,
// then updated with two more X rows per pass (ceil(t/2) streaming passes over a row of Z).
func tokenMix(z, c, x []float64, t, d int) {
	for a := 0; a < t; a++ {
		za := z[a*d : (a+1)*d]
		ca := c[a*t : (a+1)*t]
		if t == 1 {
			c0, x0 := ca[0], x[:d]
			for i := range za {
				za[i] = c0 * x0[i]
			}
			continue
		}
		c0, c1 := ca[0], ca[1]
		x0, x1 := x[:d], x[d:2*d]
		x0, x1 = x0[:len(za)], x1[:len(za)]
		for i := range za {
			za[i] = c0*x0[i] + c1*x1[i]
		}
		b := 2
		for ; b+2 <= t; b += 2 {
			c0, c1 := ca[b], ca[b+1]
			x0, x1 := x[b*d:(b+1)*d], x[(b+1)*d:(b+2)*d]
			x0, x1 = x0[:len(za)], x1[:len(za)]
			for i := range za {
				za[i] += c0*x0[i] + c1*x1[i]
			}
		}
		if b < t {
			c0, x0 := ca[b], x[b*d:(b+1)*d]
			x0 = x0[:len(za)]
			for i := range za {
				za[i] += c0 * x0[i]
			}
		}
	}
}
