package device

// The checked front of the operations of Ops other than the channel operations: data
// movement, the products, the eigendecomposition and the element-wise operations.

import "math"

// Upload copies src into dst[0:len(src)].
func (c *Checked) Upload(dst Buffer, src []float64) (err error) {
	const op = "Upload"
	if err := c.open(op); err != nil {
		return err
	}
	d, err := c.arg(op, "dst", dst, len(src))
	if err != nil {
		return err
	}
	defer c.guard(op, &err)
	if o := c.obs.Load(); o != nil {
		return (*o)(op, func() error { return c.b.Upload(d.raw, src) })
	}
	return c.b.Upload(d.raw, src)
}

// Download copies src[0:len(dst)] into dst.
func (c *Checked) Download(dst []float64, src Buffer) (err error) {
	const op = "Download"
	if err := c.open(op); err != nil {
		return err
	}
	s, err := c.arg(op, "src", src, len(dst))
	if err != nil {
		return err
	}
	defer c.guard(op, &err)
	if o := c.obs.Load(); o != nil {
		return (*o)(op, func() error { return c.b.Download(dst, s.raw) })
	}
	return c.b.Download(dst, s.raw)
}

// Copy sets dst[0:src.Len()] = src; dst and src must be the same range (then nothing is
// done) or not overlap.
func (c *Checked) Copy(dst, src Buffer) (err error) {
	const op = "Copy"
	if err := c.open(op); err != nil {
		return err
	}
	s, err := c.arg(op, "src", src, 0)
	if err != nil {
		return err
	}
	d, err := c.arg(op, "dst", dst, s.n)
	if err != nil {
		return err
	}
	if d.use(s.n).same(s.use(s.n)) {
		return nil
	}
	if err := c.disjoint(op, "dst and src overlap", d.use(s.n), s.use(s.n)); err != nil {
		return err
	}
	defer c.guard(op, &err)
	if o := c.obs.Load(); o != nil {
		return (*o)(op, func() error { return c.b.Copy(d.raw, s.raw) })
	}
	return c.b.Copy(d.raw, s.raw)
}

// Gemm computes C = alpha op(A) op(B) + beta C (Ops) after checking m, n, k >= 0, that A, B
// and C hold m k, k n and m n values, and that C does not overlap A or B.
func (c *Checked) Gemm(transA, transB bool, m, n, k int, alpha float64, a, b Buffer, beta float64, cc Buffer) (err error) {
	const op = "Gemm"
	ab, bb, cb, err := c.gemmArgs(op, m, n, k, a, b, cc)
	if err != nil {
		return err
	}
	defer c.guard(op, &err)
	if o := c.obs.Load(); o != nil {
		return (*o)(op, func() error { return c.b.Gemm(transA, transB, m, n, k, alpha, ab.raw, bb.raw, beta, cb.raw) })
	}
	return c.b.Gemm(transA, transB, m, n, k, alpha, ab.raw, bb.raw, beta, cb.raw)
}

// GemmStridedBatched computes C_p = alpha op(A_p) op(B_p) + beta C_p for p < batch (Ops)
// after checking that the sizes, strides and batch are non-negative, that a, b and c hold the
// last matrix at (batch - 1) stride (the extent of the batch), that C's matrices do not
// overlap one another (strideC >= m n), and that C's extent overlaps neither A's nor B's. A
// batch of 0, or empty matrices, computes nothing.
func (c *Checked) GemmStridedBatched(transA, transB bool, m, n, k int, alpha float64, a Buffer, strideA int, b Buffer, strideB int,
	beta float64, cc Buffer, strideC int, batch int) (err error) {
	const op = "GemmStridedBatched"
	if err := c.open(op); err != nil {
		return err
	}
	if _, err := c.sizes(op, "m, n, k", m, n, k); err != nil {
		return err
	}
	if batch < 0 || strideA < 0 || strideB < 0 || strideC < 0 {
		return c.errf(op, "negative size (batch, strideA, strideB, strideC) = %s: %w", ints([]int{batch, strideA, strideB, strideC}), ErrSize)
	}
	extent := func(name string, stride, rows, cols int) (int, error) {
		one, err := c.sizes(op, "rows, cols of "+name, rows, cols)
		if err != nil {
			return 0, err
		}
		if batch == 0 {
			return 0, nil
		}
		skip, err := c.sizes(op, "batch - 1, stride of "+name, batch-1, stride)
		if err != nil || skip > math.MaxInt-one {
			return 0, c.errf(op, "the extent of %s, (%d - 1) %d + %d, overflows an int: %w", name, batch, stride, one, ErrSize)
		}
		return skip + one, nil
	}
	na, err := extent("a", strideA, m, k)
	if err != nil {
		return err
	}
	nb, err := extent("b", strideB, k, n)
	if err != nil {
		return err
	}
	nc, err := extent("c", strideC, m, n)
	if err != nil {
		return err
	}
	bs, err := c.args(op, argSpec{"a", a, na}, argSpec{"b", b, nb}, argSpec{"c", cc, nc})
	if err != nil {
		return err
	}
	ab, bb, cb := bs[0], bs[1], bs[2]
	if batch > 1 && m*n > 0 && strideC < m*n {
		return c.errf(op, "strideC = %d < m n = %d: the %d products of c would overlap", strideC, m*n, batch)
	}
	if cb.use(nc).overlaps(ab.use(na)) || cb.use(nc).overlaps(bb.use(nb)) {
		return c.errf(op, "output c must not overlap an input")
	}
	defer c.guard(op, &err)
	call := func() error {
		return c.b.GemmStridedBatched(transA, transB, m, n, k, alpha, ab.raw, strideA, bb.raw, strideB, beta, cb.raw, strideC, batch)
	}
	if o := c.obs.Load(); o != nil {
		return (*o)(op, call)
	}
	return call()
}

