package gemm

import (
	"fmt"
	"testing"
)

// BenchmarkHostPath measures what a call costs on the host before its
// first kernel starts: validation, the plan and the packing of the
// arguments, up to the launch (on a fake H200 engine the launch itself
// fails at once, having no module; see fakeEngine). At M = 1 a call takes
// a few microseconds on the GPU, so this must stay small.
func BenchmarkHostPath(b *testing.B) {
	shapes := []struct {
		name    string
		m, k, n int
	}{{"small", 1, 4096, 4096}, {"large", 4096, 4096, 4096}}
	types := []struct {
		tier    Tier
		in, out DType
	}{{TierF32, F32, F32}, {TierTyped, BF16, BF16}, {TierTensorCore, BF16, BF16}}
	for _, op := range []string{"Forward", "DW"} {
		for _, ty := range types {
			for _, s := range shapes {
				out := ty.out
				if op == "DW" {
					out = F32
				}
				c := explainCase{op: op, tier: ty.tier, in: ty.in, out: out, m: s.m, k: s.k, n: s.n}
				b.Run(fmt.Sprintf("%s/%v/%s", op, ty.tier, s.name), func(b *testing.B) {
					e, _ := fakeEngine(fakeDevices[0])
					call := c.call()
					run := func() error {
						switch a := call.(type) {
						case DWArgs:
							return e.DW(a)
						case ForwardArgs:
							return e.Forward(a)
						}
						panic("unreachable")
					}
					if err := run(); !reached(err) {
						b.Fatalf("the call does not reach its launch: %v", err)
					}
					b.ReportAllocs()
					b.ResetTimer()
					for range b.N {
						_ = run()
					}
				})
			}
		}
	}
}
