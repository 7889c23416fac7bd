package smi

import (
	"container/heap"
	"math"
)

// cubature integrates a vector-valued function over a hyper-rectangle in n >= 2 dimensions by
// adaptive subdivision with the degree-7 Genz-Malik rule and its embedded degree-5 rule as the
// error estimate (A. C. Genz and A. A. Malik, J. Comput. Appl. Math. 6 (1980) 295; the same
// scheme as Steven G. Johnson's hcubature). A region is split in two along the axis with the
// largest fourth difference of f[0]; the region with the largest error estimate is split
// first. Work space is kept between calls: one cubature per goroutine.
type cubature struct {
	n, nf   int
	pts     [][]float64 // rule points on [-1, 1]^n
	wts     [][2]float64
	cls     []int // point class: 0 centre, 1 lambda2 axis, 2 lambda4 axis, 3 pairs, 4 corners
	axis    []int // for classes 1, 2: the axis of the point
	x, fx   []float64
	regions regionHeap
	pool    []*region
	vals    [][]float64 // fx of every rule point of the region being evaluated
}

type region struct {
	c, h      []float64
	val, err  []float64
	errMax    float64
	splitAxis int
}

type regionHeap []*region

func (q regionHeap) Len() int            { return len(q) }
func (q regionHeap) Less(i, j int) bool  { return q[i].errMax > q[j].errMax }
func (q regionHeap) Swap(i, j int)       { q[i], q[j] = q[j], q[i] }
func (q *regionHeap) Push(x interface{}) { *q = append(*q, x.(*region)) }
func (q *regionHeap) Pop() interface{} {
	old := *q
	r := old[len(old)-1]
	*q = old[:len(old)-1]
	return r
}

// Genz-Malik nodes.
var (
	gmLambda2 = math.Sqrt(9.0 / 70)
	gmLambda4 = math.Sqrt(9.0 / 10)
	gmLambda5 = math.Sqrt(9.0 / 19)
)

func newCubature(n, nf int) *cubature {
	c := &cubature{n: n, nf: nf, x: make([]float64, n), fx: make([]float64, nf)}
	nn := float64(n)
	w1 := (12824 - 9120*nn + 400*nn*nn) / 19683
	w2 := 980.0 / 6561
	w3 := (1820 - 400*nn) / 19683
	w4 := 200.0 / 19683
	w5 := 6859.0 / 19683 / math.Ldexp(1, n)
	e1 := (729 - 950*nn + 50*nn*nn) / 729
	e2 := 245.0 / 486
	e3 := (265 - 100*nn) / 1458
	e4 := 25.0 / 729
	add := func(p []float64, w [2]float64, cls, ax int) {
		c.pts = append(c.pts, p)
		c.wts = append(c.wts, w)
		c.cls = append(c.cls, cls)
		c.axis = append(c.axis, ax)
	}
	add(make([]float64, n), [2]float64{w1, e1}, 0, -1)
	for i := 0; i < n; i++ {
		for _, s := range []float64{-1, 1} {
			p := make([]float64, n)
			p[i] = s * gmLambda2
			add(p, [2]float64{w2, e2}, 1, i)
			q := make([]float64, n)
			q[i] = s * gmLambda4
			add(q, [2]float64{w3, e3}, 2, i)
		}
	}
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			for _, si := range []float64{-1, 1} {
				for _, sj := range []float64{-1, 1} {
					p := make([]float64, n)
					p[i], p[j] = si*gmLambda4, sj*gmLambda4
					add(p, [2]float64{w4, e4}, 3, -1)
				}
			}
		}
	}
	for m := 0; m < 1<<n; m++ {
		p := make([]float64, n)
		for i := range p {
			p[i] = gmLambda5
			if m>>i&1 == 1 {
				p[i] = -gmLambda5
			}
		}
		add(p, [2]float64{w5, 0}, 4, -1)
	}
	c.vals = make([][]float64, len(c.pts))
	for i := range c.vals {
		c.vals[i] = make([]float64, nf)
	}
	return c
}

// points returns the number of evaluations of one rule application.
func (c *cubature) points() int { return len(c.pts) }

