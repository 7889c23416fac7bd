package device

import (
	"fmt"
	"math"
	"strings"
	"sync/atomic"

	"github.com/aimtheory/aim/kernels"
)

// Checked is the checked front of a Backend: the Device the engine uses. Every method checks
// its arguments against the rules of Ops (package comment), naming the device and the
// operation in its errors ("cpu Gemm: buffer c holds 12 values, needs 16: inconsistent
// sizes"), and only then calls the backend with the backend's own buffers. Buffers of the
// front wrap the backend's: they know their allocation, their range in it (views) and whether
// they were freed, so ownership, use after Free and overlap are checked here for every backend.
// A panic in the backend comes back as an error naming the operation.
//
// A Checked may be used from several goroutines at once where its backend allows it (both
// backends do).
type Checked struct {
	b      Backend
	name   string // Info().Name of the backend, the start of every error
	caps   Caps   // the backend's optional sets behind their checks
	closed atomic.Bool
}

var _ Device = (*Checked)(nil)

// New returns the checked front of b. It reads b.Info().Name and b.Capabilities() once.
func New(b Backend) *Checked {
	c := &Checked{b: b, name: b.Info().Name}
	bc := b.Capabilities()
	if bc.Trainer != nil {
		c.caps.Trainer = checkedTrainer{c, bc.Trainer}
	}
	if bc.QuadFormSummer != nil {
		c.caps.QuadFormSummer = checkedQuadForm{c, bc.QuadFormSummer}
	}
	if bc.DeepSampler != nil {
		c.caps.DeepSampler = checkedDeepSampler{c, bc.DeepSampler}
	}
	return c
}

func (c *Checked) checked() {}

// alloc is one allocation of the backend, shared by a buffer and its views.
type alloc struct {
	raw   Buffer // the backend's buffer
	freed atomic.Bool
}

// buffer is a Buffer of a Checked device: the range [off, off+n) of an allocation.
type buffer struct {
	dev    *Checked
	root   *alloc
	raw    Buffer // the backend's buffer of exactly this range: root.raw, or its Slice
	off, n int
	view   bool
}

// Len is the number of values of the buffer or view; 0 once its allocation is freed.
func (b *buffer) Len() int {
	if b.root.freed.Load() {
		return 0
	}
	return b.n
}

// span is the range [lo, hi) of an allocation that an operation reads or writes.
type span struct {
	root   *alloc
	lo, hi int
}

// use returns the span of the first n values of b.
func (b *buffer) use(n int) span { return span{b.root, b.off, b.off + n} }

// overlaps reports whether two spans share a value.
func (s span) overlaps(t span) bool {
	return s.root == t.root && s.lo < s.hi && t.lo < t.hi && s.lo < t.hi && t.lo < s.hi
}

// same reports whether two spans are the same range of one allocation.
func (s span) same(t span) bool { return s.root == t.root && s.lo == t.lo && s.hi == t.hi }

// MustView is View for a range the caller knows lies inside b; any error is a bug in the
// caller, and MustView panics with it (the checked front returns such panics as errors).
func MustView(b Buffer, off, n int) Buffer {
	v, err := View(b, off, n)
	if err != nil {
		panic(fmt.Sprintf("device MustView [%d, +%d): %v", off, n, err))
	}
	return v
}

// View returns the n values of b that start at value off, as a buffer of b's device that
// shares b's memory and may be any argument of any operation: ops on a view read and write
// exactly its range. A view of a view is a view of the same allocation. Free of a view does
// nothing; once b's allocation is freed its views have Len 0 and operations refuse them.
func View(b Buffer, off, n int) (Buffer, error) {
	fb, ok := b.(*buffer)
	if !ok || fb == nil {
		return nil, fmt.Errorf("device View: %T is not a buffer of a device", b)
	}
	c := fb.dev
	if fb.root.freed.Load() {
		return nil, c.errf("View", "buffer was freed")
	}
	if off < 0 || n < 0 || off > fb.n-n {
		return nil, c.errf("View", "range [%d, %d+%d) of a buffer of %d values: %w", off, off, n, fb.n, ErrSize)
	}
	return &buffer{dev: c, root: fb.root, raw: c.b.Slice(fb.root.raw, fb.off+off, n), off: fb.off + off, n: n, view: true}, nil
}

// errf returns an error that names the device and the operation, wrapping what format's %w
// wraps.
func (c *Checked) errf(op, format string, args ...any) error {
	return fmt.Errorf("%s %s: %w", c.name, op, fmt.Errorf(format, args...))
}

