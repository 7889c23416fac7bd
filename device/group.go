package device

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/aimtheory/aim/internal/par"
)

// Group is a device group: k devices that share one run (docs/design.md section 5). The
// samples of the run are sharded over the members (Shard), each member runs the per-sample work
// of its shard, and only D x D buffers and a few scalars cross between members, through the
// group's Collective, in member order. Member 0, the lead, runs everything that is not
// per-sample (the denoiser, the optimiser step) and broadcasts its result, so the members never
// drift apart, whatever the backend. A Group of one device is the plain single-device run.
type Group struct {
	// Members are the devices, lead first. Each is used by one goroutine at a time.
	Members []Device
	// Sum moves D x D buffers between the members.
	Sum Collective
	// Concurrent lets Each run the members on goroutines of their own (GPUs, each with its own
	// thread and memory); otherwise Each runs them one after another (CPU devices, which share
	// the host's cores and BLAS).
	Concurrent bool
}

// Collective sums and copies buffers across the members of a group. Implementations: HostSum
// (staged through host memory, any backend) and NCCL across GPUs (package device/cuda).
type Collective interface {
	// Name says how the sums travel, for manifests and notes ("host", "nccl").
	Name() string
	// Reduce sets bufs[0] = sum_j bufs[j], bufs[j] a buffer of members[j], all of one length.
	// The others are left as they were or overwritten (an implementation may reduce in place).
	Reduce(members []Device, bufs []Buffer) error
	// Broadcast sets bufs[j] = bufs[0] for every member j > 0.
	Broadcast(members []Device, bufs []Buffer) error
}

// Single returns the group of one device.
func Single(dev Device) *Group { return &Group{Members: []Device{dev}, Sum: &HostSum{}} }

// NewGroup returns the group of the members, lead first, summing through sum (HostSum when
// nil). A group needs at least one member and no member twice.
func NewGroup(members []Device, sum Collective, concurrent bool) (*Group, error) {
	if len(members) == 0 {
		return nil, errors.New("device group: no members")
	}
	for i, m := range members {
		if m == nil {
			return nil, fmt.Errorf("device group: member %d is nil", i)
		}
		for j := range i {
			if members[j] == m {
				return nil, fmt.Errorf("device group: members %d and %d are the same device", j, i)
			}
		}
	}
	if sum == nil {
		sum = &HostSum{}
	}
	return &Group{Members: members, Sum: sum, Concurrent: concurrent}, nil
}

// Lead returns member 0, the device of the group's D x D work.
func (g *Group) Lead() Device { return g.Members[0] }

// Len returns the number of members.
func (g *Group) Len() int { return len(g.Members) }

// Each calls f(j, member j) for every member: concurrently when the group is Concurrent, else
// in member order. It returns the error of the lowest member that failed.
func (g *Group) Each(f func(j int, dev Device) error) error {
	workers := 1
	if g.Concurrent {
		workers = len(g.Members)
	}
	return par.For(workers, len(g.Members), par.NoState, func(_ struct{}, j int) error {
		if err := f(j, g.Members[j]); err != nil {
			if len(g.Members) > 1 {
				return fmt.Errorf("group member %d (%s): %w", j, g.Members[j].Info().Name, err)
			}
			return err
		}
		return nil
	})
}

// Shard returns the samples [lo, hi) of member j when n samples are sharded over the group:
// contiguous ranges in member order, lo_j = floor(j n / k), so that their sizes differ by at
// most one and k equal shards of n / k result when k divides n.
func (g *Group) Shard(j, n int) (lo, hi int) {
	k := len(g.Members)
	return int(int64(j) * int64(n) / int64(k)), int(int64(j+1) * int64(n) / int64(k))
}

// Describe names the group for humans: its members' descriptions and how it sums.
func (g *Group) Describe() string {
	if len(g.Members) == 1 {
		return g.Lead().Info().Description
	}
	d := make([]string, len(g.Members))
	for j, m := range g.Members {
		d[j] = m.Info().Description
	}
	return fmt.Sprintf("group of %d devices, sums %s: %s", len(g.Members), g.Sum.Name(), strings.Join(d, "; "))
}

// Name is the name of the group's devices ("cpu", "cuda"), with the count for more than one
// ("cuda x2").
func (g *Group) Name() string {
	if len(g.Members) == 1 {
		return g.Lead().Info().Name
	}
	return fmt.Sprintf("%s x%d", g.Lead().Info().Name, len(g.Members))
}

