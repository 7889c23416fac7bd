package cuda

import (
	"fmt"
	"unsafe"
)

// CUresult names of the driver API (cuda.h), used when cuGetErrorName is not available (the
// library did not load) and by the tests. The driver's own cuGetErrorName is preferred.
var cuResultNames = map[int32]string{
	0:   "CUDA_SUCCESS",
	1:   "CUDA_ERROR_INVALID_VALUE",
	2:   "CUDA_ERROR_OUT_OF_MEMORY",
	3:   "CUDA_ERROR_NOT_INITIALIZED",
	4:   "CUDA_ERROR_DEINITIALIZED",
	34:  "CUDA_ERROR_STUB_LIBRARY",
	46:  "CUDA_ERROR_DEVICE_UNAVAILABLE",
	100: "CUDA_ERROR_NO_DEVICE",
	101: "CUDA_ERROR_INVALID_DEVICE",
	102: "CUDA_ERROR_DEVICE_NOT_LICENSED",
	200: "CUDA_ERROR_INVALID_IMAGE",
	201: "CUDA_ERROR_INVALID_CONTEXT",
	209: "CUDA_ERROR_NO_BINARY_FOR_GPU",
	214: "CUDA_ERROR_ECC_UNCORRECTABLE",
	218: "CUDA_ERROR_INVALID_PTX",
	221: "CUDA_ERROR_NVLINK_UNCORRECTABLE",
	222: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
	300: "CUDA_ERROR_INVALID_SOURCE",
	301: "CUDA_ERROR_FILE_NOT_FOUND",
	400: "CUDA_ERROR_INVALID_HANDLE",
	500: "CUDA_ERROR_NOT_FOUND",
	600: "CUDA_ERROR_NOT_READY",
	700: "CUDA_ERROR_ILLEGAL_ADDRESS",
	701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
	702: "CUDA_ERROR_LAUNCH_TIMEOUT",
	709: "CUDA_ERROR_CONTEXT_IS_DESTROYED",
	710: "CUDA_ERROR_ASSERT",
	715: "CUDA_ERROR_ILLEGAL_INSTRUCTION",
	716: "CUDA_ERROR_MISALIGNED_ADDRESS",
	719: "CUDA_ERROR_LAUNCH_FAILED",
	801: "CUDA_ERROR_NOT_SUPPORTED",
	802: "CUDA_ERROR_SYSTEM_NOT_READY",
	803: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
	804: "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
	999: "CUDA_ERROR_UNKNOWN",
}

// cublasStatusNames are the cublasStatus_t values of cublas_api.h.
var cublasStatusNames = map[int32]string{
	0:  "CUBLAS_STATUS_SUCCESS",
	1:  "CUBLAS_STATUS_NOT_INITIALIZED",
	3:  "CUBLAS_STATUS_ALLOC_FAILED",
	7:  "CUBLAS_STATUS_INVALID_VALUE",
	8:  "CUBLAS_STATUS_ARCH_MISMATCH",
	11: "CUBLAS_STATUS_MAPPING_ERROR",
	13: "CUBLAS_STATUS_EXECUTION_FAILED",
	14: "CUBLAS_STATUS_INTERNAL_ERROR",
	15: "CUBLAS_STATUS_NOT_SUPPORTED",
	16: "CUBLAS_STATUS_LICENSE_ERROR",
}

// cusolverStatusNames are the cusolverStatus_t values of cusolver_common.h.
var cusolverStatusNames = map[int32]string{
	0:  "CUSOLVER_STATUS_SUCCESS",
	1:  "CUSOLVER_STATUS_NOT_INITIALIZED",
	2:  "CUSOLVER_STATUS_ALLOC_FAILED",
	3:  "CUSOLVER_STATUS_INVALID_VALUE",
	4:  "CUSOLVER_STATUS_ARCH_MISMATCH",
	5:  "CUSOLVER_STATUS_MAPPING_ERROR",
	6:  "CUSOLVER_STATUS_EXECUTION_FAILED",
	7:  "CUSOLVER_STATUS_INTERNAL_ERROR",
	8:  "CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED",
	9:  "CUSOLVER_STATUS_NOT_SUPPORTED",
	10: "CUSOLVER_STATUS_ZERO_PIVOT",
	11: "CUSOLVER_STATUS_INVALID_LICENSE",
	12: "CUSOLVER_STATUS_IRS_PARAMS_NOT_INITIALIZED",
	13: "CUSOLVER_STATUS_IRS_PARAMS_INVALID",
	14: "CUSOLVER_STATUS_IRS_PARAMS_INVALID_PREC",
	15: "CUSOLVER_STATUS_IRS_PARAMS_INVALID_REFINE",
	16: "CUSOLVER_STATUS_IRS_PARAMS_INVALID_MAXITER",
	20: "CUSOLVER_STATUS_IRS_INTERNAL_ERROR",
	21: "CUSOLVER_STATUS_IRS_NOT_SUPPORTED",
	22: "CUSOLVER_STATUS_IRS_OUT_OF_RANGE",
	23: "CUSOLVER_STATUS_IRS_NRHS_NOT_SUPPORTED_FOR_REFINE_GMRES",
	25: "CUSOLVER_STATUS_IRS_INFOS_NOT_INITIALIZED",
	26: "CUSOLVER_STATUS_IRS_INFOS_NOT_DESTROYED",
	30: "CUSOLVER_STATUS_IRS_MATRIX_SINGULAR",
	31: "CUSOLVER_STATUS_INVALID_WORKSPACE",
}

