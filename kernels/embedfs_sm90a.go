//go:build !detgemm_noembed && detgemm_only_sm90a && !detgemm_only_sm90a13

package kernels

import (
	"embed"
	"slices"
)

// Built with -tags detgemm_only_sm90a: only Hopper's CUBINs are embedded,
// both variants (about 5.5 MB), for a program that runs on H100/H200
// alone, such as make gpu-bin's test binaries (which compare the variants'
// bits); on other architectures kernels compile with NVRTC as if nothing
// were embedded.
//
//go:embed embedded/sm_90a embedded/sm_90a+cuda13
var embeddedFS embed.FS

const noEmbed = false

// embeddedSubset: the table below is cut to what this build embeds, so the
// tests that walk the whole shipped set skip.
const embeddedSubset = true

func init() {
	embeddedTable = slices.DeleteFunc(embeddedTable, func(r embeddedRow) bool { return r.arch != "sm_90a" })
}
