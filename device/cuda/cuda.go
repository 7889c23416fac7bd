// Package cuda is the CUDA backend of device.Device (docs/gpu.md; docs/design.md section 6). The
// driver (libcuda.so.1), cuBLAS and cuSOLVER are bound at run time with purego: the package
// builds with CGO_ENABLED=0, needs no CUDA to build, and Open fails with an error (it never
// panics or exits) where there is no usable GPU, so that package backend can fall back to the CPU.
//
// Checks. Device is device.Checked before the unexported backend: the arguments of every
// operation (buffers, sizes, overlap, views) are checked there, once for every backend; the
// backend keeps only its own limits (sizes that must fit a C int) and reports CUDA's statuses.
// A view (device.View) is a device pointer plus 8 bytes per value of offset into the buffer's
// allocation; freeing a view does nothing, and only the allocating Device may use it.
//
// Threading. Open starts one goroutine, locked to its OS thread, that owns the device's primary
// context and makes every CUDA call: each method of the backend submits a closure to it and
// waits for the result. Methods may be called from any goroutine; they are serialised. Close
// releases the modules, the cuBLAS and cuSOLVER handles, the stream and the context, and stops
// the goroutine; closing twice is not an error.
//
// Synchronisation. Every operation waits for its work to finish before it returns (kernel
// faults are reported by the operation that caused them), so Upload, Download and Copy are
// synchronous and the host may reuse its slices at once.
//
// Numerics. Reductions (Dot, SqDist, SumDiag, the sum of ChannelGOut) are computed by the
// *_partial kernels into one partial per fixed chunk (kernels.ReduceChunk); the partials are
// downloaded and added on the host in chunk order, so a sum is the same from call to call and
// on every GPU model. Gemm and SpectralCompose go to cuBLAS Dgemm, EighSym to cuSOLVER Dsyevd.
//
// Environment: AIM_CUDA_LIB_DIR (a directory searched first for the libraries) and AIM_LIBCUDA
// (the exact path of the driver library; nothing else is tried when it is set).
package cuda

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"github.com/aimtheory/aim/device"
	"github.com/aimtheory/aim/kernels"
)

// kernelNames lists every kernel of the launch contract (kernels/launch.go).
var kernelNames = []string{
	"token_dots", "token_mix", "scal", "axpby", "add_diag", "mul_pattern", "scale_columns",
	"dot_partial", "sqdist_partial", "sumdiag_partial",
	"softmax_output", "hardmax_output", "softmax_gout", "hardmax_gout", "hardmaxt_gout", "gaussian_fill",
	"softmax_loss_grad", "adam_step", "deep_sample", "deep_sample_warp", "to_f32", "split_bf16", "from_f32",
}

// ErrClosed is wrapped by the errors of the operations of a closed Device: it is
// device.ErrClosed.
var ErrClosed = device.ErrClosed

// Device is a CUDA GPU: the checked front of package device (device.New) before the CUDA
// backend, with the GPU's own queries and tools (Name, Libraries, Time, GemmStridedBatched). It
// is a device.Device. The zero value is not usable; call Open.
type Device struct {
	*device.Checked
	b *backend
}

var _ device.Device = (*Device)(nil)

