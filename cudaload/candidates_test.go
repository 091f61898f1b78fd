package cudaload

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCandidatesSonameThenExistingDirsInOrder(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	missing := filepath.Join(a, "missing")
	got := driverCandidates("linux", "", []string{b, missing, a})
	require.Equal(t, []string{
		"libcuda.so.1",
		filepath.Join(b, "libcuda.so.1"),
		filepath.Join(a, "libcuda.so.1"),
	}, got)
}

func TestCandidatesNeverIncludeBareLibcudaSo(t *testing.T) {
	dirs := append([]string{t.TempDir()}, defaultDriverDirs("linux")...)
	for _, goos := range []string{"linux", "windows", "freebsd"} {
		for _, c := range driverCandidates(goos, "", dirs) {
			require.NotEqual(t, "libcuda.so", filepath.Base(c), "candidate %q on %s", c, goos)
		}
	}
}

func TestDefaultDirsAreTheDocumentedLinuxDirs(t *testing.T) {
	require.Equal(t, []string{
		"/usr/lib/x86_64-linux-gnu",
		"/usr/lib64",
		"/usr/lib/aarch64-linux-gnu",
		"/usr/local/nvidia/lib64",
		"/usr/lib/wsl/lib",
		"/usr/local/cuda/compat",
	}, defaultDriverDirs("linux"))
	require.Empty(t, defaultDriverDirs("windows"))
}

func TestCandidatesWindowsUseNvcuda(t *testing.T) {
	require.Equal(t, []string{"nvcuda.dll"}, driverCandidates("windows", "", nil))
}

func TestCandidatesOverrideIsTheOnlyCandidate(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "custom-libcuda.so")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	tests := []struct {
		name, goos, override string
		want                 []string
	}{
		{"file", "linux", file, []string{file}},
		{"missing file is still tried", "linux", filepath.Join(dir, "nope.so"), []string{filepath.Join(dir, "nope.so")}},
		{"directory means the library inside", "linux", dir, []string{filepath.Join(dir, "libcuda.so.1")}},
		{"directory on windows", "windows", dir, []string{filepath.Join(dir, "nvcuda.dll")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := driverCandidates(tt.goos, tt.override, []string{t.TempDir()})
			require.Equal(t, tt.want, got)
		})
	}
}
