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
	got, skipped := driverCandidates("linux", "", []string{b, missing, a})
	require.Equal(t, []string{
		"libcuda.so.1",
		filepath.Join(b, "libcuda.so.1"),
		filepath.Join(a, "libcuda.so.1"),
	}, got)
	require.Equal(t, []string{missing}, skipped)
}

func TestCandidatesNeverIncludeBareLibcudaSo(t *testing.T) {
	dirs := append([]string{t.TempDir()}, defaultDriverDirs("linux", "")...)
	for _, goos := range []string{"linux", "windows", "freebsd"} {
		got, _ := driverCandidates(goos, "", dirs)
		for _, c := range got {
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
		"/usr/local/cuda-*/compat",
	}, defaultDriverDirs("linux", ""))
	require.Empty(t, defaultDriverDirs("windows", ""))
	require.Empty(t, defaultDriverDirs("darwin", ""))
}

func TestCandidatesVersionedCompatFoldersNewestFirstAfterTheSystemDriver(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{
		"usr/lib/x86_64-linux-gnu",
		"usr/local/cuda-12.9/compat",
		"usr/local/cuda-12.10/compat",
		"usr/local/cuda-13.0/compat",
		"usr/local/cuda-11.8", // no compat folder: not a candidate
	} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	got, skipped := driverCandidates("linux", "", defaultDriverDirs("linux", root))
	require.Equal(t, []string{
		"libcuda.so.1",
		filepath.Join(root, "usr/lib/x86_64-linux-gnu/libcuda.so.1"),
		filepath.Join(root, "usr/local/cuda-13.0/compat/libcuda.so.1"),
		filepath.Join(root, "usr/local/cuda-12.10/compat/libcuda.so.1"),
		filepath.Join(root, "usr/local/cuda-12.9/compat/libcuda.so.1"),
	}, got)
	var want []string
	for _, d := range []string{"/usr/lib64", "/usr/lib/aarch64-linux-gnu", "/usr/local/nvidia/lib64", "/usr/lib/wsl/lib", "/usr/local/cuda/compat"} {
		want = append(want, filepath.Join(root, d))
	}
	require.Equal(t, want, skipped, "every folder not present is reported")
}

func TestCandidatesUnmatchedCompatPatternIsSkipped(t *testing.T) {
	root := t.TempDir()
	_, skipped := driverCandidates("linux", "", defaultDriverDirs("linux", root))
	require.Contains(t, skipped, filepath.Join(root, "/usr/local/cuda-*/compat"))
}

func TestCandidatesWindowsUseNvcuda(t *testing.T) {
	got, skipped := driverCandidates("windows", "", nil)
	require.Equal(t, []string{"nvcuda.dll"}, got)
	require.Empty(t, skipped)
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
			got, skipped := driverCandidates(tt.goos, tt.override, []string{t.TempDir(), "/detgemm/missing"})
			require.Equal(t, tt.want, got)
			require.Empty(t, skipped, "an override searches no folders")
		})
	}
}
