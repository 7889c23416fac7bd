// Package backend chooses and opens the compute backend: it parses the --device name ("auto",
// "cpu", "cpu:K", "cuda", "cuda:I", "cuda:I,J,..." or "cuda:all"), opens the CPU backend
// (package cpu) or the CUDA backend (package device/cuda) behind the checked front of package
// device, or a device.Group of several, and says which was chosen and why ("auto": the GPU when
// CUDA is usable, else the CPU, with the reason). It sits above both backends and is the one
// package that imports them; the engine sees only package device.
package backend

import (
	"fmt"

	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/device/cuda"
)

// Open returns the device called name (auto, cpu, cuda or cuda:I), with workers goroutines for the CPU backend (0: all
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
	}
	spec, err := Parse(name)
	if err != nil {
		return nil, "", err
	}
	if spec.Kind != "cuda" || len(spec.Ordinals) != 1 {
		return nil, "", fmt.Errorf("device %q is a group of devices, not one device", name)
	}
	d, err := cuda.Open(spec.Ordinals[0])
	if err != nil {
		return nil, "", fmt.Errorf("device %s: %w", name, err)
	}
	return d, d.Info().Description, nil
}

// Close closes dev (dev.Close: a GPU's context and handles, the CPU's scratch); a nil dev is
// nothing to close.
func Close(dev device.Device) error {
	if dev == nil {
		return nil
	}
	return dev.Close()
}
