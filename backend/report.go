package backend

import (
	"fmt"
	"io"

	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/device/cuda"
)

// OpenThreads is OpenWith with the two CPU options a command line sets: workers goroutines
// and threads threads of the BLAS library (0: all cores for either), so that callers need not
// name the CPU backend's types.
func OpenThreads(name string, workers, threads int) (device.Device, string, error) {
	return OpenWith(name, cpu.Options{Workers: workers, Threads: threads})
}

// OpenGroupThreads is OpenGroup with the two CPU options a command line sets (OpenThreads).
func OpenGroupThreads(name string, workers, threads int) (*device.Group, string, error) {
	return OpenGroup(name, cpu.Options{Workers: workers, Threads: threads})
}

// HostMemory returns the host's memory, total and available now, as the CPU backend reports
// it (0, 0 where it cannot be read).
func HostMemory() (total, available uint64) {
	info := cpu.New(1).Info()
	return info.TotalBytes, info.FreeBytes
}

// CUDAReport describes the CUDA driver, the GPUs and the CUDA libraries this process sees, or
// why CUDA is not usable.
func CUDAReport() string { return cuda.Probe().String() }

// Describe writes what aim sees: the CPU backend with its memory and its BLAS library (with
// threads threads; gonum when the library AIM_BLAS asks for does not load), CUDA, and the
// device "auto" picks, with the reason.
func Describe(w io.Writer, threads int) error {
	c, err := cpu.Open(cpu.Options{Threads: threads})
	if err != nil {
		c = cpu.New(0) // gonum, with the reason in its BLAS line
	}
	info := c.Info()
	fmt.Fprintf(w, "%s; memory %s total, %s available\n", info.Description, device.Bytes(info.TotalBytes), device.Bytes(info.FreeBytes))
	fmt.Fprintf(w, "blas: %s\n", c.BLAS())
	fmt.Fprint(w, "cuda: ", CUDAReport())
	dev, note, err := OpenThreads("auto", 0, threads)
	if err != nil {
		return err
	}
	defer Close(dev)
	fmt.Fprintln(w, note)
	return nil
}
