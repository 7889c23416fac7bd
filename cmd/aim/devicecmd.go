package main

import (
	"flag"
	"io"

	"github.com/aimtheory/aim/backend"
)

const deviceUsage = `Usage: aim device [--threads N]

Prints what aim sees: the CPU backend and its BLAS/LAPACK (OpenBLAS or MKL loaded at run time,
with its version, OpenBLAS core type and thread count, or gonum's pure Go when none is
installed), the CUDA driver version, each GPU's name, memory and compute capability, the CUDA
libraries found and where, and the device --device auto picks, with the reason when it falls
back to the CPU. AIM_BLAS=gonum|openblas|mkl|/path/lib.so chooses the CPU's BLAS.

Flags:
`

func runDevice(args []string, stdout, stderr io.Writer) error {
	fs, threads := newDeviceFlags(stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *threads < 0 {
		return usagef("--threads %d: need 0 (all cores) or more", *threads)
	}
	return backend.Describe(stdout, *threads)
}

// newDeviceFlags returns the flag set of `aim device` (docs/cli/device.md is made from it)
// and its --threads.
func newDeviceFlags(stderr io.Writer) (*flag.FlagSet, *int) {
	fs := newFlags("aim device", deviceUsage, stderr)
	return fs, deviceFlags(fs)
}

// deviceFlags registers the flags of `aim device` and returns --threads.
func deviceFlags(fs *flag.FlagSet) *int {
	return fs.Int("threads", 0, usage("threads", ""))
}