// statusName returns the table's name of code, or "<prefix>_<code>" when the table lacks it.
func statusName(table map[int32]string, unknown string, code int32) string {
	if n, ok := table[code]; ok {
		return n
	}
	return fmt.Sprintf("%s %d", unknown, code)
}

// cuResultName names a CUresult from the table (no driver needed).
func cuResultName(r int32) string { return statusName(cuResultNames, "unknown CUresult", r) }

// cublasStatusName names a cublasStatus_t.
func cublasStatusName(s int32) string {
	return statusName(cublasStatusNames, "unknown cublasStatus_t", s)
}

// cusolverStatusName names a cusolverStatus_t.
func cusolverStatusName(s int32) string {
	return statusName(cusolverStatusNames, "unknown cusolverStatus_t", s)
}

// Error is a failed CUDA, cuBLAS or cuSOLVER call.
type Error struct {
	Call string // the function called, e.g. "cuMemAlloc_v2"
	Code int32  // its status
	Name string // the status's name, e.g. "CUDA_ERROR_OUT_OF_MEMORY"
	Text string // the driver's description, when there is one
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s: %s (%d)", e.Call, e.Name, e.Code)
	if e.Text != "" {
		s += ": " + e.Text
	}
	return s
}

// cStr converts a NUL-terminated C string to a Go string (at most 4096 bytes).
func cStr(p *byte) string {
	if p == nil {
		return ""
	}
	var b []byte
	for i := 0; i < 4096; i++ {
		c := *(*byte)(unsafe.Add(unsafe.Pointer(p), i))
		if c == 0 {
			break
		}
		b = append(b, c)
	}
	return string(b)
}

// cuErr returns nil for CUDA_SUCCESS, else an *Error naming the call, decoded by the driver's
// cuGetErrorName/cuGetErrorString when the driver is loaded, else by the table.
func (l *driverLib) cuErr(call string, r int32) error {
	if r == 0 {
		return nil
	}
	e := &Error{Call: call, Code: r, Name: cuResultName(r)}
	if l != nil && l.cuGetErrorName != nil {
		var p *byte
		if l.cuGetErrorName(r, &p) == 0 && p != nil {
			e.Name = cStr(p)
		}
		var q *byte
		if l.cuGetErrorString(r, &q) == 0 && q != nil {
			e.Text = cStr(q)
		}
	}
	return e
}

// cublasErr returns nil for CUBLAS_STATUS_SUCCESS, else an *Error naming the call.
func cublasErr(call string, s int32) error {
	if s == 0 {
		return nil
	}
	return &Error{Call: call, Code: s, Name: cublasStatusName(s)}
}

// cusolverErr returns nil for CUSOLVER_STATUS_SUCCESS, else an *Error naming the call.
func cusolverErr(call string, s int32) error {
	if s == 0 {
		return nil
	}
	return &Error{Call: call, Code: s, Name: cusolverStatusName(s)}
}

// ncclResultNames are the ncclResult_t values of nccl.h.
var ncclResultNames = map[int32]string{
	0: "ncclSuccess",
	1: "ncclUnhandledCudaError",
	2: "ncclSystemError",
	3: "ncclInternalError",
	4: "ncclInvalidArgument",
	5: "ncclInvalidUsage",
	6: "ncclRemoteError",
	7: "ncclInProgress",
}

// ncclResultName names an ncclResult_t.
func ncclResultName(r int32) string { return statusName(ncclResultNames, "unknown ncclResult_t", r) }

// ncclErr returns nil for ncclSuccess, else an *Error naming the call, with NCCL's description
// (ncclGetErrorString) and, where the library has it, the last error NCCL recorded for comm
// (ncclGetLastError; comm may be 0). Every other result, ncclInProgress included, is an error:
// the communicators are blocking ones.
func (l *ncclLib) ncclErr(call string, r int32, comm uintptr) error {
	if r == 0 {
		return nil
	}
	e := &Error{Call: call, Code: r, Name: ncclResultName(r)}
	if l != nil && l.ncclGetErrorString != nil {
		e.Text = cStr(l.ncclGetErrorString(r))
	}
	if l != nil && l.ncclGetLastError != nil {
		if last := cStr(l.ncclGetLastError(comm)); last != "" && last != e.Text {
			if e.Text != "" {
				e.Text += "; "
			}
			e.Text += "last error: " + last
		}
	}
	return e
}

// ncclVersionString formats the code of ncclGetVersion: 22105 -> "2.21.5", 2708 -> "2.7.8"
// (NCCL_VERSION: X*1000 + Y*100 + Z up to 2.8, X*10000 + Y*100 + Z from 2.9 on).
func ncclVersionString(code int) string {
	if code >= 10000 {
		return fmt.Sprintf("%d.%d.%d", code/10000, code%10000/100, code%100)
	}
	return fmt.Sprintf("%d.%d.%d", code/1000, code%1000/100, code%100)
}
