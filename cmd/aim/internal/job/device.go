package job

import (
	"fmt"
	"strconv"

	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/device/auto"
	"github.com/aimtheory/aim/engine/aim"
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

// checkMemory refuses a grid of runs, before anything is allocated, when its largest run needs
// more memory than the device has free. A run needs the larger of drawing its data
// (aim.Params.Bytes) and holding the data while the algorithm's own buffers (algo) live: the
// engine gives the parts, and this sum of them is the CLI's.
func checkMemory(dev device.Device, rhos, alphas []float64, params func(rho, alpha float64) aim.Params, algo func(aim.Params) uint64) error {
	var need uint64
	var at aim.Params
	for _, r := range rhos {
		for _, a := range alphas {
			p := params(r, a)
			if n := max(p.Bytes(), p.DataBytes()+algo(p)); n > need {
				need, at = n, p
			}
		}
	}
	if free := dev.Info().FreeBytes; need > free {
		return Inputf("a run at D = %d, alpha = %g needs %s of %s memory, and %s is available",
			at.D, at.Alpha, device.Bytes(need), dev.Info().Name, device.Bytes(free))
	}
	return nil
}

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
