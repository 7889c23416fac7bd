package job

import (
	"errors"
	"strings"
	"testing"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
)

// noNoise is a device that declares no channel with label noise, as the CUDA backend does.
type noNoise struct{ device.Device }

func (noNoise) Channels() channel.Support { return channel.Support{} }

// TestCheckChannel: a device group refuses, before anything is allocated, a channel that one
// of its members does not declare, as bad input that names the flag and says to use the CPU;
// the CPU takes every channel.
func TestCheckChannel(t *testing.T) {
	noisy := channel.Spec{Kind: channel.KindSoftmax, T: 2, Beta: 1, Noise: 0.01}
	for _, c := range []struct {
		members []device.Device
		refused bool
	}{
		{[]device.Device{cpu.New(1)}, false},
		{[]device.Device{cpu.New(1), noNoise{cpu.New(1)}}, true},
	} {
		g, err := device.NewGroup(c.members, &device.HostSum{}, false)
		if err != nil {
			t.Fatal(err)
		}
		d := &Device{Group: g}
		err = d.CheckChannel(noisy)
		var in InputError
		switch {
		case !c.refused && err != nil:
			t.Errorf("%s: %v", d.Name(), err)
		case c.refused && (!errors.As(err, &in) || !strings.Contains(err.Error(), "--noise 0.01") || !strings.Contains(err.Error(), "use --device cpu")):
			t.Errorf("%s: error %v, want bad input naming --noise and --device cpu", d.Name(), err)
		}
		if err := d.CheckChannel(channel.Spec{Kind: channel.KindHardmax, T: 2}); err != nil {
			t.Errorf("%s: hardmax: %v", d.Name(), err)
		}
		d.Close()
	}
}
