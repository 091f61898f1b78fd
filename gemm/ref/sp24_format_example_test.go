package ref_test

import (
	"fmt"

	"github.com/detgemm/detgemm/gemm/ref"
)

// A weight W[K,N] with K = 16 rows and N = 2 columns is pruned to 2:4
// along K, compressed, and decompressed again. Column 0's first group
// (rows 0..3) holds 1, -4, 3, 2: the two largest magnitudes, -4 and 3 at
// rows 1 and 2, are kept (pattern 1 | 2<<2 = 0x9).
func ExampleCompress24() {
	const K, N = 16, 2
	w := make([]float32, K*N)
	for k := range K {
		w[k*N] = []float32{1, -4, 3, 2}[k%4]
		w[k*N+1] = float32(k)
	}
	if err := ref.Prune24(ref.BF16, ref.Values(w), K, N, N); err != nil {
		panic(err)
	}
	s, err := ref.Compress24(ref.BF16, ref.Values(w), K, N, N)
	if err != nil {
		panic(err)
	}
	fmt.Printf("column 0: values %#04x, meta %#08x\n", s.Values[:K/2], s.Meta[0])
	fmt.Printf("column 1: meta %#08x\n", s.Meta[1])
	back := make([]float32, K*N)
	if err := s.Decompress(ref.Values(back), N); err != nil {
		panic(err)
	}
	fmt.Println("rows 0..3:", back[0:2], back[2:4], back[4:6], back[6:8])

	// Three nonzeros in a group is not 2:4.
	w[0] = 1
	_, err = ref.Compress24(ref.BF16, ref.Values(w), K, N, N)
	fmt.Println(err)
	// Output:
	// column 0: values [0xc080 0x4040 0xc080 0x4040 0xc080 0x4040 0xc080 0x4040], meta 0x44449999
	// column 1: meta 0x4444eeee
	// rows 0..3: [0 0] [-4 0] [3 2] [0 3]
	// ref.Compress24: w: rows 0..3 of column 0 hold 3 nonzeros
}
