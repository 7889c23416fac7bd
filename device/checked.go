package device

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/aimtheory/aim/channel"
)

// Checked is the checked front of a Backend: the Device the engine uses. Every method checks
// its arguments against the rules of Ops (package comment), naming the device and the
// operation in its errors ("cpu Gemm: buffer c holds 12 values, needs 16: inconsistent
// sizes"), and only then calls the backend with the backend's own buffers. Buffers of the
// front wrap the backend's: they know their allocation, their range in it (views) and whether
// they were freed, so ownership, use after Free and overlap are checked here for every backend.
// A panic in the backend comes back as an error naming the operation. An Observer (Observe)
// sees each operation that reaches the backend, by the same name: the one hook for timing or
// counting operations, so that no second wrapper of the Device is needed.
//
// A Checked may be used from several goroutines at once where its backend allows it (both
// backends do).
type Checked struct {
	b      Backend
	name   string          // Info().Name of the backend, the start of every error
	caps   Caps            // the backend's optional sets behind their checks
	chans  channel.Support // the channels the backend declares
	closed atomic.Bool
	obs    atomic.Pointer[Observer] // nil: none

	fillMu sync.Mutex
	fills  []*fill      // the GaussianFillAsync in flight
	nfill  atomic.Int32 // len(fills), read without the lock by every operation's checks
}

// An Observer watches the operations of a checked front (Checked.Observe), as a timer or a
// counter does: each operation that passes its checks calls it once with the operation's name,
// as the front's errors write it ("Gemm", "ChannelGOut", "SoftmaxLossGrad", "QuadFormSum"), and
// run, which calls the backend. The observer must call run exactly once and return its error.
// Alloc, Free, Info, Channels, Capabilities and Close are not observed, nor an operation the
// checks refuse or one with nothing to do (Copy of a range onto itself).
type Observer func(op string, run func() error) error

var _ Device = (*Checked)(nil)

// New returns the checked front of b. It reads b.Info().Name, b.Capabilities() and
// b.Channels() once.
func New(b Backend) *Checked {
	c := &Checked{b: b, name: b.Info().Name, chans: b.Channels()}
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
	if bc.PrecisionGemmer != nil {
		c.caps.PrecisionGemmer = newCheckedPrecision(c, bc.PrecisionGemmer)
	}
	if bc.Prefetcher != nil {
		c.caps.Prefetcher = checkedPrefetcher{c, bc.Prefetcher}
	}
	return c
}

func (c *Checked) checked() {}

// Observe sets the observer of c's operations, those of its capabilities (Trainer,
// QuadFormSummer, DeepSampler) included; nil removes it. It may be called while other
// goroutines use c: each operation sees the observer set when its checks passed. Without an
// observer the operations allocate nothing on the way to the backend.
func (c *Checked) Observe(o Observer) {
	if o == nil {
		c.obs.Store(nil)
		return
	}
	c.obs.Store(&o)
}

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
	if c.nfill.Load() > 0 && c.filling(fb.use(fb.n)) {
		return nil, c.errf(op, "buffer %s is being filled by GaussianFillAsync: wait for the fill first", name)
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

// Info describes the device (the backend's Info).
func (c *Checked) Info() Info { return c.b.Info() }

// Capabilities returns the backend's optional operation sets behind the front's checks.
func (c *Checked) Capabilities() Caps { return c.caps }

// Scratch is the backend's, with negative sizes taken as operations not called.
func (c *Checked) Scratch(w Work) uint64 { return c.b.Scratch(w.nonNegative()) }

// Close closes the backend once; later calls return nil, and every operation afterwards
// returns an error wrapping ErrClosed.
func (c *Checked) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	c.finishFills(nil)
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

// Free releases a buffer of c, after the fills in flight into it (GaussianFillAsync) finish.
// Freeing nil, a buffer of another device, a freed buffer or a view does nothing (a view goes
// with its buffer); after Close it only marks the buffer.
func (c *Checked) Free(b Buffer) {
	fb, ok := b.(*buffer)
	if !ok || fb == nil || fb.dev != c || fb.view {
		return
	}
	if c.nfill.Load() > 0 {
		c.finishFills(fb.root)
	}
	if fb.root.freed.Swap(true) || c.closed.Load() {
		return
	}
	c.b.Free(fb.root.raw)
}
