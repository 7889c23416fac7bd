package benchjob

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aimtheory/aim/cmd/aim/internal/job"
	"github.com/aimtheory/aim/device"
)

// init registers the kinds of CSV the package's jobs write, for job.ReadTable.
func init() { job.RegisterKinds(BenchSchema.Def()) }

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

// observable is a device whose checked front takes an observer (device.Checked.Observe): the
// CPU and CUDA devices embed their front.
type observable interface {
	Observe(device.Observer)
}

// hostTime runs f and returns its wall time on the host's monotonic clock.
func hostTime(f func() error) (float64, error) {
	start := time.Now()
	err := f()
	return time.Since(start).Seconds(), err
}

// opKinds are the buckets of the operations of device.Ops and its capabilities, by the name
// the checked front gives them; every other operation is Other.
var opKinds = map[string]OpKind{
	"Gemm": OpGemm, "GemmPrecision": OpGemm, "QuadFormSum": OpQuadForm, "TokenDots": OpTokenDots, "TokenMix": OpTokenMix,
	"ChannelOutput": OpChannel, "ChannelGOut": OpChannel, "SoftmaxLossGrad": OpChannel,
	"EighSym": OpEigh, "SpectralCompose": OpSpectral, "GaussianFill": OpGaussian, "GaussianFillAsync": OpGaussian, "GaussianFillWait": OpGaussian,
}

// kindOf is the bucket of the operation called op: Other for the small operations (Scal,
// Axpby, Dot, SqDist, AddDiag, SumDiag, MulPattern, Copy, Upload, Download) and Adam.
func kindOf(op string) OpKind {
	if k, ok := opKinds[op]; ok {
		return k
	}
	return OpOther
}

// opTimer times every operation of one device, into one bucket per OpKind, as the observer
// of its checked front (device.Observer) while it is attached: with the GPU's event timer
// where the device has one (cuda.Device.Time), else with the host clock (right on the CPU,
// whose operations are synchronous). Alloc and Free are not timed. While paused it counts
// nothing (a collective's own transfers, counted as Collective).
type opTimer struct {
	dev   observable
	clock func(f func() error) (float64, error)
	timer string // "gpu events" or "host clock"

	paused atomic.Int32
	mu     sync.Mutex
	acc    OpTimes
}

// newTimer returns the timer of dev, not yet attached; host forces the host clock even where
// the device has a GPU timer. A device without a checked front cannot be timed.
func newTimer(dev device.Device, host bool) (*opTimer, error) {
	o, ok := dev.(observable)
	if !ok {
		return nil, fmt.Errorf("%s: a %T takes no operation observer", dev.Info().Name, dev)
	}
	t := &opTimer{dev: o, clock: hostTime, timer: "host clock"}
	if g, ok := dev.(gpuTimer); ok && !host {
		t.clock, t.timer = g.Time, "gpu events"
	}
	return t, nil
}

// attach makes the timer the observer of its device's operations; detach removes it.
func (t *opTimer) attach() { t.dev.Observe(t.observe) }

// detach removes the timer from its device.
func (t *opTimer) detach() { t.dev.Observe(nil) }

// observe times one operation in its bucket (device.Observer). The wait for an asynchronous
// fill adds its time to the fill's bucket but no call: the fill was counted when it started.
func (t *opTimer) observe(op string, run func() error) error {
	if t.paused.Load() > 0 {
		return run()
	}
	calls := 1
	if op == "GaussianFillWait" {
		calls = 0
	}
	return t.doWith(t.clock, kindOf(op), calls, run)
}

// Times returns the totals so far.
func (t *opTimer) Times() OpTimes {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.acc
}

// doWith runs f on the given clock, adding its time and calls calls to bucket k.
func (t *opTimer) doWith(clock func(f func() error) (float64, error), k OpKind, calls int, f func() error) error {
	s, err := clock(f)
	t.mu.Lock()
	t.acc.Seconds[k] += s
	t.acc.Calls[k] += calls
	t.mu.Unlock()
	return err
}

// newTarget gives every member of the device (or group) d an operation timer (host: the host
// clock even where a GPU timer exists) and the group's Collective a timer into the collective
// bucket of the lead's.
func newTarget(name string, d *job.Device, host bool, gemm int) (*benchTarget, error) {
	g := d.Group
	t := &benchTarget{name: name, dev: d, gemm: gemm}
	for _, m := range g.Members {
		tm, err := newTimer(m, host)
		if err != nil {
			return nil, job.MarkInput(err)
		}
		t.timers = append(t.timers, tm)
	}
	t.group = &device.Group{Members: g.Members, Sum: timedCollective{lead: t.timers[0], all: t.timers, inner: g.Sum}, Concurrent: g.Concurrent}
	return t, nil
}

// timed runs f with every member's timer attached.
func (t *benchTarget) timed(f func() error) error {
	for _, tm := range t.timers {
		tm.attach()
	}
	defer func() {
		for _, tm := range t.timers {
			tm.detach()
		}
	}()
	return f()
}

// times returns the target's operation totals so far: the lead's when the members run
// concurrently (the lead holds a shard like the others and runs the denoiser besides: its
// operations plus the wait for the slowest member are the iteration), the members' sum when
// they take turns.
func (t *benchTarget) times() OpTimes {
	if t.group.Concurrent {
		return t.timers[0].Times()
	}
	var sum OpTimes
	for _, tm := range t.timers {
		o := tm.Times()
		for k := range sum.Seconds {
			sum.Seconds[k] += o.Seconds[k]
			sum.Calls[k] += o.Calls[k]
		}
	}
	return sum
}

// timedCollective is a group's Collective timed on the host clock as the collective bucket of
// the lead (both implementations wait for their result before they return). The members'
// timers are paused meanwhile, so that HostSum's transfers are not counted twice.
type timedCollective struct {
	lead  *opTimer
	all   []*opTimer
	inner device.Collective
}

// Name is the inner Collective's.
func (c timedCollective) Name() string { return c.inner.Name() }

// Reduce (bufs[0] = sum_j bufs[j]) is timed as Collective.
func (c timedCollective) Reduce(devs []device.Device, bufs []device.Buffer) error {
	return c.timed(func() error { return c.inner.Reduce(devs, bufs) })
}

// Broadcast (bufs[j] = bufs[0]) is timed as Collective.
func (c timedCollective) Broadcast(devs []device.Device, bufs []device.Buffer) error {
	return c.timed(func() error { return c.inner.Broadcast(devs, bufs) })
}

// timed runs f on the host clock into the lead's collective bucket, the members' timers paused.
func (c timedCollective) timed(f func() error) error {
	for _, t := range c.all {
		t.paused.Add(1)
	}
	defer func() {
		for _, t := range c.all {
			t.paused.Add(-1)
		}
	}()
	return c.lead.doWith(hostTime, OpCollective, 1, f)
}
