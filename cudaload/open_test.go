package cudaload_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/internal/dynlib"
	"github.com/stretchr/testify/require"
)

// fakeLib writes a file that is not a shared library.
func fakeLib(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte("this is not an ELF file"), 0o644))
	return p
}

func TestOpenFakeOverrideListsItAndMatchesErrDriverNotFound(t *testing.T) {
	fake := fakeLib(t, t.TempDir(), "libcuda.so.1")
	_, err := cudaload.Open(cudaload.WithLibraryPath(fake))
	require.Error(t, err)
	require.ErrorIs(t, err, cudaload.ErrDriverNotFound)
	require.ErrorIs(t, err, dynlib.ErrNotFound)
	var nf *cudaload.DriverNotFoundError
	require.ErrorAs(t, err, &nf)
	require.Len(t, nf.Search.Attempts, 1, "an override is the only candidate")
	require.Equal(t, fake, nf.Search.Attempts[0].Path)
	require.Contains(t, err.Error(), fake)
	require.Contains(t, err.Error(), cudaload.EnvLibraryPath)
}

func TestOpenOptionOverrideBeatsEnvironment(t *testing.T) {
	dir := t.TempDir()
	fromEnv := fakeLib(t, dir, "env-libcuda.so.1")
	fromOpt := fakeLib(t, dir, "opt-libcuda.so.1")
	t.Setenv(cudaload.EnvLibraryPath, fromEnv)

	_, err := cudaload.Open(cudaload.WithLibraryPath(fromOpt))
	require.ErrorIs(t, err, cudaload.ErrDriverNotFound)
	require.Contains(t, err.Error(), fromOpt)
	require.NotContains(t, err.Error(), fromEnv)

	_, err = cudaload.Open()
	require.ErrorIs(t, err, cudaload.ErrDriverNotFound)
	require.Contains(t, err.Error(), fromEnv)
	require.NotContains(t, err.Error(), fromOpt)
}

func TestOpenDirectoryOverrideTriesTheLibraryInside(t *testing.T) {
	dir := t.TempDir()
	name := "libcuda.so.1"
	if runtime.GOOS == "windows" {
		name = "nvcuda.dll"
	}
	fake := fakeLib(t, dir, name)
	_, err := cudaload.Open(cudaload.WithLibraryPath(dir))
	require.ErrorIs(t, err, cudaload.ErrDriverNotFound)
	require.Contains(t, err.Error(), fake)
}

func TestOpenDefaultSearchEitherLoadsOrListsCandidates(t *testing.T) {
	t.Setenv(cudaload.EnvLibraryPath, "")
	drv, err := cudaload.Open()
	if err == nil {
		require.NotEmpty(t, drv.Path())
		require.Positive(t, drv.Version())
		again, err := cudaload.Open()
		require.NoError(t, err)
		require.Same(t, drv, again, "Open caches the loaded driver")
		return
	}
	require.ErrorIs(t, err, cudaload.ErrDriverNotFound)
	var nf *cudaload.DriverNotFoundError
	require.ErrorAs(t, err, &nf)
	require.NotEmpty(t, nf.Search.Attempts)
	for _, a := range nf.Search.Attempts {
		require.NotEqual(t, "libcuda.so", filepath.Base(a.Path))
	}
	t.Logf("no driver here, as expected on a machine without a GPU:\n%v", err)
}

// stubCandidates are where CUDA toolkits install the link-time stub.
var stubCandidates = []string{
	"/usr/local/cuda/lib64/stubs/libcuda.so",
	"/usr/local/cuda/targets/x86_64-linux/lib/stubs/libcuda.so",
	"/usr/local/cuda/targets/sbsa-linux/lib/stubs/libcuda.so",
	"/usr/lib/x86_64-linux-gnu/stubs/libcuda.so",
}

func TestOpenRefusesToolkitStub(t *testing.T) {
	var stub string
	for _, p := range stubCandidates {
		if _, err := os.Stat(p); err == nil {
			stub = p
			break
		}
	}
	if stub == "" {
		t.Skip("no CUDA toolkit stub libcuda.so on this machine")
	}
	_, err := cudaload.Open(cudaload.WithLibraryPath(stub))
	require.ErrorIs(t, err, cudaload.ErrDriverNotFound)
	require.ErrorIs(t, err, cudaload.ErrStubLibrary)
	require.ErrorIs(t, err, cudaload.ErrStub)
	require.Contains(t, err.Error(), stub)
	t.Log(err)
	// The stub was unloaded, so it cannot shadow the real driver's soname.
	t.Setenv(cudaload.EnvLibraryPath, "")
	_, err = cudaload.Open()
	var nf *cudaload.DriverNotFoundError
	if errors.As(err, &nf) {
		for _, a := range nf.Search.Attempts {
			if a.Path == "libcuda.so.1" {
				require.NotErrorIs(t, a.Err, cudaload.ErrStubLibrary, "the soname resolved to the stub opened earlier")
			}
		}
	}
}

func TestOpenErrorPrintsEachCandidateOnceAndTheSkippedFolders(t *testing.T) {
	t.Setenv(cudaload.EnvLibraryPath, "")
	_, err := cudaload.Open()
	if err == nil {
		t.Skip("a CUDA driver loaded here")
	}
	var nf *cudaload.DriverNotFoundError
	require.ErrorAs(t, err, &nf)
	msg := err.Error()
	lines := strings.Split(msg, "\n")
	want := 1 + len(nf.Search.Attempts) + 1 // title, one line per candidate, hint
	if len(nf.Search.Skipped) > 0 {
		want++
	}
	require.Len(t, lines, want, msg)
	for i, a := range nf.Search.Attempts {
		line := lines[1+i]
		require.True(t, strings.HasPrefix(line, "  "+a.Path+": "), line)
		require.Equal(t, 1, strings.Count(line, a.Path), "the loader's copy of the path is stripped: %s", line)
	}
	if runtime.GOOS == "linux" {
		require.NotEmpty(t, nf.Search.Skipped, "some documented folder is always absent (x86_64 and aarch64 ones cannot both be)")
		require.Contains(t, msg, "\nskipped (not present): ")
		for _, s := range nf.Search.Skipped {
			require.Contains(t, msg, s)
		}
	}
	require.Contains(t, msg, cudaload.EnvLibraryPath)
	require.Contains(t, msg, "install the NVIDIA driver")
}
