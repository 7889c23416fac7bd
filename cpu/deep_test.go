package cpu

import (
	"math"
	"testing"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/device"
)

// TestDeepSample: the CPU backend's DeepSample equals channel.DeepSampler run task by task on
// the normals of each task's slot (bit for bit), at L = 2, 3 and 4 with 1 and 3 workers; a bad
// slot and a V that is not positive definite give their status and NaN values.
func TestDeepSample(t *testing.T) {
	const (
		n, draws = 13, 301
		c, beta  = 0.7, 1.3
		seed     = 11
		offset   = 1<<60 + 1<<40
		stride   = 1 << 24
	)
	for L := channel.DeepMinL; L <= channel.DeepMaxL; L++ {
		nin, nout, st := channel.DeepIn(L), channel.DeepOut(L), channel.DeepOutStatus(L)
		in := channel.DeepTasks(5, n, L, c, beta)
		in[4*nin] = 2.5              // task 4: a slot that is not an integer
		in[7*nin+3+2*L+L*L-1] = -0.1 // task 7: V_LL < 0
		want := make([]float64, n*nout)
		q := channel.NewDeepSampler(L, c, beta)
		g := make([]float64, draws*channel.DeepNormals(L))
		for i := 0; i < n; i++ {
			task, res := in[i*nin:(i+1)*nin], want[i*nout:(i+1)*nout]
			if i == 4 {
				continue
			}
			device.FillNormals(g, seed, offset+uint64(task[0])*stride)
			q.Moments(res, task[1:3], task[3:3+2*L], task[3+2*L:], g)
		}
		for _, workers := range []int{1, 3} {
			d := New(workers)
			ib, ob := d.mustAlloc(t, len(in)), d.mustAlloc(t, len(want))
			if err := d.Upload(ib, in); err != nil {
				t.Fatal(err)
			}
			if err := d.Capabilities().DeepSampler.DeepSample(ob, ib, n, L, draws, c, beta, seed, offset, stride); err != nil {
				t.Fatal(err)
			}
			got := make([]float64, len(want))
			if err := d.Download(got, ob); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < n; i++ {
				res := got[i*nout : (i+1)*nout]
				switch i {
				case 4:
					if res[st] != channel.DeepBadSlot || !math.IsNaN(res[0]) {
						t.Errorf("L = %d, workers %d: bad slot gives status %v, mean %v", L, workers, res[st], res[0])
					}
					continue
				case 7:
					if res[st] != channel.DeepNotPD || !math.IsNaN(res[0]) {
						t.Errorf("L = %d, workers %d: V not PD gives status %v, mean %v", L, workers, res[st], res[0])
					}
					continue
				}
				if res[st] != channel.DeepOK || !(res[channel.DeepOutESS(L)] >= 1) {
					t.Errorf("L = %d, workers %d, task %d: status %v, ESS %v", L, workers, i, res[st], res[channel.DeepOutESS(L)])
				}
				for k, v := range res {
					if w := want[i*nout+k]; math.Float64bits(v) != math.Float64bits(w) {
						t.Fatalf("L = %d, workers %d, task %d, out[%d] = %v, the sampler alone %v", L, workers, i, k, v, w)
					}
				}
			}
		}
	}
}
