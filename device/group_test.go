package device_test

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
)

// TestShard: the shards of n samples over k members are contiguous, in member order, cover
// [0, n) and differ in size by at most one; k equal shards when k divides n.
func TestShard(t *testing.T) {
	for _, c := range []struct{ k, n int }{{1, 7}, {2, 480}, {3, 480}, {7, 480}, {4, 5}, {5, 5}, {3, 1 << 40}} {
		g := &device.Group{Members: make([]device.Device, c.k)}
		prev, small, big := 0, c.n, 0
		for j := 0; j < c.k; j++ {
			lo, hi := g.Shard(j, c.n)
			if lo != prev || hi < lo {
				t.Fatalf("k = %d, n = %d: shard %d is [%d, %d), after %d", c.k, c.n, j, lo, hi, prev)
			}
			prev, small, big = hi, min(small, hi-lo), max(big, hi-lo)
		}
		if prev != c.n || big-small > 1 || (c.n%c.k == 0 && big != c.n/c.k) {
			t.Errorf("k = %d, n = %d: shards end at %d, sizes %d to %d", c.k, c.n, prev, small, big)
		}
	}
}

// TestHostSum: Reduce is exactly the member-order sum that one device computes with Axpby
// (b_0 += b_j for j = 1, 2, ...), and Broadcast copies the lead's values bit for bit.
func TestHostSum(t *testing.T) {
	const k, n = 4, 1000
	members := make([]device.Device, k)
	bufs := make([]device.Buffer, k)
	vals := make([][]float64, k)
	r := rand.New(rand.NewPCG(3, 4))
	for j := range members {
		members[j] = cpu.New(1)
		vals[j] = make([]float64, n)
		for i := range vals[j] {
			vals[j][i] = r.NormFloat64() * float64(1+i%7) * 1e3
		}
		b, err := members[j].Alloc(n)
		if err != nil {
			t.Fatal(err)
		}
		if err := members[j].Upload(b, vals[j]); err != nil {
			t.Fatal(err)
		}
		bufs[j] = b
	}
	// The reference: one device adding the buffers in member order.
	one := members[0]
	acc, x := must(one.Alloc(n)), must(one.Alloc(n))
	if err := one.Upload(acc, vals[0]); err != nil {
		t.Fatal(err)
	}
	for j := 1; j < k; j++ {
		if err := device.Seq(func() error { return one.Upload(x, vals[j]) }, func() error { return one.Axpby(acc, 1, x, 1) }); err != nil {
			t.Fatal(err)
		}
	}
	want, got := make([]float64, n), make([]float64, n)
	g, err := device.NewGroup(members, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := device.Seq(
		func() error { return one.Download(want, acc) },
		func() error { return g.Sum.Reduce(g.Members, bufs) },
		func() error { return one.Download(got, bufs[0]) },
	); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Reduce value %d = %.17g, Axpby in member order %.17g", i, got[i], want[i])
		}
	}
	if err := g.Sum.Broadcast(g.Members, bufs); err != nil {
		t.Fatal(err)
	}
	for j := 1; j < k; j++ {
		if err := members[j].Download(got, bufs[j]); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("Broadcast: member %d value %d = %g, lead %g", j, i, got[i], want[i])
			}
		}
	}
	short := must(members[2].Alloc(n - 1))
	if err := g.Sum.Reduce(g.Members, []device.Buffer{bufs[0], bufs[1], short, bufs[3]}); !errors.Is(err, device.ErrSize) {
		t.Errorf("Reduce with a short buffer: %v, want ErrSize", err)
	}
	if err := g.Sum.Broadcast(g.Members, bufs[:3]); !errors.Is(err, device.ErrSize) {
		t.Errorf("Broadcast with 3 buffers for 4 members: %v, want ErrSize", err)
	}
}

// TestNewGroupAndEach: a group needs members, each once; Each visits every member in order
// (serial) or all of them (concurrent) and returns the lowest failing member's error.
func TestNewGroupAndEach(t *testing.T) {
	a, b := cpu.New(1), cpu.New(1)
	if _, err := device.NewGroup(nil, nil, false); err == nil {
		t.Error("NewGroup with no members succeeded")
	}
	if _, err := device.NewGroup([]device.Device{a, b, a}, nil, false); err == nil || !strings.Contains(err.Error(), "members 0 and 2") {
		t.Errorf("NewGroup with a member twice: %v", err)
	}
	for _, concurrent := range []bool{false, true} {
		g, err := device.NewGroup([]device.Device{a, b, cpu.New(1), cpu.New(1)}, nil, concurrent)
		if err != nil {
			t.Fatal(err)
		}
		seen := make([]int, g.Len())
		err = g.Each(func(j int, dev device.Device) error {
			if dev != g.Members[j] {
				t.Errorf("Each: member %d is not the group's", j)
			}
			seen[j]++
			if j >= 2 {
				return errors.New("boom")
			}
			return nil
		})
		if err == nil || !strings.Contains(err.Error(), "group member 2 (cpu): boom") {
			t.Errorf("concurrent %v: Each = %v, want member 2's error", concurrent, err)
		}
		if !concurrent && (seen[0] != 1 || seen[1] != 1 || seen[2] != 1 || seen[3] != 0) {
			t.Errorf("serial Each visited %v, want the members in order up to the failure", seen)
		}
		if g.Name() != "cpu x4" || !strings.Contains(g.Describe(), "group of 4 devices, sums host") {
			t.Errorf("Name %q, Describe %q", g.Name(), g.Describe())
		}
	}
	if s := device.Single(a); s.Len() != 1 || s.Lead() != a || s.Name() != "cpu" {
		t.Errorf("Single: %d members, name %q", s.Len(), s.Name())
	}
}

func must(b device.Buffer, err error) device.Buffer {
	if err != nil {
		panic(err)
	}
	return b
}
