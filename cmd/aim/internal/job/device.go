package job

import (
	"fmt"

	"github.com/aimtheory/aim/backend"
	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/engine/aim"
)

// Device is a compute device or device group opened for jobs, with the sentence that says
// which and why.
type Device struct {
	Group *device.Group
	Note  string // which device, and why (auto's choice, a group's members and sums)
}

// OpenDevice opens the device or device group called name (auto, cpu, cpu:K, cuda, cuda:I,
// cuda:I,J,..., cuda:all) with workers goroutines and threads BLAS threads on the CPU (0: all
// cores). A device that cannot be opened is bad input.
func OpenDevice(name string, workers, threads int) (*Device, error) {
	g, note, err := backend.OpenGroupThreads(name, workers, threads)
	if err != nil {
		return nil, InputError{err}
	}
	return &Device{Group: g, Note: note}, nil
}

// Name is the device's name, as the CSVs' device column writes it ("cpu", "cuda", "cuda x2").
func (d *Device) Name() string { return d.Group.Name() }

// Close releases the device; a nil Device (none opened) is left alone.
func (d *Device) Close() {
	if d != nil {
		d.Group.Close()
	}
}

// FreeBytes is the memory free on the group's fullest member: what each member may allocate.
func (d *Device) FreeBytes() uint64 {
	free := d.Group.Lead().Info().FreeBytes
	for _, m := range d.Group.Members {
		free = min(free, m.Info().FreeBytes)
	}
	return free
}

// ShardSamples is the number of samples of a run of p on the group's most loaded member.
func (d *Device) ShardSamples(p aim.Params) int {
	return (p.N() + d.Group.Len() - 1) / d.Group.Len()
}

// CheckHostMemory refuses, before anything is allocated, a run that needs more memory than
// the host has available (skipped where the available memory cannot be read).
func CheckHostMemory(what string, need uint64) error {
	total, free := backend.HostMemory()
	if total > 0 && need > free {
		return Inputf("%s needs %s of memory, and %s is available", what, device.Bytes(need), device.Bytes(free))
	}
	return nil
}

// Where names a run in messages.
func Where(D int, alpha float64) string { return fmt.Sprintf("a run at D = %d, alpha = %g", D, alpha) }

// HasTrainer reports whether every member has the training operations (device.Caps.Trainer).
func (d *Device) HasTrainer() bool {
	for _, m := range d.Group.Members {
		if m.Capabilities().Trainer == nil {
			return false
		}
	}
	return true
}

// CheckChannel refuses, before anything is allocated, a channel that a member of the group
// does not compute (device.Device.Channels: the CUDA backend has no kernel of the softmax with
// label noise), worded for the command line.
func (d *Device) CheckChannel(ch channel.Spec) error {
	for _, m := range d.Group.Members {
		if err := m.Channels().Check(ch); err != nil {
			return ChannelRefused(ch, d.Name(), err)
		}
	}
	return nil
}

// CheckPrecision refuses, as bad input, a precision of the large contractions that a member of
// the device does not compute (device.SupportsPrecision).
func (d *Device) CheckPrecision(p device.Precision) error {
	for _, m := range d.Group.Members {
		if err := device.SupportsPrecision(m, p); err != nil {
			return Inputf("--precision %v on %s: %v", p, d.Name(), err)
		}
	}
	return nil
}

// ChannelRefused words a device's refusal of a channel (channel.ErrUnsupported) on the
// command line: the CPU computes every channel.
func ChannelRefused(ch channel.Spec, on string, err error) error {
	if ch.Noise > 0 {
		return Inputf("--noise %g on %s: the softmax channel with label noise has no CUDA kernel; use --device cpu", ch.Noise, on)
	}
	return Inputf("the %v channel on %s: %v; use --device cpu", ch, on, err)
}
