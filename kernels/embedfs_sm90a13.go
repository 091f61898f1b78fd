//go:build !detgemm_noembed && detgemm_only_sm90a && detgemm_only_sm90a13

package kernels

import (
	"embed"
	"slices"
)

// Built with -tags detgemm_only_sm90a,detgemm_only_sm90a13: only Hopper's
// cuda13 CUBINs (the variant a CUDA 13 driver loads), about 9 MB less than
// detgemm_only_sm90a, for test binaries that must travel to the GPU
// machine beside another one; the base variant then compiles with NVRTC
// where a test asks for it.
//
//go:embed embedded/sm_90a+cuda13
var embeddedFS embed.FS

const noEmbed = false

// embeddedSubset: as embedfs_sm90a.go's.
const embeddedSubset = true

func init() {
	embeddedTable = slices.DeleteFunc(embeddedTable, func(r embeddedRow) bool { return r.arch != "sm_90a" || r.variant != "cuda13" })
}
