package cudaload

import (
	"path/filepath"

	"github.com/detgemm/detgemm/internal/dynlib"
)

// EnvLibraryPath names the environment variable that overrides the driver
// search: the path of the library to load, or a directory holding it.
// WithLibraryPath takes precedence over it.
const EnvLibraryPath = "DETGEMM_LIBCUDA"

// linuxDriverDirs are searched by absolute path after the soname, because
// the process's loader path may not include them (WSL2's /usr/lib/wsl/lib
// in particular) and setting LD_LIBRARY_PATH from inside the process does
// not change dlopen's search. The last entry is a pattern: the forward
// compatibility libraries of versioned toolkits (cuda-compat packages),
// newest first; they come after the system driver because they work only
// on the GPUs and kernel drivers NVIDIA lists for them.
var linuxDriverDirs = []string{
	"/usr/lib/x86_64-linux-gnu",
	"/usr/lib64",
	"/usr/lib/aarch64-linux-gnu",
	"/usr/local/nvidia/lib64",
	"/usr/lib/wsl/lib",
	"/usr/local/cuda/compat",
	"/usr/local/cuda-*/compat",
}

// driverLibraryName is the file name of the driver library on goos. On
// Linux it is the versioned soname: bare libcuda.so is often the toolkit's
// link-time stub, so it is never a candidate.
func driverLibraryName(goos string) string {
	if goos == "windows" {
		return "nvcuda.dll"
	}
	return "libcuda.so.1"
}

// defaultDriverDirs lists the directories (and patterns) searched on goos
// after the system loader's own search, each under root ("" in production,
// a temporary directory in tests).
func defaultDriverDirs(goos, root string) []string {
	if goos != "linux" {
		return nil
	}
	out := make([]string, len(linuxDriverDirs))
	for i, d := range linuxDriverDirs {
		out[i] = filepath.Join(root, d)
	}
	return out
}

// driverLabel names the driver in a failed search's error.
func driverLabel(goos string) string { return "CUDA driver (" + driverLibraryName(goos) + ")" }

// driverHint ends a failed search's error: where the driver comes from
// and how to name one.
func driverHint(goos string) string {
	if goos == "windows" {
		return "install the NVIDIA driver (it provides nvcuda.dll), or set " + EnvLibraryPath +
			" to the driver library (a file, or the folder holding it)"
	}
	return "install the NVIDIA driver (it provides libcuda.so.1; Debian: libcuda1, Ubuntu: libnvidia-compute-<version>; " +
		"in a container, start it with the GPUs exposed), or set " + EnvLibraryPath +
		" to the driver library (a file, or the folder holding it; WSL2: /usr/lib/wsl/lib)"
}

// platformError is Open's error where CUDA does not exist (macOS), or nil.
func platformError(goos string) error {
	if nf := dynlib.UnsupportedOS(driverLabel(goos), ErrDriverNotFound, goos); nf != nil {
		return &DriverNotFoundError{Search: nf}
	}
	return nil
}

// driverCandidates is the search list and the folders skipped because they
// are not present, a pure function of its inputs so it can be tested
// against fake directories. A non-empty override is the only candidate: a
// library the user named is never silently replaced by another. An
// override that is a directory means the library inside it. Otherwise: the
// library name for the system loader's search, then that name in each of
// dirs that exists, in order.
func driverCandidates(goos, override string, dirs []string) (candidates, skipped []string) {
	name := driverLibraryName(goos)
	if override != "" {
		return dynlib.Override([]string{name}, override), nil
	}
	return dynlib.Search([]string{name}, dirs)
}
