// Package auto opens a compute device by name: "cpu", "cuda", or "auto" (the GPU when CUDA is
// usable, else the CPU, saying why). It is the one place that imports every backend.
package auto

import (
	"fmt"

	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/device/cuda"
)

// Names lists the device names Open accepts.
var Names = []string{"auto", "cpu", "cuda"}

// Open returns the device called name, with workers goroutines for the CPU backend (0: all
// cores) and its other options at their defaults (the BLAS of AIM_BLAS, all cores for its
// threads), and a sentence saying which device was chosen and why. The device is the checked
// front of its backend (device.Checked, inside cpu.Device or cuda.Device). Release it with
// Close.
func Open(name string, workers int) (device.Device, string, error) {
	return OpenWith(name, cpu.Options{Workers: workers})
}

// OpenWith is Open with every option of the CPU backend (workers, BLAS library, its threads);
// they apply when the CPU is chosen. A BLAS library that was asked for by name and cannot be
// loaded is an error.
func OpenWith(name string, o cpu.Options) (device.Device, string, error) {
	switch name {
	case "cpu":
		d, err := cpu.Open(o)
		if err != nil {
			return nil, "", fmt.Errorf("device cpu: %w", err)
		}
		return d, d.Info().Description, nil
	case "cuda":
		d, err := cuda.Open(0)
		if err != nil {
			return nil, "", fmt.Errorf("device cuda: %w", err)
		}
		return d, d.Info().Description, nil
	case "auto":
		d, err := cuda.Open(0)
		if err == nil {
			return d, "auto: " + d.Info().Description, nil
		}
		c, cerr := cpu.Open(o)
		if cerr != nil {
			return nil, "", fmt.Errorf("device auto: CUDA is not usable (%v), and the CPU: %w", err, cerr)
		}
		return c, fmt.Sprintf("auto: using the CPU (%s): CUDA is not usable: %v", c.Info().Description, err), nil
	default:
		return nil, "", fmt.Errorf("unknown device %q (want auto, cpu or cuda)", name)
	}
}

// Close closes dev (dev.Close: a GPU's context and handles, the CPU's scratch); a nil dev is
// nothing to close.
func Close(dev device.Device) error {
	if dev == nil {
		return nil
	}
	return dev.Close()
}
