// Package nvrtc binds NVIDIA's runtime compiler, libnvrtc, with purego, so
// CUDA C++ can be compiled to CUBIN from a CGO_ENABLED=0 binary.
//
// It knows nothing of GEMM: it finds the library, compiles one program at a
// time and reports what NVRTC said.
//
// # Finding the library
//
// Open searches, in order: the path given by WithLibraryPath, else the one in
// the environment variable DETGEMM_LIBNVRTC (a file, a soname, or a directory
// to look in); without an override, the sonames libnvrtc.so.13, .so.12,
// .so.11.2 and libnvrtc.so through the system loader, then the toolkits
// (lib64 and targets/<platform>/lib) of CUDA_PATH, CUDA_HOME,
// /usr/local/cuda, the versioned /usr/local/cuda-X.Y (newest first) and
// /opt/cuda, then $CONDA_PREFIX/lib, and the NVIDIA Python wheels
// (nvidia/cu13/lib and nvidia/cuda_nvrtc/lib under $VIRTUAL_ENV, ~/.local,
// /usr/local/lib and /usr/lib site- and dist-packages). Directories are
// opened by absolute path, because LD_LIBRARY_PATH set inside a running
// process does not reach the loader. On Windows the names are
// nvrtc64_130_0.dll, nvrtc64_120_0.dll and nvrtc64_112_0.dll. Candidates
// shows the list.
//
// When nothing loads, the error matches ErrNotFound (NVRTC's own sentinel:
// a missing CUDA driver does not match it) and lists every candidate with
// why it failed, the folders skipped because they are not present, and
// where NVRTC comes from: the distribution's package (Debian/Ubuntu:
// libnvrtc12), the CUDA toolkit, or the Python wheel nvidia-cuda-nvrtc-cu12
// (nvidia-cuda-nvrtc for CUDA 13). On macOS, which CUDA no longer supports,
// Open makes no search and says so; the error matches ErrNotFound too.
//
// # CUBIN only
//
// Compile always returns CUBIN, never PTX: PTX from an NVRTC newer than the
// driver fails to load, while CUBIN for the device's real architecture
// always does. The options must therefore name a real architecture
// (--gpu-architecture=sm_XX); a virtual one (compute_XX) is an *ArchError.
//
// # Errors
//
// Every NVRTC call that fails returns a *CallError carrying the Status and
// NVRTC's own message (nvrtcGetErrorString). A compile that fails returns a
// *CompileError with the whole program log (errors.Is(err, ErrCompile)); when
// the log shows that NVRTC could not load its companion libnvrtc-builtins
// library, the error also matches ErrBuiltinsMissing and says which file to
// install. A missing symbol is an error naming it, never a panic.
//
// # Concurrency
//
// A *Compiler is safe for concurrent use: each Compile owns its own NVRTC
// program, and NVRTC is thread safe across programs.
package nvrtc