// gemmArgs checks the arguments of Gemm and GemmPrecision: the device open, m, n, k >= 0, a
// holding m k values, b k n, c m n, and c overlapping neither input.
func (c *Checked) gemmArgs(op string, m, n, k int, a, b, cc Buffer) (ab, bb, cb *buffer, err error) {
	if err := c.open(op); err != nil {
		return nil, nil, nil, err
	}
	if _, err := c.sizes(op, "m, n, k", m, n, k); err != nil {
		return nil, nil, nil, err
	}
	mk, err := c.sizes(op, "m, k", m, k)
	if err != nil {
		return nil, nil, nil, err
	}
	kn, err := c.sizes(op, "k, n", k, n)
	if err != nil {
		return nil, nil, nil, err
	}
	mn, err := c.sizes(op, "m, n", m, n)
	if err != nil {
		return nil, nil, nil, err
	}
	bs, err := c.args(op, argSpec{"a", a, mk}, argSpec{"b", b, kn}, argSpec{"c", cc, mn})
	if err != nil {
		return nil, nil, nil, err
	}
	ab, bb, cb = bs[0], bs[1], bs[2]
	if cb.use(mn).overlaps(ab.use(mk)) || cb.use(mn).overlaps(bb.use(kn)) {
		return nil, nil, nil, c.errf(op, "output c must not overlap an input")
	}
	return ab, bb, cb, nil
}

// tokens checks the buffers of TokenDots and TokenMix: out holds n t t (outTT) or n t d
// values, in1 n t t (in1TT) or n t d, in2 n t d, and out overlaps neither input.
func (c *Checked) tokens(op string, nOut, n1, n2 string, out, in1, in2 Buffer, n, t, d int, outTT bool) (o, i1, i2 *buffer, err error) {
	ntt, err := c.sizes(op, "n, t, t", n, t, t)
	if err != nil {
		return nil, nil, nil, err
	}
	ntd, err := c.sizes(op, "n, t, d", n, t, d)
	if err != nil {
		return nil, nil, nil, err
	}
	nOutV, n1V := ntd, ntt
	if outTT {
		nOutV, n1V = ntt, ntd
	}
	if o, err = c.arg(op, nOut, out, nOutV); err != nil {
		return nil, nil, nil, err
	}
	if i1, err = c.arg(op, n1, in1, n1V); err != nil {
		return nil, nil, nil, err
	}
	if i2, err = c.arg(op, n2, in2, ntd); err != nil {
		return nil, nil, nil, err
	}
	if o.use(nOutV).overlaps(i1.use(n1V)) || o.use(nOutV).overlaps(i2.use(ntd)) {
		return nil, nil, nil, c.errf(op, "output %s must not overlap an input", nOut)
	}
	return o, i1, i2, nil
}

// TokenDots computes H_mu = Y_mu X_mu^T (Ops) after checking sizes, lengths (H n t t, Y and
// X n t d) and that H overlaps neither input.
func (c *Checked) TokenDots(h, y, x Buffer, n, t, d int) (err error) {
	const op = "TokenDots"
	if err := c.open(op); err != nil {
		return err
	}
	hb, yb, xb, err := c.tokens(op, "h", "y", "x", h, y, x, n, t, d, true)
	if err != nil {
		return err
	}
	defer c.guard(op, &err)
	if o := c.obs.Load(); o != nil {
		return (*o)(op, func() error { return c.b.TokenDots(hb.raw, yb.raw, xb.raw, n, t, d) })
	}
	return c.b.TokenDots(hb.raw, yb.raw, xb.raw, n, t, d)
}