// backend is the CUDA implementation of device.Backend. It checks nothing that the front
// checks (device.Backend).
type backend struct {
	mu     sync.Mutex // serialises submissions and Close
	closed bool
	jobs   chan func()
	done   chan struct{}

	// Fixed after Open.
	ordinal       int
	dev           int32
	name          string
	ccMajor       int
	ccMinor       int
	sms           int
	totalMem      uint64
	driverVersion int
	libs          []Library

	// Owned by the executor goroutine.
	drv       *driverLib
	blas      *cublasLib
	sol       *cusolverLib
	ctx       uintptr
	ctxHeld   bool
	stream    uintptr
	side      uintptr // a second stream, non-blocking: GaussianFillAsync's
	filled    uintptr // an event recorded on side after each GaussianFillAsync
	cublasH   uintptr
	cusolverH uintptr
	images    map[string][]byte // NUL-terminated PTX, kept alive while its module is loaded
	modules   map[string]uintptr
	fn        map[string]uintptr
	part      scratch          // reduction partials
	square    scratch          // D x D: EighSym's working copy, SpectralCompose's scaled copy
	work      scratch          // cuSOLVER workspace
	info      scratch          // cuSOLVER info (one int)
	lowp      scratch          // GemmPrecision's float32 and bfloat16 arrays
	lwork     map[[2]int]int32 // cuSOLVER workspace sizes by (eighMethod, d)
	syevj     uintptr          // syevj's parameters (cusolverDnCreateSyevjInfo), made on first use
}

var _ device.Backend = (*backend)(nil)

// scratch is a device array owned by the backend, grown on demand.
type scratch struct {
	ptr uint64
	n   int // float64 values
}

// buffer is a buffer of the CUDA backend: an allocation, or a range of one (Slice).
type buffer struct {
	ptr uint64 // 0 for an empty buffer
	n   int
}

// Len is the number of values.
func (b *buffer) Len() int { return b.n }

// buf returns the backend's buffer (the front passes no other).
func buf(b device.Buffer) *buffer { return b.(*buffer) }

// run calls f, turning a panic into an error.
func run(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cuda: panic: %v", r)
		}
	}()
	return f()
}

// executor is the body of the goroutine that owns the context.
func executor(jobs chan func(), done chan struct{}) {
	runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
	for job := range jobs {
		job()
	}
	close(done)
}

// do runs f on the executor goroutine and returns its error.
func (d *backend) do(f func() error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	return d.submit(f)
}

// submit runs f on the executor; d.mu is held.
func (d *backend) submit(f func() error) error {
	res := make(chan error, 1)
	d.jobs <- func() { res <- run(f) }
	return <-res
}

// Open loads the CUDA libraries, initialises the driver and opens the GPU of the given ordinal:
// its primary context, a stream, cuBLAS and cuSOLVER handles bound to the stream, and every
// kernel of the launch contract from the embedded PTX (cuModuleLoadDataEx, with the JIT's
// error and info logs in the error when a module fails). The error says what failed, e.g.
// "cuda: cuInit: CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected".
func Open(ordinal int) (*Device, error) {
	b, err := open(ordinal)
	if err != nil {
		return nil, err
	}
	return &Device{Checked: device.New(b), b: b}, nil
}

// open is Open without the checked front.
func open(ordinal int) (*backend, error) {
	if ordinal < 0 {
		return nil, fmt.Errorf("cuda: device ordinal %d: need >= 0", ordinal)
	}
	d := &backend{
		ordinal: ordinal,
		jobs:    make(chan func()),
		done:    make(chan struct{}),
		images:  map[string][]byte{},
		modules: map[string]uintptr{},
		fn:      map[string]uintptr{},
		lwork:   map[[2]int]int32{},
	}
	go executor(d.jobs, d.done)
	d.mu.Lock()
	defer d.mu.Unlock()
	err := d.submit(d.init)
	if err != nil {
		if rerr := d.submit(d.release); rerr != nil {
			err = errors.Join(err, rerr)
		}
		d.closed = true
		close(d.jobs)
		<-d.done
		return nil, fmt.Errorf("cuda: %w", err)
	}
	return d, nil
}

