package nvrtc

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeEnv returns a getenv over a map.
func fakeEnv(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func mkdirs(t *testing.T, root string, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		require.NoError(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
}

// joinAll is what the search yields for one directory: every name in it.
func joinAll(dir string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = filepath.Join(dir, n)
	}
	return out
}

func TestCandidatesLinuxSearchOrder(t *testing.T) {
	root := t.TempDir()
	cudaPath := filepath.Join(root, "opt", "cuda-13.0")
	cudaHome := filepath.Join(root, "opt", "cuda-12.4")
	venv := filepath.Join(root, "venv")
	mkdirs(t, root,
		"opt/cuda-13.0/lib64",
		"opt/cuda-13.0/targets/x86_64-linux/lib",
		"opt/cuda-12.4/targets/x86_64-linux/lib", // no lib64 here: skipped
		"usr/local/cuda/lib64",
		"usr/local/cuda/targets/x86_64-linux/lib",
		"venv/lib/python3.12/site-packages/nvidia/cu13/lib",
		"usr/local/lib/python3.11/dist-packages/nvidia/cuda_nvrtc/lib",
		"usr/lib/python3.13/site-packages/nvidia/cu13/lib",
		"usr/lib/python3.13/site-packages/nvidia/unrelated/lib",
	)
	env := searchEnv{goos: "linux", goarch: "amd64", root: root, getenv: fakeEnv(map[string]string{
		"CUDA_PATH":   cudaPath,
		"CUDA_HOME":   cudaHome,
		"VIRTUAL_ENV": venv,
	})}
	names := libraryNames("linux")
	want := append([]string{}, names...) // sonames first: the system loader's search
	for _, d := range []string{
		filepath.Join(cudaPath, "lib64"),
		filepath.Join(cudaPath, "targets/x86_64-linux/lib"),
		filepath.Join(cudaHome, "targets/x86_64-linux/lib"),
		filepath.Join(root, "usr/local/cuda/lib64"),
		filepath.Join(root, "usr/local/cuda/targets/x86_64-linux/lib"),
		filepath.Join(venv, "lib/python3.12/site-packages/nvidia/cu13/lib"),
		filepath.Join(root, "usr/local/lib/python3.11/dist-packages/nvidia/cuda_nvrtc/lib"),
		filepath.Join(root, "usr/lib/python3.13/site-packages/nvidia/cu13/lib"),
	} {
		want = append(want, joinAll(d, names)...)
	}
	require.Equal(t, want, candidates(env, ""))
	require.Equal(t, []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"}, names)
}

func TestCandidatesArm64UsesSbsaAndAarch64Targets(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root,
		"usr/local/cuda/targets/sbsa-linux/lib",
		"usr/local/cuda/targets/aarch64-linux/lib",
		"usr/local/cuda/targets/x86_64-linux/lib", // wrong platform: never listed
	)
	env := searchEnv{goos: "linux", goarch: "arm64", root: root, getenv: fakeEnv(nil)}
	got := candidates(env, "")
	names := libraryNames("linux")
	want := append(append(append([]string{}, names...),
		joinAll(filepath.Join(root, "usr/local/cuda/targets/sbsa-linux/lib"), names)...),
		joinAll(filepath.Join(root, "usr/local/cuda/targets/aarch64-linux/lib"), names)...)
	require.Equal(t, want, got)
}

func TestCandidatesWithNothingInstalledAreTheSonames(t *testing.T) {
	env := searchEnv{goos: "linux", goarch: "amd64", root: t.TempDir(), getenv: fakeEnv(nil)}
	require.Equal(t, libraryNames("linux"), candidates(env, ""))
}

func TestCandidatesWindowsNamesAndToolkitDirs(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "cuda/bin/x64", "cuda/bin")
	env := searchEnv{goos: "windows", goarch: "amd64", getenv: fakeEnv(map[string]string{
		"CUDA_PATH": filepath.Join(root, "cuda"),
	})}
	names := []string{"nvrtc64_130_0.dll", "nvrtc64_120_0.dll", "nvrtc64_112_0.dll"}
	want := append(append(append([]string{}, names...),
		joinAll(filepath.Join(root, "cuda/bin/x64"), names)...),
		joinAll(filepath.Join(root, "cuda/bin"), names)...)
	require.Equal(t, want, candidates(env, ""))
}

func TestOverrideOptionWinsOverEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name   string
		option string
		env    string
		want   string
	}{
		{"neither", "", "", ""},
		{"environment only", "", "/env/libnvrtc.so.12", "/env/libnvrtc.so.12"},
		{"option only", "/opt/libnvrtc.so.13", "", "/opt/libnvrtc.so.13"},
		{"option wins", "/opt/libnvrtc.so.13", "/env/libnvrtc.so.12", "/opt/libnvrtc.so.13"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := applyOptions([]Option{WithLibraryPath(tc.option)})
			got := override(cfg, fakeEnv(map[string]string{EnvLibrary: tc.env}))
			require.Equal(t, tc.want, got)
		})
	}
}

func TestOverrideIsTheOnlyCandidate(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "usr/local/cuda/lib64")
	env := searchEnv{goos: "linux", goarch: "amd64", root: root, getenv: fakeEnv(nil)}

	// A file or soname: exactly that, no silent fallback to the search.
	require.Equal(t, []string{"/somewhere/libnvrtc.so.12"}, candidates(env, "/somewhere/libnvrtc.so.12"))
	// A directory: every name inside it, and nothing else.
	dir := filepath.Join(root, "mine")
	mkdirs(t, root, "mine")
	require.Equal(t, joinAll(dir, libraryNames("linux")), candidates(env, dir))
}

