package nvrtc

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

func TestStatusPrintsNameAndNumber(t *testing.T) {
	require.Equal(t, "NVRTC_ERROR_COMPILATION (6)", StatusCompilation.Error())
	require.Equal(t, "NVRTC_ERROR_INVALID_OPTION (5)", StatusInvalidOption.Error())
	require.Equal(t, "NVRTC_ERROR (42)", Status(42).Error())
}

func TestCallErrorMatchesItsStatus(t *testing.T) {
	err := error(&CallError{Func: "nvrtcCreateProgram", Status: StatusInvalidInput, Message: "NVRTC_ERROR_INVALID_INPUT"})
	require.True(t, errors.Is(err, StatusInvalidInput))
	require.False(t, errors.Is(err, StatusOutOfMemory))
	// NVRTC's message equals the enum name: printed once, not twice.
	require.Equal(t, "nvrtc: nvrtcCreateProgram: NVRTC_ERROR_INVALID_INPUT (3)", err.Error())

	err = &CallError{Func: "nvrtcGetCUBIN", Status: Status(99), Message: "something new"}
	require.Equal(t, "nvrtc: nvrtcGetCUBIN: NVRTC_ERROR (99): something new", err.Error())
}

func TestCompileErrorCarriesWholeLog(t *testing.T) {
	log := "k.cu(3): error: expected a \";\"\n\n1 error detected in the compilation of \"k.cu\".\n"
	err := error(&CompileError{Name: "k.cu", Status: StatusCompilation, Log: log, Result: &Result{Log: log}})
	require.ErrorIs(t, err, ErrCompile)
	require.ErrorIs(t, err, StatusCompilation)
	require.NotErrorIs(t, err, ErrBuiltinsMissing)
	require.Contains(t, err.Error(), "compiling k.cu failed")
	require.Contains(t, err.Error(), strings.TrimSpace(log))
}

func TestBuiltinsFailureIsRecognisedInTheLog(t *testing.T) {
	// The first log is verbatim what NVRTC 12.4 wrote (status 7) with its
	// builtins library hidden; the next two are its other messages.
	for _, tc := range []struct {
		name string
		log  string
		want string
		ok   bool
	}{
		{"failed to open", "nvrtc: error: failed to open libnvrtc-builtins.so.12.4.\n  Make sure that libnvrtc-builtins.so.12.4 is installed correctly.\n",
			"libnvrtc-builtins.so.12.4", true},
		{"corrupted", "nvrtc: error: libnvrtc-builtins.so.13.0 is corrupted, can't find entry functions\n",
			"libnvrtc-builtins.so.13.0", true},
		{"failed to load for arch", "nvrtc: error: failed to load builtins for compute_90.\n",
			"libnvrtc-builtins", true},
		{"windows name", "nvrtc: error: failed to open nvrtc-builtins64_120.dll.\n  Make sure that nvrtc-builtins64_120.dll is installed correctly.",
			"nvrtc-builtins64_120.dll", true},
		{"ordinary compile error", "k.cu(1): error: identifier \"x\" is undefined\n", "", false},
		{"empty", "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := missingBuiltins(tc.log)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestBuiltinsErrorTellsWhatToInstall(t *testing.T) {
	log := "nvrtc: error: failed to open libnvrtc-builtins.so.12.4.\n  Make sure that libnvrtc-builtins.so.12.4 is installed correctly.\n"
	f, ok := missingBuiltins(log)
	require.True(t, ok)
	err := error(&CompileError{Name: "util.cu", Status: StatusBuiltinOperationFailure, Log: log,
		Builtins: f, Library: "/usr/local/cuda/lib64/libnvrtc.so.12"})
	require.ErrorIs(t, err, ErrBuiltinsMissing)
	require.ErrorIs(t, err, ErrCompile)
	msg := err.Error()
	require.Contains(t, msg, "could not load libnvrtc-builtins.so.12.4")
	require.Contains(t, msg, "install the libnvrtc-builtins.so.12.4")
	require.Contains(t, msg, "/usr/local/cuda/lib64/libnvrtc.so.12")
	require.Contains(t, msg, EnvLibrary)
}

func TestArchOptionsMustNameARealArchitecture(t *testing.T) {
	for _, tc := range []struct {
		name    string
		options []string
		bad     string // the option the error names; "" for "none given"
		ok      bool
	}{
		{"long form sm", []string{"--std=c++17", "--gpu-architecture=sm_80"}, "", true},
		{"short form sm_90a", []string{"-arch=sm_90a"}, "", true},
		{"two tokens", []string{"-arch", "sm_86"}, "", true},
		{"virtual long form", []string{"--gpu-architecture=compute_80"}, "--gpu-architecture=compute_80", false},
		{"virtual short form", []string{"-arch=compute_90a"}, "-arch=compute_90a", false},
		{"virtual two tokens", []string{"--gpu-architecture", "compute_80"}, "--gpu-architecture compute_80", false},
		{"real then virtual", []string{"-arch=sm_80", "-arch=compute_80"}, "-arch=compute_80", false},
		{"none", []string{"--std=c++17"}, "", false},
		{"empty", nil, "", false},
		{"dangling flag", []string{"-arch"}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkArchOptions(tc.options)
			if tc.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrNeedsRealArch)
			var ae *ArchError
			require.ErrorAs(t, err, &ae)
			require.Equal(t, tc.bad, ae.Option)
		})
	}
}

func TestCStringsRejectNUL(t *testing.T) {
	_, err := cString("source", "a\x00b")
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = newCStringArray("option", []string{"--ok", "bad\x00"})
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.Contains(t, err.Error(), "option[1]")

	b, err := cString("name", "k.cu")
	require.NoError(t, err)
	require.Equal(t, []byte("k.cu\x00"), b)
	require.Equal(t, "k.cu", goString(uintptr(unsafe.Pointer(&b[0]))))
	runtime.KeepAlive(b)
}
