package kernels_test

import (
	"fmt"

	"github.com/detgemm/detgemm/kernels"
)

// Build every kernel family for an H200 (compute capability 9.0) with the
// NVRTC found on this system, reusing the on-disk cache.
func ExampleBuild() {
	arch := kernels.ArchFor(9, 0, 12) // sm_90a
	b, err := kernels.Build(arch)
	if err != nil {
		fmt.Println(err) // no NVRTC, or a compile error with the whole log
		return
	}
	for _, w := range b.Warnings {
		fmt.Println("warning:", w) // the cache could not be used; the build still succeeded
	}
	util := b.Modules["util"]
	r, _ := util.Resource("detgemm_f32_to_bf16_rne")
	fmt.Printf("%s: %d families (%d cached) in %v; %s uses %d registers, %d bytes of spills\n",
		b.Arch, len(b.Modules), b.Hits, b.Elapsed, r.Kernel, r.Registers, r.SpillStores+r.SpillLoads)
	_ = util.CUBIN // load with the driver (cuModuleLoadData)
}

func ExampleParseResources() {
	log := `ptxas info    : Compiling entry function 'detgemm_fill_u32' for 'sm_80'
ptxas info    : Function properties for detgemm_fill_u32
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, 372 bytes cmem[0]
`
	for _, r := range kernels.ParseResources(log) {
		fmt.Printf("%s: %d registers, %d bytes stack, %d/%d bytes spilled, %d bytes cmem\n",
			r.Kernel, r.Registers, r.StackBytes, r.SpillStores, r.SpillLoads, r.ConstBytes)
	}
	// Output: detgemm_fill_u32: 10 registers, 0 bytes stack, 0/0 bytes spilled, 372 bytes cmem
}

func ExampleParseArch() {
	a, err := kernels.ParseArch("sm_90a")
	fmt.Println(a.Major, a.Minor, a.Specific, err, kernels.Flags(a)[0])
	// Output: 9 0 true <nil> --gpu-architecture=sm_90a
}
