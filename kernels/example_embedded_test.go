//go:build !detgemm_noembed && !detgemm_only_sm90a

package kernels_test

import (
	"fmt"

	"github.com/detgemm/detgemm/kernels"
)

// Which GPUs start without NVRTC: the variants of the embedded set (base
// loads on every driver; cuda13 needs a CUDA 13 driver), and whether an
// H100 (compute capability 9.0) is served from it with a CUDA 12.4 or a
// CUDA 13.0 driver.
func ExampleEmbedded() {
	for _, v := range kernels.EmbeddedVariants() {
		fmt.Println(v.Name, v.Archs, "built by NVRTC", v.NVRTC, "needs driver", v.MinDriver)
	}
	hopper := kernels.ArchFor(9, 0, 12)
	fmt.Println(hopper, kernels.Embedded(hopper))
	fmt.Println(kernels.EmbeddedFor(hopper, kernels.WithDriverVersion(12040)), kernels.EmbeddedFor(hopper, kernels.WithDriverVersion(13000)))
	blackwell := kernels.Arch{Major: 10, Specific: true}
	fmt.Println(blackwell, kernels.EmbeddedFor(blackwell, kernels.WithDriverVersion(12080)), kernels.EmbeddedFor(blackwell, kernels.WithDriverVersion(13000)))
	fmt.Println(kernels.Embedded(kernels.Arch{Major: 8, Minor: 7})) // Jetson Orin: compiled with NVRTC
	// Output:
	// base [sm_80 sm_86 sm_89 sm_90a] built by NVRTC 12.4 needs driver 0
	// cuda13 [sm_90a sm_100a] built by NVRTC 13.0 needs driver 13000
	// sm_90a true
	// true true
	// sm_100a false true
	// false
}
