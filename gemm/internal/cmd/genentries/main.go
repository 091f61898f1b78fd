// Command genentries writes the ENTRY(...) lists of the CUDA kernel
// families (kernels/cuda/z<list>_entries.cuh) from gemm/internal/entries,
// the descriptions the gemm engine reads too. gemm's go:generate line runs
// it; gemm's TestGeneratedEntryListsAreCurrent fails when a list on disk
// differs from what it would write.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/detgemm/detgemm/gemm/internal/entries"
)

func main() {
	dir := flag.String("dir", "../kernels/cuda", "the kernels/cuda directory to write into")
	flag.Parse()
	names, lists := entries.Headers()
	for _, h := range names {
		path := filepath.Join(*dir, h)
		src := entries.Source(h, lists[h])
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, src) {
			continue
		}
		if err := os.WriteFile(path, src, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "genentries:", err)
			os.Exit(1)
		}
	}
}