// TokenMix computes Z_mu = C_mu X_mu (Ops) after checking sizes, lengths (Z and X n t d, C
// n t t) and that Z overlaps neither input.
func (c *Checked) TokenMix(z, cm, x Buffer, n, t, d int) (err error) {
	const op = "TokenMix"
	if err := c.open(op); err != nil {
		return err
	}
	zb, cb, xb, err := c.tokens(op, "z", "c", "x", z, cm, x, n, t, d, false)
	if err != nil {
		return err
	}
	defer c.guard(op, &err)
	if o := c.obs.Load(); o != nil {
		return (*o)(op, func() error { return c.b.TokenMix(zb.raw, cb.raw, xb.raw, n, t, d) })
	}
	return c.b.TokenMix(zb.raw, cb.raw, xb.raw, n, t, d)
}

// EighSym computes the eigendecomposition of the d x d matrix in a (Ops) after checking
// d >= 0, the lengths (vals d, vecs and a d^2) and that the three ranges do not overlap.
func (c *Checked) EighSym(vals, vecs, a Buffer, d int) (err error) {
	const op = "EighSym"
	if err := c.open(op); err != nil {
		return err
	}
	dd, err := c.sizes(op, "d, d", d, d)
	if err != nil {
		return err
	}
	bs, err := c.args(op, argSpec{"vals", vals, d}, argSpec{"vecs", vecs, dd}, argSpec{"a", a, dd})
	if err != nil {
		return err
	}
	wb, vb, ab := bs[0], bs[1], bs[2]
	w, v, s := wb.use(d), vb.use(dd), ab.use(dd)
	if v.overlaps(s) || w.overlaps(s) || w.overlaps(v) {
		return c.errf(op, "vals, vecs and a must be distinct: their ranges overlap")
	}
	defer c.guard(op, &err)
	if o := c.obs.Load(); o != nil {
		return (*o)(op, func() error { return c.b.EighSym(wb.raw, vb.raw, ab.raw, d) })
	}
	return c.b.EighSym(wb.raw, vb.raw, ab.raw, d)
}

// SpectralCompose computes out = O diag(f) O^T (Ops) after checking d >= 0, the lengths (out
// and vecs d^2, f d) and that out overlaps neither input.
func (c *Checked) SpectralCompose(out, vecs, f Buffer, d int) (err error) {
	const op = "SpectralCompose"
	if err := c.open(op); err != nil {
		return err
	}
	dd, err := c.sizes(op, "d, d", d, d)
	if err != nil {
		return err
	}
	bs, err := c.args(op, argSpec{"out", out, dd}, argSpec{"vecs", vecs, dd}, argSpec{"f", f, d})
	if err != nil {
		return err
	}
	rb, vb, fb := bs[0], bs[1], bs[2]
	if rb.use(dd).overlaps(vb.use(dd)) || rb.use(dd).overlaps(fb.use(d)) {
		return c.errf(op, "output out must not overlap an input")
	}
	defer c.guard(op, &err)
	if o := c.obs.Load(); o != nil {
		return (*o)(op, func() error { return c.b.SpectralCompose(rb.raw, vb.raw, fb.raw, d) })
	}
	return c.b.SpectralCompose(rb.raw, vb.raw, fb.raw, d)
}

// Scal computes x = alpha x over the whole buffer or view.
func (c *Checked) Scal(x Buffer, alpha float64) (err error) {
	const op = "Scal"
	if err := c.open(op); err != nil {
		return err
	}
	xb, err := c.arg(op, "x", x, 0)
	if err != nil {
		return err
	}
	defer c.guard(op, &err)
	if o := c.obs.Load(); o != nil {
		return (*o)(op, func() error { return c.b.Scal(xb.raw, alpha) })
	}
	return c.b.Scal(xb.raw, alpha)
}

// Axpby computes y = a x + b y after checking equal lengths and that x is y or does not
// overlap it.
func (c *Checked) Axpby(y Buffer, a float64, x Buffer, b float64) (err error) {
	const op = "Axpby"
	if err := c.open(op); err != nil {
		return err
	}
	xb, yb, err := c.pair(op, "x", x, "y", y)
	if err != nil {
		return err
	}
	if err := c.sameOrDisjoint(op, "x", "y", xb.use(xb.n), yb.use(yb.n)); err != nil {
		return err
	}
	defer c.guard(op, &err)
	if o := c.obs.Load(); o != nil {
		return (*o)(op, func() error { return c.b.Axpby(yb.raw, a, xb.raw, b) })
	}
	return c.b.Axpby(yb.raw, a, xb.raw, b)
}

