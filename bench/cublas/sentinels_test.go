package cublas_test

import (
	"errors"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/detgemm/detgemm/bench/cublas"
	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/nvrtc"
)

// TestEachLoaderMatchesOnlyItsOwnSentinel proves that a program can tell
// which library is missing: the driver's, NVRTC's and cuBLAS's failures
// each match their own sentinel and none of the others'.
func TestEachLoaderMatchesOnlyItsOwnSentinel(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "libdetgemm-missing.so.1")
	sentinels := map[string]error{
		"cudaload.ErrDriverNotFound": cudaload.ErrDriverNotFound,
		"cudaload.ErrSymbolMissing":  cudaload.ErrSymbolMissing,
		"nvrtc.ErrNotFound":          nvrtc.ErrNotFound,
		"nvrtc.ErrSymbolNotFound":    nvrtc.ErrSymbolNotFound,
		"cublas.ErrNotFound":         cublas.ErrNotFound,
	}
	rows := []loaderRow{
		{"driver missing", openDriver, missing, []string{"cudaload.ErrDriverNotFound"}},
		{"nvrtc missing", openNVRTC, missing, []string{"nvrtc.ErrNotFound"}},
		{"cublas missing", openCuBLAS, missing, []string{"cublas.ErrNotFound"}},
	}
	if runtime.GOOS == "linux" {
		// A library that loads but is not the one asked for: the search fails
		// with the library's own missing-symbol reason.
		rows = append(rows, []loaderRow{
			{"driver is libc", openDriver, "libc.so.6", []string{"cudaload.ErrDriverNotFound", "cudaload.ErrSymbolMissing"}},
			{"nvrtc is libc", openNVRTC, "libc.so.6", []string{"nvrtc.ErrNotFound", "nvrtc.ErrSymbolNotFound"}},
			{"cublas is libc", openCuBLAS, "libc.so.6", []string{"cublas.ErrNotFound"}},
		}...)
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			err := row.open(row.path)
			require.Error(t, err)
			want := map[string]bool{}
			for _, m := range row.match {
				want[m] = true
			}
			for name, s := range sentinels {
				require.Equal(t, want[name], errors.Is(err, s), "errors.Is(err, %s) for:\n%v", name, err)
			}
		})
	}
}

// loaderRow opens one library from path; the error must match the
// sentinels named in match and no other.
type loaderRow struct {
	name  string
	open  func(path string) error
	path  string
	match []string
}

func openDriver(path string) error {
	_, err := cudaload.Open(cudaload.WithLibraryPath(path))
	return err
}

func openNVRTC(path string) error {
	_, err := nvrtc.Open(nvrtc.WithLibraryPath(path))
	return err
}

func openCuBLAS(path string) error {
	_, err := cublas.Open(cublas.WithLibraryPath(path))
	return err
}

func TestSentinelsAreDistinct(t *testing.T) {
	all := []error{cudaload.ErrDriverNotFound, nvrtc.ErrNotFound, cublas.ErrNotFound}
	for i, a := range all {
		for j, b := range all {
			require.Equal(t, i == j, errors.Is(a, b), "%v / %v", a, b)
		}
	}
}
