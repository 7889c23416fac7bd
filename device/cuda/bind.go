package cuda

import (
	"fmt"
	"unsafe"

	"github.com/ebitengine/purego"
)

// C types as Go types: CUresult, cublasStatus_t, cusolverStatus_t and enums are int32;
// CUdeviceptr is uint64; handles (CUcontext, CUstream, CUmodule, CUfunction, CUevent,
// cublasHandle_t, cusolverDnHandle_t) are uintptr; size_t is uint64; int is int32; long long
// is int64.

// binder registers C functions of one library, collecting the first missing symbol.
type binder struct {
	h   uintptr
	err error
}

// bind sets *fptr to the C function name of the library (purego.RegisterFunc); a missing
// symbol is recorded (the first one) instead of panicking as RegisterLibFunc would.
func (b *binder) bind(fptr any, name string) {
	if b.err != nil {
		return
	}
	sym, err := purego.Dlsym(b.h, name)
	if err != nil || sym == 0 {
		b.err = fmt.Errorf("symbol %s: %v", name, err)
		return
	}
	purego.RegisterFunc(fptr, sym)
}

// bindOptional is bind for a symbol that older versions of the library lack: when it is
// missing, *fptr stays nil and nothing is recorded.
func (b *binder) bindOptional(fptr any, name string) {
	if b.err != nil {
		return
	}
	if sym, err := purego.Dlsym(b.h, name); err == nil && sym != 0 {
		purego.RegisterFunc(fptr, sym)
	}
}

// driverLib holds the driver API functions (libcuda.so.1).
type driverLib struct {
	cuGetErrorName            func(r int32, name **byte) int32
	cuGetErrorString          func(r int32, s **byte) int32
	cuInit                    func(flags uint32) int32
	cuDriverGetVersion        func(v *int32) int32
	cuDeviceGetCount          func(n *int32) int32
	cuDeviceGet               func(dev *int32, ordinal int32) int32
	cuDeviceGetName           func(name *byte, n int32, dev int32) int32
	cuDeviceTotalMem          func(bytes *uint64, dev int32) int32
	cuDeviceGetAttribute      func(v *int32, attr int32, dev int32) int32
	cuDevicePrimaryCtxRetain  func(ctx *uintptr, dev int32) int32
	cuDevicePrimaryCtxRelease func(dev int32) int32
	cuCtxSetCurrent           func(ctx uintptr) int32
	cuCtxSynchronize          func() int32
	cuMemAlloc                func(p *uint64, bytes uint64) int32
	cuMemFree                 func(p uint64) int32
	cuMemcpyHtoD              func(dst uint64, src unsafe.Pointer, bytes uint64) int32
	cuMemcpyDtoH              func(dst unsafe.Pointer, src uint64, bytes uint64) int32
	cuMemcpyDtoD              func(dst, src uint64, bytes uint64) int32
	cuMemsetD8                func(dst uint64, v uint8, n uint64) int32
	cuMemGetInfo              func(free, total *uint64) int32
	cuModuleLoadDataEx        func(mod *uintptr, image unsafe.Pointer, numOptions uint32, options *int32, values *uintptr) int32
	cuModuleUnload            func(mod uintptr) int32
	cuModuleGetFunction       func(fn *uintptr, mod uintptr, name string) int32
	cuLaunchKernel            func(f uintptr, gx, gy, gz, bx, by, bz, shared uint32, stream uintptr, params unsafe.Pointer, extra unsafe.Pointer) int32
	cuStreamCreate            func(s *uintptr, flags uint32) int32
	cuStreamDestroy           func(s uintptr) int32
	cuStreamSynchronize       func(s uintptr) int32
	cuEventCreate             func(e *uintptr, flags uint32) int32
	cuEventRecord             func(e uintptr, s uintptr) int32
	cuEventSynchronize        func(e uintptr) int32
	cuEventElapsedTime        func(ms *float32, start, end uintptr) int32
	cuEventDestroy            func(e uintptr) int32
	cuStreamWaitEvent         func(s, e uintptr, flags uint32) int32
	handle                    uintptr
	lib                       Library
}

