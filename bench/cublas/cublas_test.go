package cublas

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/detgemm/detgemm/internal/dynlib"
)

func fakeEnv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestCandidatesSonamesFirstThenToolkitDirs(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Linux layout")
	}
	root := t.TempDir()
	lib64 := filepath.Join(root, "lib64")
	require.NoError(t, os.MkdirAll(lib64, 0o755))
	got := candidates(fakeEnv(map[string]string{"CUDA_PATH": root}), "")
	require.GreaterOrEqual(t, len(got), 6)
	require.Equal(t, libraryNames, got[:3], "sonames through the system loader come first")
	require.Equal(t, filepath.Join(lib64, "libcublas.so.13"), got[3], "then $CUDA_PATH/lib64, newest major first")
	require.Equal(t, filepath.Join(lib64, "libcublas.so.12"), got[4])
	for _, c := range got {
		require.NotContains(t, c, filepath.Join(root, "targets"), "directories that do not exist are skipped")
	}
}

func TestCandidatesFindPythonWheelDirs(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Linux layout")
	}
	venv := t.TempDir()
	wheel := filepath.Join(venv, "lib", "python3.12", "site-packages", "nvidia", "cu13", "lib")
	require.NoError(t, os.MkdirAll(wheel, 0o755))
	got := candidates(fakeEnv(map[string]string{"VIRTUAL_ENV": venv}), "")
	require.Contains(t, got, filepath.Join(wheel, "libcublas.so.13"))
}

func TestCandidatesOverrideIsExclusive(t *testing.T) {
	env := fakeEnv(map[string]string{EnvLibrary: "/opt/x/libcublas.so.12", "CUDA_PATH": t.TempDir()})
	require.Equal(t, []string{"/opt/x/libcublas.so.12"}, candidates(env, ""))
	require.Equal(t, []string{"/elsewhere/lib.so"}, candidates(env, "/elsewhere/lib.so"), "the option beats the environment")

	dir := t.TempDir()
	got := candidates(fakeEnv(map[string]string{EnvLibrary: dir}), "")
	require.Len(t, got, len(libraryNames), "a directory override is searched for every name")
	for i, n := range libraryNames {
		require.Equal(t, filepath.Join(dir, n), got[i])
	}
}

func TestOpenMissingLibraryListsCandidates(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "libcublas.so.99")
	_, err := Open(WithLibraryPath(missing))
	require.Error(t, err)
	require.True(t, errors.Is(err, ErrNotFound))
	require.True(t, errors.Is(err, dynlib.ErrNotFound))
	var nf *dynlib.NotFoundError
	require.True(t, errors.As(err, &nf))
	require.Len(t, nf.Attempts, 1)
	require.Equal(t, missing, nf.Attempts[0].Path)
	require.Contains(t, err.Error(), "cuBLAS (libcublas) not found")
}

func TestOpenRejectsLibraryWithoutSymbols(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs libc.so.6")
	}
	_, err := Open(WithLibraryPath("libc.so.6"))
	require.ErrorIs(t, err, ErrNotFound)
	require.Contains(t, err.Error(), "cublasCreate_v2")
}

func TestLtSiblingMatchesMajor(t *testing.T) {
	if runtime.GOOS == "windows" {
		require.Equal(t, filepath.Join(`C:\cuda\bin`, "cublasLt64_13.dll"), ltSibling(filepath.Join(`C:\cuda\bin`, "cublas64_13.dll")))
		return
	}
	require.Equal(t, "/x/libcublasLt.so.13", ltSibling("/x/libcublas.so.13"))
	require.Equal(t, "", ltSibling("/x/other.so"))
}

func TestStatusErrorsCarryNames(t *testing.T) {
	for _, tc := range []struct {
		s    Status
		want string
	}{
		{StatusNotSupported, "CUBLAS_STATUS_NOT_SUPPORTED (15)"},
		{StatusInvalidValue, "CUBLAS_STATUS_INVALID_VALUE (7)"},
		{Status(99), "CUBLAS_STATUS_UNKNOWN (99)"},
	} {
		require.Equal(t, tc.want, tc.s.Error())
	}
	require.NoError(t, Check("op", 0))
	err := Check("cublasGemmEx", 15)
	require.EqualError(t, err, "cublasGemmEx: CUBLAS_STATUS_NOT_SUPPORTED (15)")
	require.ErrorIs(t, err, StatusNotSupported)
	var ce *Error
	require.True(t, errors.As(err, &ce))
	require.Equal(t, "cublasGemmEx", ce.Op)
}

func TestClosedHandleIsAnError(t *testing.T) {
	h := &Handle{lib: &Library{}, scal: new([2]float32)}
	require.ErrorIs(t, h.SetStream(0), ErrClosed)
	require.ErrorIs(t, h.SetMathMode(DefaultMath), ErrClosed)
	require.ErrorIs(t, h.RowMajorGemm(1, 1, 1, 0, 0, 0, R32F, Compute32F, GemmDefault), ErrClosed)
	require.NoError(t, h.Destroy())
}

func TestSearchVersionedToolkitsNewestFirstThenOptCuda(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Linux layout")
	}
	root := t.TempDir()
	for _, d := range []string{"usr/local/cuda-12.9/lib64", "usr/local/cuda-13.0/lib64", "opt/cuda/lib64"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	got, skipped := search(fakeEnv(nil), "", root)
	want := append([]string{}, libraryNames...)
	for _, d := range []string{"usr/local/cuda-13.0/lib64", "usr/local/cuda-12.9/lib64", "opt/cuda/lib64"} {
		for _, n := range libraryNames {
			want = append(want, filepath.Join(root, d, n))
		}
	}
	require.Equal(t, want, got)
	require.Contains(t, skipped, filepath.Join(root, "usr/local/cuda/lib64"), "folders not present are reported")
	require.NotContains(t, skipped, filepath.Join(root, "opt/cuda/lib64"))
}

func TestOpenErrorListsSkippedFoldersAndTheHint(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "libcublas.so.99")
	_, err := Open(WithLibraryPath(missing))
	require.ErrorIs(t, err, ErrNotFound)
	msg := err.Error()
	require.Contains(t, msg, notFoundHint(runtime.GOOS))
	require.NotContains(t, msg, missing+": "+missing, "the loader's copy of the path is stripped")
	require.NotContains(t, msg, "skipped (not present)", "an override searches no folders")

	for _, tt := range []struct {
		goos string
		want []string
	}{
		{"linux", []string{EnvLibrary, "libcublas12", "CUDA toolkit", "nvidia-cublas-cu12", "nvidia-cublas for CUDA 13"}},
		{"windows", []string{EnvLibrary, "CUDA toolkit", "nvidia-cublas-cu12"}},
	} {
		for _, w := range tt.want {
			require.Contains(t, notFoundHint(tt.goos), w, tt.goos)
		}
	}
}

func TestOpenOnMacOSSaysCUDAIsNotAvailable(t *testing.T) {
	for _, goos := range []string{"linux", "windows"} {
		require.NoError(t, platformError(goos), goos)
	}
	err := platformError("darwin")
	require.ErrorIs(t, err, ErrNotFound)
	require.Contains(t, err.Error(), "cuBLAS (libcublas) not found: CUDA is not available on macOS")
}
