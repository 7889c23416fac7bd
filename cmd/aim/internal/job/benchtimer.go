package job

import (
	"sync"
	"time"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/device"
)

// OpKind is a bucket of device operations that `aim bench` times separately: one CSV column
// each (OpColumns).
type OpKind int

// The buckets of device operations. Gemm is every dense product C = a op(A) op(B) + b C (the
// forward X S-hat, the back-projection X^T Z, GD's W^T W and W G_S); QuadForm the symmetric
// back-projection sum_mu X_mu^T C_mu X_mu where the device has it (the CPU with a native BLAS);
// Channel the channel's outputs, g_out and the softmax loss gradient; Gaussian the Philox fill,
// that is the regeneration of streamed tokens; Other the small operations (Scal, Axpby, Dot,
// SqDist, AddDiag, SumDiag, MulPattern, Copy, Upload, Download) and Adam; Collective the sums
// and broadcasts across the members of a device group (device.Group.Sum).
const (
	OpGemm OpKind = iota
	OpQuadForm
	OpTokenDots
	OpTokenMix
	OpChannel
	OpEigh
	OpSpectral
	OpGaussian
	OpOther
	OpCollective
	numOps
)

// OpColumns are the CSV columns of the buckets, in OpKind order: seconds per iteration spent in
// each.
var OpColumns = [numOps]string{"gemm_s", "quadformsum_s", "tokendots_s", "tokenmix_s", "channel_s",
	"eighsym_s", "spectral_s", "gaussian_s", "other_s", "collective_s"}

// OpTimes are the seconds spent in, and the calls of, each bucket of operations.
type OpTimes struct {
	Seconds [numOps]float64
	Calls   [numOps]int
}

// Sum is sum_k Seconds_k, the time spent inside device operations.
func (o OpTimes) Sum() float64 {
	s := 0.0
	for _, v := range o.Seconds {
		s += v
	}
	return s
}

// sub returns o - p, bucket by bucket.
func (o OpTimes) sub(p OpTimes) OpTimes {
	for k := range o.Seconds {
		o.Seconds[k] -= p.Seconds[k]
		o.Calls[k] -= p.Calls[k]
	}
	return o
}

// gpuTimer is the GPU's own clock (cuda.Device.Time): the seconds between two events recorded
// on the device's stream around f, right whether or not the operations of f are asynchronous.
type gpuTimer interface {
	Time(f func() error) (float64, error)
}

// hostTime runs f and returns its wall time on the host's monotonic clock.
func hostTime(f func() error) (float64, error) {
	start := time.Now()
	err := f()
	return time.Since(start).Seconds(), err
}

// timedDevice is a Device that times every operation of the Device it embeds, into one bucket
// per OpKind: with the GPU's event timer where the device has one (cuda.Device.Time), else with
// the host clock (right on the CPU, whose operations are synchronous). Alloc, Free, Info and
// Close are forwarded untimed. Its capabilities (Trainer, QuadFormSummer) are wrapped and timed
// too; a capability it does not know is forwarded untimed, so none is lost.
type timedDevice struct {
	device.Device
	clock func(f func() error) (float64, error)
	timer string // "gpu events" or "host clock"

	mu  sync.Mutex
	acc OpTimes
}

// newTimed wraps dev; host forces the host clock even where the device has a GPU timer.
func newTimed(dev device.Device, host bool) *timedDevice {
	t := &timedDevice{Device: dev, clock: hostTime, timer: "host clock"}
	if g, ok := dev.(gpuTimer); ok && !host {
		t.clock, t.timer = g.Time, "gpu events"
	}
	return t
}

// Times returns the totals so far.
func (t *timedDevice) Times() OpTimes {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.acc
}

// do runs f, adding its time and one call to bucket k.
func (t *timedDevice) do(k OpKind, f func() error) error { return t.doWith(t.clock, k, f) }

// doWith is do on the given clock.
func (t *timedDevice) doWith(clock func(f func() error) (float64, error), k OpKind, f func() error) error {
	s, err := clock(f)
	t.mu.Lock()
	t.acc.Seconds[k] += s
	t.acc.Calls[k]++
	t.mu.Unlock()
	return err
}

// Capabilities returns the wrapped device's capabilities with Trainer and QuadFormSummer timed.
func (t *timedDevice) Capabilities() device.Caps {
	c := t.Device.Capabilities()
	if c.Trainer != nil {
		c.Trainer = timedTrainer{t, c.Trainer}
	}
	if c.QuadFormSummer != nil {
		c.QuadFormSummer = timedQuadForm{t, c.QuadFormSummer}
	}
	return c
}

