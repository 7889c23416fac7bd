// Package cpu is the CPU backend of device.Device: the reference implementation of every
// device operation (docs/design.md). Buffers are Go []float64 slices; the per-sample
// and element-wise operations are spread over a fixed number of goroutines.
//
// BLAS and LAPACK. Gemm, EighSym and SpectralCompose call an optimised library loaded at run
// time (OpenBLAS, or MKL; package cpu/nativeblas, no cgo) when one is installed, else gonum
// v0.17 (pure Go, its Dgemm parallel on its own). Options.BLAS, or the environment variable
// AIM_BLAS read when a device is opened, chooses per device: auto (the default), gonum,
// openblas, mkl, or a library path. With a library, SpectralCompose and QuadFormSum use its
// symmetric rank-k update (dsyrk, half the work of dgemm) and EighSym its divide-and-conquer
// dsyevd; on the gonum path they use Dgemm and Dsyev as before. Both paths agree to rounding.
// A tall native Gemm and QuadFormSum are cut into fixed blocks of rows, each one call on one
// library thread, spread over as many goroutines as the library has threads: the library's
// own threads, which spin for a while after each call that used them, then do not compete
// with the per-sample loops, and the results do not depend on the number of goroutines.
// EighSym and SpectralCompose call the library on one thread below order 600 (serialOrder).
//
// Determinism. Every reduction (Dot, SqDist, SumDiag, the sum returned by ChannelGOut) splits
// its index range into chunks of a fixed size that does not depend on the worker count
// (chunkElems elements, chunkSamples samples), sums each chunk in index order and then adds the
// chunk sums in chunk order. The result is therefore bit-for-bit the same with 1 or 64 workers
// and from run to run. Element-wise and per-sample outputs never depend on the chunking.
//
// Checks. Device is device.Checked before the unexported backend: the arguments of every
// operation (buffers, sizes, overlap, views) are checked there, once for every backend, and the
// backend only computes. Views (device.View) are sub-slices of the buffer's slice. Close drops
// the scratch arrays; it is harmless and idempotent.
//
// Concurrency. A Device may be used from several goroutines at once for operations on
// distinct output buffers; SpectralCompose serialises on an internal scratch buffer. Alloc and
// Free are safe for concurrent use. Using a buffer after Free is an error (not a crash).
package cpu

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/aimtheory/aim/channel"
	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/internal/par"
)

// Fixed chunk sizes of the parallel loops. They are part of the numerical definition of the
// reductions (see the package comment): changing them changes the last bits of sums.
const (
	chunkElems    = 4096 // element-wise operations and vector reductions
	chunkSamples  = 256  // ChannelOutput, ChannelGOut, AddDiag, SumDiag (samples per chunk)
	chunkPolytope = 16   // ChannelOutput, ChannelGOut of hardmax at T > 2 (about 1 ms a sample)
	chunkNoisy    = 64   // ChannelOutput, ChannelGOut of the noisy softmax (about 30 us a sample)
	tokenWork     = 1 << 16
)

// Device is the CPU device: the checked front of package device (device.New) before the CPU
// backend, with the CPU's own queries (Workers, BLAS). It is a device.Device. The zero value is
// not usable; call New or Open.
type Device struct {
	*device.Checked
	b *backend
}

var _ device.Device = (*Device)(nil)

// backend is the CPU implementation of device.Backend. Its operations check nothing: the
// checked front calls them with valid arguments only (device.Backend).
type backend struct {
	workers int

	blas    BLASInfo // the BLAS/LAPACK in use (Open)
	threads int      // the native library's thread count, set before each call (0: leave it)

	scratchMu sync.Mutex // guards scratch, eigWork, eigIWork, qfAcc and qfRows (SpectralCompose, EighSym, QuadFormSum)
	scratch   []float64
	eigWork   []float64
	eigIWork  []int32
	qfAcc     []float64 // QuadFormSum's per-group sums after the first
	qfRows    []float64 // QuadFormSum's per-goroutine rows of a chunk

	prec precisionScratch // GemmPrecision's float32 arrays

	garbage atomic.Int64 // bytes of the buffers freed since Alloc last returned memory (reclaim)
}

// reclaimBytes is the size from which a buffer's allocation first returns the memory of the
// buffers freed before it (reclaim): a run's tokens and scratch, not the small arrays of
// every iteration.
const reclaimBytes = 64 << 20

var _ device.Backend = (*backend)(nil)

// wrap puts the checked front before b.
func wrap(b *backend) *Device { return &Device{Checked: device.New(b), b: b} }

// Workers returns the number of goroutines of the parallel loops.
func (d *Device) Workers() int { return d.b.workers }

// buffer is a buffer of the CPU backend: a Go slice (a sub-slice for a view).
type buffer struct {
	data []float64
}

// Len is the number of values.
func (b *buffer) Len() int { return len(b.data) }

// data returns the values of a buffer of the backend (the front passes no other).
func data(b device.Buffer) []float64 { return b.(*buffer).data }

// memInfo returns total and available memory in bytes from /proc/meminfo, and a note saying
// where the numbers come from.
func memInfo() (total, free uint64, known bool, note string) {
	if t, f, err := readMeminfo("/proc/meminfo"); err == nil {
		return t, f, true, ""
	}
	// No /proc/meminfo (not Linux): use the Go memory limit when one is set.
	if lim := debug.SetMemoryLimit(-1); lim > 0 && lim < math.MaxInt64 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		total = uint64(lim)
		if ms.Sys < total {
			free = total - ms.Sys
		}
		return total, free, true, ", memory from the Go memory limit"
	}
	return 0, 0, false, ", memory unknown (no /proc/meminfo)"
}

