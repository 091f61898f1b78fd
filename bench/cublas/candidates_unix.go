//go:build !windows

package cublas

import (
	"path/filepath"
	"runtime"
	"strings"

	"github.com/detgemm/detgemm/internal/dynlib"
)

// libraryNames are the sonames tried, newest major first; each major's
// soname stays stable across its minor releases.
var libraryNames = []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11"}

// targetDirs are the toolkit's per-architecture library directories.
func targetDirs() []string {
	switch runtime.GOARCH {
	case "arm64":
		return []string{"targets/sbsa-linux/lib", "targets/aarch64-linux/lib"}
	default:
		return []string{"targets/x86_64-linux/lib"}
	}
}

// searchDirs lists, in order, the toolkit directories named by the
// environment, the default toolkit, the versioned toolkits newest first,
// /opt/cuda, and the Python wheels' library folders (patterns, expanded by
// dynlib.Search). Fixed system folders are taken under root.
func searchDirs(getenv func(string) string, root string) []string {
	var dirs []string
	for _, base := range dynlib.Roots(
		getenv("CUDA_PATH"),
		getenv("CUDA_HOME"),
		filepath.Join(root, "/usr/local/cuda"),
		filepath.Join(root, "/usr/local/cuda-*"),
		filepath.Join(root, "/opt/cuda"),
	) {
		dirs = append(dirs, filepath.Join(base, "lib64"))
		for _, t := range targetDirs() {
			dirs = append(dirs, filepath.Join(base, t))
		}
	}
	if p := getenv("CONDA_PREFIX"); p != "" {
		dirs = append(dirs, filepath.Join(p, "lib"))
	}
	// pip installs cuBLAS as nvidia-cublas-cu12 (nvidia/cublas/lib) or, from
	// CUDA 13, inside the nvidia/cu13 bundle.
	var sites []string
	for _, env := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if v := getenv(env); v != "" {
			sites = append(sites, filepath.Join(v, "lib/python3*/site-packages"))
		}
	}
	if home := getenv("HOME"); home != "" {
		sites = append(sites, filepath.Join(home, ".local/lib/python3*/site-packages"))
	}
	for _, s := range []string{
		"/usr/local/lib/python3*/dist-packages",
		"/usr/local/lib/python3*/site-packages",
		"/usr/lib/python3/dist-packages",
		"/usr/lib/python3*/site-packages",
		"/opt/conda/lib/python3*/site-packages",
	} {
		sites = append(sites, filepath.Join(root, s))
	}
	for _, s := range sites {
		dirs = append(dirs,
			filepath.Join(s, "nvidia/cu13/lib"),
			filepath.Join(s, "nvidia/cublas/lib"),
		)
	}
	return dirs
}

// ltSibling names the cuBLASLt library that a cuBLAS file depends on.
func ltSibling(path string) string {
	dir, base := filepath.Split(path)
	if !strings.HasPrefix(base, "libcublas.") {
		return ""
	}
	return filepath.Join(dir, "libcublasLt."+strings.TrimPrefix(base, "libcublas."))
}
