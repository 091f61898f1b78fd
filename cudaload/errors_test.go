package cudaload

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/detgemm/detgemm/internal/dynlib"
	"github.com/stretchr/testify/require"
)

func TestResultFormatsNameCodeAndMessage(t *testing.T) {
	require.Equal(t, "CUDA_ERROR_OUT_OF_MEMORY (2): out of memory", ErrOutOfMemory.Error())
	require.Equal(t, "CUDA_ERROR_INVALID_VALUE", ErrInvalidValue.Name())
	require.Equal(t, "CUDA_ERROR_STUB_LIBRARY", ErrStub.Name())
	unknown := Result(123456)
	require.Contains(t, unknown.Error(), "123456")
	require.NotEmpty(t, unknown.Message())
}

func TestBuiltinTableNamesEveryConstant(t *testing.T) {
	for code, texts := range builtinResults {
		require.True(t, strings.HasPrefix(texts[0], "CUDA_"), "code %d name %q", code, texts[0])
		require.NotEmpty(t, texts[1], "code %d", code)
	}
}

func TestErrorCarriesOpAndMatchesItsCode(t *testing.T) {
	err := fmt.Errorf("allocating the workspace: %w", newError("cuMemAlloc_v2", ErrOutOfMemory))
	require.ErrorIs(t, err, ErrOutOfMemory)
	require.NotErrorIs(t, err, ErrInvalidValue)
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, "cuMemAlloc_v2", e.Op)
	require.Equal(t, ErrOutOfMemory, e.Code)
	require.Equal(t, "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory", e.Error())
	var r Result
	require.ErrorAs(t, err, &r)
	require.Equal(t, ErrOutOfMemory, r)
}

func TestErrorWithoutTextsFallsBackToTheCode(t *testing.T) {
	e := &Error{Code: ErrInvalidContext}
	require.Equal(t, "CUDA_ERROR_INVALID_CONTEXT (201): invalid device context", e.Error())
}

func TestCheckIsNilOnSuccess(t *testing.T) {
	require.NoError(t, check("cuInit", Success))
	require.ErrorIs(t, check("cuInit", ErrNoDevice), ErrNoDevice)
}

func TestArgumentErrorMatchesInvalidArgumentAndInvalidValue(t *testing.T) {
	err := argError("Launch", "Grid.X is 0")
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.ErrorIs(t, err, ErrInvalidValue)
	require.NotErrorIs(t, err, ErrOutOfMemory)
	require.Contains(t, err.Error(), "Launch")
	require.Contains(t, err.Error(), "Grid.X is 0")
}

func TestClosedErrorMatchesErrClosed(t *testing.T) {
	err := &ClosedError{Op: "MemAlloc", Object: "context"}
	require.ErrorIs(t, err, ErrClosed)
	require.Equal(t, "cudaload: MemAlloc: context is closed", err.Error())
}

func TestSymbolMissingNamesSymbolAndDriverVersion(t *testing.T) {
	inner := &dynlib.SymbolError{Library: "/x/libcuda.so.1", Symbol: "cuTensorMapEncodeTiled", Err: errors.New("undefined symbol")}
	err := error(&SymbolMissingError{Symbol: "cuTensorMapEncodeTiled", Path: "/x/libcuda.so.1", Version: 11080, Err: inner})
	require.ErrorIs(t, err, ErrSymbolMissing)
	require.ErrorIs(t, err, dynlib.ErrSymbolNotFound)
	require.Contains(t, err.Error(), "cuTensorMapEncodeTiled")
	require.Contains(t, err.Error(), "11.8")
	require.Contains(t, err.Error(), "/x/libcuda.so.1")
}

// fakeLookup resolves the names it holds.
type fakeLookup map[string]uintptr

func (f fakeLookup) Lookup(name string) (uintptr, error) {
	if p := f[name]; p != 0 {
		return p, nil
	}
	return 0, &dynlib.SymbolError{Library: "fake", Symbol: name, Err: errors.New("undefined symbol")}
}

