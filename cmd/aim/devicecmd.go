package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/aimtheory/aim/cpu"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/device/auto"
	"github.com/aimtheory/aim/device/cuda"
)

const deviceUsage = `Usage: aim device [--threads N]

Prints what aim sees: the CPU backend and its BLAS/LAPACK (OpenBLAS or MKL loaded at run time,
with its version, OpenBLAS core type and thread count, or gonum's pure Go when none is
installed), the CUDA driver version, each GPU's name, memory and compute capability, the CUDA
libraries found and where, and the device --device auto picks, with the reason when it falls
back to the CPU. AIM_BLAS=gonum|openblas|mkl|/path/lib.so chooses the CPU's BLAS.
`

func runDevice(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("aim device", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, deviceUsage) }
	threads := fs.Int("threads", 0, "threads of the CPU backend's BLAS library (0: all cores)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *threads < 0 {
		return usagef("--threads %d: need 0 (all cores) or more", *threads)
	}
	c, err := cpu.Open(cpu.Options{Threads: *threads})
	if err != nil {
		// A BLAS asked for by AIM_BLAS that does not load: show gonum and the reason.
		c = cpu.New(0)
	}
	info := c.Info()
	fmt.Fprintf(stdout, "%s; memory %s total, %s available\n", info.Description, device.Bytes(info.TotalBytes), device.Bytes(info.FreeBytes))
	fmt.Fprintf(stdout, "blas: %s\n", c.BLAS())
	fmt.Fprint(stdout, "cuda: ", cuda.Probe().String())
	dev, note, err := auto.OpenWith("auto", cpu.Options{Threads: *threads})
	if err != nil {
		return err
	}
	defer auto.Close(dev)
	fmt.Fprintln(stdout, note)
	return nil
}