func (c *cubature) newRegion() *region {
	if k := len(c.pool); k > 0 {
		r := c.pool[k-1]
		c.pool = c.pool[:k-1]
		return r
	}
	return &region{c: make([]float64, c.n), h: make([]float64, c.n), val: make([]float64, c.nf), err: make([]float64, c.nf)}
}

// rule applies the Genz-Malik pair to r, filling r.val, r.err, r.errMax (the largest of
// err[k]/scale[k]) and r.splitAxis. f writes the integrand at x into fx.
func (c *cubature) rule(r *region, f func(fx, x []float64), scale []float64) {
	vol := 1.0
	for _, h := range r.h {
		vol *= 2 * h
	}
	for k := range r.val {
		r.val[k], r.err[k] = 0, 0
	}
	for p, pt := range c.pts {
		for i := range c.x {
			c.x[i] = r.c[i] + r.h[i]*pt[i]
		}
		fx := c.vals[p]
		f(fx, c.x)
		w := c.wts[p]
		for k, v := range fx {
			r.val[k] += w[0] * v
			r.err[k] += w[1] * v
		}
	}
	r.errMax = 0
	for k := range r.val {
		r.val[k] *= vol
		r.err[k] = math.Abs(r.val[k] - vol*r.err[k])
		// f[0] >= 0 (a weight): a negative estimate, from the rule's negative weights on a
		// spiky region, is at least twice its size wrong, so that the region gets split.
		if k == 0 && r.val[0] < 0 {
			r.err[0] = math.Max(r.err[0], -2*r.val[0])
		}
		if s := scale[k]; s > 0 {
			r.errMax = math.Max(r.errMax, r.err[k]/s)
		}
	}
	// Fourth differences of f[0] along each axis choose the split.
	ratio := gmLambda2 * gmLambda2 / (gmLambda4 * gmLambda4)
	f0 := c.vals[0][0]
	best, bestAxis := -1.0, 0
	for i := 0; i < c.n; i++ {
		var s2, s4 float64
		for p := 1; p < 1+4*c.n; p++ {
			if c.axis[p] != i {
				continue
			}
			if c.cls[p] == 1 {
				s2 += c.vals[p][0]
			} else {
				s4 += c.vals[p][0]
			}
		}
		d := math.Abs(s2 - 2*f0 - ratio*(s4-2*f0))
		if d > best*(1+1e-10) {
			best, bestAxis = d, i
		}
	}
	r.splitAxis = bestAxis
}

// peak is a point where the integrand is concentrated, with its scale along each axis.
type peak struct {
	at, width []float64
}