// Upload is timed as Other.
func (t *timedDevice) Upload(dst device.Buffer, src []float64) error {
	return t.do(OpOther, func() error { return t.Device.Upload(dst, src) })
}

// Download is timed as Other.
func (t *timedDevice) Download(dst []float64, src device.Buffer) error {
	return t.do(OpOther, func() error { return t.Device.Download(dst, src) })
}

// Copy is timed as Other.
func (t *timedDevice) Copy(dst, src device.Buffer) error {
	return t.do(OpOther, func() error { return t.Device.Copy(dst, src) })
}

// Gemm (C = alpha op(A) op(B) + beta C) is timed as Gemm.
func (t *timedDevice) Gemm(transA, transB bool, m, n, k int, alpha float64, a, b device.Buffer, beta float64, c device.Buffer) error {
	return t.do(OpGemm, func() error { return t.Device.Gemm(transA, transB, m, n, k, alpha, a, b, beta, c) })
}

// TokenDots (H_mu = Y_mu X_mu^T) is timed as TokenDots.
func (t *timedDevice) TokenDots(h, y, x device.Buffer, n, tt, d int) error {
	return t.do(OpTokenDots, func() error { return t.Device.TokenDots(h, y, x, n, tt, d) })
}

// TokenMix (Z_mu = C_mu X_mu) is timed as TokenMix.
func (t *timedDevice) TokenMix(z, c, x device.Buffer, n, tt, d int) error {
	return t.do(OpTokenMix, func() error { return t.Device.TokenMix(z, c, x, n, tt, d) })
}

// ChannelOutput (y = g(h)) is timed as Channel.
func (t *timedDevice) ChannelOutput(ch channel.Spec, y, h device.Buffer, n int) error {
	return t.do(OpChannel, func() error { return t.Device.ChannelOutput(ch, y, h, n) })
}

// ChannelGOut (g_out(y; omega, V) and sum g^2) is timed as Channel.
func (t *timedDevice) ChannelGOut(ch channel.Spec, g, y, omega device.Buffer, n int, v float64) (s float64, err error) {
	err = t.do(OpChannel, func() (e error) { s, e = t.Device.ChannelGOut(ch, g, y, omega, n, v); return e })
	return s, err
}

// EighSym (A = O diag(lambda) O^T) is timed as EighSym.
func (t *timedDevice) EighSym(vals, vecs, a device.Buffer, d int) error {
	return t.do(OpEigh, func() error { return t.Device.EighSym(vals, vecs, a, d) })
}

// SpectralCompose (O diag(f) O^T) is timed as SpectralCompose.
func (t *timedDevice) SpectralCompose(out, vecs, f device.Buffer, d int) error {
	return t.do(OpSpectral, func() error { return t.Device.SpectralCompose(out, vecs, f, d) })
}

// Scal (x = alpha x) is timed as Other.
func (t *timedDevice) Scal(x device.Buffer, alpha float64) error {
	return t.do(OpOther, func() error { return t.Device.Scal(x, alpha) })
}

// Axpby (y = a x + b y) is timed as Other.
func (t *timedDevice) Axpby(y device.Buffer, a float64, x device.Buffer, b float64) error {
	return t.do(OpOther, func() error { return t.Device.Axpby(y, a, x, b) })
}

// Dot (sum_k x_k y_k) is timed as Other.
func (t *timedDevice) Dot(x, y device.Buffer) (s float64, err error) {
	err = t.do(OpOther, func() (e error) { s, e = t.Device.Dot(x, y); return e })
	return s, err
}

// SqDist (sum_k (x_k - y_k)^2) is timed as Other.
func (t *timedDevice) SqDist(x, y device.Buffer) (s float64, err error) {
	err = t.do(OpOther, func() (e error) { s, e = t.Device.SqDist(x, y); return e })
	return s, err
}

// AddDiag (x_mu,aa += v) is timed as Other.
func (t *timedDevice) AddDiag(x device.Buffer, n, tt int, v float64) error {
	return t.do(OpOther, func() error { return t.Device.AddDiag(x, n, tt, v) })
}

// SumDiag (sum_mu Tr x_mu) is timed as Other.
func (t *timedDevice) SumDiag(x device.Buffer, n, tt int) (s float64, err error) {
	err = t.do(OpOther, func() (e error) { s, e = t.Device.SumDiag(x, n, tt); return e })
	return s, err
}

