package job

import (
	"fmt"
	"strconv"

	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/device/auto"
)

// Device is a compute device opened for jobs, with the sentence that says which and why.
type Device struct {
	dev  device.Device
	Note string // which device, and why (auto's choice)
}

// OpenDevice opens the device called name (auto, cpu or cuda) with workers goroutines and
// threads BLAS threads on the CPU (0: all cores). A device that cannot be opened is bad input.
func OpenDevice(name string, workers, threads int) (*Device, error) {
	dev, note, err := auto.OpenThreads(name, workers, threads)
	if err != nil {
		return nil, InputError{err}
	}
	return &Device{dev: dev, Note: note}, nil
}

// Name is the device's name, as the CSVs' device column writes it.
func (d *Device) Name() string { return d.dev.Info().Name }

// Close releases the device.
func (d *Device) Close() { auto.Close(d.dev) }

// checkHostMemory refuses, before anything is allocated, a run that needs more memory than
// the host has available (skipped where the available memory cannot be read).
func checkHostMemory(what string, need uint64) error {
	total, free := auto.HostMemory()
	if total > 0 && need > free {
		return Inputf("%s needs %s of memory, and %s is available", what, device.Bytes(need), device.Bytes(free))
	}
	return nil
}

func itoa(n int) string { return strconv.Itoa(n) }

// where names a run in messages.
func where(D int, alpha float64) string { return fmt.Sprintf("a run at D = %d, alpha = %g", D, alpha) }
