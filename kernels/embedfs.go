//go:build !detgemm_noembed && !detgemm_only_sm90a

package kernels

import "embed"

// embeddedFS holds the CUBINs gencubin built for the architectures users
// have (embedded/README.md), so a process on one of them needs neither
// NVRTC nor a cache directory. The build tag detgemm_noembed leaves them
// out (embedfs_none.go): a binary that always compiles with NVRTC.
//
// go generate rebuilds the base variant with the local NVRTC (12.x) and
// regenerates zembedded.go from every file under embedded/. The cuda13
// variant needs NVRTC 13; on a machine with it, from this directory:
//
//	go run ./internal/gencubin -variant cuda13
//
//go:generate go run ./internal/gencubin -variant base -if-stale -out embedded -table zembedded.go
//go:embed embedded
var embeddedFS embed.FS

// noEmbed is true in a build without the set (tests skip what needs it).
const noEmbed = false

// embeddedSubset is true in a build that embeds only some architectures
// (embedfs_sm90a.go).
const embeddedSubset = false