// open fails once the device is closed.
func (c *Checked) open(op string) error {
	if c.closed.Load() {
		return c.errf(op, "%w", ErrClosed)
	}
	return nil
}

// guard turns a panic of the backend into the error of op.
func (c *Checked) guard(op string, err *error) {
	if r := recover(); r != nil {
		*err = c.errf(op, "panic in the backend: %v", r)
	}
}

// arg checks that b is a live buffer of c holding at least need values.
func (c *Checked) arg(op, name string, b Buffer, need int) (*buffer, error) {
	if b == nil {
		return nil, c.errf(op, "buffer %s is nil", name)
	}
	fb, ok := b.(*buffer)
	if !ok {
		return nil, c.errf(op, "buffer %s is a %T, not a buffer of the %s device", name, b, c.name)
	}
	if fb == nil {
		return nil, c.errf(op, "buffer %s is nil", name)
	}
	if fb.dev != c {
		if fb.dev.name == c.name {
			return nil, c.errf(op, "buffer %s belongs to another %s device", name, c.name)
		}
		return nil, c.errf(op, "buffer %s is a buffer of the %s device, not a buffer of the %s device", name, fb.dev.name, c.name)
	}
	if fb.root.freed.Load() {
		return nil, c.errf(op, "buffer %s was freed", name)
	}
	if fb.n < need {
		return nil, c.errf(op, "buffer %s holds %d values, needs %d: %w", name, fb.n, need, ErrSize)
	}
	return fb, nil
}

// argSpec is one buffer argument of an operation: its name in messages, the buffer, and the
// number of values it must hold.
type argSpec struct {
	name string
	b    Buffer
	need int
}

// args checks up to four buffer arguments in order, as arg does, and returns them in an array
// (which keeps the checks free of allocations).
func (c *Checked) args(op string, specs ...argSpec) (out [4]*buffer, err error) {
	for i, a := range specs {
		if out[i], err = c.arg(op, a.name, a.b, a.need); err != nil {
			return out, err
		}
	}
	return out, nil
}

// pair checks two live buffers of equal length.
func (c *Checked) pair(op, nx string, x Buffer, ny string, y Buffer) (*buffer, *buffer, error) {
	xb, err := c.arg(op, nx, x, 0)
	if err != nil {
		return nil, nil, err
	}
	yb, err := c.arg(op, ny, y, 0)
	if err != nil {
		return nil, nil, err
	}
	if xb.n != yb.n {
		return nil, nil, c.errf(op, "buffers %s and %s hold %d and %d values, need equal lengths: %w",
			nx, ny, xb.n, yb.n, ErrSize)
	}
	return xb, yb, nil
}

// sizes checks that every size is non-negative and returns their product, failing when it
// overflows an int. names lists them for the error ("m, k").
func (c *Checked) sizes(op, names string, v ...int) (int, error) {
	p := 1
	for _, s := range v {
		if s < 0 {
			return 0, c.errf(op, "negative size (%s) = %s: %w", names, ints(v), ErrSize)
		}
	}
	for _, s := range v {
		if s != 0 && p > math.MaxInt/s {
			return 0, c.errf(op, "sizes (%s) = %s overflow an int: %w", names, ints(v), ErrSize)
		}
		p *= s
	}
	return p, nil
}

// ints formats sizes as "(1, 2, 3)" (a copy, so that v does not escape).
func ints(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return "(" + strings.Join(s, ", ") + ")"
}

// disjoint fails when the spans overlap.
func (c *Checked) disjoint(op, what string, a, b span) error {
	if a.overlaps(b) {
		return c.errf(op, "%s", what)
	}
	return nil
}

// sameOrDisjoint fails when the spans overlap without being the same range.
func (c *Checked) sameOrDisjoint(op, na, nb string, a, b span) error {
	if a.overlaps(b) && !a.same(b) {
		return c.errf(op, "buffers %s and %s overlap without being the same range", na, nb)
	}
	return nil
}

// channel checks a channel's kind and parameters (Channel.Validate: the rules of its Go twins
// in package kernels) and n >= 0, and returns n T^2.
func (c *Checked) channel(op string, ch Channel, n int) (int, error) {
	if ch.Kind != Softmax && ch.Kind != Hardmax {
		return 0, c.errf(op, "unknown channel %v", ch)
	}
	if ch.T < 1 {
		return 0, c.errf(op, "channel %v with T = %d, need T >= 1: %w", ch, ch.T, ErrSize)
	}
	if err := ch.Validate(); err != nil {
		return 0, c.errf(op, "%w", err)
	}
	return c.sizes(op, "n, t, t", n, ch.T, ch.T)
}