// init runs on the executor: everything Open does.
func (d *backend) init() error {
	env := osEnv()
	var drv *driverLib
	_, rec := env.loadDriver(os.Getenv(EnvLibCUDA), func(h uintptr) error {
		l, err := bindDriver(h)
		drv = l
		return err
	})
	d.libs = append(d.libs, rec)
	if rec.Error != "" {
		return fmt.Errorf("driver library libcuda.so.1: %s", rec.Error)
	}
	drv.lib = rec
	d.drv = drv
	if err := drv.cuErr("cuInit", drv.cuInit(0)); err != nil {
		return err
	}
	var v, count int32
	if err := drv.cuErr("cuDriverGetVersion", drv.cuDriverGetVersion(&v)); err != nil {
		return err
	}
	d.driverVersion = int(v)
	if err := drv.cuErr("cuDeviceGetCount", drv.cuDeviceGetCount(&count)); err != nil {
		return err
	}
	if d.ordinal >= int(count) {
		return fmt.Errorf("device ordinal %d out of range: %d CUDA device(s)", d.ordinal, count)
	}
	if err := drv.cuErr("cuDeviceGet", drv.cuDeviceGet(&d.dev, int32(d.ordinal))); err != nil {
		return err
	}
	di, err := drv.deviceInfo(d.dev)
	if err != nil {
		return err
	}
	d.name, d.totalMem, d.ccMajor, d.ccMinor, d.sms = di.Name, di.TotalBytes, di.CCMajor, di.CCMinor, di.SMs
	if err := drv.cuErr("cuDevicePrimaryCtxRetain", drv.cuDevicePrimaryCtxRetain(&d.ctx, d.dev)); err != nil {
		return err
	}
	d.ctxHeld = true
	if err := drv.cuErr("cuCtxSetCurrent", drv.cuCtxSetCurrent(d.ctx)); err != nil {
		return err
	}
	if err := drv.cuErr("cuStreamCreate", drv.cuStreamCreate(&d.stream, 0)); err != nil {
		return err
	}
	if err := drv.cuErr("cuStreamCreate", drv.cuStreamCreate(&d.side, cuStreamNonBlocking)); err != nil {
		return err
	}
	if err := drv.cuErr("cuEventCreate", drv.cuEventCreate(&d.filled, cuEventDisableTiming)); err != nil {
		return err
	}

	// cuBLAS: the first soname that loads, binds and creates a handle on the stream.
	_, rec = env.loadLib(specCublas, func(h uintptr) error {
		l, err := bindCublas(h)
		if err != nil {
			return err
		}
		var hd uintptr
		if err := cublasErr("cublasCreate_v2", l.cublasCreate(&hd)); err != nil {
			return err
		}
		if err := cublasErr("cublasSetStream_v2", l.cublasSetStream(hd, d.stream)); err != nil {
			l.cublasDestroy(hd)
			return err
		}
		d.blas, d.cublasH = l, hd
		return nil
	})
	d.libs = append(d.libs, rec)
	if rec.Error != "" {
		return fmt.Errorf("cuBLAS: %s", rec.Error)
	}
	d.blas.lib = rec

	_, rec = env.loadLib(specCusolver, func(h uintptr) error {
		l, err := bindCusolver(h)
		if err != nil {
			return err
		}
		var hd uintptr
		if err := cusolverErr("cusolverDnCreate", l.cusolverDnCreate(&hd)); err != nil {
			return err
		}
		if err := cusolverErr("cusolverDnSetStream", l.cusolverDnSetStream(hd, d.stream)); err != nil {
			l.cusolverDnDestroy(hd)
			return err
		}
		d.sol, d.cusolverH = l, hd
		return nil
	})
	d.libs = append(d.libs, rec)
	if rec.Error != "" {
		return fmt.Errorf("cuSOLVER: %s", rec.Error)
	}
	d.sol.lib = rec

	if err := d.loadModules(kernels.PTX()); err != nil {
		return err
	}
	return d.info.grow(d, 1)
}

