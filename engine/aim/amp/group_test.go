package amp

import (
	"math"
	"testing"

	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/aim"
	"github.com/aimtheory/aim/engine/internal/devtest"
)

// cpuGroup returns a group of k CPU devices (host sums, members in turn).
func cpuGroup(t *testing.T, k int) *device.Group {
	return devtest.Group(t, k, func() device.Device { return cpu.New(0) })
}

// runGroup draws the data on g (stored tokens for chunk 0) and runs GAMP-RIE.
func runGroup(t *testing.T, g *device.Group, p aim.Params, chunk int, o Options) Result {
	t.Helper()
	parts, err := aim.GenerateGroup(g, p, chunk)
	if err != nil {
		t.Fatal(err)
	}
	defer aim.FreeGroup(g, parts)
	res, err := RunGroup(g, parts, o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestGroupEqualsOneDevice: a group of k CPU devices gives the trajectory of one CPU device.
// With stored tokens and k equal shards (N = 480 = k * 480/k) it is bit for bit the trajectory
// of one device streaming chunks of N/k samples: the same products on the same samples, the
// shards' sums added in member order (HostSum) as the chunks' are in chunk order. Against the
// stored single-device run (one chunk of all N), and for uneven shards or streamed members,
// the sums are grouped differently, and every iteration's error, step and Delta agree to
// 1e-12 relative. Both starts are checked (the paper's start broadcasts a random S-hat).
func TestGroupEqualsOneDevice(t *testing.T) {
	p := softmaxParams(40, 2, 0.3, 11) // N = 480
	if p.N() != 480 {
		t.Fatalf("N = %d", p.N())
	}
	for _, paper := range []bool{false, true} {
		o := DefaultOptions()
		o.MaxIter, o.Tol, o.PaperInit = 6, 1e-12, paper
		one := cpuGroup(t, 1)
		stored := runGroup(t, one, p, 0, o)
		for _, c := range []struct {
			k, chunk int  // members, streamed chunk of each (0: stored)
			exact    bool // bit for bit against one device streaming chunks of N/k
		}{{2, 0, true}, {3, 0, true}, {4, 0, true}, {7, 0, false}, {2, 100, false}, {3, 37, false}} {
			got := runGroup(t, cpuGroup(t, c.k), p, c.chunk, o)
			if len(got.Trace) != len(stored.Trace) {
				t.Fatalf("paper %v, k = %d: %d iterations, one device %d", paper, c.k, len(got.Trace), len(stored.Trace))
			}
			var ref Result
			if c.exact {
				ref = runGroup(t, one, p, p.N()/c.k, o)
			}
			worst := 0.0
			for i, a := range stored.Trace {
				b := got.Trace[i]
				for _, v := range [][2]float64{{a.Error, b.Error}, {a.Step, b.Step}, {a.Delta, b.Delta}} {
					worst = math.Max(worst, math.Abs(v[0]-v[1])/math.Abs(v[0]))
				}
				if c.exact {
					r := ref.Trace[i]
					if r.Error != b.Error || r.Step != b.Step || r.Delta != b.Delta {
						t.Errorf("paper %v, k = %d, iteration %d: group %+v, one device in chunks of %d %+v", paper, c.k, i+1, b, p.N()/c.k, r)
					}
				}
			}
			if worst > 1e-12 {
				t.Errorf("paper %v, k = %d, chunk %d: largest relative difference from one stored device %.3g", paper, c.k, c.chunk, worst)
			}
			t.Logf("paper %v, k = %d, chunk %d: largest relative difference from one stored device %.2g", paper, c.k, c.chunk, worst)
		}
	}
}
