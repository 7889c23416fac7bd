package job

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/aimtheory/aim/device/cuda"
)

// openBenchDevice opens a device of `aim bench` by name: cpu, auto, cuda:0 (through
// device/auto, as every job), or cuda:K for K > 0 (device/auto opens GPU 0 only today, so GPU K
// is opened here with cuda.Open(K)). A device that cannot be opened is bad input.
func openBenchDevice(name string, workers, threads int) (*Device, error) {
	if !strings.HasPrefix(name, "cuda:") {
		return OpenDevice(name, workers, threads)
	}
	k, _ := strconv.Atoi(name[len("cuda:"):]) // parsed by parseDeviceNames
	if k == 0 {
		return OpenDevice("cuda", workers, threads)
	}
	d, err := cuda.Open(k)
	if err != nil {
		return nil, InputError{fmt.Errorf("device %s: %w", name, err)}
	}
	return &Device{dev: d, Note: d.Info().Description}, nil
}

// gpuNames returns cuda:0, cuda:1, ... for every GPU the CUDA probe reports when CUDA is
// usable, and none otherwise.
func gpuNames() []string {
	r := cuda.Probe()
	if !r.Usable() {
		return nil
	}
	names := make([]string, len(r.Devices))
	for i, d := range r.Devices {
		names[i] = "cuda:" + strconv.Itoa(d.Ordinal)
	}
	return names
}
