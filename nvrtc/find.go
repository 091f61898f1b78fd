package nvrtc

import (
	"os"
	"path/filepath"
	"runtime"

	"github.com/detgemm/detgemm/internal/dynlib"
)

// EnvLibrary names the environment variable that overrides the search: a
// path to the library, a soname, or a directory holding it.
const EnvLibrary = "DETGEMM_LIBNVRTC"

// libraryName is how the library is called in a failed search's error.
const libraryName = "NVRTC (libnvrtc)"

// notFoundHint ends a failed search's error: where NVRTC comes from and
// how to name one.
func notFoundHint(goos string) string {
	if goos == "windows" {
		return "install NVRTC: the CUDA toolkit (it sets CUDA_PATH), or the Python wheel " +
			"(pip install nvidia-cuda-nvrtc-cu12, or nvidia-cuda-nvrtc for CUDA 13); " +
			"or set " + EnvLibrary + " to the library (a file, or the folder holding it)"
	}
	return "install NVRTC: the distribution's package (Debian/Ubuntu: libnvrtc12), the CUDA toolkit " +
		"(/usr/local/cuda, or set CUDA_PATH), or the Python wheel (pip install nvidia-cuda-nvrtc-cu12, " +
		"or nvidia-cuda-nvrtc for CUDA 13); or set " + EnvLibrary + " to the library (a file, or the folder holding it)"
}

// platformError is Open's error where CUDA does not exist (macOS), or nil.
func platformError(goos string) error {
	if nf := dynlib.UnsupportedOS(libraryName, ErrNotFound, goos); nf != nil {
		return nf
	}
	return nil
}

// Option configures Open and Candidates.
type Option func(*config)

type config struct {
	libraryPath string
}

// WithLibraryPath makes Open use this library (a path, a soname, or a
// directory to look in) and nothing else. It wins over DETGEMM_LIBNVRTC.
func WithLibraryPath(path string) Option {
	return func(c *config) { c.libraryPath = path }
}

// Candidates returns, in order, what Open would try in this process with
// these options. It is meant for diagnostics.
func Candidates(opts ...Option) []string {
	cfg := applyOptions(opts)
	return candidates(processEnv(), override(cfg, os.Getenv))
}

func applyOptions(opts []Option) config {
	var cfg config
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	return cfg
}

// override returns the library the caller insists on, or "": the option
// first, then the environment.
func override(cfg config, getenv func(string) string) string {
	if cfg.libraryPath != "" {
		return cfg.libraryPath
	}
	return getenv(EnvLibrary)
}

// searchEnv is everything the search depends on, so that tests can build
// the list for any system from fake directories.
type searchEnv struct {
	goos, goarch string
	getenv       func(string) string
	// root prefixes the fixed system directories (/usr/local/cuda, ...);
	// empty in production, a temporary directory in tests.
	root string
}

func processEnv() searchEnv {
	return searchEnv{goos: runtime.GOOS, goarch: runtime.GOARCH, getenv: os.Getenv}
}

// libraryNames are the file names of NVRTC, newest first, for one OS.
func libraryNames(goos string) []string {
	if goos == "windows" {
		return []string{"nvrtc64_130_0.dll", "nvrtc64_120_0.dll", "nvrtc64_112_0.dll"}
	}
	// 11.2 is the first release with a stable soname and nvrtcGetCUBIN;
	// the bare name is last because it is whatever a toolkit links to.
	return []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"}
}

// candidates builds the ordered search list (see search).
func candidates(env searchEnv, over string) []string {
	c, _ := search(env, over)
	return c
}

// search builds the ordered search list and the folders skipped because
// they are not present. With an override it is only the override: a user
// who names a library must get that one or an error, never a silent
// fallback. A directory override is searched for every name.
func search(env searchEnv, over string) (cands, skipped []string) {
	names := libraryNames(env.goos)
	if over != "" {
		return dynlib.Override(names, over), nil
	}
	return dynlib.Search(names, searchDirs(env))
}

// searchDirs lists the directories (and patterns) to try after the
// loader's own search, in order: the toolkits named by the environment, the
// default toolkit, the versioned toolkits newest first, /opt/cuda (where
// some distributions install it), then the NVIDIA Python wheels.
func searchDirs(env searchEnv) []string {
	if env.goos == "windows" {
		return windowsDirs(env)
	}
	var dirs []string
	targets := targetDirs(env.goarch)
	for _, base := range dynlib.Roots(
		env.getenv("CUDA_PATH"),
		env.getenv("CUDA_HOME"),
		filepath.Join(env.root, "/usr/local/cuda"),
		filepath.Join(env.root, "/usr/local/cuda-*"),
		filepath.Join(env.root, "/opt/cuda"),
	) {
		dirs = append(dirs, filepath.Join(base, "lib64"))
		for _, t := range targets {
			dirs = append(dirs, filepath.Join(base, "targets", t, "lib"))
		}
	}
	if p := env.getenv("CONDA_PREFIX"); p != "" {
		dirs = append(dirs, filepath.Join(p, "lib"))
	}

	// Python wheels: nvidia-cuda-nvrtc (cu13 layout and the older one).
	var sitePackages []string
	if v := env.getenv("VIRTUAL_ENV"); v != "" {
		sitePackages = append(sitePackages, filepath.Join(v, "lib", "python3*", "site-packages"))
	}
	if h := env.getenv("HOME"); h != "" {
		sitePackages = append(sitePackages, filepath.Join(h, ".local", "lib", "python3*", "site-packages"))
	}
	for _, p := range []string{
		"/usr/local/lib/python3*/dist-packages",
		"/usr/local/lib/python3*/site-packages",
		"/usr/lib/python3*/dist-packages",
		"/usr/lib/python3*/site-packages",
	} {
		sitePackages = append(sitePackages, filepath.Join(env.root, p))
	}
	for _, sp := range sitePackages {
		dirs = append(dirs,
			filepath.Join(sp, "nvidia", "cu13", "lib"),
			filepath.Join(sp, "nvidia", "cuda_nvrtc", "lib"),
		)
	}
	return dirs
}

// targetDirs names the toolkit's per-platform library folders.
func targetDirs(goarch string) []string {
	switch goarch {
	case "arm64":
		return []string{"sbsa-linux", "aarch64-linux"}
	default:
		return []string{"x86_64-linux"}
	}
}

func windowsDirs(env searchEnv) []string {
	var dirs []string
	for _, v := range []string{"CUDA_PATH", "CUDA_HOME"} {
		if base := env.getenv(v); base != "" {
			// CUDA 13 moved the DLLs to bin\x64; older toolkits keep them in bin.
			dirs = append(dirs, filepath.Join(base, "bin", "x64"), filepath.Join(base, "bin"))
		}
	}
	if v := env.getenv("VIRTUAL_ENV"); v != "" {
		sp := filepath.Join(v, "Lib", "site-packages", "nvidia")
		dirs = append(dirs, filepath.Join(sp, "cu13", "bin", "x64"), filepath.Join(sp, "cu13", "bin"),
			filepath.Join(sp, "cuda_nvrtc", "bin"))
	}
	return dirs
}
