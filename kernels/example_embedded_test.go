//go:build !detgemm_noembed && !detgemm_only_sm90a

package kernels_test

import (
	"fmt"

	"github.com/detgemm/detgemm/kernels"
)

// Which GPUs start without NVRTC: the architectures of the embedded set,
// and whether an H100 (compute capability 9.0) is served from it.
func ExampleEmbedded() {
	fmt.Println(kernels.EmbeddedArchs(), "built by NVRTC", kernels.EmbeddedNVRTCVersion())
	hopper := kernels.ArchFor(9, 0, 12)
	fmt.Println(hopper, kernels.Embedded(hopper))
	fmt.Println(kernels.Embedded(kernels.Arch{Major: 8, Minor: 7})) // Jetson Orin: compiled with NVRTC
	// Output:
	// [sm_80 sm_86 sm_89 sm_90a] built by NVRTC 12.4
	// sm_90a true
	// false
}
