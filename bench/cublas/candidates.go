package cublas

import (
	"os"

	"github.com/detgemm/detgemm/internal/dynlib"
)

// EnvLibrary names the environment variable that overrides the search: a file
// path, a soname, or a directory to look in.
const EnvLibrary = "DETGEMM_LIBCUBLAS"

// Candidates returns the paths Open would try, in order, given the current
// environment and file system (directories that do not exist are skipped).
func Candidates() []string { return candidates(os.Getenv, "") }

// candidates is search without the skipped folders.
func candidates(getenv func(string) string, override string) []string {
	c, _ := search(getenv, override, "")
	return c
}

// search builds the search list and the folders skipped because they are
// not present; fixed system folders are taken under root ("" in
// production). override, when not empty, replaces the environment variable
// (WithLibraryPath); either one makes the search exclusive, because a user
// who names a library wants that one or an error.
func search(getenv func(string) string, override, root string) (cands, skipped []string) {
	if override == "" {
		override = getenv(EnvLibrary)
	}
	if override != "" {
		return dynlib.Override(libraryNames, override), nil
	}
	return dynlib.Search(libraryNames, searchDirs(getenv, root))
}

// notFoundHint ends a failed search's error: where cuBLAS comes from and
// how to name one.
func notFoundHint(goos string) string {
	pkg := "the distribution's package (Debian/Ubuntu: libcublas12), "
	if goos == "windows" {
		pkg = ""
	}
	return "install cuBLAS: " + pkg + "the CUDA toolkit, or the Python wheel (pip install nvidia-cublas-cu12, " +
		"or nvidia-cublas for CUDA 13); or set " + EnvLibrary + " to the library (a file, or the folder holding it)"
}

// platformError is Open's error where CUDA does not exist (macOS), or nil.
func platformError(goos string) error {
	if nf := dynlib.UnsupportedOS(libraryLabel, ErrNotFound, goos); nf != nil {
		return nf
	}
	return nil
}

// SearchDirs is the list of folders Open searches after the system loader,
// in order, given getenv (os.Getenv in production); patterns are left for
// dynlib.Search to expand. It is exported for the sibling cublaslt
// package: cuBLASLt ships in the same folders as cuBLAS (toolkit, wheel and
// conda alike), so both search one list.
func SearchDirs(getenv func(string) string) []string { return searchDirs(getenv, "") }
