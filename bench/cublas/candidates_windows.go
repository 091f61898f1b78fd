//go:build windows

package cublas

import (
	"path/filepath"
	"strings"
)

// libraryNames are the DLL names tried, newest major first.
var libraryNames = []string{"cublas64_13.dll", "cublas64_12.dll", "cublas64_11.dll"}

// searchDirs lists the toolkit's DLL folders (CUDA 13 moved them to
// bin\x64); root is unused, as Windows has no fixed system folders here.
func searchDirs(getenv func(string) string, root string) []string {
	var dirs []string
	for _, root := range []string{getenv("CUDA_PATH"), getenv("CUDA_HOME")} {
		if root == "" {
			continue
		}
		dirs = append(dirs, filepath.Join(root, "bin", "x64"), filepath.Join(root, "bin"))
	}
	if v := getenv("VIRTUAL_ENV"); v != "" {
		sp := filepath.Join(v, "Lib", "site-packages", "nvidia")
		dirs = append(dirs, filepath.Join(sp, "cu13", "bin", "x64"), filepath.Join(sp, "cu13", "bin"),
			filepath.Join(sp, "cublas", "bin"))
	}
	return dirs
}

// ltSibling names the cuBLASLt DLL that a cuBLAS DLL depends on; Windows
// does not look in a DLL's own folder for its dependencies by default.
func ltSibling(path string) string {
	dir, base := filepath.Split(path)
	if !strings.HasPrefix(base, "cublas64_") {
		return ""
	}
	return filepath.Join(dir, "cublasLt64_"+strings.TrimPrefix(base, "cublas64_"))
}