// loadModules loads every PTX module and resolves every kernel of the contract.
func (d *backend) loadModules(ptx map[string][]byte) error {
	names := make([]string, 0, len(ptx))
	for m := range ptx {
		names = append(names, m)
	}
	sort.Strings(names)
	for _, m := range names {
		mod, img, err := d.loadPTX(m, ptx[m])
		if err != nil {
			return err
		}
		d.images[m], d.modules[m] = img, mod
	}
	for _, k := range kernelNames {
		m, ok := kernels.KernelModule(k)
		if !ok {
			return fmt.Errorf("kernel %s: no PTX module holds it (kernels.KernelModule)", k)
		}
		mod, ok := d.modules[m]
		if !ok {
			return fmt.Errorf("kernel %s: module %q is not among the embedded PTX (kernels.PTX)", k, m)
		}
		var f uintptr
		if err := d.drv.cuErr("cuModuleGetFunction("+k+")", d.drv.cuModuleGetFunction(&f, mod, k)); err != nil {
			return fmt.Errorf("module %s: %w", m, err)
		}
		d.fn[k] = f
	}
	return nil
}

// CUjit_option values of cuda.h (CUjit_option_enum) for cuModuleLoadDataEx.
const (
	jitInfoLogBuffer           = 3 // CU_JIT_INFO_LOG_BUFFER: char *, the info log
	jitInfoLogBufferSizeBytes  = 4 // CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES: unsigned int in, bytes filled out
	jitErrorLogBuffer          = 5 // CU_JIT_ERROR_LOG_BUFFER: char *, the error log
	jitErrorLogBufferSizeBytes = 6 // CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: unsigned int in, bytes filled out
)

// jitLogBytes is the size of each JIT log buffer.
const jitLogBytes = 16 << 10

// jitLogs holds the option arrays of cuModuleLoadDataEx that ask the driver's PTX JIT for its
// info and error logs: options[i] is a CUjit_option, values[i] its value (a buffer's address,
// or a size passed in the pointer slot, as cuda.h specifies; on return the size slots hold the
// bytes written). The buffers must stay pinned during the call (load does that).
type jitLogs struct {
	options   [4]int32
	values    [4]uintptr
	info, err []byte
}

// newJITLogs returns the options for two log buffers of n bytes each.
func newJITLogs(n int) *jitLogs {
	l := &jitLogs{info: make([]byte, n), err: make([]byte, n)}
	l.options = [4]int32{jitInfoLogBuffer, jitInfoLogBufferSizeBytes, jitErrorLogBuffer, jitErrorLogBufferSizeBytes}
	l.values = [4]uintptr{uintptr(unsafe.Pointer(&l.info[0])), uintptr(n), uintptr(unsafe.Pointer(&l.err[0])), uintptr(n)}
	return l
}

// load calls cuModuleLoadDataEx(mod, image, 4, options, values) with the buffers pinned.
func (l *jitLogs) load(drv *driverLib, mod *uintptr, image unsafe.Pointer) int32 {
	var pin runtime.Pinner
	defer pin.Unpin()
	pin.Pin(&l.info[0])
	pin.Pin(&l.err[0])
	pin.Pin(l)
	r := drv.cuModuleLoadDataEx(mod, image, uint32(len(l.options)), &l.options[0], &l.values[0])
	runtime.KeepAlive(l)
	return r
}

// text returns the logs the JIT wrote, trimmed: "error log: ...; info log: ..." with either
// part left out when empty, or "" when both are.
func (l *jitLogs) text() string {
	var parts []string
	if s := logString(l.err, l.values[3]); s != "" {
		parts = append(parts, "error log: "+s)
	}
	if s := logString(l.info, l.values[1]); s != "" {
		parts = append(parts, "info log: "+s)
	}
	return strings.Join(parts, "; ")
}