// CUdevice_attribute values used here (cuda.h).
const (
	attrMultiprocessorCount    = 16
	attrClockRate              = 13
	attrComputeCapabilityMajor = 75
	attrComputeCapabilityMinor = 76
)

// cuStreamNonBlocking is CU_STREAM_NON_BLOCKING (cuda.h): a stream that does not synchronise
// with the legacy default stream.
const cuStreamNonBlocking = 0x1

// cuEventDisableTiming is CU_EVENT_DISABLE_TIMING (cuda.h): an event for ordering only.
const cuEventDisableTiming = 0x2

// bindDriver binds every driver function from the library handle h.
func bindDriver(h uintptr) (*driverLib, error) {
	l := &driverLib{handle: h}
	b := &binder{h: h}
	b.bind(&l.cuGetErrorName, "cuGetErrorName")
	b.bind(&l.cuGetErrorString, "cuGetErrorString")
	b.bind(&l.cuInit, "cuInit")
	b.bind(&l.cuDriverGetVersion, "cuDriverGetVersion")
	b.bind(&l.cuDeviceGetCount, "cuDeviceGetCount")
	b.bind(&l.cuDeviceGet, "cuDeviceGet")
	b.bind(&l.cuDeviceGetName, "cuDeviceGetName")
	b.bind(&l.cuDeviceTotalMem, "cuDeviceTotalMem_v2")
	b.bind(&l.cuDeviceGetAttribute, "cuDeviceGetAttribute")
	b.bind(&l.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")
	b.bind(&l.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2")
	b.bind(&l.cuCtxSetCurrent, "cuCtxSetCurrent")
	b.bind(&l.cuCtxSynchronize, "cuCtxSynchronize")
	b.bind(&l.cuMemAlloc, "cuMemAlloc_v2")
	b.bind(&l.cuMemFree, "cuMemFree_v2")
	b.bind(&l.cuMemcpyHtoD, "cuMemcpyHtoD_v2")
	b.bind(&l.cuMemcpyDtoH, "cuMemcpyDtoH_v2")
	b.bind(&l.cuMemcpyDtoD, "cuMemcpyDtoD_v2")
	b.bind(&l.cuMemsetD8, "cuMemsetD8_v2")
	b.bind(&l.cuMemGetInfo, "cuMemGetInfo_v2")
	b.bind(&l.cuModuleLoadDataEx, "cuModuleLoadDataEx")
	b.bind(&l.cuModuleUnload, "cuModuleUnload")
	b.bind(&l.cuModuleGetFunction, "cuModuleGetFunction")
	b.bind(&l.cuLaunchKernel, "cuLaunchKernel")
	b.bind(&l.cuStreamCreate, "cuStreamCreate")
	b.bind(&l.cuStreamDestroy, "cuStreamDestroy_v2")
	b.bind(&l.cuStreamSynchronize, "cuStreamSynchronize")
	b.bind(&l.cuEventCreate, "cuEventCreate")
	b.bind(&l.cuEventRecord, "cuEventRecord")
	b.bind(&l.cuEventSynchronize, "cuEventSynchronize")
	b.bind(&l.cuEventElapsedTime, "cuEventElapsedTime")
	b.bind(&l.cuEventDestroy, "cuEventDestroy_v2")
	b.bind(&l.cuStreamWaitEvent, "cuStreamWaitEvent")
	if b.err != nil {
		return nil, b.err
	}
	return l, nil
}

// cuBLAS enums.
const (
	cublasOpN = 0
	cublasOpT = 1

	cudaR32F  = 0  // cudaDataType CUDA_R_32F
	cudaR16BF = 14 // cudaDataType CUDA_R_16BF

	cublasCompute32F         = 68 // cublasComputeType_t CUBLAS_COMPUTE_32F
	cublasCompute32FFastTF32 = 77 // CUBLAS_COMPUTE_32F_FAST_TF32
	cublasGemmDefault        = -1 // cublasGemmAlgo_t CUBLAS_GEMM_DEFAULT

	cublasFillLower = 0
	cublasFillUpper = 1
)

// cublasLib holds the cuBLAS functions.
type cublasLib struct {
	cublasCreate              func(h *uintptr) int32
	cublasDestroy             func(h uintptr) int32
	cublasSetStream           func(h uintptr, s uintptr) int32
	cublasDgemm               func(h uintptr, ta, tb int32, m, n, k int32, alpha *float64, a uint64, lda int32, b uint64, ldb int32, beta *float64, c uint64, ldc int32) int32
	cublasDgemmStridedBatched func(h uintptr, ta, tb int32, m, n, k int32, alpha *float64, a uint64, lda int32, strideA int64, b uint64, ldb int32, strideB int64, beta *float64, c uint64, ldc int32, strideC int64, batch int32) int32
	cublasDgeam               func(h uintptr, ta, tb int32, m, n int32, alpha *float64, a uint64, lda int32, beta *float64, b uint64, ldb int32, c uint64, ldc int32) int32
	// Dsyrkx and Dscal, optional: without them the backend has no QuadFormSummer.
	cublasDsyrkx func(h uintptr, uplo, trans int32, n, k int32, alpha *float64, a uint64, lda int32, b uint64, ldb int32, beta *float64, c uint64, ldc int32) int32
	cublasDscal  func(h uintptr, n int32, alpha *float64, x uint64, incx int32) int32
	// cublasGemmEx with float32 alpha and beta (the compute types CUBLAS_COMPUTE_32F*).
	cublasGemmEx func(h uintptr, ta, tb int32, m, n, k int32, alpha *float32, a uint64, atype int32, lda int32, b uint64, btype int32, ldb int32,
		beta *float32, c uint64, ctype int32, ldc int32, compute int32, algo int32) int32
	lib Library
}

func bindCublas(h uintptr) (*cublasLib, error) {
	l := &cublasLib{}
	b := &binder{h: h}
	b.bind(&l.cublasCreate, "cublasCreate_v2")
	b.bind(&l.cublasDestroy, "cublasDestroy_v2")
	b.bind(&l.cublasSetStream, "cublasSetStream_v2")
	b.bind(&l.cublasDgemm, "cublasDgemm_v2")
	b.bind(&l.cublasDgemmStridedBatched, "cublasDgemmStridedBatched")
	b.bind(&l.cublasDgeam, "cublasDgeam")
	b.bindOptional(&l.cublasDsyrkx, "cublasDsyrkx")
	b.bindOptional(&l.cublasDscal, "cublasDscal_v2")
	b.bind(&l.cublasGemmEx, "cublasGemmEx")
	if b.err != nil {
		return nil, b.err
	}
	return l, nil
}

// cuSOLVER enums.
const (
	cusolverEigModeVector = 1
)

// cusolverLib holds the cuSOLVER dense functions.
type cusolverLib struct {
	cusolverDnCreate           func(h *uintptr) int32
	cusolverDnDestroy          func(h uintptr) int32
	cusolverDnSetStream        func(h uintptr, s uintptr) int32
	cusolverDnDsyevdBufferSize func(h uintptr, jobz, uplo int32, n int32, a uint64, lda int32, w uint64, lwork *int32) int32
	cusolverDnDsyevd           func(h uintptr, jobz, uplo int32, n int32, a uint64, lda int32, w uint64, work uint64, lwork int32, info uint64) int32
	// The Jacobi eigensolver (syevj), optional: nil where the library lacks it.
	cusolverDnCreateSyevjInfo    func(info *uintptr) int32
	cusolverDnDestroySyevjInfo   func(info uintptr) int32
	cusolverDnXsyevjSetTolerance func(info uintptr, tol float64) int32
	cusolverDnXsyevjSetMaxSweeps func(info uintptr, sweeps int32) int32
	cusolverDnDsyevjBufferSize   func(h uintptr, jobz, uplo int32, n int32, a uint64, lda int32, w uint64, lwork *int32, info uintptr) int32
	cusolverDnDsyevj             func(h uintptr, jobz, uplo int32, n int32, a uint64, lda int32, w uint64, work uint64, lwork int32, devInfo uint64, info uintptr) int32
	lib                          Library
}

func bindCusolver(h uintptr) (*cusolverLib, error) {
	l := &cusolverLib{}
	b := &binder{h: h}
	b.bind(&l.cusolverDnCreate, "cusolverDnCreate")
	b.bind(&l.cusolverDnDestroy, "cusolverDnDestroy")
	b.bind(&l.cusolverDnSetStream, "cusolverDnSetStream")
	b.bind(&l.cusolverDnDsyevdBufferSize, "cusolverDnDsyevd_bufferSize")
	b.bind(&l.cusolverDnDsyevd, "cusolverDnDsyevd")
	b.bindOptional(&l.cusolverDnCreateSyevjInfo, "cusolverDnCreateSyevjInfo")
	b.bindOptional(&l.cusolverDnDestroySyevjInfo, "cusolverDnDestroySyevjInfo")
	b.bindOptional(&l.cusolverDnXsyevjSetTolerance, "cusolverDnXsyevjSetTolerance")
	b.bindOptional(&l.cusolverDnXsyevjSetMaxSweeps, "cusolverDnXsyevjSetMaxSweeps")
	b.bindOptional(&l.cusolverDnDsyevjBufferSize, "cusolverDnDsyevj_bufferSize")
	b.bindOptional(&l.cusolverDnDsyevj, "cusolverDnDsyevj")
	if b.err != nil {
		return nil, b.err
	}
	return l, nil
}

// NCCL enums (nccl.h).
const (
	ncclFloat64 = 8 // ncclDataType_t ncclFloat64 = ncclDouble
	ncclSum     = 0 // ncclRedOp_t
)

// ncclLib holds the NCCL functions (libnccl.so.2). ncclComm_t is a handle (uintptr),
// cudaStream_t is a CUstream (the backend's stream), buffers are device pointers (uint64) and
// size_t counts uint64. ncclGetLastError (NCCL 2.13 and later) may be nil.
type ncclLib struct {
	ncclGetVersion     func(v *int32) int32
	ncclGetErrorString func(r int32) *byte
	ncclGetLastError   func(comm uintptr) *byte
	ncclCommInitAll    func(comms *uintptr, ndev int32, devlist *int32) int32
	ncclCommDestroy    func(comm uintptr) int32
	ncclCommAbort      func(comm uintptr) int32
	ncclReduce         func(send, recv uint64, count uint64, dtype, op, root int32, comm, stream uintptr) int32
	ncclBroadcast      func(send, recv uint64, count uint64, dtype, root int32, comm, stream uintptr) int32
	version            int // ncclGetVersion's code, e.g. 22105
}

// bindNCCL binds the NCCL functions from the library handle h and reads its version (which
// needs no GPU).
func bindNCCL(h uintptr) (*ncclLib, error) {
	l := &ncclLib{}
	b := &binder{h: h}
	b.bind(&l.ncclGetVersion, "ncclGetVersion")
	b.bind(&l.ncclGetErrorString, "ncclGetErrorString")
	b.bind(&l.ncclCommInitAll, "ncclCommInitAll")
	b.bind(&l.ncclCommDestroy, "ncclCommDestroy")
	b.bind(&l.ncclCommAbort, "ncclCommAbort")
	b.bind(&l.ncclReduce, "ncclReduce")
	b.bind(&l.ncclBroadcast, "ncclBroadcast")
	b.bindOptional(&l.ncclGetLastError, "ncclGetLastError")
	if b.err != nil {
		return nil, b.err
	}
	var v int32
	if err := l.ncclErr("ncclGetVersion", l.ncclGetVersion(&v), 0); err != nil {
		return nil, err
	}
	l.version = int(v)
	return l, nil
}