// integrate integrates f over the box centre +- half and writes the estimate into val and the
// error estimate into err. A narrow peak between the rule's points is invisible to any error
// estimate, so the known peaks seed the partition (see below). It stops when every component's summed error is below
// tol * weight[k] * |val[0]| (weight[k] = 0 exempts component k), or when maxEval evaluations
// are spent, and reports whether the tolerance was met and how many evaluations it used.
func (c *cubature) integrate(val, err []float64, f func(fx, x []float64), centre, half []float64, tol float64, maxEval int, weight []float64, peaks []peak) (bool, int) {
	scale := make([]float64, c.nf)
	setScale := func(v0 float64) {
		for k := range scale {
			scale[k] = weight[k] * math.Abs(v0)
		}
	}
	for _, r := range c.regions {
		c.pool = append(c.pool, r)
	}
	c.regions = c.regions[:0]
	r := c.newRegion()
	copy(r.c, centre)
	copy(r.h, half)
	parts := []*region{r}
	// Split every region that meets the peak's neighbourhood (+- 4 widths) until it is no wider
	// than twice the peak's width: a rule whose points all miss a narrow peak sees neither the
	// peak nor an error, so the peak's tails must not sit in a coarse region either.
	for _, p := range peaks {
		for i := 0; i < len(parts); i++ {
			for {
				q := parts[i]
				if !q.near(p, 4) {
					break
				}
				ax, worst := -1, 2.0
				for a, h := range q.h {
					if x := h / p.width[a]; x > worst {
						ax, worst = a, x
					}
				}
				if ax < 0 {
					break
				}
				b := c.newRegion()
				copy(b.c, q.c)
				copy(b.h, q.h)
				q.h[ax] /= 2
				b.h[ax] /= 2
				q.c[ax] -= q.h[ax]
				b.c[ax] += b.h[ax]
				parts = append(parts, b)
			}
		}
	}
	setScale(1)
	for k := range val {
		val[k], err[k] = 0, 0
	}
	for _, q := range parts {
		c.rule(q, f, scale)
		for k := range val {
			val[k] += q.val[k]
			err[k] += q.err[k]
		}
	}
	s0 := math.Abs(val[0])
	setScale(s0)
	for _, q := range parts {
		c.rescore(q, scale)
		heap.Push(&c.regions, q)
	}
	evals := len(parts) * c.points()
	for {
		ok := true
		for k := range val {
			if err[k] > tol*scale[k] {
				ok = false
				break
			}
		}
		if ok && val[0] != 0 {
			return true, evals
		}
		if evals+2*c.points() > maxEval {
			return false, evals
		}
		r := heap.Pop(&c.regions).(*region)
		for k := range val {
			val[k] -= r.val[k]
			err[k] -= r.err[k]
		}
		a, b := c.newRegion(), c.newRegion()
		copy(a.c, r.c)
		copy(a.h, r.h)
		copy(b.c, r.c)
		copy(b.h, r.h)
		i := r.splitAxis
		a.h[i] /= 2
		b.h[i] /= 2
		a.c[i] -= a.h[i]
		b.c[i] += b.h[i]
		c.pool = append(c.pool, r)
		for _, s := range []*region{a, b} {
			c.rule(s, f, scale)
			for k := range val {
				val[k] += s.val[k]
				err[k] += s.err[k]
			}
			heap.Push(&c.regions, s)
		}
		evals += 2 * c.points()
		if v := math.Abs(val[0]); v > 2*s0 || v < s0/2 {
			s0 = v
			setScale(s0)
			for _, q := range c.regions {
				c.rescore(q, scale)
			}
			heap.Init(&c.regions)
		}
		// Summed errors drift by cancellation; recompute them now and then.
		if len(c.regions)%64 == 0 {
			for k := range err {
				err[k], val[k] = 0, 0
			}
			for _, q := range c.regions {
				for k := range err {
					err[k] += q.err[k]
					val[k] += q.val[k]
				}
			}
		}
	}
}

// near reports whether r meets the box p.at +- k p.width.
func (r *region) near(p peak, k float64) bool {
	for i, v := range p.at {
		if math.Abs(v-r.c[i]) > r.h[i]+k*p.width[i] {
			return false
		}
	}
	return true
}

func (c *cubature) rescore(r *region, scale []float64) {
	r.errMax = 0
	for k, e := range r.err {
		if scale[k] > 0 {
			r.errMax = math.Max(r.errMax, e/scale[k])
		}
	}
}

// positive re-integrates f over the final partition of the last integrate call with the
// 3-point Gauss-Legendre product rule in every region: less accurate than Genz-Malik but with
// positive weights, so that a nonnegative weight gives a nonnegative integral and the second
// moments of a measure stay those of a measure.
func (c *cubature) positive(val []float64, f func(fx, x []float64)) {
	nodes := [3]float64{-math.Sqrt(0.6), 0, math.Sqrt(0.6)}
	wts := [3]float64{5.0 / 9, 8.0 / 9, 5.0 / 9}
	for k := range val {
		val[k] = 0
	}
	idx := make([]int, c.n)
	total := 1
	for i := 0; i < c.n; i++ {
		total *= 3
	}
	for _, r := range c.regions {
		vol := 1.0
		for _, h := range r.h {
			vol *= h // [-1, 1]^n weights sum to 2^n: vol = prod (2h) / 2^n
		}
		for p := 0; p < total; p++ {
			w := vol
			k := p
			for i := range idx {
				idx[i] = k % 3
				k /= 3
				c.x[i] = r.c[i] + r.h[i]*nodes[idx[i]]
				w *= wts[idx[i]]
			}
			f(c.fx, c.x)
			for j, v := range c.fx {
				val[j] += w * v
			}
		}
	}
}
