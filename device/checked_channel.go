package device

import (
	"math"

	"github.com/aimtheory/aim/channel"
)

// channel checks a channel's kind and parameters (channel.Spec.Validate), that the backend
// computes it (Channels) and n >= 0, and returns n T^2.
func (c *Checked) channel(op string, ch channel.Spec, n int) (int, error) {
	if ch.Kind != channel.KindSoftmax && ch.Kind != channel.KindHardmax && ch.Kind != channel.KindLinear {
		return 0, c.errf(op, "unknown channel %v", ch)
	}
	if ch.T < 1 {
		return 0, c.errf(op, "channel %v with T = %d, need T >= 1: %w", ch, ch.T, ErrSize)
	}
	if err := ch.Validate(); err != nil {
		return 0, c.errf(op, "%w", err)
	}
	if err := c.chans.Check(ch); err != nil {
		return 0, c.errf(op, "%w", err)
	}
	return c.sizes(op, "n, t, t", n, ch.T, ch.T)
}

// Channels returns the channels the backend declares (channel.Support): the channel operations
// refuse the others with an error wrapping channel.ErrUnsupported.
func (c *Checked) Channels() channel.Support { return c.chans }

// ChannelOutput computes y_mu = g(h_mu) (Ops) after checking the channel's kind and T, n >= 0,
// that y and h hold n T^2 values, and that y is h (in place) or does not overlap it.
func (c *Checked) ChannelOutput(ch channel.Spec, y, h Buffer, n int) (err error) {
	const op = "ChannelOutput"
	if err := c.open(op); err != nil {
		return err
	}
	ntt, err := c.channel(op, ch, n)
	if err != nil {
		return err
	}
	bs, err := c.args(op, argSpec{"y", y, ntt}, argSpec{"h", h, ntt})
	if err != nil {
		return err
	}
	yb, hb := bs[0], bs[1]
	if err := c.sameOrDisjoint(op, "y", "h", yb.use(ntt), hb.use(ntt)); err != nil {
		return err
	}
	if ch.Kind == channel.KindLinear {
		return c.linearOutput(y, h, n)
	}
	defer c.guard(op, &err)
	if o := c.obs.Load(); o != nil {
		return (*o)(op, func() error { return c.b.ChannelOutput(ch, yb.raw, hb.raw, n) })
	}
	return c.b.ChannelOutput(ch, yb.raw, hb.raw, n)
}

// ChannelGOut computes g_out and returns its square-sum (Ops) after checking the channel, n,
// 0 < V < inf, that g, y and omega hold n T^2 values, that g does not overlap y, and that g
// is omega or does not overlap it.
func (c *Checked) ChannelGOut(ch channel.Spec, g, y, omega Buffer, n int, v float64) (s float64, err error) {
	const op = "ChannelGOut"
	if err := c.open(op); err != nil {
		return 0, err
	}
	ntt, err := c.channel(op, ch, n)
	if err != nil {
		return 0, err
	}
	if !(v > 0) || math.IsInf(v, 1) {
		return 0, c.errf(op, "variance V = %g, need 0 < V < inf", v)
	}
	bs, err := c.args(op, argSpec{"g", g, ntt}, argSpec{"y", y, ntt}, argSpec{"omega", omega, ntt})
	if err != nil {
		return 0, err
	}
	gb, yb, ob := bs[0], bs[1], bs[2]
	if err := c.disjoint(op, "output g must not overlap the buffer y", gb.use(ntt), yb.use(ntt)); err != nil {
		return 0, err
	}
	if err := c.sameOrDisjoint(op, "g", "omega", gb.use(ntt), ob.use(ntt)); err != nil {
		return 0, err
	}
	if ch.Kind == channel.KindLinear {
		return c.linearGOut(ch, g, y, omega, n, v)
	}
	defer c.guard(op, &err)
	if o := c.obs.Load(); o != nil {
		var s float64
		err := (*o)(op, func() (e error) { s, e = c.b.ChannelGOut(ch, gb.raw, yb.raw, ob.raw, n, v); return e })
		return s, err
	}
	return c.b.ChannelGOut(ch, gb.raw, yb.raw, ob.raw, n, v)
}

// linearOutput is ChannelOutput of the linear channel (T = 1): y = h, a Copy of the n values
// unless y is h.
func (c *Checked) linearOutput(y, h Buffer, n int) error {
	yv, err := View(y, 0, n)
	if err != nil {
		return err
	}
	hv, err := View(h, 0, n)
	if err != nil {
		return err
	}
	if y.(*buffer).root == h.(*buffer).root && y.(*buffer).off == h.(*buffer).off {
		return nil
	}
	return c.Copy(yv, hv)
}

// linearGOut is ChannelGOut of the linear channel (T = 1) from the vector operations, so that
// every backend computes it with no kernel of its own: in the operation's z-coordinates
// (z = h at T = 1), g = (y - omega)/(V + Delta) (channel.Linear.GOut in unit coordinates,
// g_z = g_u/sqrt(2)), as g <- omega (a Copy unless g is omega), g <- c y - c g with
// c = 1/(V + Delta), and the square-sum Dot(g, g).
func (c *Checked) linearGOut(ch channel.Spec, g, y, omega Buffer, n int, v float64) (float64, error) {
	gv, err := View(g, 0, n)
	if err != nil {
		return 0, err
	}
	yv, err := View(y, 0, n)
	if err != nil {
		return 0, err
	}
	ov, err := View(omega, 0, n)
	if err != nil {
		return 0, err
	}
	if g.(*buffer).root != omega.(*buffer).root || g.(*buffer).off != omega.(*buffer).off {
		if err := c.Copy(gv, ov); err != nil {
			return 0, err
		}
	}
	k := 1 / (v + ch.Noise)
	if err := c.Axpby(gv, k, yv, -k); err != nil {
		return 0, err
	}
	return c.Dot(gv, gv)
}
