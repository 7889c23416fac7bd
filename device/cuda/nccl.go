package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"github.com/aimtheory/aim/device"
)

// NCCL is the device.Collective of several CUDA GPUs of one process, through NVIDIA's NCCL
// (libnccl.so.2, bound at run time like the other libraries and found in the same places):
// one communicator per GPU, rank j on devs[j], rank 0 the root. Reduce is ncclReduce (sum of
// float64, in place, to rank 0) and Broadcast is ncclBroadcast (from rank 0, in place); both
// wait for the streams, so the result is ready when they return. Make one with NewNCCL and
// Close it after use (device.Group.Close does).
//
// Threading. The communicators are made by one ncclCommInitAll call, NCCL's single-process
// initialisation, on an OS thread of its own that no executor shares (it makes every GPU
// current in turn; the thread ends afterwards, so no executor's current context is touched).
// A collective then follows NCCL's "one thread per device" model (NCCL user guide, Examples:
// "call NCCL collective operations using a single thread and group calls, or multiple threads,
// each provided with a comm object"): each GPU's executor goroutine, locked to its OS thread
// with the GPU's context current, issues its own rank's call on its own stream, all the
// executors concurrently. NCCL may block a rank's call until every rank has arrived; that is
// why the calls are concurrent and not a loop on one thread (which would need
// ncclGroupStart/ncclGroupEnd), and why every argument is checked in Go before any rank is
// called. Then each executor synchronises its stream. Each communicator is used by one thread
// at a time, and no two ranks share a GPU (NewNCCL refuses that), as NCCL's thread-safety rules
// require. A failed collective aborts the communicators (ncclCommAbort): later calls fail
// with the first error, and the caller falls back to device.HostSum.
//
// Numerics. NCCL sums in an order of its own (ring or tree, chunked, its choice), which is not
// HostSum's member order: sums agree with HostSum to rounding (for two ranks, a + b is
// commutative and both give the same bits; from three on, to a few ulps of the largest
// partial sum).
type NCCL struct {
	mu     sync.Mutex // one collective at a time; Close
	lib    *ncclLib
	rec    Library
	devs   []*Device
	comms  []uintptr // comms[j]: the communicator of rank j, on devs[j]; 0 once destroyed or aborted
	broken error     // the failure after which the communicators were aborted
	closed bool
}

var _ device.Collective = (*NCCL)(nil)

