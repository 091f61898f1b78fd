package gemm_test

import (
	"fmt"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm"
)

// Presize the workspace of a model's shapes once, before timing or before
// capturing a CUDA graph: afterwards calls of those shapes allocate nothing.
// (Compiled, not run: it needs a GPU.)
func ExampleEngine_Presize() {
	drv, err := cudaload.Open()
	if err != nil {
		fmt.Println(err)
		return
	}
	dev, err := drv.Device(0)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, err := dev.PrimaryContext()
	if err != nil {
		fmt.Println(err)
		return
	}
	eng, err := gemm.New(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()

	// Decoding one token (M = 1) and the backward of a 128-row micro-batch.
	calls := []gemm.Call{
		gemm.ForwardArgs{Tier: gemm.TierTyped, M: 1, K: 4096, N: 11008, In: gemm.BF16, Out: gemm.BF16},
		gemm.DXArgs{Tier: gemm.TierTyped, M: 128, N: 11008, K: 4096, In: gemm.BF16, Out: gemm.BF16},
	}
	for _, c := range calls {
		s, _ := eng.Strategy(c)
		n, _ := eng.WorkspaceBytes(c)
		fmt.Printf("%v: %d bytes of workspace\n", s, n)
	}
	if err := eng.Presize(calls...); err != nil {
		fmt.Println(err)
	}
}
