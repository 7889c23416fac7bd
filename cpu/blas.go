package cpu

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/aimtheory/aim/cpu/nativeblas"
)

// EnvBLAS is the environment variable Open reads when Options.BLAS is empty: "auto" (the
// default), "gonum", "openblas", "mkl", or the path of a BLAS/LAPACK library.
const EnvBLAS = "AIM_BLAS"

// GonumBLAS is the BLAS choice of the pure-Go path.
const GonumBLAS = "gonum"

// gonumName describes the pure-Go path.
const gonumName = "gonum v0.17 (pure Go BLAS/LAPACK)"

// Options configure a CPU device.
type Options struct {
	// Workers is the number of goroutines of the parallel loops; <= 0 means GOMAXPROCS.
	Workers int
	// BLAS chooses the library of Gemm, EighSym and SpectralCompose: "auto" (an optimised BLAS
	// and LAPACK loaded at run time, OpenBLAS then MKL, else gonum), "gonum" (pure Go),
	// "openblas", "mkl", or the path of a library exporting dgemm_, dsyrk_ and dsyevd_. Empty
	// means the environment variable AIM_BLAS, read when the device is opened, or "auto".
	BLAS string
	// Threads is the thread count of the native library (process-wide in the library; set
	// again before each call when several devices disagree); <= 0 means GOMAXPROCS. Ignored on
	// the gonum path, whose Dgemm runs on GOMAXPROCS goroutines.
	Threads int
}

// BLASInfo says which BLAS/LAPACK a device uses.
type BLASInfo struct {
	Native  bool            // an optimised library is in use (else gonum)
	Lib     nativeblas.Info // the library, when Native
	Threads int             // its thread count, when Native and known (0: the library's default)
	Note    string          // on the gonum path: why (chosen, or what could not be loaded)
	Choice  string          // the choice as given: "auto", "gonum", "openblas", ...
	Source  string          // where the choice came from: "Options", "AIM_BLAS" or "default"
	lib     *nativeblas.Lib // nil on the gonum path
}

// String is one line for `aim device`: the library, its threads and how it was chosen.
func (b BLASInfo) String() string {
	if !b.Native {
		return fmt.Sprintf("%s; %s", gonumName, b.Note)
	}
	th := "threads: the library's default"
	if b.Threads > 0 {
		th = plural(b.Threads, "thread")
	}
	return fmt.Sprintf("%s; %s", b.Lib.String(), th)
}

// short is the BLAS part of Info().Description.
func (b BLASInfo) short() string {
	if !b.Native {
		if b.Choice == GonumBLAS {
			return gonumName
		}
		return gonumName + ", no optimised BLAS found"
	}
	s := b.Lib.Provider
	if v := openBLASVersion(b.Lib.Version); v != "" {
		s += " " + v
	}
	var extra []string
	if b.Lib.Core != "" {
		extra = append(extra, "core "+b.Lib.Core)
	}
	if b.Threads > 0 {
		extra = append(extra, plural(b.Threads, "thread"))
	}
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, ", ") + ")"
	}
	if b.Lib.Warning != "" {
		s += "; WARNING: " + b.Lib.Warning
	}
	return s
}

// plural returns "1 thread", "2 threads".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// openBLASVersion extracts "0.3.21" from "OpenBLAS 0.3.21 NO_LAPACKE ...".
func openBLASVersion(cfg string) string {
	f := strings.Fields(cfg)
	if len(f) >= 2 && f[0] == "OpenBLAS" {
		return f[1]
	}
	return ""
}

// Open returns a CPU device configured by o. The BLAS choice is resolved here, once: "auto"
// falls back to gonum (and says why in BLAS().Note) when no library loads; an explicit library
// choice that does not load is an error.
func Open(o Options) (*Device, error) { return open(o, nativeblas.Load) }

// open is Open with the library loader as a parameter (tests pass one that finds nothing).
func open(o Options, load func(choice string) (*nativeblas.Lib, error)) (*Device, error) {
	b, err := openBackend(o, load)
	if err != nil {
		return nil, err
	}
	return wrap(b), nil
}

// openBackend is open without the checked front.
func openBackend(o Options, load func(choice string) (*nativeblas.Lib, error)) (*backend, error) {
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	d := &backend{workers: workers}
	choice, source := o.BLAS, "Options"
	if choice == "" {
		choice, source = os.Getenv(EnvBLAS), EnvBLAS
	}
	if choice == "" {
		choice, source = nativeblas.Auto, "default"
	}
	d.blas = BLASInfo{Choice: choice, Source: source}
	if strings.EqualFold(choice, GonumBLAS) {
		d.blas.Note = "chosen by " + describeSource(source, choice)
		return d, nil
	}
	lib, err := load(choice)
	if err != nil {
		if strings.EqualFold(choice, nativeblas.Auto) && errors.Is(err, nativeblas.ErrNotFound) {
			d.blas.Note = "no OpenBLAS or MKL found (install libopenblas0, or MKL, for speed): " + err.Error()
			return d, nil
		}
		return nil, fmt.Errorf("cpu: BLAS %q (%s): %w", choice, describeSource(source, choice), err)
	}
	threads := o.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	d.blas.Native, d.blas.Lib, d.blas.lib = true, lib.Info(), lib
	if lib.CanSetThreads() {
		d.threads = threads
		lib.SetThreads(threads)
	}
	d.blas.Threads = lib.Threads()
	return d, nil
}

func describeSource(source, choice string) string {
	switch source {
	case EnvBLAS:
		return EnvBLAS + "=" + choice
	case "Options":
		return "the device options"
	}
	return "default"
}

// New returns a CPU device that runs its parallel loops on the given number of goroutines
// (workers <= 0: GOMAXPROCS), with the BLAS that AIM_BLAS chooses (default auto). Where that
// choice cannot be honoured it falls back to gonum and says why in BLAS().Note and Info.
func New(workers int) *Device {
	b, err := openBackend(Options{Workers: workers}, nativeblas.Load)
	if err != nil {
		b, _ = openBackend(Options{Workers: workers, BLAS: GonumBLAS}, nativeblas.Load)
		b.blas.Note = err.Error()
	}
	return wrap(b)
}

// BLAS says which BLAS/LAPACK the device uses and why.
func (d *Device) BLAS() BLASInfo { return d.b.blas }

// native returns the library of the device held at its thread count (nativeblas.Lib.Hold)
// and the release of the hold, or nil and a no-op on the gonum path.
func (d *backend) native() (*nativeblas.Lib, func()) {
	l := d.blas.lib
	if l == nil {
		return nil, func() {}
	}
	return l, l.Hold(d.threads)
}