// NewNCCL returns the NCCL collective of the open GPUs devs (rank j on devs[j], rank 0 the
// root, at least one GPU, each GPU once). The error says why there is none: no devices, a
// GPU given twice or closed, NCCL not found (the message says where it was looked for; see
// Probe), or NCCL failing to make the communicators. The caller then sums through
// device.HostSum and should say so. The value returned is an *NCCL.
func NewNCCL(devs []*Device) (device.Collective, error) {
	c, err := newNCCL(osEnv(), devs)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// newNCCL is NewNCCL in the search environment env.
func newNCCL(env searchEnv, devs []*Device) (*NCCL, error) {
	ords, err := ncclOrdinals(devs)
	if err != nil {
		return nil, err
	}
	lib, rec := loadNCCL(env)
	if rec.Error != "" {
		return nil, fmt.Errorf("nccl: library %s: %s", strings.Join(specNCCL.sonames, ", "), rec.Error)
	}
	comms := make([]uintptr, len(devs))
	// devlist holds CUDA runtime ordinals; the driver's (Open's) are the same numbers, both
	// enumerating the GPUs that CUDA_VISIBLE_DEVICES leaves.
	err = onOwnThread(func() error {
		return lib.ncclErr("ncclCommInitAll", lib.ncclCommInitAll(&comms[0], int32(len(devs)), &ords[0]), 0)
	})
	if err != nil {
		return nil, fmt.Errorf("nccl %s: communicators of GPUs %v: %w", rec.Version, ords, err)
	}
	return &NCCL{lib: lib, rec: rec, devs: append([]*Device(nil), devs...), comms: comms}, nil
}

// ncclOrdinals checks the devices of NewNCCL (at least one, none nil, closed or given twice)
// and returns their ordinals.
func ncclOrdinals(devs []*Device) ([]int32, error) {
	if len(devs) == 0 {
		return nil, errors.New("nccl: no devices: NCCL needs at least one GPU")
	}
	ords := make([]int32, len(devs))
	for j, d := range devs {
		if d == nil || d.b == nil {
			return nil, fmt.Errorf("nccl: device %d is nil", j)
		}
		if err := d.b.do(func() error { return nil }); err != nil {
			return nil, fmt.Errorf("nccl: device %d (GPU %d): %w", j, d.b.ordinal, err)
		}
		ords[j] = int32(d.b.ordinal)
		for i := range j {
			if ords[i] == ords[j] {
				return nil, fmt.Errorf("nccl: devices %d and %d are the same GPU (ordinal %d): NCCL needs one rank per GPU", i, j, ords[j])
			}
		}
	}
	return ords, nil
}

// loadNCCL loads and binds NCCL from the search environment; the record carries its version.
func loadNCCL(env searchEnv) (*ncclLib, Library) {
	var lib *ncclLib
	_, rec := env.loadLib(specNCCL, func(h uintptr) error {
		l, err := bindNCCL(h)
		lib = l
		return err
	})
	if rec.Error != "" {
		return nil, rec
	}
	rec.Version = ncclVersionString(lib.version)
	return lib, rec
}

// onOwnThread runs f on a new goroutine locked to its OS thread and returns its error (a panic
// becomes an error). The goroutine ends locked, so the thread ends with it, and with the
// thread whatever CUDA state f left current on it.
func onOwnThread(f func() error) error {
	res := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked
		res <- run(f)
	}()
	return <-res
}

// Name returns "nccl".
func (c *NCCL) Name() string { return "nccl" }

// Library returns where NCCL was found, with its version.
func (c *NCCL) Library() Library { return c.rec }

// Reduce sets bufs[0] = sum_j bufs[j] (float64, ncclSum) with ncclReduce to root 0, in place:
// members[j] must be devs[j] of NewNCCL and bufs[j] a buffer of it, all of one length. The
// other buffers are left as they were. It returns when the sum is in bufs[0].
func (c *NCCL) Reduce(members []device.Device, bufs []device.Buffer) error {
	return c.collective("Reduce", "ncclReduce", members, bufs, func(p, n uint64, comm, stream uintptr) int32 {
		return c.lib.ncclReduce(p, p, n, ncclFloat64, ncclSum, 0, comm, stream)
	})
}

// Broadcast sets bufs[j] = bufs[0] for every j > 0 with ncclBroadcast from root 0, in place
// (members and buffers as for Reduce). It returns when every copy is done.
func (c *NCCL) Broadcast(members []device.Device, bufs []device.Buffer) error {
	return c.collective("Broadcast", "ncclBroadcast", members, bufs, func(p, n uint64, comm, stream uintptr) int32 {
		return c.lib.ncclBroadcast(p, p, n, ncclFloat64, 0, comm, stream)
	})
}

// collective checks the members and buffers, has every rank's executor issue call (p: the
// rank's device pointer, n: the count) concurrently, then has every executor wait for its
// stream. On a failure the communicators are aborted.
func (c *NCCL) collective(op, name string, members []device.Device, bufs []device.Buffer,
	call func(p, n uint64, comm, stream uintptr) int32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	op = "nccl " + op
	switch {
	case c.closed:
		return fmt.Errorf("%s: %w", op, ErrClosed)
	case c.broken != nil:
		return fmt.Errorf("%s: the communicators were aborted after an earlier failure: %w", op, c.broken)
	}
	ptrs, n, err := c.check(op, members, bufs)
	if err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	if err := c.each(func(j int, b *backend) error {
		return c.lib.ncclErr(name, call(ptrs[j], uint64(n), c.comms[j], b.stream), c.comms[j])
	}); err != nil {
		return c.fail(op, err)
	}
	if err := c.each(func(_ int, b *backend) error { return b.sync(name) }); err != nil {
		return c.fail(op, err)
	}
	return nil
}

