// Package devtest holds test helpers for code that runs on a device.
package devtest

import (
	"sync"
	"testing"

	"github.com/aimtheory/aim/device"
)

// Counting wraps a device and counts the bytes of its live buffers and their peak, so that
// tests can hold memory estimates to what a run really allocates, and the calls of the
// quad-form operation, so that they can tell which path a run took. It forwards every
// operation and capability of the wrapped device (it embeds it).
type Counting struct {
	device.Device
	mu         sync.Mutex
	live, peak uint64
	sizes      map[device.Buffer]uint64
	quadForms  int
}

// NewCounting wraps dev.
func NewCounting(dev device.Device) *Counting {
	return &Counting{Device: dev, sizes: map[device.Buffer]uint64{}}
}

// Alloc allocates on the wrapped device and counts 8 n bytes.
func (c *Counting) Alloc(n int) (device.Buffer, error) {
	b, err := c.Device.Alloc(n)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sizes[b] = 8 * uint64(n)
	c.live += 8 * uint64(n)
	c.peak = max(c.peak, c.live)
	return b, nil
}

// Free frees on the wrapped device and stops counting the buffer.
func (c *Counting) Free(b device.Buffer) {
	c.mu.Lock()
	c.live -= c.sizes[b]
	delete(c.sizes, b)
	c.mu.Unlock()
	c.Device.Free(b)
}

// Live returns the bytes of the buffers allocated and not freed.
func (c *Counting) Live() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.live
}

// Peak returns the largest number of live bytes seen, and resets it to the live bytes.
func (c *Counting) Peak() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.peak
	c.peak = c.live
	return p
}

// QuadFormSums returns how many calls of the quad-form operation went through the counter.
func (c *Counting) QuadFormSums() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.quadForms
}

// Capabilities returns the wrapped device's optional operation sets, every one of them (the
// struct is copied whole), with the quad-form operation counted (QuadFormSums).
func (c *Counting) Capabilities() device.Caps {
	caps := c.Device.Capabilities()
	if caps.QuadFormSummer != nil {
		caps.QuadFormSummer = countedQuadForm{c, caps.QuadFormSummer}
	}
	return caps
}

// countedQuadForm counts the calls of a QuadFormSummer.
type countedQuadForm struct {
	c *Counting
	q device.QuadFormSummer
}

// QuadFormSum counts the call and forwards it.
func (q countedQuadForm) QuadFormSum(out, cm, x, scratch device.Buffer, n, t, d int, alpha float64) error {
	q.c.mu.Lock()
	q.c.quadForms++
	q.c.mu.Unlock()
	return q.q.QuadFormSum(out, cm, x, scratch, n, t, d, alpha)
}

// Group returns a device group of k members made by newDev, summing through the host, one
// member after another (device.NewGroup); it fails the test on an error.
func Group(tb testing.TB, k int, newDev func() device.Device) *device.Group {
	tb.Helper()
	members := make([]device.Device, k)
	for j := range members {
		members[j] = newDev()
	}
	g, err := device.NewGroup(members, &device.HostSum{}, false)
	if err != nil {
		tb.Fatal(err)
	}
	return g
}