func TestResolveNamesTheFirstMissingSymbol(t *testing.T) {
	var s symbols
	all := fakeLookup{}
	for _, row := range s.table() {
		all[row.names[len(row.names)-1]] = 0x1000
	}
	delete(all, "cuLaunchKernel")
	err := s.resolve(all, "/fake/libcuda.so.1", 12020)
	require.ErrorIs(t, err, ErrSymbolMissing)
	require.Contains(t, err.Error(), "cuLaunchKernel")
	require.Contains(t, err.Error(), "12.2")
}

func TestResolvePrefersVersionedEventElapsedTime(t *testing.T) {
	for _, tt := range []struct {
		name string
		have map[string]uintptr
		want uintptr
	}{
		{"v2 present", map[string]uintptr{"cuEventElapsedTime_v2": 0x2000, "cuEventElapsedTime": 0x1000}, 0x2000},
		{"only v1", map[string]uintptr{"cuEventElapsedTime": 0x1000}, 0x1000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var s symbols
			lib := fakeLookup{}
			for _, row := range s.table() {
				for _, n := range row.names {
					lib[n] = 0x3000
				}
			}
			delete(lib, "cuEventElapsedTime_v2")
			delete(lib, "cuEventElapsedTime")
			for k, v := range tt.have {
				lib[k] = v
			}
			require.NoError(t, s.resolve(lib, "fake", 12080))
			require.Equal(t, tt.want, s.cuEventElapsedTime)
		})
	}
}

func TestSymbolTableBindsVersionedEntryPoints(t *testing.T) {
	var s symbols
	names := map[string]bool{}
	for _, row := range s.table() {
		names[row.names[0]] = true
	}
	for _, want := range []string{
		"cuMemAlloc_v2", "cuMemFree_v2", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuMemcpyDtoD_v2",
		"cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2", "cuMemcpyDtoDAsync_v2", "cuMemsetD8_v2", "cuMemsetD32_v2",
		"cuStreamDestroy_v2", "cuEventDestroy_v2", "cuDevicePrimaryCtxRelease_v2", "cuDeviceTotalMem_v2",
	} {
		require.True(t, names[want], want)
	}
	for _, unversioned := range []string{"cuMemAlloc", "cuMemFree", "cuStreamDestroy", "cuEventDestroy", "cuDevicePrimaryCtxRelease", "cuDeviceTotalMem"} {
		require.False(t, names[unversioned], "%s binds the CUDA 3.x ABI", unversioned)
	}
}

func TestDriverNotFoundMatchesEachCandidatesReason(t *testing.T) {
	err := error(&DriverNotFoundError{Search: &dynlib.NotFoundError{
		Library:  "CUDA driver (libcuda.so.1)",
		Sentinel: ErrDriverNotFound,
		Hint:     driverHint("linux"),
		Attempts: []dynlib.Attempt{
			{Path: "libcuda.so.1", Err: &stubError{path: "libcuda.so.1"}},
			{Path: "/usr/lib64/libcuda.so.1", Err: newError("cuInit", ErrNoDevice)},
		},
	}})
	require.ErrorIs(t, err, ErrDriverNotFound)
	require.ErrorIs(t, err, dynlib.ErrNotFound)
	require.ErrorIs(t, err, ErrStubLibrary)
	require.ErrorIs(t, err, ErrStub)
	require.ErrorIs(t, err, ErrNoDevice)
	require.NotErrorIs(t, err, ErrSymbolMissing)
	msg := err.Error()
	require.Contains(t, msg, "libcuda.so.1: "+ErrStubLibrary.Error())
	require.Contains(t, msg, "/usr/lib64/libcuda.so.1: cuInit: CUDA_ERROR_NO_DEVICE (100)")
	require.Contains(t, msg, EnvLibraryPath)
}

func TestFormatVersion(t *testing.T) {
	for v, want := range map[int]string{13000: "13.0", 12080: "12.8", 12020: "12.2", 11040: "11.4", 0: "(unknown version)"} {
		require.Equal(t, want, FormatVersion(v), "%d", v)
	}
}

func TestSymbolMissingWithoutVersionSaysNotADriver(t *testing.T) {
	err := &SymbolMissingError{Symbol: "cuInit", Path: "/lib/libc.so.6"}
	require.ErrorIs(t, err, ErrSymbolMissing)
	require.Contains(t, err.Error(), "/lib/libc.so.6 does not export cuInit")
}