// fail aborts the communicators after the failure err of op and returns the error to report.
func (c *NCCL) fail(op string, err error) error {
	c.broken = err
	if aerr := c.release("ncclCommAbort", c.lib.ncclCommAbort); aerr != nil {
		return fmt.Errorf("%s: %w (and aborting the communicators: %v)", op, err, aerr)
	}
	return fmt.Errorf("%s: %w (communicators aborted)", op, err)
}

// check checks that members are the GPUs of the communicators in rank order and that bufs[j]
// is a live buffer of members[j], all of one length; it returns their device pointers and
// the length.
func (c *NCCL) check(op string, members []device.Device, bufs []device.Buffer) ([]uint64, int, error) {
	if len(members) != len(c.devs) || len(bufs) != len(members) {
		return nil, 0, fmt.Errorf("%s: %d members and %d buffers for %d communicators: %w",
			op, len(members), len(bufs), len(c.devs), device.ErrSize)
	}
	for j, m := range members {
		if m != device.Device(c.devs[j]) {
			return nil, 0, fmt.Errorf("%s: member %d is not the GPU of rank %d (GPU %d, devs[%d] of NewNCCL)",
				op, j, j, c.devs[j].b.ordinal, j)
		}
	}
	if bufs[0] == nil {
		return nil, 0, fmt.Errorf("%s: buffer 0 is nil", op)
	}
	n := bufs[0].Len()
	ptrs := make([]uint64, len(bufs))
	for j, b := range bufs {
		if b == nil || b.Len() != n {
			return nil, 0, fmt.Errorf("%s: buffer %d is nil or not of the lead's length %d: %w", op, j, n, device.ErrSize)
		}
		raw, err := c.devs[j].BackendBuffer(op, fmt.Sprintf("bufs[%d]", j), b, n)
		if err != nil {
			return nil, 0, err
		}
		ptrs[j] = buf(raw).ptr
	}
	return ptrs, n, nil
}

// each runs f(j, rank j's backend) on every rank's executor, all concurrently, and returns
// their errors joined, each naming its rank. Every rank runs whatever the others do (unlike
// par.For, which stops handing out work after a failure): NCCL may block a rank until all of
// them have called.
func (c *NCCL) each(f func(j int, b *backend) error) error {
	errs := make([]error, len(c.devs))
	var wg sync.WaitGroup
	for j, d := range c.devs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := d.b.do(func() error { return f(j, d.b) }); err != nil {
				errs[j] = fmt.Errorf("rank %d (GPU %d): %w", j, d.b.ordinal, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// release destroys or aborts (fn) every communicator not yet released, each on an OS thread
// of its own, all concurrently (NCCL may wait for the other ranks; it sets each
// communicator's GPU itself), and marks them released.
func (c *NCCL) release(name string, fn func(comm uintptr) int32) error {
	errs := make([]error, len(c.comms))
	var wg sync.WaitGroup
	for j, comm := range c.comms {
		if comm == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := onOwnThread(func() error { return c.lib.ncclErr(name, fn(comm), 0) }); err != nil {
				errs[j] = fmt.Errorf("rank %d: %w", j, err)
			}
		}()
	}
	wg.Wait()
	clear(c.comms)
	return errors.Join(errs...)
}

// Close destroys the communicators (ncclCommDestroy); device.Group.Close calls it before it
// closes the GPUs. Closing twice is not an error.
func (c *NCCL) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if err := c.release("ncclCommDestroy", c.lib.ncclCommDestroy); err != nil {
		return fmt.Errorf("nccl Close: %w", err)
	}
	return nil
}