func TestOpenNotFoundListsEveryCandidateAndReason(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "libnvrtc.so.12")
	require.NoError(t, os.WriteFile(junk, []byte("not a shared library"), 0o644))

	_, err := Open(WithLibraryPath(dir))
	require.Error(t, err)
	require.True(t, errors.Is(err, ErrNotFound))
	msg := err.Error()
	require.True(t, strings.HasPrefix(msg, "NVRTC (libnvrtc) not found; tried 4 candidate(s):"), msg)
	for _, c := range joinAll(dir, libraryNames("linux")) {
		require.Contains(t, msg, c+": ", "each candidate is listed with its reason")
		require.NotContains(t, msg, c+": "+c, "the loader's copy of the path is stripped")
	}
	require.Contains(t, msg, notFoundHint(runtime.GOOS), "the error ends with where NVRTC comes from")
}

func TestOpenRejectsLibraryWithoutNVRTCSymbols(t *testing.T) {
	// libc loads but is not NVRTC: the error must name the missing symbol.
	_, err := Open(WithLibraryPath("libc.so.6"))
	require.Error(t, err)
	require.ErrorIs(t, err, ErrNotFound)
	require.Contains(t, err.Error(), "nvrtcGetErrorString")
	require.ErrorIs(t, err, ErrSymbolNotFound, "the candidate's reason is NVRTC's own missing-symbol error")
}

func TestFailedOpenIsNotCached(t *testing.T) {
	path := filepath.Join(t.TempDir(), "libnvrtc.so.12")
	_, err := Open(WithLibraryPath(path))
	require.ErrorIs(t, err, ErrNotFound)
	openMu.Lock()
	_, cached := opened[path]
	openMu.Unlock()
	require.False(t, cached, "a library installed later must still be found")
}

func TestCandidatesVersionedToolkitsNewestFirstThenOptCuda(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root,
		"usr/local/cuda/lib64",
		"usr/local/cuda-12.9/lib64",
		"usr/local/cuda-12.10/targets/x86_64-linux/lib",
		"usr/local/cuda-13.0/lib64",
		"opt/cuda/targets/x86_64-linux/lib",
	)
	env := searchEnv{goos: "linux", goarch: "amd64", root: root, getenv: fakeEnv(nil)}
	names := libraryNames("linux")
	want := append([]string{}, names...)
	for _, d := range []string{
		"usr/local/cuda/lib64",
		"usr/local/cuda-13.0/lib64",
		"usr/local/cuda-12.10/targets/x86_64-linux/lib",
		"usr/local/cuda-12.9/lib64",
		"opt/cuda/targets/x86_64-linux/lib",
	} {
		want = append(want, joinAll(filepath.Join(root, d), names)...)
	}
	got, skipped := search(env, "")
	require.Equal(t, want, got)
	for _, d := range []string{
		"usr/local/cuda/targets/x86_64-linux/lib",
		"usr/local/cuda-13.0/targets/x86_64-linux/lib",
		"usr/local/cuda-12.10/lib64",
		"opt/cuda/lib64",
	} {
		require.Contains(t, skipped, filepath.Join(root, d), "a folder not present is reported as skipped")
	}
	for _, d := range got[len(names):] {
		require.NotContains(t, skipped, filepath.Dir(d))
	}
}

func TestSearchWithNothingInstalledReportsEveryFolderAsSkipped(t *testing.T) {
	root := t.TempDir()
	env := searchEnv{goos: "linux", goarch: "amd64", root: root, getenv: fakeEnv(map[string]string{"VIRTUAL_ENV": "/venv"})}
	got, skipped := search(env, "")
	require.Equal(t, libraryNames("linux"), got)
	for _, d := range []string{
		"/usr/local/cuda/lib64",
		"/usr/local/cuda-*/lib64",
		"/opt/cuda/lib64",
		"/usr/local/lib/python3*/dist-packages/nvidia/cu13/lib",
	} {
		require.Contains(t, skipped, filepath.Join(root, d))
	}
	require.Contains(t, skipped, "/venv/lib/python3*/site-packages/nvidia/cuda_nvrtc/lib")
}

func TestNotFoundHintSaysWhereNVRTCComesFrom(t *testing.T) {
	for _, tt := range []struct {
		goos string
		want []string
	}{
		{"linux", []string{EnvLibrary, "libnvrtc12", "CUDA toolkit", "nvidia-cuda-nvrtc-cu12", "nvidia-cuda-nvrtc for CUDA 13"}},
		{"windows", []string{EnvLibrary, "CUDA toolkit", "nvidia-cuda-nvrtc-cu12", "nvidia-cuda-nvrtc for CUDA 13"}},
	} {
		t.Run(tt.goos, func(t *testing.T) {
			h := notFoundHint(tt.goos)
			for _, w := range tt.want {
				require.Contains(t, h, w)
			}
		})
	}
}

func TestOpenOnMacOSSaysCUDAIsNotAvailable(t *testing.T) {
	for _, goos := range []string{"linux", "windows"} {
		require.NoError(t, platformError(goos), goos)
	}
	err := platformError("darwin")
	require.ErrorIs(t, err, ErrNotFound)
	require.True(t, strings.HasPrefix(err.Error(), "NVRTC (libnvrtc) not found: CUDA is not available on macOS"), err.Error())
	require.NotContains(t, err.Error(), EnvLibrary, "no override can help on macOS")
}
