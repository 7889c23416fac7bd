package backend

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/device/cuda"
)

// Spec is a parsed device name: what Parse reads from --device.
type Spec struct {
	Kind     string // "auto", "cpu" or "cuda"
	CPUs     int    // cpu: the number of CPU devices in the group (cpu = 1, cpu:K = K)
	Ordinals []int  // cuda: the GPUs, in group order (cuda = [0]); nil with All
	All      bool   // cuda:all: every GPU present
}

// Parse reads a device name: auto; cpu, or cpu:K for a group of K CPU devices in one process
// (which computes what one CPU device does: a check of the group machinery, not a speed-up);
// cuda (GPU 0), cuda:I, a group cuda:I,J,... in that order, or cuda:all. A malformed name,
// an ordinal twice, or a list that mixes cpu and cuda is an error that says so.
func Parse(name string) (Spec, error) {
	kind, arg, hasArg := strings.Cut(strings.TrimSpace(name), ":")
	switch kind {
	case "auto":
		if hasArg {
			return Spec{}, fmt.Errorf("device %q: auto takes no list", name)
		}
		return Spec{Kind: "auto"}, nil
	case "cpu":
		if !hasArg {
			return Spec{Kind: "cpu", CPUs: 1}, nil
		}
		k, err := strconv.Atoi(arg)
		if err != nil || k < 1 {
			if strings.Contains(arg, "cuda") {
				return Spec{}, fmt.Errorf("device %q: a group cannot mix cpu and cuda", name)
			}
			return Spec{}, fmt.Errorf("device %q: cpu:K needs a number of CPU devices K >= 1", name)
		}
		return Spec{Kind: "cpu", CPUs: k}, nil
	case "cuda":
		if !hasArg {
			return Spec{Kind: "cuda", Ordinals: []int{0}}, nil
		}
		if arg == "all" {
			return Spec{Kind: "cuda", All: true}, nil
		}
		var ords []int
		for _, f := range strings.Split(arg, ",") {
			f = strings.TrimSpace(f)
			if f == "cpu" || strings.HasPrefix(f, "cpu:") {
				return Spec{}, fmt.Errorf("device %q: a group cannot mix cpu and cuda", name)
			}
			i, err := strconv.Atoi(f)
			if err != nil || i < 0 {
				return Spec{}, fmt.Errorf("device %q: %q is not a GPU ordinal (want cuda:0, cuda:0,1 or cuda:all)", name, f)
			}
			for _, o := range ords {
				if o == i {
					return Spec{}, fmt.Errorf("device %q: GPU %d is listed twice", name, i)
				}
			}
			ords = append(ords, i)
		}
		return Spec{Kind: "cuda", Ordinals: ords}, nil
	}
	if strings.Contains(name, "cpu") && strings.Contains(name, "cuda") {
		return Spec{}, fmt.Errorf("device %q: a group cannot mix cpu and cuda", name)
	}
	return Spec{}, fmt.Errorf("unknown device %q (want auto, cpu, cpu:K, cuda, cuda:I, cuda:I,J,... or cuda:all)", name)
}

// OpenGroup opens the device or device group called name (Parse) with the CPU options o, and
// returns it with a sentence saying what was opened and why: auto's choice, or a group's
// members and how its sums travel (NCCL across GPUs when it loads, else staged through the
// host, with the reason). A GPU ordinal the machine does not have is an error that says how
// many it has. Close the group with its Close.
func OpenGroup(name string, o cpu.Options) (*device.Group, string, error) {
	spec, err := Parse(name)
	if err != nil {
		return nil, "", err
	}
	switch spec.Kind {
	case "auto":
		dev, note, err := OpenWith("auto", o)
		if err != nil {
			return nil, "", err
		}
		return device.Single(dev), note, nil
	case "cpu":
		members := make([]device.Device, spec.CPUs)
		for j := range members {
			d, err := cpu.Open(o)
			if err != nil {
				closeAll(members)
				return nil, "", fmt.Errorf("device %s: %w", name, err)
			}
			members[j] = d
		}
		g, err := device.NewGroup(members, &device.HostSum{}, false)
		if err != nil {
			closeAll(members)
			return nil, "", err
		}
		return g, g.Describe(), nil
	}
	ords := spec.Ordinals
	if spec.All || len(ords) > 1 || ords[0] > 0 {
		r := cuda.Probe()
		if r.Error != "" {
			return nil, "", fmt.Errorf("device %s: CUDA is not usable: %s", name, r.Error)
		}
		if spec.All {
			for _, d := range r.Devices {
				ords = append(ords, d.Ordinal)
			}
			if len(ords) == 0 {
				return nil, "", fmt.Errorf("device %s: no GPU is present", name)
			}
		}
		for _, i := range ords {
			if i >= len(r.Devices) {
				return nil, "", fmt.Errorf("device %s: there is no GPU %d (this machine has %d: ordinals 0 to %d)", name, i, len(r.Devices), len(r.Devices)-1)
			}
		}
	}
	devs := make([]*cuda.Device, len(ords))
	members := make([]device.Device, len(ords))
	for j, i := range ords {
		d, err := cuda.Open(i)
		if err != nil {
			closeAll(members)
			return nil, "", fmt.Errorf("device %s: GPU %d: %w", name, i, err)
		}
		devs[j], members[j] = d, d
	}
	var sum device.Collective = &device.HostSum{}
	why := ""
	if len(devs) > 1 {
		if c, err := cuda.NewNCCL(devs); err == nil {
			sum = c
		} else {
			why = fmt.Sprintf(" (NCCL not usable: %v; sums staged through the host)", err)
		}
	}
	g, err := device.NewGroup(members, sum, true)
	if err != nil {
		closeAll(members)
		return nil, "", err
	}
	return g, g.Describe() + why, nil
}

// closeAll closes the non-nil devices.
func closeAll(devs []device.Device) {
	for _, d := range devs {
		if d != nil {
			d.Close()
		}
	}
}

// GPUs returns the number of GPUs CUDA reports when it is usable (cuda.Probe), else 0.
func GPUs() int {
	r := cuda.Probe()
	if !r.Usable() {
		return 0
	}
	return len(r.Devices)
}
