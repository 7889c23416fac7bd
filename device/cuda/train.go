package cuda

import (
	"fmt"
	"math"

	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/kernels"
)

var _ device.Trainer = (*Device)(nil)

// SoftmaxLossGrad is device.Trainer's softmax loss gradient (kernel softmax_loss_grad, one
// thread per sample; the per-block partial losses are added on the host in block order).
func (d *Device) SoftmaxLossGrad(ch device.Channel, gamma, yhat, y device.Buffer, n int, scale float64) (float64, error) {
	const op = "cuda SoftmaxLossGrad"
	if ch.Kind != device.Softmax {
		return 0, fmt.Errorf("%s: the %v channel has no useful gradient", op, ch)
	}
	if n < 0 || ch.T < 1 {
		return 0, fmt.Errorf("%s: n = %d, t = %d: %w", op, n, ch.T, device.ErrSize)
	}
	tt := ch.T * ch.T
	gb, err := d.buf(op, "gamma", gamma, n*tt)
	if err != nil {
		return 0, err
	}
	hb, err := d.buf(op, "yhat", yhat, n*tt)
	if err != nil {
		return 0, err
	}
	yb, err := d.buf(op, "y", y, n*tt)
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, nil
	}
	grid := kernels.GridThreads(int64(n))
	var s float64
	err = d.do(func() error {
		var err error
		s, err = d.partials("softmax_loss_grad", grid, int(grid), func(part uint64) []any {
			return []any{gb.ptr, part, hb.ptr, yb.ptr, int64(n), int32(ch.T), ch.Beta, scale}
		})
		return err
	})
	return s, wrap(op, err)
}

// AdamStep is device.Trainer's Adam update (kernel adam_step); the bias corrections
// 1 - b1^t and 1 - b2^t are computed here with math.Pow, as the CPU backend does.
func (d *Device) AdamStep(w, g, m, v device.Buffer, lr, b1, b2, eps float64, t int) error {
	const op = "cuda AdamStep"
	if t < 1 {
		return fmt.Errorf("%s: step %d, need t >= 1", op, t)
	}
	wb, gb, err := d.pair(op, "w", w, "g", g)
	if err != nil {
		return err
	}
	mb, vb, err := d.pair(op, "m", m, "v", v)
	if err != nil {
		return err
	}
	if mb.n != wb.n {
		return fmt.Errorf("%s: m holds %d values, w %d: %w", op, mb.n, wb.n, device.ErrSize)
	}
	if wb.n == 0 {
		return nil
	}
	c1 := 1 - math.Pow(b1, float64(t))
	c2 := 1 - math.Pow(b2, float64(t))
	return wrap(op, d.do(func() error {
		return d.launchSync("adam_step", kernels.GridElems(int64(wb.n)), wb.ptr, gb.ptr, mb.ptr, vb.ptr, int64(wb.n), lr, b1, b2, eps, c1, c2)
	}))
}
