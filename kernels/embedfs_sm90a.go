//go:build !detgemm_noembed && detgemm_only_sm90a

package kernels

import (
	"embed"
	"slices"
)

// Built with -tags detgemm_only_sm90a: only Hopper's CUBINs are embedded
// (about 2.7 MB instead of 7.6), for a program that runs on H100/H200
// alone; other architectures compile with NVRTC as if nothing were
// embedded for them.
//
//go:embed embedded/sm_90a
var embeddedFS embed.FS

const noEmbed = false

// embeddedSubset: the table below is cut to what this build embeds, so the
// tests that walk the whole shipped set skip.
const embeddedSubset = true

func init() {
	const only = "sm_90a"
	embeddedArchs = slices.DeleteFunc(embeddedArchs, func(a string) bool { return a != only })
	embeddedTable = slices.DeleteFunc(embeddedTable, func(r embeddedRow) bool { return r.arch != only })
}
