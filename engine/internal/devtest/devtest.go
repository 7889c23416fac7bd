// Package devtest holds test helpers for code that runs on a device.
package devtest

import (
	"fmt"
	"sync"

	"github.com/aimtheory/aim/device"
)

// Counting wraps a device and counts the bytes of its live buffers and their peak, so that
// tests can hold memory estimates to what a run really allocates.
type Counting struct {
	device.Device
	mu         sync.Mutex
	live, peak uint64
	sizes      map[device.Buffer]uint64
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

// SoftmaxLossGrad forwards to the wrapped device's training operations.
func (c *Counting) SoftmaxLossGrad(ch device.Channel, gamma, yhat, y device.Buffer, n int, scale float64) (float64, error) {
	tr, ok := c.Device.(device.Trainer)
	if !ok {
		return 0, fmt.Errorf("device %s has no training operations", c.Info().Name)
	}
	return tr.SoftmaxLossGrad(ch, gamma, yhat, y, n, scale)
}

// AdamStep forwards to the wrapped device's training operations.
func (c *Counting) AdamStep(w, g, m, v device.Buffer, lr, b1, b2, eps float64, t int) error {
	tr, ok := c.Device.(device.Trainer)
	if !ok {
		return fmt.Errorf("device %s has no training operations", c.Info().Name)
	}
	return tr.AdamStep(w, g, m, v, lr, b1, b2, eps, t)
}
