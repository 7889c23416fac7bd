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

const deviceUsage = `Usage: aim device

Prints what aim sees: the CPU backend, the CUDA driver version, each GPU's name, memory and
compute capability, the CUDA libraries found and where, and the device --device auto picks, with
the reason when it falls back to the CPU.
`

func runDevice(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("aim device", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, deviceUsage) }
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	c := cpu.New(0)
	info := c.Info()
	fmt.Fprintf(stdout, "%s; memory %s total, %s available\n", info.Description, device.Bytes(info.TotalBytes), device.Bytes(info.FreeBytes))
	fmt.Fprint(stdout, "cuda: ", cuda.Probe().String())
	dev, note, err := auto.Open("auto", 0)
	if err != nil {
		return err
	}
	defer auto.Close(dev)
	fmt.Fprintln(stdout, note)
	return nil
}
