// Package auto opens a compute device by name: "cpu", "cuda", or "auto" (the GPU when one is
// usable, else the CPU). It is the one place that imports every backend.
package auto

import (
	"fmt"

	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
)

// Names lists the device names Open accepts.
var Names = []string{"auto", "cpu", "cuda"}

// Open returns the device called name, with workers goroutines for the CPU backend (0: all
// cores), and a sentence saying which device was chosen and why.
func Open(name string, workers int) (device.Device, string, error) {
	switch name {
	case "cpu":
		d := cpu.New(workers)
		return d, d.Info().Description, nil
	case "auto":
		d := cpu.New(workers)
		return d, "auto: using the CPU (" + d.Info().Description + "): this build has no CUDA backend yet", nil
	case "cuda":
		return nil, "", fmt.Errorf("device cuda: this build has no CUDA backend yet; use --device cpu or auto")
	default:
		return nil, "", fmt.Errorf("unknown device %q (want auto, cpu or cuda)", name)
	}
}
