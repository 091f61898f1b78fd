package kernels

import (
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/internal/gputest"
	"github.com/detgemm/detgemm/nvrtc"
)

// packCheck runs elementwise.cuh's round_pair (on sm_90 the hardware's
// paired conversion alone, NaNs included), the rounding of every paired
// 16-bit store, against the contract's integer rounding
// (epi::round16 with RNE_INT, which gemm/ref mirrors) on every f32 bit
// pattern as the low half, each paired with a scrambled pattern as the
// high half, for both 16-bit types; it counts the pairs that differ and
// keeps the first.
const packCheck = `
#include "prelude.cuh"
#include "elementwise.cuh"
extern "C" __global__ void dg_pack_check(unsigned long long base, unsigned int per, unsigned long long* bad, unsigned int* first) {
    const unsigned long long t = base + (unsigned long long)(blockIdx.x * blockDim.x + threadIdx.x) * per;
    for (unsigned int k = 0; k < per; ++k) {
        const dg_u32 u = (dg_u32)(t + k), v = u * 2654435761u ^ 0x80000001u;
        const float lo = dg_f32_from_bits(u), hi = dg_f32_from_bits(v);
        const dg_u32 b = sel::round_pair<epi::BF16>(lo, hi);
        const dg_u32 wb = (dg_u32)epi::round16<epi::BF16, epi::RNE_INT>(lo) | ((dg_u32)epi::round16<epi::BF16, epi::RNE_INT>(hi) << 16);
        const dg_u32 h = sel::round_pair<epi::F16>(lo, hi);
        const dg_u32 wh = (dg_u32)epi::round16<epi::F16, epi::RNE_INT>(lo) | ((dg_u32)epi::round16<epi::F16, epi::RNE_INT>(hi) << 16);
        if (b != wb || h != wh) {
            if (atomicAdd(bad, 1ull) == 0) first[0] = u;
        }
    }
}
`

// TestGPUPack16MatchesContract: the wgmma kernels' 16-bit stores round
// by the hardware's paired conversion (one instruction for two values);
// every input must give the contract's bits, subnormals, overflow to
// infinity, ties and NaNs (canonical 0x7fff) included.
func TestGPUPack16MatchesContract(t *testing.T) {
	comp, err := nvrtc.Open()
	if err != nil {
		t.Skipf("no NVRTC: %v", err)
	}
	arch := Arch{Major: 9, Minor: 0, Specific: true}
	res, err := comp.Compile(packCheck, "pack_check.cu", Flags(arch), headers()...)
	if err != nil {
		t.Fatalf("pack check does not compile: %v", err)
	}
	ctx := gputest.Context(t)
	if maj, _ := ctx.Device().ComputeCapability(); maj != 9 {
		t.Skipf("compiled for sm_90a; the GPU is sm_%d", maj)
	}
	fn := gputest.Kernel(t, ctx, res.CUBIN, "dg_pack_check")
	bad, err := cudaload.NewBuffer[uint64](ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	first, err := cudaload.NewBuffer[uint32](ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if err := bad.CopyFromHost([]uint64{0}); err != nil {
		t.Fatal(err)
	}
	const per, block, blocks = 64, 256, 1 << 14 // 2^28 inputs a launch
	for base := uint64(0); base < 1<<32; base += per * block * blocks {
		var args cudaload.Args
		args.Reset().Uint64(base).Uint32(per).Ptr(bad.Ptr()).Ptr(first.Ptr())
		cfg := cudaload.LaunchConfig{Grid: cudaload.Dim3{X: blocks, Y: 1, Z: 1}, Block: cudaload.Dim3{X: block, Y: 1, Z: 1}}
		if err := fn.Launch(cfg, &args); err != nil {
			t.Fatal(err)
		}
	}
	if err := ctx.Synchronize(); err != nil {
		t.Fatal(err)
	}
	n, u := make([]uint64, 1), make([]uint32, 1)
	if err := bad.CopyToHost(n); err != nil {
		t.Fatal(err)
	}
	if err := first.CopyToHost(u); err != nil {
		t.Fatal(err)
	}
	if n[0] != 0 {
		t.Fatalf("%d of 2^32 pairs round differently from the contract; the first low half 0x%08x", n[0], u[0])
	}
}
