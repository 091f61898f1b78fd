package nvrtc

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Sentinels for errors.Is.
var (
	// ErrNotFound is matched when no candidate library could be opened,
	// and on macOS, where CUDA does not exist. It is NVRTC's own: a
	// missing CUDA driver or cuBLAS does not match it. The error lists
	// every candidate and why it failed, the folders skipped because they
	// are not present, and where NVRTC comes from.
	ErrNotFound = errors.New("nvrtc: NVRTC library not found")
	// ErrSymbolNotFound is matched when libnvrtc lacks a function (a
	// candidate without nvrtcGetCUBIN, or SupportedArchs on a library
	// without nvrtcGetSupportedArchs). A driver lacking a symbol does not
	// match it.
	ErrSymbolNotFound = errors.New("nvrtc: symbol not found in libnvrtc")
	// ErrCompile is matched by every *CompileError.
	ErrCompile = errors.New("nvrtc: compilation failed")
	// ErrBuiltinsMissing is matched by a *CompileError whose log shows
	// that NVRTC could not load its libnvrtc-builtins companion library.
	ErrBuiltinsMissing = errors.New("nvrtc: libnvrtc-builtins could not be loaded")
	// ErrNeedsRealArch is matched by every *ArchError.
	ErrNeedsRealArch = errors.New("nvrtc: options must name a real GPU architecture (sm_XX)")
	// ErrInvalidArgument is matched when a Go argument cannot be passed to
	// NVRTC, such as a string holding a NUL byte.
	ErrInvalidArgument = errors.New("nvrtc: invalid argument")
)

// Status is an nvrtcResult. Non-zero values are errors and can be matched
// with errors.Is against the constants below.
type Status int32

// The nvrtcResult values detgemm meets; NVRTC may return others, which
// print by number.
const (
	StatusSuccess                 Status = 0
	StatusOutOfMemory             Status = 1
	StatusProgramCreationFailure  Status = 2
	StatusInvalidInput            Status = 3
	StatusInvalidProgram          Status = 4
	StatusInvalidOption           Status = 5
	StatusCompilation             Status = 6
	StatusBuiltinOperationFailure Status = 7
	StatusInternalError           Status = 11
)

var statusNames = map[Status]string{
	StatusSuccess:                 "NVRTC_SUCCESS",
	StatusOutOfMemory:             "NVRTC_ERROR_OUT_OF_MEMORY",
	StatusProgramCreationFailure:  "NVRTC_ERROR_PROGRAM_CREATION_FAILURE",
	StatusInvalidInput:            "NVRTC_ERROR_INVALID_INPUT",
	StatusInvalidProgram:          "NVRTC_ERROR_INVALID_PROGRAM",
	StatusInvalidOption:           "NVRTC_ERROR_INVALID_OPTION",
	StatusCompilation:             "NVRTC_ERROR_COMPILATION",
	StatusBuiltinOperationFailure: "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE",
	StatusInternalError:           "NVRTC_ERROR_INTERNAL_ERROR",
}

// Error returns the enum's name and number, e.g. "NVRTC_ERROR_COMPILATION (6)".
func (s Status) Error() string {
	if n, ok := statusNames[s]; ok {
		return fmt.Sprintf("%s (%d)", n, int32(s))
	}
	return fmt.Sprintf("NVRTC_ERROR (%d)", int32(s))
}

// CallError says that one NVRTC function returned an error status.
type CallError struct {
	Func    string // the NVRTC function, e.g. "nvrtcCreateProgram"
	Status  Status
	Message string // nvrtcGetErrorString's text, when available
}

// Error implements the error interface.
func (e *CallError) Error() string {
	if e.Message != "" && !strings.HasPrefix(e.Status.Error(), e.Message+" ") {
		return fmt.Sprintf("nvrtc: %s: %v: %s", e.Func, e.Status, e.Message)
	}
	return fmt.Sprintf("nvrtc: %s: %v", e.Func, e.Status)
}

// Unwrap returns the Status, so errors.Is(err, StatusInvalidOption) works.
func (e *CallError) Unwrap() error { return e.Status }

// CompileError says that nvrtcCompileProgram failed. Log is the whole
// program log; Result holds it too, for callers that want the same shape as
// a success.
type CompileError struct {
	Name   string // the program's name, as passed to Compile
	Status Status
	Log    string
	Result *Result
	// Builtins is the libnvrtc-builtins file NVRTC failed to load, when the
	// log says so; empty otherwise.
	Builtins string
	// Library is the path libnvrtc was opened from, to say where the
	// builtins library must sit.
	Library string
}

// Error implements the error interface.
func (e *CompileError) Error() string {
	var b strings.Builder
	if e.Builtins != "" {
		fmt.Fprintf(&b, "nvrtc: compiling %s failed: NVRTC (%s) could not load %s; "+
			"install the %s that matches this NVRTC release, in the same directory as libnvrtc or on the "+
			"loader's path (LD_LIBRARY_PATH set before the process starts), or point %s at an NVRTC "+
			"installation that has it", e.Name, e.Library, e.Builtins, e.Builtins, EnvLibrary)
	} else {
		fmt.Fprintf(&b, "nvrtc: compiling %s failed: %v", e.Name, e.Status)
	}
	if log := strings.TrimSpace(e.Log); log != "" {
		b.WriteString("\n")
		b.WriteString(log)
	}
	return b.String()
}

// Is matches ErrCompile, and ErrBuiltinsMissing when the builtins library
// could not be loaded.
func (e *CompileError) Is(target error) bool {
	return target == ErrCompile || (target == ErrBuiltinsMissing && e.Builtins != "")
}

// Unwrap returns the Status.
func (e *CompileError) Unwrap() error { return e.Status }

// ArchError says that the compile options do not ask for CUBIN of a real
// architecture.
type ArchError struct {
	Option string // the offending option, or "" when none named an architecture
}

// Error implements the error interface.
func (e *ArchError) Error() string {
	if e.Option == "" {
		return "nvrtc: no --gpu-architecture=sm_XX option; detgemm compiles CUBIN only, " +
			"so the options must name the device's real architecture"
	}
	return fmt.Sprintf("nvrtc: option %q names a virtual architecture, which yields PTX only; "+
		"detgemm compiles CUBIN only: use sm_XX", e.Option)
}

// Is matches ErrNeedsRealArch.
func (e *ArchError) Is(target error) bool { return target == ErrNeedsRealArch }

// builtinsFailure finds NVRTC's report that its builtins library failed to
// load ("failed to open libnvrtc-builtins.so.12.4", "... is corrupted",
// "failed to load builtins for compute_90") and returns the file it names.
var builtinsFailure = regexp.MustCompile(
	`(?:failed to open (\S*nvrtc-builtins\S*?)\.?(?:\s|$)|(\S*nvrtc-builtins\S*) is corrupted|failed to load builtins)`)

func missingBuiltins(log string) (string, bool) {
	m := builtinsFailure.FindStringSubmatch(log)
	if m == nil {
		return "", false
	}
	for _, g := range m[1:] {
		if g != "" {
			return g, true
		}
	}
	// "failed to load builtins" without a file name: name it by pattern.
	if n := regexp.MustCompile(`\S*nvrtc-builtins\S*\.(?:so(?:\.\d+)*|dll)`).FindString(log); n != "" {
		return n, true
	}
	return "libnvrtc-builtins", true
}
