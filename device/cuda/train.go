package cuda

import (
	"math"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/kernels"
)

var _ device.Trainer = (*backend)(nil)

// SoftmaxLossGrad is device.Trainer's softmax loss gradient (kernel softmax_loss_grad, one
// thread per sample; the per-block partial losses are added on the host in block order).
func (d *backend) SoftmaxLossGrad(ch channel.Spec, gamma, yhat, y device.Buffer, n int, scale float64) (float64, error) {
	const op = "cuda SoftmaxLossGrad"
	if err := fitsInt32(op, "t", ch.T); err != nil {
		return 0, err
	}
	gb, hb, yb := buf(gamma), buf(yhat), buf(y)
	if n == 0 {
		return 0, nil
	}
	grid := kernels.GridThreads(int64(n))
	var s float64
	err := d.do(func() error {
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
func (d *backend) AdamStep(w, g, m, v device.Buffer, lr, b1, b2, eps float64, t int) error {
	const op = "cuda AdamStep"
	wb, gb, mb, vb := buf(w), buf(g), buf(m), buf(v)
	if wb.n == 0 {
		return nil
	}
	c1 := 1 - math.Pow(b1, float64(t))
	c2 := 1 - math.Pow(b2, float64(t))
	return wrap(op, d.do(func() error {
		return d.launchSync("adam_step", kernels.GridElems(int64(wb.n)), wb.ptr, gb.ptr, mb.ptr, vb.ptr, int64(wb.n), lr, b1, b2, eps, c1, c2)
	}))
}
