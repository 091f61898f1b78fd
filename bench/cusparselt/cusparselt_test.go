package cusparselt

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSearchAddsTheWheelFolderBesideCuBLASs(t *testing.T) {
	wheel := filepath.FromSlash("/usr/lib/python3/dist-packages/nvidia/cublas/lib")
	got := searchDirs([]string{"/usr/local/cuda/lib64", wheel})
	require.Equal(t, []string{"/usr/local/cuda/lib64", wheel,
		filepath.FromSlash("/usr/lib/python3/dist-packages/nvidia/cusparselt/lib")}, got)
}

func TestSearchFindsTheWheelsOfPython3OnPath(t *testing.T) {
	venv := t.TempDir()
	bin := filepath.Join(venv, "bin")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "python3"), nil, 0o755))
	got := pythonDirs(strings.Join([]string{"", t.TempDir(), bin}, string(os.PathListSeparator)))
	site := filepath.Join(venv, "lib", "python3*", "site-packages")
	require.Equal(t, []string{filepath.Join(site, "nvidia", "cusparselt", "lib"), filepath.Join(site, "nvidia", "cu13", "lib")}, got,
		"only folders holding a python3 count")
}

func TestOverrideIsTheWholeList(t *testing.T) {
	c, _ := search(func(k string) string {
		if k == EnvLibrary {
			return "/opt/x/libcusparseLt.so.0.8.1.1"
		}
		return ""
	})
	require.Equal(t, []string{"/opt/x/libcusparseLt.so.0.8.1.1"}, c)
}

func TestOpenMissingLibraryMatchesErrNotFound(t *testing.T) {
	t.Setenv(EnvLibrary, filepath.Join(t.TempDir(), "libcusparseLt.so.0"))
	_, err := Open()
	require.ErrorIs(t, err, ErrNotFound)
	require.Contains(t, err.Error(), EnvLibrary)
}

func TestStatusErrorsCarryNames(t *testing.T) {
	require.NoError(t, check("cusparseLtInit", 0))
	err := check("cusparseLtMatmulPlanInit", 3)
	var e *Error
	require.True(t, errors.As(err, &e))
	require.Equal(t, Status(3), e.Status)
	require.Equal(t, "cusparseLtMatmulPlanInit: CUSPARSE_STATUS_INVALID_VALUE", err.Error())
	require.Equal(t, "cusparseStatus_t(99)", Status(99).String())
}

func TestClosedHandleAndPlanRefuse(t *testing.T) {
	h := &Handle{}
	_, err := h.NewPlan(R16BF, 16, 64, 64)
	require.ErrorIs(t, err, ErrClosed)
	_, err = h.Version()
	require.ErrorIs(t, err, ErrClosed)
	require.NoError(t, h.Destroy())
	p := &Plan{}
	require.ErrorIs(t, p.Matmul(1, 2, 3, 0, 0), ErrClosed)
	require.ErrorIs(t, p.Prune(1, 1, 0), ErrClosed)
	require.ErrorIs(t, p.Compress(1, 2, 3, 0), ErrClosed)
	require.NoError(t, p.Destroy())
	require.Equal(t, "0.8.1", FormatVersion(801))
}

func TestOpaqueStructsAreAligned(t *testing.T) {
	for range 8 {
		require.Zero(t, newOpaque().ptr()%16, "cuSPARSELt's structs are 16-byte aligned")
	}
}
