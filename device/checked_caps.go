package device

// The checked front of the optional operation sets (Caps): each wraps the backend's set with
// the same argument checks as the rest.

import (
	"math"
	"slices"
	"sync"

	"github.com/aimtheory/aim/channel"
)

// checkedTrainer is a backend's Trainer behind the front's checks.
type checkedTrainer struct {
	c *Checked
	t Trainer
}

// SoftmaxLossGrad is Trainer's loss gradient after checking the softmax channel, n >= 0 and
// T >= 1, that gamma, yhat and y hold n T^2 values, and that gamma is yhat (y) or does not
// overlap it.
func (k checkedTrainer) SoftmaxLossGrad(ch channel.Spec, gamma, yhat, y Buffer, n int, scale float64) (s float64, err error) {
	const op = "SoftmaxLossGrad"
	c := k.c
	if err := c.open(op); err != nil {
		return 0, err
	}
	if ch.Kind != channel.KindSoftmax {
		return 0, c.errf(op, "the %v channel has no useful gradient", ch)
	}
	if n < 0 || ch.T < 1 {
		return 0, c.errf(op, "n = %d, t = %d: %w", n, ch.T, ErrSize)
	}
	ntt, err := c.sizes(op, "n, t, t", n, ch.T, ch.T)
	if err != nil {
		return 0, err
	}
	bs, err := c.args(op, argSpec{"gamma", gamma, ntt}, argSpec{"yhat", yhat, ntt}, argSpec{"y", y, ntt})
	if err != nil {
		return 0, err
	}
	gb, hb, yb := bs[0], bs[1], bs[2]
	if err := c.sameOrDisjoint(op, "gamma", "yhat", gb.use(ntt), hb.use(ntt)); err != nil {
		return 0, err
	}
	if err := c.sameOrDisjoint(op, "gamma", "y", gb.use(ntt), yb.use(ntt)); err != nil {
		return 0, err
	}
	defer c.guard(op, &err)
	if o := c.obs.Load(); o != nil {
		var s float64
		err := (*o)(op, func() (e error) { s, e = k.t.SoftmaxLossGrad(ch, gb.raw, hb.raw, yb.raw, n, scale); return e })
		return s, err
	}
	return k.t.SoftmaxLossGrad(ch, gb.raw, hb.raw, yb.raw, n, scale)
}

// AdamStep is Trainer's Adam update after checking t >= 1, that w, g, m and v have equal
// lengths, and that any two of them are the same range or do not overlap.
func (k checkedTrainer) AdamStep(w, g, m, v Buffer, lr, b1, b2, eps float64, t int) (err error) {
	const op = "AdamStep"
	c := k.c
	if err := c.open(op); err != nil {
		return err
	}
	if t < 1 {
		return c.errf(op, "step %d, need t >= 1", t)
	}
	wb, gb, err := c.pair(op, "w", w, "g", g)
	if err != nil {
		return err
	}
	mb, vb, err := c.pair(op, "m", m, "v", v)
	if err != nil {
		return err
	}
	if mb.n != wb.n {
		return c.errf(op, "m holds %d values, w %d: %w", mb.n, wb.n, ErrSize)
	}
	bufs := [4]*buffer{wb, gb, mb, vb}
	names := [4]string{"w", "g", "m", "v"}
	for i := range bufs {
		for j := i + 1; j < len(bufs); j++ {
			if err := c.sameOrDisjoint(op, names[i], names[j], bufs[i].use(wb.n), bufs[j].use(wb.n)); err != nil {
				return err
			}
		}
	}
	defer c.guard(op, &err)
	if o := c.obs.Load(); o != nil {
		return (*o)(op, func() error { return k.t.AdamStep(wb.raw, gb.raw, mb.raw, vb.raw, lr, b1, b2, eps, t) })
	}
	return k.t.AdamStep(wb.raw, gb.raw, mb.raw, vb.raw, lr, b1, b2, eps, t)
}

// checkedQuadForm is a backend's QuadFormSummer behind the front's checks.
type checkedQuadForm struct {
	c *Checked
	q QuadFormSummer
}

