package cuda

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/aimtheory/aim/device"
)

// DeviceReport describes one GPU.
type DeviceReport struct {
	Ordinal    int
	Name       string
	TotalBytes uint64 // cuDeviceTotalMem
	FreeBytes  uint64 // cuMemGetInfo in the primary context
	CCMajor    int    // compute capability
	CCMinor    int
	SMs        int    // multiprocessors
	ClockMHz   int    // SM clock
	Error      string // what failed while probing this device; empty when all is known
}

// Report is what `aim device` prints: the driver and its version, the GPUs, the libraries and
// where they were found, or the error that stops CUDA.
type Report struct {
	Driver     string         // driver API version, e.g. "13.0"; empty when unknown
	Devices    []DeviceReport // one per GPU
	Libraries  []Library      // driver, cuBLAS, cuSOLVER, then NCCL (optional)
	SearchDirs []string       // the directories searched after the dynamic loader, in order
	Error      string         // why CUDA is not usable; empty when it is
}

// Usable reports whether Open(0) can be expected to work: no error, a GPU, and every library
// that is not optional (NCCL's absence leaves a GPU usable).
func (r Report) Usable() bool {
	if r.Error != "" || len(r.Devices) == 0 {
		return false
	}
	for _, l := range r.Libraries {
		if l.Error != "" && !l.Optional {
			return false
		}
	}
	return true
}

// String formats the report for humans, one fact per line.
func (r Report) String() string {
	var b strings.Builder
	if r.Error != "" {
		fmt.Fprintf(&b, "CUDA not usable: %s\n", r.Error)
	}
	if r.Driver != "" {
		fmt.Fprintf(&b, "driver API %s, %d device(s)\n", r.Driver, len(r.Devices))
	}
	for _, d := range r.Devices {
		fmt.Fprintf(&b, "  [%d] %s: CC %d.%d, %d SMs, %d MHz, memory %s total, %s free",
			d.Ordinal, d.Name, d.CCMajor, d.CCMinor, d.SMs, d.ClockMHz,
			device.Bytes(d.TotalBytes), device.Bytes(d.FreeBytes))
		if d.Error != "" {
			fmt.Fprintf(&b, " (%s)", d.Error)
		}
		b.WriteByte('\n')
	}
	for _, l := range r.Libraries {
		fmt.Fprintf(&b, "%s\n", l)
	}
	return b.String()
}

// Probe reports on the CUDA installation without opening a Device: it never panics and needs
// no GPU (the report then carries the error). It lists the driver, cuBLAS, cuSOLVER and NCCL
// (optional; with its version from ncclGetVersion) found or not. It runs on its own OS thread.
func Probe() Report {
	res := make(chan Report, 1)
	go func() {
		runtime.LockOSThread() // the thread ends with the goroutine: no context leaks to others
		var r Report
		defer func() {
			if p := recover(); p != nil {
				r.Error = fmt.Sprintf("panic while probing CUDA: %v", p)
			}
			res <- r
		}()
		r = probe()
	}()
	return <-res
}

// probe does the work of Probe on a locked thread.
func probe() Report {
	env := osEnv()
	var r Report
	for _, d := range env.dirs() {
		r.SearchDirs = append(r.SearchDirs, d.dir)
	}
	var drv *driverLib
	_, rec := env.loadDriver(os.Getenv(EnvLibCUDA), func(h uintptr) error {
		l, err := bindDriver(h)
		drv = l
		return err
	})
	r.Libraries = append(r.Libraries, rec)
	// cuBLAS and cuSOLVER: where they are (bound, no handle created).
	_, rec = env.loadLib(specCublas, func(h uintptr) error { _, err := bindCublas(h); return err })
	r.Libraries = append(r.Libraries, rec)
	_, rec = env.loadLib(specCusolver, func(h uintptr) error { _, err := bindCusolver(h); return err })
	r.Libraries = append(r.Libraries, rec)
	r.Libraries = append(r.Libraries, probeNCCL(env))

	if drv == nil {
		r.Error = "driver library libcuda.so.1: " + r.Libraries[0].Error
		return r
	}
	var v int32
	if err := drv.cuErr("cuDriverGetVersion", drv.cuDriverGetVersion(&v)); err == nil {
		r.Driver = versionString(int(v))
	}
	if err := drv.cuErr("cuInit", drv.cuInit(0)); err != nil {
		r.Error = err.Error()
		return r
	}
	var count int32
	if err := drv.cuErr("cuDeviceGetCount", drv.cuDeviceGetCount(&count)); err != nil {
		r.Error = err.Error()
		return r
	}
	if count == 0 {
		r.Error = "no CUDA device (cuDeviceGetCount = 0)"
	}
	for i := int32(0); i < count; i++ {
		var dev int32
		if err := drv.cuErr("cuDeviceGet", drv.cuDeviceGet(&dev, i)); err != nil {
			r.Devices = append(r.Devices, DeviceReport{Ordinal: int(i), Error: err.Error()})
			continue
		}
		di, err := drv.deviceInfo(dev)
		di.Ordinal = int(i)
		if err != nil {
			di.Error = err.Error()
		} else if err := drv.freeMem(dev, &di.FreeBytes); err != nil {
			di.Error = err.Error()
		}
		r.Devices = append(r.Devices, di)
	}
	return r
}

// deviceInfo reads the name, memory and attributes of a device (no context needed).
func (l *driverLib) deviceInfo(dev int32) (DeviceReport, error) {
	var di DeviceReport
	var name [256]byte
	if err := l.cuErr("cuDeviceGetName", l.cuDeviceGetName(&name[0], int32(len(name)), dev)); err != nil {
		return di, err
	}
	di.Name = cStr(&name[0])
	if err := l.cuErr("cuDeviceTotalMem_v2", l.cuDeviceTotalMem(&di.TotalBytes, dev)); err != nil {
		return di, err
	}
	for _, a := range []struct {
		attr int32
		dst  *int
	}{
		{attrComputeCapabilityMajor, &di.CCMajor},
		{attrComputeCapabilityMinor, &di.CCMinor},
		{attrMultiprocessorCount, &di.SMs},
		{attrClockRate, &di.ClockMHz},
	} {
		var v int32
		if err := l.cuErr("cuDeviceGetAttribute", l.cuDeviceGetAttribute(&v, a.attr, dev)); err != nil {
			return di, err
		}
		*a.dst = int(v)
	}
	di.ClockMHz /= 1000 // kHz
	return di, nil
}

// freeMem reads the free memory of dev in its primary context, retained for the call.
func (l *driverLib) freeMem(dev int32, free *uint64) error {
	var ctx uintptr
	if err := l.cuErr("cuDevicePrimaryCtxRetain", l.cuDevicePrimaryCtxRetain(&ctx, dev)); err != nil {
		return err
	}
	defer l.cuDevicePrimaryCtxRelease(dev)
	if err := l.cuErr("cuCtxSetCurrent", l.cuCtxSetCurrent(ctx)); err != nil {
		return err
	}
	defer l.cuCtxSetCurrent(0)
	var total uint64
	return l.cuErr("cuMemGetInfo_v2", l.cuMemGetInfo(free, &total))
}

// probeNCCL says where NCCL is (bound, its version read; no communicator created).
func probeNCCL(env searchEnv) Library {
	_, rec := loadNCCL(env)
	return rec
}