// readMeminfo parses MemTotal and MemAvailable (in kB) from a meminfo file.
func readMeminfo(path string) (total, avail uint64, err error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	var gotT, gotA bool
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 2 {
			continue
		}
		v, perr := strconv.ParseUint(string(f[1]), 10, 64)
		if perr != nil {
			continue
		}
		mult := uint64(1)
		if len(f) >= 3 && string(f[2]) == "kB" {
			mult = 1024
		}
		switch string(f[0]) {
		case "MemTotal:":
			total, gotT = v*mult, true
		case "MemAvailable:":
			avail, gotA = v*mult, true
		}
	}
	if !gotT || !gotA {
		return 0, 0, fmt.Errorf("%s: no MemTotal/MemAvailable", path)
	}
	return total, avail, nil
}

// Info describes the device: its worker count, its BLAS and the host memory.
func (d *backend) Info() device.Info {
	total, free, _, note := memInfo()
	g := "goroutines"
	if d.workers == 1 {
		g = "goroutine"
	}
	return device.Info{
		Name:        "cpu",
		Description: fmt.Sprintf("cpu: %d %s, %s%s", d.workers, g, d.blas.short(), note),
		TotalBytes:  total,
		FreeBytes:   free,
	}
}

// Capabilities: the CPU has the training operations, the symmetric back-projection, the
// deep channel's sampler, products at every reduced precision (GemmPrecision) and fills that
// run beside the other operations (GaussianFillAsync).
func (d *backend) Capabilities() device.Caps {
	return device.Caps{Trainer: d, QuadFormSummer: d, DeepSampler: d, PrecisionGemmer: d, Prefetcher: d}
}

// Channels: the CPU computes every valid channel, the softmax with label noise included.
func (d *backend) Channels() channel.Support { return channel.Support{Noise: true} }

// Close drops the scratch arrays of the backend (the Go garbage collector frees them); there
// is nothing else to release.
func (d *backend) Close() error {
	d.scratchMu.Lock()
	defer d.scratchMu.Unlock()
	d.scratch, d.eigWork, d.eigIWork, d.qfAcc, d.qfRows = nil, nil, nil, nil, nil
	d.prec.mu.Lock()
	d.prec.a, d.prec.b, d.prec.c = nil, nil, nil
	d.prec.mu.Unlock()
	return nil
}

// Alloc returns a zeroed buffer of n values. A large one (reclaimBytes or more) first returns
// the memory of the buffers freed before it (reclaim). It fails, before allocating, when 8n
// bytes exceed the memory available then (MemAvailable); where the available memory cannot be
// read the check is skipped.
func (d *backend) Alloc(n int) (device.Buffer, error) {
	need := uint64(n) * 8
	if need >= reclaimBytes {
		d.reclaim()
	}
	_, free, known, _ := memInfo()
	if known && need > free {
		return nil, fmt.Errorf("cpu Alloc: %d values need %d bytes (%s), only %d bytes (%s) available",
			n, need, device.Bytes(need), free, device.Bytes(free))
	}
	return &buffer{data: make([]float64, n)}, nil
}

// Free drops the buffer's slice, so that it keeps no memory once Go collects it.
func (d *backend) Free(b device.Buffer) {
	bb := b.(*buffer)
	d.garbage.Add(int64(8 * len(bb.data)))
	bb.data = nil
}

// reclaim returns the memory of the buffers freed since the last reclaim to the system when
// they hold reclaimBytes or more. Go frees them only at its next collection, which by default
// comes when the heap has doubled since the last: without this, the second run of a job would
// hold the first one's tokens beside its own, twice the memory its plan counts, and the
// available memory an allocation is checked against would not count them.
func (d *backend) reclaim() {
	if d.garbage.Load() < reclaimBytes {
		return
	}
	d.garbage.Store(0)
	debug.FreeOSMemory()
}

// Slice returns the sub-slice [off, off+n) of b.
func (d *backend) Slice(b device.Buffer, off, n int) device.Buffer {
	return &buffer{data: data(b)[off : off+n : off+n]}
}

// Upload copies src into dst[0:len(src)].
func (d *backend) Upload(dst device.Buffer, src []float64) error {
	copy(data(dst), src)
	return nil
}

// Download copies src[0:len(dst)] into dst.
func (d *backend) Download(dst []float64, src device.Buffer) error {
	copy(dst, data(src))
	return nil
}

// Copy sets dst[0:src.Len()] = src.
func (d *backend) Copy(dst, src device.Buffer) error {
	copy(data(dst), data(src))
	return nil
}

// ---------------------------------------------------------------------------------------
// The parallel loop.

// chunks and span cut [0, n) into fixed chunks (internal/par).
func chunks(n, size int) int { return par.Chunks(n, size) }

func span(c, n, size int) (lo, hi int) { return par.Span(c, n, size) }

// forChunks runs body(c) for every chunk c in [0, nc) on up to d.workers goroutines with
// par.For: each goroutine first calls setup once and runs the body it returns (setup is where
// per-goroutine scratch is allocated); bodies write only to chunk-owned outputs. A panic in a
// body is recovered and returned as an error naming op.
func (d *backend) forChunks(op string, nc int, setup func() func(c int)) error {
	err := par.For(d.workers, nc, func() (func(int), error) { return setup(), nil },
		func(body func(int), c int) error { body(c); return nil })
	if err != nil {
		return fmt.Errorf("%s: %v", op, err)
	}
	return nil
}

// same returns the body for forChunks when no per-goroutine state is needed.
func same(body func(c int)) func() func(c int) { return func() func(c int) { return body } }

// sumChunks adds the chunk sums in chunk order.
func sumChunks(part []float64) float64 {
	var s float64
	for _, v := range part {
		s += v
	}
	return s
}
