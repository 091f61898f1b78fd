package kernels

// Flags returns the NVRTC options every family is compiled with for arch.
// They are fixed: the numerical contract and the cache key both depend on
// them, so they live here and nowhere else.
//
//   - --gpu-architecture=sm_XX[a]: a real architecture, so NVRTC emits
//     CUBIN the driver loads as is. PTX would be JIT-compiled by the driver
//     and fails outright when NVRTC is newer than the driver.
//   - --std=c++17: static_assert with messages, constexpr if, inline
//     variables; pinned so a new NVRTC default cannot change the dialect.
//   - --fmad=false: the compiler must not contract a*b+c into an FMA. The
//     kernels spell every fused multiply-add they want (__fmaf_rn), so each
//     rounding in a reduction is one the contract documents.
//   - --ftz=false, --prec-div=true, --prec-sqrt=true: IEEE subnormals,
//     division and square root. These are NVRTC's defaults today; they are
//     written out because the CPU reference reproduces IEEE results only.
//   - --ptxas-options=-v: ptxas reports registers, stack, spills and shared
//     memory per kernel in the log; ParseResources reads it and the tests
//     require zero spills and zero stack.
//   - -default-device: unannotated functions and namespace-scope variables
//     are device code, so small constexpr helpers need no __device__; NVRTC
//     compiles device code only anyway.
//
// Left out on purpose: --use_fast_math (breaks IEEE), -lineinfo and -G
// (debug information changes nothing numerically but bloats the CUBIN and,
// for -G, disables optimisation), --extra-device-vectorization (it only
// changes how the optimiser vectorises; the GEMM families vectorise their
// memory accesses by hand, and an extra optimiser pass is one more thing
// that can shift register allocation between NVRTC releases).
func Flags(arch Arch) []string {
	return []string{
		"--gpu-architecture=" + arch.String(),
		"--std=c++17",
		"--fmad=false",
		"--ftz=false",
		"--prec-div=true",
		"--prec-sqrt=true",
		"--ptxas-options=-v",
		"-default-device",
	}
}
