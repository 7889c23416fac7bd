package cuda

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
)

// Tests of NCCL and its errors. The first ones need no GPU; TestGPUNCCL* need
// one GPU (and NCCL) or two.

func TestNCCLNames(t *testing.T) {
	for code, want := range map[int]string{22105: "2.21.5", 22703: "2.27.3", 2708: "2.7.8", 2408: "2.4.8", 23203: "2.32.3"} {
		if got := ncclVersionString(code); got != want {
			t.Errorf("ncclVersionString(%d) = %q, want %q", code, got, want)
		}
	}
	for code, want := range map[int32]string{0: "ncclSuccess", 1: "ncclUnhandledCudaError", 4: "ncclInvalidArgument",
		5: "ncclInvalidUsage", 6: "ncclRemoteError", 7: "ncclInProgress", 42: "unknown ncclResult_t 42"} {
		if got := ncclResultName(code); got != want {
			t.Errorf("ncclResultName(%d) = %q, want %q", code, got, want)
		}
	}
	var noLib *ncclLib // decoded by the table when NCCL is not loaded
	if err := noLib.ncclErr("ncclReduce", 0, 0); err != nil {
		t.Errorf("ncclSuccess gave %v", err)
	}
	err := noLib.ncclErr("ncclReduce", 4, 0)
	var e *Error
	if err == nil || err.Error() != "ncclReduce: ncclInvalidArgument (4)" || !errors.As(err, &e) || e.Code != 4 {
		t.Errorf("ncclInvalidArgument: %v", err)
	}
	// An optional library that is missing says what its absence means.
	l := Library{Name: "NCCL", Optional: true, Error: "none of libnccl.so.2 found"}
	if s := l.String(); !strings.Contains(s, "optional") || !strings.Contains(s, "host") {
		t.Errorf("missing NCCL: %q", s)
	}
	l = Library{Name: "NCCL", Soname: "libnccl.so.2", Version: "2.21.5", Path: "/x/libnccl.so.2", Via: viaWheel}
	if s := l.String(); !strings.Contains(s, "libnccl.so.2 2.21.5  /x/libnccl.so.2") {
		t.Errorf("found NCCL: %q", s)
	}
}

// fakeDevice returns a Device whose backend has an executor but no CUDA (enough for the checks
// of NewNCCL); the executor stops when the test ends.
func fakeDevice(t *testing.T, ordinal int) *Device {
	t.Helper()
	b := &backend{ordinal: ordinal, jobs: make(chan func()), done: make(chan struct{})}
	go executor(b.jobs, b.done)
	t.Cleanup(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if !b.closed {
			b.closed = true
			close(b.jobs)
			<-b.done
		}
	})
	return &Device{Checked: device.New(b), b: b}
}

// TestNewNCCLErrors: NewNCCL refuses no devices, a nil or closed device and a GPU given twice,
// and without NCCL (a faked search environment) says that the library was not found and where
// it was looked for; none of these needs a GPU.
func TestNewNCCLErrors(t *testing.T) {
	for _, c := range []struct {
		devs []*Device
		want string
	}{
		{nil, "no devices"},
		{[]*Device{}, "no devices"},
		{[]*Device{nil}, "device 0 is nil"},
		{[]*Device{fakeDevice(t, 0), fakeDevice(t, 0)}, "devices 0 and 1 are the same GPU (ordinal 0)"},
	} {
		coll, err := NewNCCL(c.devs)
		if err == nil || coll != nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "nccl: ") {
			t.Errorf("NewNCCL(%d devices): %v, %v; want an error containing %q", len(c.devs), coll, err, c.want)
		}
	}
	closed := fakeDevice(t, 1)
	closed.b.mu.Lock()
	closed.b.closed = true
	close(closed.b.jobs)
	<-closed.b.done
	closed.b.mu.Unlock()
	if _, err := NewNCCL([]*Device{fakeDevice(t, 0), closed}); !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "device 1") {
		t.Errorf("NewNCCL with a closed device: %v", err)
	}

	// NCCL absent: a fake (not an ELF object) libnccl.so.2 in AIM_CUDA_LIB_DIR, no wheels.
	dir := t.TempDir()
	touch(t, filepath.Join(dir, "libnccl.so.2"))
	env := searchEnv{libDir: dir, exists: func(p string) bool {
		st, err := os.Stat(p)
		return err == nil && !st.IsDir()
	}}
	lib, rec := loadNCCL(env)
	if rec.Error == "" {
		t.Skipf("a real NCCL is installed here (%s via %s): the absence cannot be faked", rec.Path, rec.Via)
	}
	if lib != nil || !rec.Optional || rec.Name != "NCCL" || len(rec.Failed) == 0 ||
		!strings.Contains(rec.Failed[0], filepath.Join(dir, "libnccl.so.2")) || !strings.Contains(rec.Error, "libnccl.so.2") {
		t.Errorf("loadNCCL of a fake library: lib %v, record %+v", lib, rec)
	}
	_, err := newNCCL(env, []*Device{fakeDevice(t, 0), fakeDevice(t, 1)})
	if err == nil || !strings.HasPrefix(err.Error(), "nccl: library libnccl.so.2: ") || !strings.Contains(err.Error(), dir) {
		t.Errorf("newNCCL without NCCL: %v", err)
	}
	t.Logf("without NCCL: %v", err)
	// The process's own environment: the same error when this machine has no NCCL.
	if _, err := NewNCCL([]*Device{fakeDevice(t, 0)}); err == nil {
		t.Error("NewNCCL on a fake device succeeded")
	} else {
		t.Logf("NewNCCL here: %v", err)
	}
}