// QuadFormSum is the back-projection after checking n, t, d >= 0, the lengths (out d^2, c
// n t^2, x and scratch n t d) and that out overlaps none of c, x, scratch and scratch neither
// c nor x.
func (k checkedQuadForm) QuadFormSum(out, cm, x, scratch Buffer, n, t, d int, alpha float64) (err error) {
	const op = "QuadFormSum"
	c := k.c
	if err := c.open(op); err != nil {
		return err
	}
	if _, err := c.sizes(op, "n, t, d", n, t, d); err != nil {
		return err
	}
	dd, err := c.sizes(op, "d, d", d, d)
	if err != nil {
		return err
	}
	ntt, err := c.sizes(op, "n, t, t", n, t, t)
	if err != nil {
		return err
	}
	ntd, err := c.sizes(op, "n, t, d", n, t, d)
	if err != nil {
		return err
	}
	bs, err := c.args(op, argSpec{"out", out, dd}, argSpec{"c", cm, ntt}, argSpec{"x", x, ntd}, argSpec{"scratch", scratch, ntd})
	if err != nil {
		return err
	}
	ob, cb, xb, sb := bs[0], bs[1], bs[2], bs[3]
	o, cs, xs, ss := ob.use(dd), cb.use(ntt), xb.use(ntd), sb.use(ntd)
	if o.overlaps(cs) || o.overlaps(xs) || o.overlaps(ss) || ss.overlaps(cs) || ss.overlaps(xs) {
		return c.errf(op, "out, c, x and scratch must be distinct: out or scratch overlaps another")
	}
	defer c.guard(op, &err)
	if o := c.obs.Load(); o != nil {
		return (*o)(op, func() error { return k.q.QuadFormSum(ob.raw, cb.raw, xb.raw, sb.raw, n, t, d, alpha) })
	}
	return k.q.QuadFormSum(ob.raw, cb.raw, xb.raw, sb.raw, n, t, d, alpha)
}

// checkedDeepSampler is a backend's DeepSampler behind the front's checks.
type checkedDeepSampler struct {
	c *Checked
	d DeepSampler
}

// DeepSample is the deep channel's sampler after checking n >= 0, channel.DeepMinL <= L <=
// channel.DeepMaxL, draws >= 2, c and beta finite, offset and stride even with stride at least
// channel.DeepNormals(L) draws, the lengths (in n channel.DeepIn(L), out n channel.DeepOut(L))
// and that out does not overlap in.
func (k checkedDeepSampler) DeepSample(out, in Buffer, n, L, draws int, cs, beta float64, seed, offset, stride uint64) (err error) {
	const op = "DeepSample"
	c := k.c
	if err := c.open(op); err != nil {
		return err
	}
	if L < channel.DeepMinL || L > channel.DeepMaxL {
		return c.errf(op, "L = %d layers, need %d <= L <= %d", L, channel.DeepMinL, channel.DeepMaxL)
	}
	d := uint64(channel.DeepNormals(L))
	if draws < 2 || uint64(draws) > math.MaxUint64/d {
		return c.errf(op, "%d draws, need >= 2", draws)
	}
	if math.IsNaN(cs) || math.IsInf(cs, 0) || math.IsNaN(beta) || math.IsInf(beta, 0) {
		return c.errf(op, "c = %g, beta = %g: need finite values", cs, beta)
	}
	if offset%2 != 0 || stride%2 != 0 || stride < d*uint64(draws) {
		return c.errf(op, "offset %d, stride %d: need both even and stride >= %d (%d normals per draw)", offset, stride, d*uint64(draws), d)
	}
	nin, err := c.sizes(op, "n, channel.DeepIn(L)", n, channel.DeepIn(L))
	if err != nil {
		return err
	}
	nout, err := c.sizes(op, "n, channel.DeepOut(L)", n, channel.DeepOut(L))
	if err != nil {
		return err
	}
	bs, err := c.args(op, argSpec{"out", out, nout}, argSpec{"in", in, nin})
	if err != nil {
		return err
	}
	ob, ib := bs[0], bs[1]
	if ob.use(nout).overlaps(ib.use(nin)) {
		return c.errf(op, "out overlaps in")
	}
	defer c.guard(op, &err)
	if o := c.obs.Load(); o != nil {
		return (*o)(op, func() error { return k.d.DeepSample(ob.raw, ib.raw, n, L, draws, cs, beta, seed, offset, stride) })
	}
	return k.d.DeepSample(ob.raw, ib.raw, n, L, draws, cs, beta, seed, offset, stride)
}

// checkedPrecision is a backend's PrecisionGemmer behind the front's checks, with the
// precisions it declares (read once).
type checkedPrecision struct {
	c    *Checked
	g    PrecisionGemmer
	have []Precision // FP64, then the backend's declared precisions
}

func newCheckedPrecision(c *Checked, g PrecisionGemmer) checkedPrecision {
	have := []Precision{FP64}
	for _, p := range g.Precisions() {
		if p.Valid() && p != FP64 && !slices.Contains(have, p) {
			have = append(have, p)
		}
	}
	return checkedPrecision{c, g, have}
}

// Precisions returns the precisions the backend declares besides FP64.
func (k checkedPrecision) Precisions() []Precision { return slices.Clone(k.have[1:]) }

