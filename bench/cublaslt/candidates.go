package cublaslt

import (
	"os"

	"github.com/detgemm/detgemm/bench/cublas"
	"github.com/detgemm/detgemm/internal/dynlib"
)

// EnvLibrary names the environment variable that overrides the search: a
// file path, a soname, or a directory to look in.
const EnvLibrary = "DETGEMM_LIBCUBLASLT"

// Candidates returns the paths Open would try, in order, given the current
// environment and file system (directories that do not exist are skipped).
func Candidates() []string {
	c, _ := search(os.Getenv, "")
	return c
}

// search builds the search list and the folders skipped because they are
// not present. override, when not empty, replaces the environment variable
// (WithLibraryPath); either one makes the search exclusive, because a user
// who names a library wants that one or an error.
func search(getenv func(string) string, override string) (cands, skipped []string) {
	if override == "" {
		override = getenv(EnvLibrary)
	}
	if override != "" {
		return dynlib.Override(libraryNames, override), nil
	}
	return dynlib.Search(libraryNames, cublas.SearchDirs(getenv))
}

// notFoundHint ends a failed search's error: where cuBLASLt comes from and
// how to name one.
func notFoundHint(goos string) string {
	pkg := "the distribution's package (Debian/Ubuntu: libcublaslt12), "
	if goos == "windows" {
		pkg = ""
	}
	return "install cuBLASLt (it ships with cuBLAS): " + pkg + "the CUDA toolkit, or the Python wheel " +
		"(pip install nvidia-cublas-cu12, or nvidia-cublas for CUDA 13); or set " + EnvLibrary +
		" to the library (a file, or the folder holding it)"
}