// Close releases the group's Collective where it holds anything (NCCL's communicators), then
// closes every member, and returns their errors joined.
func (g *Group) Close() error {
	var errs []error
	if c, ok := g.Sum.(interface{ Close() error }); ok {
		errs = append(errs, c.Close())
	}
	for _, m := range g.Members {
		errs = append(errs, m.Close())
	}
	return errors.Join(errs...)
}

// HostSum is the Collective that stages through host memory: Reduce downloads every member's
// buffer and adds them in member order, ((b_0 + b_1) + b_2) + ..., then uploads the sum to the
// lead; Broadcast downloads the lead's buffer and uploads it to each other member. It works
// with any backend; its sums are exactly those of adding the members' buffers one after another
// on one device (Axpby(b_0, 1, b_j, 1) for j = 1, 2, ...). Its host buffers are kept between
// calls (a D x D sum every iteration allocates nothing); use it through a pointer.
type HostSum struct {
	mu       sync.Mutex
	acc, tmp []float64
}

// Name returns "host".
func (*HostSum) Name() string { return "host" }

// scratch returns the two host buffers of n values.
func (h *HostSum) scratch(n int) (acc, tmp []float64) {
	if cap(h.acc) < n {
		h.acc, h.tmp = make([]float64, n), make([]float64, n)
	}
	return h.acc[:n], h.tmp[:n]
}

// Reduce sets bufs[0] = sum_j bufs[j], in member order, through the host.
func (h *HostSum) Reduce(members []Device, bufs []Buffer) error {
	if err := checkCollective("Reduce", members, bufs); err != nil || len(bufs) == 1 {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	acc, tmp := h.scratch(bufs[0].Len())
	if err := members[0].Download(acc, bufs[0]); err != nil {
		return fmt.Errorf("host Reduce: %w", err)
	}
	for j := 1; j < len(members); j++ {
		if err := members[j].Download(tmp, bufs[j]); err != nil {
			return fmt.Errorf("host Reduce: member %d: %w", j, err)
		}
		for i, v := range tmp {
			acc[i] += v
		}
	}
	if err := members[0].Upload(bufs[0], acc); err != nil {
		return fmt.Errorf("host Reduce: %w", err)
	}
	return nil
}

// Broadcast sets bufs[j] = bufs[0] for j > 0, through the host.
func (h *HostSum) Broadcast(members []Device, bufs []Buffer) error {
	if err := checkCollective("Broadcast", members, bufs); err != nil || len(bufs) == 1 {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	v, _ := h.scratch(bufs[0].Len())
	if err := members[0].Download(v, bufs[0]); err != nil {
		return fmt.Errorf("host Broadcast: %w", err)
	}
	for j := 1; j < len(members); j++ {
		if err := members[j].Upload(bufs[j], v); err != nil {
			return fmt.Errorf("host Broadcast: member %d: %w", j, err)
		}
	}
	return nil
}

// checkCollective checks that there is one buffer per member, all of one length.
func checkCollective(op string, members []Device, bufs []Buffer) error {
	if len(members) == 0 || len(bufs) != len(members) {
		return fmt.Errorf("collective %s: %d buffers for %d members: %w", op, len(bufs), len(members), ErrSize)
	}
	for j, b := range bufs {
		if b == nil || b.Len() != bufs[0].Len() {
			return fmt.Errorf("collective %s: buffer %d is nil or not of the lead's length: %w", op, j, ErrSize)
		}
	}
	return nil
}

// AllocEach allocates, on every member of the group, one buffer per size (sizes(j) for member
// j), or none at all: on an error it frees what it allocated. bufs[j][i] is member j's buffer i.
func (g *Group) AllocEach(sizes func(j int) []int) ([][]Buffer, error) {
	bufs := make([][]Buffer, len(g.Members))
	for j, m := range g.Members {
		b, err := AllocAll(m, sizes(j)...)
		if err != nil {
			g.FreeEach(bufs)
			if len(g.Members) > 1 {
				return nil, fmt.Errorf("group member %d: %w", j, err)
			}
			return nil, err
		}
		bufs[j] = b
	}
	return bufs, nil
}

// FreeEach frees what AllocEach allocated.
func (g *Group) FreeEach(bufs [][]Buffer) {
	for j, b := range bufs {
		FreeAll(g.Members[j], b...)
	}
}

// Column returns the i-th buffer of every member: bufs[j][i] for each j.
func Column(bufs [][]Buffer, i int) []Buffer {
	c := make([]Buffer, len(bufs))
	for j := range bufs {
		c[j] = bufs[j][i]
	}
	return c
}