// Info describes the device (the backend's Info).
func (c *Checked) Info() Info { return c.b.Info() }

// Capabilities returns the backend's optional operation sets behind the front's checks.
func (c *Checked) Capabilities() Caps { return c.caps }

// Close closes the backend once; later calls return nil, and every operation afterwards
// returns an error wrapping ErrClosed.
func (c *Checked) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	return c.b.Close()
}

// BackendBuffer returns the backend's buffer behind b after the checks every operation makes
// (b is a live buffer of c holding at least n values; op and name go into the errors). It is
// for a backend's own operations beyond Ops (device/cuda's GemmStridedBatched).
func (c *Checked) BackendBuffer(op, name string, b Buffer, n int) (Buffer, error) {
	if err := c.open(op); err != nil {
		return nil, err
	}
	fb, err := c.arg(op, name, b, n)
	if err != nil {
		return nil, err
	}
	return fb.raw, nil
}

// Alloc returns a zeroed buffer of n values from the backend. n < 0, and n beyond 2^60 - 1
// (more bytes than an int64 counts), are refused before the backend is asked.
func (c *Checked) Alloc(n int) (Buffer, error) {
	const op = "Alloc"
	if err := c.open(op); err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, c.errf(op, "negative length %d", n)
	}
	if uint64(n) > math.MaxInt64/8 {
		free := c.b.Info().FreeBytes
		return nil, c.errf(op, "%d values need more than %d bytes (%s), %d bytes (%s) available",
			n, uint64(math.MaxInt64), Bytes(math.MaxInt64), free, Bytes(free))
	}
	raw, err := c.b.Alloc(n)
	if err != nil {
		return nil, err
	}
	return &buffer{dev: c, root: &alloc{raw: raw}, raw: raw, n: n}, nil
}

// Free releases a buffer of c. Freeing nil, a buffer of another device, a freed buffer or a
// view does nothing (a view goes with its buffer); after Close it only marks the buffer.
func (c *Checked) Free(b Buffer) {
	fb, ok := b.(*buffer)
	if !ok || fb == nil || fb.dev != c || fb.view {
		return
	}
	if fb.root.freed.Swap(true) || c.closed.Load() {
		return
	}
	c.b.Free(fb.root.raw)
}

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
	return c.b.Copy(d.raw, s.raw)
}

// Gemm computes C = alpha op(A) op(B) + beta C (Ops) after checking m, n, k >= 0, that A, B
// and C hold m k, k n and m n values, and that C does not overlap A or B.
func (c *Checked) Gemm(transA, transB bool, m, n, k int, alpha float64, a, b Buffer, beta float64, cc Buffer) (err error) {
	const op = "Gemm"
	if err := c.open(op); err != nil {
		return err
	}
	if _, err := c.sizes(op, "m, n, k", m, n, k); err != nil {
		return err
	}
	mk, err := c.sizes(op, "m, k", m, k)
	if err != nil {
		return err
	}
	kn, err := c.sizes(op, "k, n", k, n)
	if err != nil {
		return err
	}
	mn, err := c.sizes(op, "m, n", m, n)
	if err != nil {
		return err
	}
	bs, err := c.args(op, argSpec{"a", a, mk}, argSpec{"b", b, kn}, argSpec{"c", cc, mn})
	if err != nil {
		return err
	}
	ab, bb, cb := bs[0], bs[1], bs[2]
	if cb.use(mn).overlaps(ab.use(mk)) || cb.use(mn).overlaps(bb.use(kn)) {
		return c.errf(op, "output c must not overlap an input")
	}
	defer c.guard(op, &err)
	return c.b.Gemm(transA, transB, m, n, k, alpha, ab.raw, bb.raw, beta, cb.raw)
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
	return c.b.TokenMix(zb.raw, cb.raw, xb.raw, n, t, d)
}

// ChannelOutput computes y_mu = g(h_mu) (Ops) after checking the channel's kind and T, n >= 0,
// that y and h hold n T^2 values, and that y is h (in place) or does not overlap it.
func (c *Checked) ChannelOutput(ch Channel, y, h Buffer, n int) (err error) {
	const op = "ChannelOutput"
	if err := c.open(op); err != nil {
		return err
	}
	ntt, err := c.channel(op, ch, n)
	if err != nil {
		return err
	}
	bs, err := c.args(op, argSpec{"y", y, ntt}, argSpec{"h", h, ntt})
	if err != nil {
		return err
	}
	yb, hb := bs[0], bs[1]
	if err := c.sameOrDisjoint(op, "y", "h", yb.use(ntt), hb.use(ntt)); err != nil {
		return err
	}
	defer c.guard(op, &err)
	return c.b.ChannelOutput(ch, yb.raw, hb.raw, n)
}