// Dot returns sum_k x_k y_k after checking equal lengths.
func (c *Checked) Dot(x, y Buffer) (s float64, err error) {
	const op = "Dot"
	if err := c.open(op); err != nil {
		return 0, err
	}
	xb, yb, err := c.pair(op, "x", x, "y", y)
	if err != nil {
		return 0, err
	}
	defer c.guard(op, &err)
	if o := c.obs.Load(); o != nil {
		var s float64
		err := (*o)(op, func() (e error) { s, e = c.b.Dot(xb.raw, yb.raw); return e })
		return s, err
	}
	return c.b.Dot(xb.raw, yb.raw)
}

// SqDist returns sum_k (x_k - y_k)^2 after checking equal lengths.
func (c *Checked) SqDist(x, y Buffer) (s float64, err error) {
	const op = "SqDist"
	if err := c.open(op); err != nil {
		return 0, err
	}
	xb, yb, err := c.pair(op, "x", x, "y", y)
	if err != nil {
		return 0, err
	}
	defer c.guard(op, &err)
	if o := c.obs.Load(); o != nil {
		var s float64
		err := (*o)(op, func() (e error) { s, e = c.b.SqDist(xb.raw, yb.raw); return e })
		return s, err
	}
	return c.b.SqDist(xb.raw, yb.raw)
}

// AddDiag adds v to the diagonals of n stacked t x t matrices after checking n, t >= 0 and
// that x holds n t^2 values.
func (c *Checked) AddDiag(x Buffer, n, t int, v float64) (err error) {
	const op = "AddDiag"
	if err := c.open(op); err != nil {
		return err
	}
	ntt, err := c.sizes(op, "n, t, t", n, t, t)
	if err != nil {
		return err
	}
	xb, err := c.arg(op, "x", x, ntt)
	if err != nil {
		return err
	}
	defer c.guard(op, &err)
	if o := c.obs.Load(); o != nil {
		return (*o)(op, func() error { return c.b.AddDiag(xb.raw, n, t, v) })
	}
	return c.b.AddDiag(xb.raw, n, t, v)
}

// SumDiag returns the sum of the diagonals of n stacked t x t matrices after checking n, t >= 0
// and that x holds n t^2 values.
func (c *Checked) SumDiag(x Buffer, n, t int) (s float64, err error) {
	const op = "SumDiag"
	if err := c.open(op); err != nil {
		return 0, err
	}
	ntt, err := c.sizes(op, "n, t, t", n, t, t)
	if err != nil {
		return 0, err
	}
	xb, err := c.arg(op, "x", x, ntt)
	if err != nil {
		return 0, err
	}
	defer c.guard(op, &err)
	if o := c.obs.Load(); o != nil {
		var s float64
		err := (*o)(op, func() (e error) { s, e = c.b.SumDiag(xb.raw, n, t); return e })
		return s, err
	}
	return c.b.SumDiag(xb.raw, n, t)
}

// MulPattern computes x_mu,k *= p_k after checking n, m >= 0, that x holds n m values and p
// m, and that p does not overlap x.
func (c *Checked) MulPattern(x, p Buffer, n, m int) (err error) {
	const op = "MulPattern"
	if err := c.open(op); err != nil {
		return err
	}
	nm, err := c.sizes(op, "n, m", n, m)
	if err != nil {
		return err
	}
	bs, err := c.args(op, argSpec{"x", x, nm}, argSpec{"p", p, m})
	if err != nil {
		return err
	}
	xb, pb := bs[0], bs[1]
	if err := c.disjoint(op, "pattern p must not overlap x", xb.use(nm), pb.use(m)); err != nil {
		return err
	}
	defer c.guard(op, &err)
	if o := c.obs.Load(); o != nil {
		return (*o)(op, func() error { return c.b.MulPattern(xb.raw, pb.raw, n, m) })
	}
	return c.b.MulPattern(xb.raw, pb.raw, n, m)
}

// GaussianFill sets x_k = scale G(seed, offset + k) over the whole buffer or view.
func (c *Checked) GaussianFill(x Buffer, seed, offset uint64, scale float64) (err error) {
	const op = "GaussianFill"
	if err := c.open(op); err != nil {
		return err
	}
	xb, err := c.arg(op, "x", x, 0)
	if err != nil {
		return err
	}
	defer c.guard(op, &err)
	if o := c.obs.Load(); o != nil {
		return (*o)(op, func() error { return c.b.GaussianFill(xb.raw, seed, offset, scale) })
	}
	return c.b.GaussianFill(xb.raw, seed, offset, scale)
}
