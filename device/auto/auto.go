// Package auto opens a compute device by name: "cpu", "cuda", or "auto" (the GPU when CUDA is
// usable, else the CPU, saying why). It is the one place that imports every backend.
package auto

import (
	"fmt"
	"io"

	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/device/cuda"
)

// Names lists the device names Open accepts.
var Names = []string{"auto", "cpu", "cuda"}

// Open returns the device called name, with workers goroutines for the CPU backend (0: all
// cores), and a sentence saying which device was chosen and why. Release it with Close.
func Open(name string, workers int) (device.Device, string, error) {
	switch name {
	case "cpu":
		d := cpu.New(workers)
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
		c := cpu.New(workers)
		return c, fmt.Sprintf("auto: using the CPU (%s): CUDA is not usable: %v", c.Info().Description, err), nil
	default:
		return nil, "", fmt.Errorf("unknown device %q (want auto, cpu or cuda)", name)
	}
}

// Close releases a device that holds resources (a GPU context); it does nothing for others.
func Close(dev device.Device) error {
	if c, ok := dev.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
