package cublas

import (
	"os"
	"path/filepath"

	"github.com/detgemm/detgemm/internal/dynlib"
)

// EnvLibrary names the environment variable that overrides the search: a file
// path, a soname, or a directory to look in.
const EnvLibrary = "DETGEMM_LIBCUBLAS"

// Candidates returns the paths Open would try, in order, given the current
// environment and file system (directories that do not exist are skipped).
func Candidates() []string { return candidates(os.Getenv, "") }

// candidates builds the search list. override, when not empty, replaces the
// environment variable (WithLibraryPath); either one makes the search
// exclusive, because a user who names a library wants that one or an error.
func candidates(getenv func(string) string, override string) []string {
	if override == "" {
		override = getenv(EnvLibrary)
	}
	if override != "" {
		if fi, err := os.Stat(override); err == nil && fi.IsDir() {
			out := make([]string, 0, len(libraryNames))
			for _, n := range libraryNames {
				out = append(out, filepath.Join(override, n))
			}
			return out
		}
		return []string{override}
	}
	return dynlib.Candidates(libraryNames, searchDirs(getenv))
}
