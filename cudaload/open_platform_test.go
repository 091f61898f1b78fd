package cudaload

import (
	"strings"
	"testing"

	"github.com/detgemm/detgemm/internal/dynlib"
	"github.com/stretchr/testify/require"
)

func TestOpenOnMacOSSaysCUDAIsNotAvailable(t *testing.T) {
	for _, goos := range []string{"linux", "windows"} {
		require.NoError(t, platformError(goos), goos)
	}
	err := platformError("darwin")
	require.ErrorIs(t, err, ErrDriverNotFound)
	require.ErrorIs(t, err, dynlib.ErrNotFound)
	var nf *DriverNotFoundError
	require.ErrorAs(t, err, &nf)
	require.Empty(t, nf.Search.Attempts, "no search is made where CUDA does not exist")
	require.True(t, strings.HasPrefix(err.Error(), "CUDA driver (libcuda.so.1) not found: CUDA is not available on macOS"), err.Error())
	require.NotContains(t, err.Error(), EnvLibraryPath, "no override can help on macOS")
}

func TestDriverHintSaysWhereTheDriverComesFrom(t *testing.T) {
	for _, tt := range []struct {
		goos string
		want []string
	}{
		{"linux", []string{EnvLibraryPath, "libcuda.so.1", "NVIDIA driver", "libcuda1", "/usr/lib/wsl/lib"}},
		{"windows", []string{EnvLibraryPath, "nvcuda.dll", "NVIDIA driver"}},
	} {
		t.Run(tt.goos, func(t *testing.T) {
			h := driverHint(tt.goos)
			for _, w := range tt.want {
				require.Contains(t, h, w)
			}
		})
	}
}