// logString returns the NUL-terminated text at the start of b, of at most filled bytes (the
// size the driver reported; more than len(b) is taken as len(b)), without surrounding space.
func logString(b []byte, filled uintptr) string {
	if filled < uintptr(len(b)) {
		b = b[:filled]
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return strings.TrimSpace(string(b))
}

// loadPTX loads one PTX module with cuModuleLoadDataEx, asking the JIT for its logs, and
// returns it with the NUL-terminated image it was loaded from (to be kept alive while the
// module is). A failure says why: the CUresult, and the JIT's error and info logs. Executor
// only.
func (d *backend) loadPTX(name string, src []byte) (uintptr, []byte, error) {
	img := make([]byte, len(src)+1) // NUL-terminated copy
	copy(img, src)
	logs := newJITLogs(jitLogBytes)
	var mod uintptr
	if r := logs.load(d.drv, &mod, unsafe.Pointer(&img[0])); r != 0 {
		err := fmt.Errorf("PTX module %s (%d bytes, driver JIT for CC %d.%d): %w",
			name, len(src), d.ccMajor, d.ccMinor, d.drv.cuErr("cuModuleLoadDataEx", r))
		if t := logs.text(); t != "" {
			err = fmt.Errorf("%w; JIT %s", err, t)
		}
		return 0, nil, err
	}
	return mod, img, nil
}

// release runs on the executor: frees the scratch arrays, unloads the modules, destroys the
// handles and the stream and releases the primary context. It tolerates a partial Open.
func (d *backend) release() error {
	if d.drv == nil {
		return nil
	}
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if d.ctxHeld {
		add(d.drv.cuErr("cuCtxSetCurrent", d.drv.cuCtxSetCurrent(d.ctx)))
		for _, s := range []uintptr{d.stream, d.side} {
			if s != 0 {
				add(d.drv.cuErr("cuStreamSynchronize", d.drv.cuStreamSynchronize(s)))
			}
		}
	}
	for _, s := range []*scratch{&d.part, &d.square, &d.work, &d.info, &d.lowp} {
		if s.ptr != 0 {
			add(d.drv.cuErr("cuMemFree_v2", d.drv.cuMemFree(s.ptr)))
		}
		*s = scratch{}
	}
	for m, mod := range d.modules {
		add(d.drv.cuErr("cuModuleUnload("+m+")", d.drv.cuModuleUnload(mod)))
		delete(d.modules, m)
		delete(d.images, m)
	}
	clear(d.fn)
	if d.syevj != 0 {
		add(cusolverErr("cusolverDnDestroySyevjInfo", d.sol.cusolverDnDestroySyevjInfo(d.syevj)))
		d.syevj = 0
	}
	if d.cusolverH != 0 {
		add(cusolverErr("cusolverDnDestroy", d.sol.cusolverDnDestroy(d.cusolverH)))
		d.cusolverH = 0
	}
	if d.cublasH != 0 {
		add(cublasErr("cublasDestroy_v2", d.blas.cublasDestroy(d.cublasH)))
		d.cublasH = 0
	}
	if d.filled != 0 {
		add(d.drv.cuErr("cuEventDestroy_v2", d.drv.cuEventDestroy(d.filled)))
		d.filled = 0
	}
	for _, s := range []*uintptr{&d.stream, &d.side} {
		if *s != 0 {
			add(d.drv.cuErr("cuStreamDestroy_v2", d.drv.cuStreamDestroy(*s)))
			*s = 0
		}
	}
	if d.ctxHeld {
		add(d.drv.cuErr("cuCtxSetCurrent", d.drv.cuCtxSetCurrent(0)))
		add(d.drv.cuErr("cuDevicePrimaryCtxRelease_v2", d.drv.cuDevicePrimaryCtxRelease(d.dev)))
		d.ctxHeld = false
	}
	return errors.Join(errs...)
}

// Close releases everything the backend holds (buffers not yet freed go with the context) and
// stops its goroutine. Closing twice is not an error.
func (d *backend) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	err := d.submit(d.release)
	d.closed = true
	close(d.jobs)
	<-d.done
	if err != nil {
		return fmt.Errorf("cuda Close: %w", err)
	}
	return nil
}

// Libraries returns where the driver, cuBLAS and cuSOLVER were found.
func (d *Device) Libraries() []Library { return append([]Library(nil), d.b.libs...) }

