package nvmlbackend

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/mmkgpu/mmk/partitioner"
)

// Error is an NVML call that did not succeed.
type Error struct {
	// Op says what was being done, e.g. "GPU 0: create GPU instance 3g.40gb@4".
	Op   string
	Code nvml.Return
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Op, CodeName(e.Code)) }

// Unwrap maps the NVML code to partitioner's sentinel errors, so that
// errors.Is(err, partitioner.ErrBusy) holds for NVML_ERROR_IN_USE.
func (e *Error) Unwrap() error {
	switch e.Code {
	case nvml.ERROR_LIBRARY_NOT_FOUND, nvml.ERROR_DRIVER_NOT_LOADED:
		return partitioner.ErrNoDriver
	case nvml.ERROR_IN_USE:
		return partitioner.ErrBusy
	case nvml.ERROR_INSUFFICIENT_RESOURCES:
		return partitioner.ErrInsufficientResources
	case nvml.ERROR_INVALID_ARGUMENT:
		return partitioner.ErrInvalidArgument
	case nvml.ERROR_NOT_FOUND:
		return partitioner.ErrNotFound
	case nvml.ERROR_NOT_SUPPORTED:
		return partitioner.ErrNotSupported
	}
	return nil
}

func check(ret nvml.Return, format string, args ...any) error {
	if ret == nvml.SUCCESS {
		return nil
	}
	return &Error{Op: fmt.Sprintf(format, args...), Code: ret}
}

// codeNames are the C names of the NVML return codes. nvml.Return's own
// Error() gives the driver's prose once the library is loaded; mmk reports
// the name, which is what people search for.
var codeNames = map[nvml.Return]string{
	nvml.SUCCESS:                         "NVML_SUCCESS",
	nvml.ERROR_UNINITIALIZED:             "NVML_ERROR_UNINITIALIZED",
	nvml.ERROR_INVALID_ARGUMENT:          "NVML_ERROR_INVALID_ARGUMENT",
	nvml.ERROR_NOT_SUPPORTED:             "NVML_ERROR_NOT_SUPPORTED",
	nvml.ERROR_NO_PERMISSION:             "NVML_ERROR_NO_PERMISSION",
	nvml.ERROR_ALREADY_INITIALIZED:       "NVML_ERROR_ALREADY_INITIALIZED",
	nvml.ERROR_NOT_FOUND:                 "NVML_ERROR_NOT_FOUND",
	nvml.ERROR_INSUFFICIENT_SIZE:         "NVML_ERROR_INSUFFICIENT_SIZE",
	nvml.ERROR_INSUFFICIENT_POWER:        "NVML_ERROR_INSUFFICIENT_POWER",
	nvml.ERROR_DRIVER_NOT_LOADED:         "NVML_ERROR_DRIVER_NOT_LOADED",
	nvml.ERROR_TIMEOUT:                   "NVML_ERROR_TIMEOUT",
	nvml.ERROR_IRQ_ISSUE:                 "NVML_ERROR_IRQ_ISSUE",
	nvml.ERROR_LIBRARY_NOT_FOUND:         "NVML_ERROR_LIBRARY_NOT_FOUND",
	nvml.ERROR_FUNCTION_NOT_FOUND:        "NVML_ERROR_FUNCTION_NOT_FOUND",
	nvml.ERROR_CORRUPTED_INFOROM:         "NVML_ERROR_CORRUPTED_INFOROM",
	nvml.ERROR_GPU_IS_LOST:               "NVML_ERROR_GPU_IS_LOST",
	nvml.ERROR_RESET_REQUIRED:            "NVML_ERROR_RESET_REQUIRED",
	nvml.ERROR_OPERATING_SYSTEM:          "NVML_ERROR_OPERATING_SYSTEM",
	nvml.ERROR_LIB_RM_VERSION_MISMATCH:   "NVML_ERROR_LIB_RM_VERSION_MISMATCH",
	nvml.ERROR_IN_USE:                    "NVML_ERROR_IN_USE",
	nvml.ERROR_MEMORY:                    "NVML_ERROR_MEMORY",
	nvml.ERROR_NO_DATA:                   "NVML_ERROR_NO_DATA",
	nvml.ERROR_VGPU_ECC_NOT_SUPPORTED:    "NVML_ERROR_VGPU_ECC_NOT_SUPPORTED",
	nvml.ERROR_INSUFFICIENT_RESOURCES:    "NVML_ERROR_INSUFFICIENT_RESOURCES",
	nvml.ERROR_FREQ_NOT_SUPPORTED:        "NVML_ERROR_FREQ_NOT_SUPPORTED",
	nvml.ERROR_ARGUMENT_VERSION_MISMATCH: "NVML_ERROR_ARGUMENT_VERSION_MISMATCH",
	nvml.ERROR_DEPRECATED:                "NVML_ERROR_DEPRECATED",
	nvml.ERROR_NOT_READY:                 "NVML_ERROR_NOT_READY",
	nvml.ERROR_GPU_NOT_FOUND:             "NVML_ERROR_GPU_NOT_FOUND",
	nvml.ERROR_INVALID_STATE:             "NVML_ERROR_INVALID_STATE",
	nvml.ERROR_UNKNOWN:                   "NVML_ERROR_UNKNOWN",
}

// CodeName returns the C name of an NVML return code, e.g. "NVML_ERROR_IN_USE".
func CodeName(r nvml.Return) string {
	if n, ok := codeNames[r]; ok {
		return n
	}
	return fmt.Sprintf("NVML return code %d", int32(r))
}
