//go:build detgemm_noembed

package kernels

import "embed"

// Built with -tags detgemm_noembed: no embedded set, every family is
// compiled with NVRTC (ModeEmbedded fails with ErrNotEmbedded).
const noEmbed = true

const embeddedSubset = false

var (
	embeddedFS    embed.FS
	embeddedTable []embeddedRow
)
