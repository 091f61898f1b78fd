package cudaload

import (
	"os"
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
// not change dlopen's search.
var linuxDriverDirs = []string{
	"/usr/lib/x86_64-linux-gnu",
	"/usr/lib64",
	"/usr/lib/aarch64-linux-gnu",
	"/usr/local/nvidia/lib64",
	"/usr/lib/wsl/lib",
	"/usr/local/cuda/compat",
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

// defaultDriverDirs lists the directories searched on goos after the
// system loader's own search.
func defaultDriverDirs(goos string) []string {
	if goos == "linux" {
		return linuxDriverDirs
	}
	return nil
}

// driverCandidates is the search list, a pure function of its inputs so it
// can be tested against fake directories. A non-empty override is the only
// candidate: a library the user named is never silently replaced by
// another. An override that is a directory means the library inside it.
// Otherwise: the library name for the system loader's search, then that
// name in each of dirs that exists, in order.
func driverCandidates(goos, override string, dirs []string) []string {
	name := driverLibraryName(goos)
	if override != "" {
		if fi, err := os.Stat(override); err == nil && fi.IsDir() {
			return []string{filepath.Join(override, name)}
		}
		return []string{override}
	}
	return dynlib.Candidates([]string{name}, dirs)
}
