package devtest

import (
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
)

// limited is a device with some capabilities taken away.
type limited struct {
	device.Device
	caps device.Caps
}

func (l limited) Capabilities() device.Caps { return l.caps }

// TestCountingCapabilities: Counting exposes exactly the capabilities of the device it wraps,
// for every subset of them, and counts the quad-form calls it forwards.
func TestCountingCapabilities(t *testing.T) {
	dev := cpu.New(1)
	full := dev.Capabilities()
	fields := reflect.TypeFor[device.Caps]().NumField()
	if got := full.Names(); len(got) != fields {
		t.Fatalf("the CPU has capabilities %v, want all %d (this test takes subsets of them)", got, fields)
	}
	for mask := 0; mask < 1<<fields; mask++ {
		caps := full
		v := reflect.ValueOf(&caps).Elem()
		for i := 0; i < fields; i++ {
			if mask&(1<<i) == 0 {
				v.Field(i).SetZero()
			}
		}
		inner := limited{dev, caps}
		if got, want := NewCounting(inner).Capabilities().Names(), inner.Capabilities().Names(); !slices.Equal(got, want) {
			t.Errorf("Counting of a device with %v exposes %v", want, got)
		}
	}

	c := NewCounting(dev)
	q := c.Capabilities().QuadFormSummer
	bufs, err := device.AllocAll(c, 4, 2*2*2, 2*2*2, 2*2*2)
	if err != nil {
		t.Fatal(err)
	}
	out, cm, x, scratch := bufs[0], bufs[1], bufs[2], bufs[3]
	if err := c.Upload(cm, []float64{1, 0, 0, 1, 2, 1, 1, 2}); err != nil {
		t.Fatal(err)
	}
	if err := c.Upload(x, []float64{1, 2, 3, 4, 5, 6, 7, 8}); err != nil {
		t.Fatal(err)
	}
	if err := q.QuadFormSum(out, cm, x, scratch, 2, 2, 2, 1); err != nil {
		t.Fatal(err)
	}
	got := make([]float64, 4)
	if err := c.Download(got, out); err != nil {
		t.Fatal(err)
	}
	// X_1^T I X_1 + X_2^T [[2 1] [1 2]] X_2 with X_1 = [[1 2] [3 4]], X_2 = [[5 6] [7 8]]:
	// [[10 14] [14 20]] + [[218 254] [254 296]]. The native BLAS path factors C and rounds
	// (1e-16 relative seen); the pure-Go path is exact here.
	want := []float64{228, 268, 268, 316}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-13*want[i] {
			t.Errorf("QuadFormSum through Counting = %v, want %v to 1e-13", got, want)
			break
		}
	}
	if c.QuadFormSums() != 1 {
		t.Errorf("Counting saw %d quad-form calls, want 1", c.QuadFormSums())
	}
	device.FreeAll(c, bufs...)
	if c.Live() != 0 {
		t.Errorf("%d bytes live after FreeAll", c.Live())
	}
}