// Name returns the GPU's name, e.g. "NVIDIA H200".
func (d *Device) Name() string { return d.b.name }

// Capabilities: the GPU has the training operations, the symmetric back-projection (through
// cuBLAS's Dsyrkx, where the library has it), the deep channel's sampler, the products at
// reduced precision and fills on a second stream.
func (d *backend) Capabilities() device.Caps {
	c := device.Caps{Trainer: d, DeepSampler: d, PrecisionGemmer: d, Prefetcher: d}
	if d.blas != nil && d.blas.cublasDsyrkx != nil && d.blas.cublasDscal != nil {
		c.QuadFormSummer = d
	}
	return c
}

// Info describes the GPU; the memory comes from cuMemGetInfo (zero when it fails or the
// Device is closed).
func (d *backend) Info() device.Info {
	var free, total uint64
	_ = d.do(func() error {
		return d.drv.cuErr("cuMemGetInfo_v2", d.drv.cuMemGetInfo(&free, &total))
	})
	blas := ""
	if d.blas != nil {
		blas = d.blas.lib.Soname
	}
	return device.Info{
		Name: "cuda",
		Description: fmt.Sprintf("cuda: %s, CC %d.%d, driver %s, cuBLAS %s",
			d.name, d.ccMajor, d.ccMinor, versionString(d.driverVersion), blas),
		TotalBytes: total,
		FreeBytes:  free,
	}
}

// versionString formats a CUDA version number: 13000 -> "13.0", 12040 -> "12.4".
func versionString(v int) string {
	return fmt.Sprintf("%d.%d", v/1000, (v%1000)/10)
}

// grow makes s hold at least n values (its contents are lost when it grows). Executor only.
func (s *scratch) grow(d *backend, n int) error {
	if s.n >= n && s.ptr != 0 {
		return nil
	}
	if s.ptr != 0 {
		if err := d.drv.cuErr("cuMemFree_v2", d.drv.cuMemFree(s.ptr)); err != nil {
			return err
		}
		*s = scratch{}
	}
	var p uint64
	if err := d.drv.cuErr("cuMemAlloc_v2", d.drv.cuMemAlloc(&p, 8*uint64(max(n, 1)))); err != nil {
		return fmt.Errorf("scratch of %d values: %w", n, err)
	}
	*s = scratch{ptr: p, n: n}
	return nil
}

