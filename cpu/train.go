package cpu

import (
	"math"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/device"
)

var _ device.Trainer = (*backend)(nil)

// SoftmaxLossGrad returns scale * sum (yhat - y)^2 over n samples of t x t outputs and writes
// gamma, the symmetric part (g_ab + g_ba) / 2 of g_ab = beta yhat_ab (G_ab - sum_c G_ac
// yhat_ac), G = 2 scale (yhat - y): g is the gradient of the loss with respect to the indices h
// through the row softmax yhat = softmax(beta h). The loss is summed in fixed chunks of
// samples, so it does not depend on the worker count.
func (d *backend) SoftmaxLossGrad(ch channel.Spec, gamma, yhat, y device.Buffer, n int, scale float64) (float64, error) {
	const op = "cpu SoftmaxLossGrad"
	t := ch.T
	tt := t * t
	gs, ys, ts := data(gamma), data(yhat), data(y)
	part := make([]float64, chunks(n, chunkSamples))
	err := d.forChunks(op, len(part), func() func(c int) {
		G := make([]float64, t)
		return func(c int) {
			lo, hi := span(c, n, chunkSamples)
			var loss float64
			for mu := lo; mu < hi; mu++ {
				for a := 0; a < t; a++ {
					row := mu*tt + a*t
					var dot float64
					for c := 0; c < t; c++ {
						diff := ys[row+c] - ts[row+c]
						loss += diff * diff
						G[c] = 2 * scale * diff
						dot += G[c] * ys[row+c]
					}
					for b := 0; b < t; b++ {
						gs[row+b] = ch.Beta * ys[row+b] * (G[b] - dot)
					}
				}
				for a := 1; a < t; a++ {
					for b := 0; b < a; b++ {
						s := (gs[mu*tt+a*t+b] + gs[mu*tt+b*t+a]) * 0.5
						gs[mu*tt+a*t+b], gs[mu*tt+b*t+a] = s, s
					}
				}
			}
			part[c] = scale * loss
		}
	})
	return sumChunks(part), err
}

// AdamStep applies one Adam update with bias correction at step t (torch's Adam without weight
// decay): m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2,
// w -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps).
func (d *backend) AdamStep(w, g, m, v device.Buffer, lr, b1, b2, eps float64, t int) error {
	const op = "cpu AdamStep"
	ws, gs, ms, vs := data(w), data(g), data(m), data(v)
	c1 := 1 - math.Pow(b1, float64(t))
	c2 := 1 - math.Pow(b2, float64(t))
	n := len(ws)
	return d.forChunks(op, chunks(n, chunkElems), same(func(c int) {
		lo, hi := span(c, n, chunkElems)
		for i := lo; i < hi; i++ {
			ms[i] = b1*ms[i] + (1-b1)*gs[i]
			vs[i] = b2*vs[i] + (1-b2)*gs[i]*gs[i]
			ws[i] -= lr * (ms[i] / c1) / (math.Sqrt(vs[i]/c2) + eps)
		}
	}))
}