// GemmPrecision is the product at precision p after Gemm's checks and a check that the backend
// declares p ("precision tf32 is not supported on this device yet"); at FP64 it is Gemm.
func (k checkedPrecision) GemmPrecision(p Precision, transA, transB bool, m, n, k2 int, alpha float64, a, b Buffer, beta float64, cc Buffer) (err error) {
	const op = "GemmPrecision"
	c := k.c
	if err := c.open(op); err != nil {
		return err
	}
	if !p.Valid() {
		return c.errf(op, "%v: %w", p, errBadPrecision)
	}
	if !slices.Contains(k.have, p) {
		return c.errf(op, "%w", unsupported(p, k.have))
	}
	if p == FP64 {
		return c.Gemm(transA, transB, m, n, k2, alpha, a, b, beta, cc)
	}
	ab, bb, cb, err := c.gemmArgs(op, m, n, k2, a, b, cc)
	if err != nil {
		return err
	}
	defer c.guard(op, &err)
	if o := c.obs.Load(); o != nil {
		return (*o)(op, func() error {
			return k.g.GemmPrecision(p, transA, transB, m, n, k2, alpha, ab.raw, bb.raw, beta, cb.raw)
		})
	}
	return k.g.GemmPrecision(p, transA, transB, m, n, k2, alpha, ab.raw, bb.raw, beta, cb.raw)
}

// checkedPrefetcher is a backend's Prefetcher behind the front's checks; the front keeps each
// fill in flight until its wait, so that no operation touches the buffer before then.
type checkedPrefetcher struct {
	c *Checked
	p Prefetcher
}

// fill is a GaussianFillAsync in flight: the span it writes and the backend's wait, run once.
type fill struct {
	c    *Checked
	s    span
	once sync.Once
	wait func() error
	err  error
}

// finish waits for the fill once and returns its error (a panic of the backend's wait
// included).
func (f *fill) finish() error {
	f.once.Do(func() {
		defer func() {
			if r := recover(); r != nil {
				f.err = f.c.errf("GaussianFillAsync", "panic in the backend: %v", r)
			}
		}()
		f.err = f.wait()
	})
	return f.err
}

// GaussianFillAsync starts GaussianFill(x, seed, offset, scale) after GaussianFill's checks and
// a check that no other fill is writing x. Until wait returns, every operation refuses x
// ("buffer x is being filled by GaussianFillAsync"), and Free of x's buffer, or Close, waits for
// the fill first. A second wait returns the first's error. An Observer sees the start as
// "GaussianFillAsync" and each wait as "GaussianFillWait" (the time the caller waited).
func (k checkedPrefetcher) GaussianFillAsync(x Buffer, seed, offset uint64, scale float64) (wait func() error, err error) {
	const op = "GaussianFillAsync"
	c := k.c
	if err := c.open(op); err != nil {
		return nil, err
	}
	xb, err := c.arg(op, "x", x, 0)
	if err != nil {
		return nil, err
	}
	f := &fill{c: c, s: xb.use(xb.n)}
	defer c.guard(op, &err)
	start := func() error {
		w, err := k.p.GaussianFillAsync(xb.raw, seed, offset, scale)
		f.wait = w
		return err
	}
	if o := c.obs.Load(); o != nil {
		err = (*o)(op, start)
	} else {
		err = start()
	}
	if err != nil {
		return nil, err
	}
	c.fillMu.Lock()
	c.fills = append(c.fills, f)
	c.nfill.Store(int32(len(c.fills)))
	c.fillMu.Unlock()
	return func() error {
		defer c.dropFill(f)
		if o := c.obs.Load(); o != nil {
			return (*o)("GaussianFillWait", f.finish)
		}
		return f.finish()
	}, nil
}

// filling reports whether a fill in flight writes a value of s.
func (c *Checked) filling(s span) bool {
	c.fillMu.Lock()
	defer c.fillMu.Unlock()
	for _, f := range c.fills {
		if f.s.overlaps(s) {
			return true
		}
	}
	return false
}

// dropFill forgets a finished fill.
func (c *Checked) dropFill(f *fill) {
	c.fillMu.Lock()
	defer c.fillMu.Unlock()
	if i := slices.Index(c.fills, f); i >= 0 {
		c.fills = slices.Delete(c.fills, i, i+1)
	}
	c.nfill.Store(int32(len(c.fills)))
}

// finishFills waits for the fills in flight into the allocation root (all of them when root is
// nil) and forgets them; their waits then return the fills' errors.
func (c *Checked) finishFills(root *alloc) {
	c.fillMu.Lock()
	var todo []*fill
	for _, f := range c.fills {
		if root == nil || f.s.root == root {
			todo = append(todo, f)
		}
	}
	c.fillMu.Unlock()
	for _, f := range todo {
		f.finish()
		c.dropFill(f)
	}
}