// Alloc returns a zeroed buffer of n values. It fails before allocating when 8n bytes exceed
// the free device memory (cuMemGetInfo), saying how many bytes were needed and available.
func (d *backend) Alloc(n int) (device.Buffer, error) {
	const op = "cuda Alloc"
	b := &buffer{n: n}
	need := 8 * uint64(n)
	err := d.do(func() error {
		var free, total uint64
		if err := d.drv.cuErr("cuMemGetInfo_v2", d.drv.cuMemGetInfo(&free, &total)); err != nil {
			return err
		}
		if need > free {
			return fmt.Errorf("%d values need %d bytes (%s), only %d bytes (%s) available",
				n, need, device.Bytes(need), free, device.Bytes(free))
		}
		if n == 0 {
			return nil
		}
		if err := d.drv.cuErr("cuMemAlloc_v2", d.drv.cuMemAlloc(&b.ptr, need)); err != nil {
			return fmt.Errorf("%d values (%s): %w", n, device.Bytes(need), err)
		}
		if err := d.drv.cuErr("cuMemsetD8_v2", d.drv.cuMemsetD8(b.ptr, 0, need)); err != nil {
			d.drv.cuMemFree(b.ptr)
			return err
		}
		if err := d.drv.cuErr("cuCtxSynchronize", d.drv.cuCtxSynchronize()); err != nil {
			d.drv.cuMemFree(b.ptr)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return b, nil
}

// Free releases an allocation (the front calls it once per allocation, never for a view);
// after Close it does nothing.
func (d *backend) Free(b device.Buffer) {
	p := buf(b).ptr
	if p == 0 {
		return
	}
	_ = d.do(func() error { return d.drv.cuErr("cuMemFree_v2", d.drv.cuMemFree(p)) })
}

// Slice returns the n values of b from value off: the device pointer plus 8 off bytes.
func (d *backend) Slice(b device.Buffer, off, n int) device.Buffer {
	p := buf(b).ptr
	if n == 0 {
		return &buffer{}
	}
	return &buffer{ptr: p + 8*uint64(off), n: n}
}

// wrap prefixes an executor error with the operation's name.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", op, err)
}

// Upload copies src into dst[0:len(src)].
func (d *backend) Upload(dst device.Buffer, src []float64) error {
	const op = "cuda Upload"
	b := buf(dst)
	if len(src) == 0 {
		return nil
	}
	return wrap(op, d.do(func() error {
		return d.drv.cuErr("cuMemcpyHtoD_v2", d.drv.cuMemcpyHtoD(b.ptr, unsafe.Pointer(&src[0]), 8*uint64(len(src))))
	}))
}

// Download copies src[0:len(dst)] into dst.
func (d *backend) Download(dst []float64, src device.Buffer) error {
	const op = "cuda Download"
	b := buf(src)
	if len(dst) == 0 {
		return nil
	}
	return wrap(op, d.do(func() error {
		return d.drv.cuErr("cuMemcpyDtoH_v2", d.drv.cuMemcpyDtoH(unsafe.Pointer(&dst[0]), b.ptr, 8*uint64(len(dst))))
	}))
}

// Copy sets dst[0:src.Len()] = src (the front passes ranges that do not overlap).
func (d *backend) Copy(dst, src device.Buffer) error {
	const op = "cuda Copy"
	s, t := buf(src), buf(dst)
	if s.n == 0 {
		return nil
	}
	return wrap(op, d.do(func() error {
		if err := d.drv.cuErr("cuMemcpyDtoD_v2", d.drv.cuMemcpyDtoD(t.ptr, s.ptr, 8*uint64(s.n))); err != nil {
			return err
		}
		return d.drv.cuErr("cuCtxSynchronize", d.drv.cuCtxSynchronize())
	}))
}

// Time runs f (which calls methods of d) between two CUDA events recorded on the device's
// stream and returns the seconds between them. Operations wait for their work, so this is
// close to the wall time of f, measured by the GPU.
func (d *Device) Time(f func() error) (float64, error) { return d.b.time(f) }

// time is Time on the backend.
func (d *backend) time(f func() error) (float64, error) {
	var start, end uintptr
	err := d.do(func() error {
		if err := d.drv.cuErr("cuEventCreate", d.drv.cuEventCreate(&start, 0)); err != nil {
			return err
		}
		if err := d.drv.cuErr("cuEventCreate", d.drv.cuEventCreate(&end, 0)); err != nil {
			d.drv.cuEventDestroy(start)
			return err
		}
		return d.drv.cuErr("cuEventRecord", d.drv.cuEventRecord(start, d.stream))
	})
	if err != nil {
		return 0, fmt.Errorf("cuda Time: %w", err)
	}
	ferr := f()
	var ms float32
	err = d.do(func() error {
		defer d.drv.cuEventDestroy(start)
		defer d.drv.cuEventDestroy(end)
		if err := d.drv.cuErr("cuEventRecord", d.drv.cuEventRecord(end, d.stream)); err != nil {
			return err
		}
		if err := d.drv.cuErr("cuEventSynchronize", d.drv.cuEventSynchronize(end)); err != nil {
			return err
		}
		return d.drv.cuErr("cuEventElapsedTime", d.drv.cuEventElapsedTime(&ms, start, end))
	})
	if ferr != nil {
		return 0, ferr
	}
	if err != nil {
		return 0, fmt.Errorf("cuda Time: %w", err)
	}
	return float64(ms) / 1e3, nil
}
