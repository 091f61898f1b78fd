// Package kernels holds detgemm's CUDA C sources and turns them into CUBIN.
//
// The sources live in cuda/ and are embedded in the binary: one .cu file per
// kernel family (Families lists them) and shared headers: prelude.cuh, which
// every family includes, and epilogue.cuh, the one epilogue (slab fold,
// bias, activation hook, rounding and store) every GEMM family ends with.
// Test-only families (CheckFamilies, marked //detgemm:check) hold kernels
// that tests launch to check device code; Build compiles one only when
// WithFamilies names it. Build compiles every family for one GPU
// architecture with NVRTC, using the one fixed set of options from Flags,
// and returns a Bundle of modules, each with its CUBIN, the NVRTC log and
// the ptxas resource report parsed from it.
//
// # Prebuilt kernels
//
// go generate ./kernels (kernels/internal/gencubin) compiles every family
// with NVRTC, with the same Flags, for the architectures users have (sm_80,
// sm_86, sm_89, sm_90a, and newer ones when the NVRTC on hand can target
// them) and embeds the CUBINs, gzipped, in the package (EmbeddedArchs,
// EmbeddedVariants). The set holds variants: base (NVRTC 12, loads on every
// supported driver) and cuda13 (NVRTC 13, for drivers reporting CUDA 13 or
// newer; faster tensor-core code on Hopper); Build takes the newest the
// driver can load (WithDriverVersion; DETGEMM_EMBEDDED_VARIANT forces one),
// and Bundle.Fallback steps back to an older variant, then NVRTC, when the
// driver refuses a CUBIN. zembedded.go, generated from the files' gzip
// headers (embedded/README.md), records, per CUBIN, the SourceHash of
// the sources and flags it was built from; a CUBIN whose hash does not match
// this build's sources is never loaded, and a test fails until the set is
// regenerated. Build takes a family from the embedded set when it can
// (ModeAuto) and opens NVRTC only for the rest; DETGEMM_KERNELS=embedded or
// nvrtc (or WithMode) forces one source. Each Module says where it came from
// (Origin).
//
// # Cache
//
// Compiled modules are kept on disk under os.UserCacheDir()/detgemm
// (DETGEMM_CACHE_DIR overrides it; DETGEMM_CACHE=off disables it; the
// options WithCacheDir and WithCache win over both). An entry's key is the
// SHA-256 of everything that determines the CUBIN: the family's source, the
// prelude, the flags, the architecture, the NVRTC version and the entry
// format's version. NVRTC reports only its major.minor version, so two
// patch releases of one minor version share entries; delete the directory
// after such an update if a rebuild is wanted. Every entry carries a checksum of its payload; one that
// is truncated or corrupt is never loaded but rebuilt and replaced. Writes go
// to a temporary file in the same directory that is then renamed over the
// entry, so readers in other processes see the old entry or the new one,
// never half of one. A cache that cannot be read or written costs a
// rebuild and a warning in Bundle.Warnings, never a failed build.
//
// # Refactoring the sources
//
// kernels/internal/sassdiff compiles every family for sm_80, sm_86, sm_89
// and sm_90a and records a hash of each entry point's SASS; run it before
// and after a change that should not change the code (a move, a rename, a
// shared header) and it names every entry whose machine code differs.
//
// # Numerics
//
// The flags keep IEEE semantics explicit (no FMA contraction, no
// flush-to-zero, IEEE division and square root) because the numerical
// contract requires every rounding in a kernel to be one the source spells
// out. NVRTC_APPEND_FLAGS, which makes NVRTC add options behind the
// caller's back, is refused for the same reason.
package kernels