// ChannelGOut computes g_out and returns its square-sum (Ops) after checking the channel, n,
// 0 < V < inf, that g, y and omega hold n T^2 values, that g does not overlap y, and that g
// is omega or does not overlap it.
func (c *Checked) ChannelGOut(ch Channel, g, y, omega Buffer, n int, v float64) (s float64, err error) {
	const op = "ChannelGOut"
	if err := c.open(op); err != nil {
		return 0, err
	}
	ntt, err := c.channel(op, ch, n)
	if err != nil {
		return 0, err
	}
	if !(v > 0) || math.IsInf(v, 1) {
		return 0, c.errf(op, "variance V = %g, need 0 < V < inf", v)
	}
	bs, err := c.args(op, argSpec{"g", g, ntt}, argSpec{"y", y, ntt}, argSpec{"omega", omega, ntt})
	if err != nil {
		return 0, err
	}
	gb, yb, ob := bs[0], bs[1], bs[2]
	if err := c.disjoint(op, "output g must not overlap the buffer y", gb.use(ntt), yb.use(ntt)); err != nil {
		return 0, err
	}
	if err := c.sameOrDisjoint(op, "g", "omega", gb.use(ntt), ob.use(ntt)); err != nil {
		return 0, err
	}
	defer c.guard(op, &err)
	return c.b.ChannelGOut(ch, gb.raw, yb.raw, ob.raw, n, v)
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
	return c.b.GaussianFill(xb.raw, seed, offset, scale)
}

// checkedTrainer is a backend's Trainer behind the front's checks.
type checkedTrainer struct {
	c *Checked
	t Trainer
}

// SoftmaxLossGrad is Trainer's loss gradient after checking the softmax channel, n >= 0 and
// T >= 1, that gamma, yhat and y hold n T^2 values, and that gamma is yhat (y) or does not
// overlap it.
func (k checkedTrainer) SoftmaxLossGrad(ch Channel, gamma, yhat, y Buffer, n int, scale float64) (s float64, err error) {
	const op = "SoftmaxLossGrad"
	c := k.c
	if err := c.open(op); err != nil {
		return 0, err
	}
	if ch.Kind != Softmax {
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
	return k.q.QuadFormSum(ob.raw, cb.raw, xb.raw, sb.raw, n, t, d, alpha)
}

// checkedDeepSampler is a backend's DeepSampler behind the front's checks.
type checkedDeepSampler struct {
	c *Checked
	d DeepSampler
}

// DeepSample is the deep channel's sampler after checking n >= 0, kernels.DeepMinL <= L <=
// kernels.DeepMaxL, draws >= 2, c and beta finite, offset and stride even with stride at least
// kernels.DeepNormals(L) draws, the lengths (in n kernels.DeepIn(L), out n kernels.DeepOut(L))
// and that out does not overlap in.
func (k checkedDeepSampler) DeepSample(out, in Buffer, n, L, draws int, cs, beta float64, seed, offset, stride uint64) (err error) {
	const op = "DeepSample"
	c := k.c
	if err := c.open(op); err != nil {
		return err
	}
	if L < kernels.DeepMinL || L > kernels.DeepMaxL {
		return c.errf(op, "L = %d layers, need %d <= L <= %d", L, kernels.DeepMinL, kernels.DeepMaxL)
	}
	d := uint64(kernels.DeepNormals(L))
	if draws < 2 || uint64(draws) > math.MaxUint64/d {
		return c.errf(op, "%d draws, need >= 2", draws)
	}
	if math.IsNaN(cs) || math.IsInf(cs, 0) || math.IsNaN(beta) || math.IsInf(beta, 0) {
		return c.errf(op, "c = %g, beta = %g: need finite values", cs, beta)
	}
	if offset%2 != 0 || stride%2 != 0 || stride < d*uint64(draws) {
		return c.errf(op, "offset %d, stride %d: need both even and stride >= %d (%d normals per draw)", offset, stride, d*uint64(draws), d)
	}
	nin, err := c.sizes(op, "n, kernels.DeepIn(L)", n, kernels.DeepIn(L))
	if err != nil {
		return err
	}
	nout, err := c.sizes(op, "n, kernels.DeepOut(L)", n, kernels.DeepOut(L))
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
	return k.d.DeepSample(ob.raw, ib.raw, n, L, draws, cs, beta, seed, offset, stride)
}