// MulPattern (x_mu,k *= p_k) is timed as Other.
func (t *timedDevice) MulPattern(x, p device.Buffer, n, m int) error {
	return t.do(OpOther, func() error { return t.Device.MulPattern(x, p, n, m) })
}

// GaussianFill (x_k = scale G(seed, offset + k), the Philox stream) is timed as Gaussian.
func (t *timedDevice) GaussianFill(x device.Buffer, seed, offset uint64, scale float64) error {
	return t.do(OpGaussian, func() error { return t.Device.GaussianFill(x, seed, offset, scale) })
}

// timedTrainer times the training operations: the softmax loss gradient as Channel, Adam as
// Other.
type timedTrainer struct {
	t *timedDevice
	device.Trainer
}

// SoftmaxLossGrad (the loss scale sum (yhat - y)^2 and gamma = d loss / d h) is timed as Channel.
func (k timedTrainer) SoftmaxLossGrad(ch channel.Spec, gamma, yhat, y device.Buffer, n int, scale float64) (s float64, err error) {
	err = k.t.do(OpChannel, func() (e error) { s, e = k.Trainer.SoftmaxLossGrad(ch, gamma, yhat, y, n, scale); return e })
	return s, err
}

// AdamStep (one Adam update of w) is timed as Other.
func (k timedTrainer) AdamStep(w, g, m, v device.Buffer, lr, b1, b2, eps float64, step int) error {
	return k.t.do(OpOther, func() error { return k.Trainer.AdamStep(w, g, m, v, lr, b1, b2, eps, step) })
}

// timedQuadForm times the symmetric back-projection as QuadForm.
type timedQuadForm struct {
	t *timedDevice
	device.QuadFormSummer
}

// QuadFormSum (out = alpha sum_mu X_mu^T C_mu X_mu) is timed as QuadForm.
func (k timedQuadForm) QuadFormSum(out, c, x, scratch device.Buffer, n, t, d int, alpha float64) error {
	return k.t.do(OpQuadForm, func() error { return k.QuadFormSummer.QuadFormSum(out, c, x, scratch, n, t, d, alpha) })
}

// newTarget wraps every member of the device (or group) d in the operation timer (host: the
// host clock even where a GPU timer exists) and its Collective in the collective bucket of the
// lead's timer.
func newTarget(name string, d *Device, host bool, gemm int) *benchTarget {
	g := d.g
	t := &benchTarget{name: name, dev: d, gemm: gemm}
	members := make([]device.Device, g.Len())
	for j, m := range g.Members {
		td := newTimed(m, host)
		t.timed, members[j] = append(t.timed, td), td
	}
	t.group = &device.Group{Members: members, Sum: timedCollective{t: t.timed[0], inner: g.Sum, raw: g.Members}, Concurrent: g.Concurrent}
	return t
}

// times returns the target's operation totals so far: the lead's when the members run
// concurrently (the lead holds a shard like the others and runs the denoiser besides: its
// operations plus the wait for the slowest member are the iteration), the members' sum when
// they take turns.
func (t *benchTarget) times() OpTimes {
	if t.group.Concurrent {
		return t.timed[0].Times()
	}
	var sum OpTimes
	for _, td := range t.timed {
		o := td.Times()
		for k := range sum.Seconds {
			sum.Seconds[k] += o.Seconds[k]
			sum.Calls[k] += o.Calls[k]
		}
	}
	return sum
}

// timedCollective is a group's Collective timed on the host clock as the collective bucket of
// the lead (both implementations wait for their result before they return). It hands the inner
// Collective the group's own members (raw), not their timed wrappers: NCCL checks them, and
// HostSum's transfers are then not counted twice.
type timedCollective struct {
	t     *timedDevice
	inner device.Collective
	raw   []device.Device
}

// Name is the inner Collective's.
func (c timedCollective) Name() string { return c.inner.Name() }

// Reduce (bufs[0] = sum_j bufs[j]) is timed as Collective.
func (c timedCollective) Reduce(_ []device.Device, bufs []device.Buffer) error {
	return c.t.doWith(hostTime, OpCollective, func() error { return c.inner.Reduce(c.raw, bufs) })
}

// Broadcast (bufs[j] = bufs[0]) is timed as Collective.
func (c timedCollective) Broadcast(_ []device.Device, bufs []device.Buffer) error {
	return c.t.doWith(hostTime, OpCollective, func() error { return c.inner.Broadcast(c.raw, bufs) })
}
