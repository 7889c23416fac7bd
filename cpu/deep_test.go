package cpu

import (
	"math"
	"testing"

	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/kernels"
)

// TestDeepSample: the CPU backend's DeepSample equals kernels.DeepSampler run task by task on
// the normals of each task's slot (bit for bit), with 1 and 3 workers; a bad slot and a V that
// is not positive definite give their status and NaN values.
func TestDeepSample(t *testing.T) {
	const (
		n, draws = 13, 301
		c, beta  = 0.7, 1.3
		seed     = 11
		offset   = 1<<60 + 1<<40
		stride   = 1 << 24
	)
	in := kernels.DeepTasks(5, n, c, beta)
	in[4*kernels.DeepIn] = 2.5      // task 4: a slot that is not an integer
	in[7*kernels.DeepIn+9+4] = -0.1 // task 7: V_22 < 0
	want := make([]float64, n*kernels.DeepOut)
	q := kernels.NewDeepSampler(c, beta)
	g := make([]float64, draws*kernels.DeepNormals)
	for i := 0; i < n; i++ {
		task, res := in[i*kernels.DeepIn:(i+1)*kernels.DeepIn], want[i*kernels.DeepOut:(i+1)*kernels.DeepOut]
		if i == 4 {
			continue
		}
		device.FillNormals(g, seed, offset+uint64(task[0])*stride)
		q.Moments(res, task[1:3], task[3:9], task[9:18], g)
	}
	for _, workers := range []int{1, 3} {
		d := New(workers)
		ib, ob := d.mustAlloc(t, len(in)), d.mustAlloc(t, len(want))
		if err := d.Upload(ib, in); err != nil {
			t.Fatal(err)
		}
		if err := d.Capabilities().DeepSampler.DeepSample(ob, ib, n, draws, c, beta, seed, offset, stride); err != nil {
			t.Fatal(err)
		}
		got := make([]float64, len(want))
		if err := d.Download(got, ob); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			res := got[i*kernels.DeepOut : (i+1)*kernels.DeepOut]
			st := res[kernels.DeepOutStatus]
			switch i {
			case 4:
				if st != kernels.DeepBadSlot || !math.IsNaN(res[0]) {
					t.Errorf("workers %d: bad slot gives status %v, mean %v", workers, st, res[0])
				}
				continue
			case 7:
				if st != kernels.DeepNotPD || !math.IsNaN(res[0]) {
					t.Errorf("workers %d: V not PD gives status %v, mean %v", workers, st, res[0])
				}
				continue
			}
			if st != kernels.DeepOK || !(res[kernels.DeepOutESS] >= 1) {
				t.Errorf("workers %d, task %d: status %v, ESS %v", workers, i, st, res[kernels.DeepOutESS])
			}
			for k, v := range res {
				if w := want[i*kernels.DeepOut+k]; math.Float64bits(v) != math.Float64bits(w) {
					t.Fatalf("workers %d, task %d, out[%d] = %v, the sampler alone %v", workers, i, k, v, w)
				}
			}
		}
	}
}