// ncclOrSkip returns the NCCL collective of devs, or skips the test when NCCL is not found
// (it is optional); any other failure of NewNCCL fails the test.
func ncclOrSkip(t *testing.T, devs ...*Device) *NCCL {
	t.Helper()
	if _, rec := loadNCCL(osEnv()); rec.Error != "" {
		t.Skipf("NCCL not found (optional): %s", rec.Error)
	}
	coll, err := NewNCCL(devs)
	if err != nil {
		t.Fatalf("NCCL is installed but NewNCCL failed: %v", err)
	}
	c := coll.(*NCCL)
	t.Logf("NCCL %s (%s via %s), %d rank(s)", c.Library().Version, c.Library().Path, c.Library().Via, len(devs))
	return c
}

// TestGPUNCCLOneRank runs NCCL on one GPU (one rank: Reduce and Broadcast leave the buffer as
// it is, bit for bit), which exercises the bindings (ncclCommInitAll, ncclReduce,
// ncclBroadcast, ncclCommDestroy) and every refusal: a member that is not the communicator's
// GPU, a buffer of another device, buffers of unequal length, the same GPU twice, use after
// Close.
func TestGPUNCCLOneRank(t *testing.T) {
	g := gpu(t)
	c := ncclOrSkip(t, g)
	if c.Name() != "nccl" {
		t.Errorf("Name %q", c.Name())
	}
	r := rand.New(rand.NewPCG(11, 12))
	v := randVec(r, 10007)
	b := up(t, g, v)
	defer g.Free(b)
	for name, op := range map[string]func([]device.Device, []device.Buffer) error{"Reduce": c.Reduce, "Broadcast": c.Broadcast} {
		if err := op([]device.Device{g}, []device.Buffer{b}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := down(t, g, b)
		for i := range v {
			if math.Float64bits(got[i]) != math.Float64bits(v[i]) {
				t.Fatalf("%s of one rank changed x[%d]: %v, was %v", name, i, got[i], v[i])
			}
		}
		// A view is a buffer too.
		if err := op([]device.Device{g}, []device.Buffer{device.MustView(b, 5, 100)}); err != nil {
			t.Errorf("%s of a view: %v", name, err)
		}
	}
	cd := cpu.New(1)
	cb, _ := cd.Alloc(3)
	other, _ := g.Alloc(3)
	defer g.Free(other)
	for what, c2 := range map[string]struct {
		members []device.Device
		bufs    []device.Buffer
		want    string
	}{
		"a cpu member":        {[]device.Device{cd}, []device.Buffer{cb}, "member 0 is not the GPU of rank 0"},
		"a cpu buffer":        {[]device.Device{g}, []device.Buffer{cb}, "not a buffer of the cuda device"},
		"two members":         {[]device.Device{g, g}, []device.Buffer{b, b}, "2 members and 2 buffers for 1 communicators"},
		"no buffer":           {[]device.Device{g}, []device.Buffer{nil}, "buffer 0 is nil"},
		"members, no buffers": {[]device.Device{g}, nil, "1 members and 0 buffers"},
	} {
		if err := c.Reduce(c2.members, c2.bufs); err == nil || !strings.Contains(err.Error(), c2.want) {
			t.Errorf("Reduce with %s: %v, want an error containing %q", what, err, c2.want)
		}
	}
	g2, err := Open(0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewNCCL([]*Device{g, g2}); err == nil || !strings.Contains(err.Error(), "same GPU") {
		t.Errorf("NewNCCL of GPU 0 twice: %v", err)
	}
	if err := g2.Close(); err != nil {
		t.Error(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := c.Reduce([]device.Device{g}, []device.Buffer{b}); !errors.Is(err, ErrClosed) {
		t.Errorf("Reduce after Close: %v", err)
	}
}

// TestGPUNCCLTwoRanks compares NCCL with device.HostSum on two GPUs, on random buffers of
// several lengths. Tolerance: NCCL sums in an order of its own, so each value of the Reduce
// may differ from HostSum's by the rounding of a different order, at most (k-1) eps
// sum_j |b_j| per value for k ranks (for k = 2 a single addition, commutative: the bits agree;
// the count of bit-identical values is logged). Broadcast copies: the bits agree.
func TestGPUNCCLTwoRanks(t *testing.T) {
	g := gpu(t)
	if n := len(Probe().Devices); n < 2 {
		t.Skipf("needs 2 GPUs, found %d", n)
	}
	g1, err := Open(1)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := g1.Close(); err != nil {
			t.Error(err)
		}
	}()
	c := ncclOrSkip(t, g, g1)
	defer func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}()
	members := []device.Device{g, g1}
	r := rand.New(rand.NewPCG(21, 22))
	var identical, total int
	for _, n := range []int{1, 7, 1000, 1 << 20, 3<<20 + 5} {
		v0, v1 := randVec(r, n), randVec(r, n)
		nb := []device.Buffer{up(t, g, v0), up(t, g1, v1)}
		hb := []device.Buffer{up(t, g, v0), up(t, g1, v1)}
		if err := c.Reduce(members, nb); err != nil {
			t.Fatalf("n=%d: nccl Reduce: %v", n, err)
		}
		if err := (&device.HostSum{}).Reduce(members, hb); err != nil {
			t.Fatalf("n=%d: host Reduce: %v", n, err)
		}
		got, want := down(t, g, nb[0]), down(t, g, hb[0])
		bad := 0
		for i := range want {
			total++
			if math.Float64bits(got[i]) == math.Float64bits(want[i]) {
				identical++
				continue
			}
			bound := (2 - 1) * 0x1p-52 * (math.Abs(v0[i]) + math.Abs(v1[i]))
			if !(math.Abs(got[i]-want[i]) <= bound) {
				if bad < 3 {
					t.Errorf("n=%d: Reduce x[%d] = %v, host %v (bound %.3g)", n, i, got[i], want[i], bound)
				}
				bad++
			}
		}
		// Broadcast the sum back: rank 1 gets rank 0's bits.
		if err := c.Broadcast(members, nb); err != nil {
			t.Fatalf("n=%d: nccl Broadcast: %v", n, err)
		}
		for i, x := range down(t, g1, nb[1]) {
			if math.Float64bits(x) != math.Float64bits(got[i]) {
				t.Fatalf("n=%d: Broadcast x[%d] = %v on rank 1, %v on rank 0", n, i, x, got[i])
			}
		}
		g.Free(nb[0])
		g1.Free(nb[1])
		g.Free(hb[0])
		g1.Free(hb[1])
	}
	t.Logf("NCCL Reduce of 2 ranks: %d of %d values bit-identical to HostSum's", identical, total)
	if err := c.Reduce([]device.Device{g1, g}, nil); err == nil {
		t.Error("Reduce with the members swapped and no buffers succeeded")
	}
	bs := []device.Buffer{up(t, g, []float64{1}), up(t, g1, []float64{2})}
	if err := c.Reduce([]device.Device{g1, g}, []device.Buffer{bs[1], bs[0]}); err == nil || !strings.Contains(err.Error(), "member 0 is not the GPU of rank 0") {
		t.Errorf("Reduce with the members swapped: %v", err)
	}
	g.Free(bs[0])
	g1.Free(bs[1])
}
