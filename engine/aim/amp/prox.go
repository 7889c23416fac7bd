package amp

import (
	"fmt"
	"math"
	"sync"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/internal/par"
)

// proxStep is the channel step of GAMP for ERM where it runs on the host: the proximal map of
// the per-sample square loss (channel.SquareLoss) for every sample of a chunk, with the device's
// omega and y downloaded and g uploaded (n T^2 values each way, against the n T D values of the
// chunk's tokens).
// The host buffers and the per-worker losses are pooled across iterations (and the members of a
// group, which run it concurrently).
type proxStep struct {
	T    int
	Beta float64

	bufs  sync.Pool // *proxBufs
	works sync.Pool // *proxWork
}

// proxBufs are the host copies of one chunk's omega, y and g.
type proxBufs struct{ om, ys, gs []float64 }

// proxWork is one worker's loss and packed vectors.
type proxWork struct {
	l      *channel.SquareLoss
	ou, pr []float64
}

// proxChunk is the number of samples per chunk of the host's parallel loop.
const proxChunk = 64

// run writes g for n samples in z-coordinates (the T x T matrices omega, of which the upper
// triangle is read, and g, written symmetric) and returns sum_mu sum_{a<=b} g_ab^2 and
// sum_mu (M - tr dP/domega). In unit coordinates omega_u = omega_z/sqrt(2) and the variance is
// V/2; f = (P - omega_u)/(V/2) and g_z = f/sqrt(2). The sums are folded in chunk order, so they
// do not depend on the worker count.
func (p *proxStep) run(dev device.Device, g, y, omega device.Buffer, n int, V float64) (sumSq, sumJ float64, err error) {
	T, M := p.T, channel.Fields(p.T)
	tt := T * T
	b, _ := p.bufs.Get().(*proxBufs)
	if b == nil {
		b = &proxBufs{}
	}
	defer p.bufs.Put(b)
	for _, s := range []*[]float64{&b.om, &b.ys, &b.gs} {
		if cap(*s) < n*tt {
			*s = make([]float64, n*tt)
		}
		*s = (*s)[:n*tt]
	}
	om, ys, gs := b.om, b.ys, b.gs
	if err := device.Seq(func() error { return dev.Download(om, omega) }, func() error { return dev.Download(ys, y) }); err != nil {
		return 0, 0, err
	}
	vu := V / 2
	type sums struct{ sq, j float64 }
	var takenMu sync.Mutex
	var taken []*proxWork
	defer func() {
		for _, w := range taken {
			p.works.Put(w)
		}
	}()
	res, err := par.MapReduce(0, par.Chunks(n, proxChunk), func() (*proxWork, error) {
		w, _ := p.works.Get().(*proxWork)
		if w == nil {
			l, err := channel.NewSquareLoss(T, p.Beta)
			if err != nil {
				return nil, err
			}
			w = &proxWork{l: l, ou: make([]float64, M), pr: make([]float64, M)}
		}
		takenMu.Lock()
		taken = append(taken, w)
		takenMu.Unlock()
		return w, nil
	}, func(w *proxWork, c int) (sums, error) {
		lo, hi := par.Span(c, n, proxChunk)
		var s sums
		for mu := lo; mu < hi; mu++ {
			o := om[mu*tt : (mu+1)*tt]
			k := 0
			for a := 0; a < T; a++ {
				for b := a; b < T; b++ {
					w.ou[k] = o[a*T+b] / math.Sqrt2
					k++
				}
			}
			yc := ys[mu*tt : (mu+1)*tt]
			if T == 1 {
				yc = yc[:1]
			}
			_, trJ, err := w.l.Prox(w.pr, yc, w.ou, vu)
			if err != nil {
				return s, fmt.Errorf("sample %d: %w", mu, err)
			}
			s.j += float64(M) - trJ
			gm := gs[mu*tt : (mu+1)*tt]
			k = 0
			for a := 0; a < T; a++ {
				for b := a; b < T; b++ {
					gz := (w.pr[k] - w.ou[k]) / vu / math.Sqrt2
					gm[a*T+b], gm[b*T+a] = gz, gz
					s.sq += gz * gz
					k++
				}
			}
		}
		return s, nil
	}, sums{}, func(a, b sums) sums { return sums{a.sq + b.sq, a.j + b.j} })
	if err != nil {
		return 0, 0, fmt.Errorf("ERM channel step: %w", err)
	}
	if err := dev.Upload(g, gs); err != nil {
		return 0, 0, err
	}
	return res.sq, res.j, nil
}
