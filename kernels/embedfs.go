//go:build !detgemm_noembed && !detgemm_only_sm90a

package kernels

import "embed"

// embeddedFS holds the CUBINs go generate built (kernels/internal/gencubin)
// for the architectures users have, so a process on one of them needs
// neither NVRTC nor a cache directory. The build tag detgemm_noembed leaves
// them out (embedfs_none.go): a binary about 8 MB smaller that always
// compiles with NVRTC.
//
//go:generate go run ./internal/gencubin -out embedded -table zembedded.go
//go:embed embedded
var embeddedFS embed.FS

// noEmbed is true in a build without the set (tests skip what needs it).
const noEmbed = false

// embeddedSubset is true in a build that embeds only some architectures
// (embedfs_sm90a.go).
const embeddedSubset = false
