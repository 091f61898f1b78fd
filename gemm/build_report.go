package gemm

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/detgemm/detgemm/kernels"
)

// BuildReport says how an engine got its kernels: from the CUBINs embedded
// in the binary, from the disk cache, or compiled by NVRTC, and what went
// wrong on the way without failing New.
type BuildReport struct {
	Arch kernels.Arch // the architecture the kernels were built for
	Mode kernels.Mode // where they were asked from (WithKernels, DETGEMM_KERNELS)
	// Shared: this engine reused the modules another engine had loaded on
	// the same context; the rest of the report is that engine's build.
	Shared bool
	// Families is each loaded family and where its CUBIN came from, sorted
	// by family.
	Families []FamilyOrigin
	// Embedded, CacheHits and Compiled count the families by origin;
	// Rebuilt counts cache entries that were present but corrupt or
	// unreadable, compiled again and replaced.
	Embedded, CacheHits, Compiled, Rebuilt int
	NVRTCVersion                           string // the NVRTC that compiled or cached; empty when none was needed
	EmbeddedNVRTC                          string // the NVRTC that built the embedded modules; empty when unused
	// EmbeddedVariant is the embedded set's variant the modules came from:
	// "base" (NVRTC 12, any driver) or "cuda13" (NVRTC 13, CUDA 13
	// drivers); empty when unused.
	EmbeddedVariant string
	DriverVersion   int    // cuDriverGetVersion, which chose the variant
	CacheDir        string // the cache used; empty when disabled or not needed
	Warnings        []string
	BuildTime       time.Duration // getting the CUBINs (decompress, read the cache, compile)
	LoadTime        time.Duration // loading them into the context and resolving functions
	Elapsed         time.Duration // the whole of New
}

// FamilyOrigin is one kernel family and where its CUBIN came from.
type FamilyOrigin struct {
	Family string
	Origin kernels.Origin
}

// Cold reports whether New had to compile any kernel with NVRTC.
func (r BuildReport) Cold() bool { return r.Compiled > 0 }

// Start names the kind of start: "shared" (modules reused from an engine
// on the same context), "embedded" (all from the binary), "warm" (some or
// all from the disk cache, none compiled) or "cold" (some compiled).
func (r BuildReport) Start() string {
	switch {
	case r.Shared:
		return "shared"
	case r.Compiled > 0:
		return "cold"
	case r.CacheHits > 0:
		return "warm"
	}
	return "embedded"
}

// String is one line for logs: the start kind, the architecture, where
// the families came from, the times and the warning count.
func (r BuildReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "kernels %s for %s (mode %s): %d embedded", r.Start(), r.Arch, r.Mode, r.Embedded)
	if r.EmbeddedNVRTC != "" {
		fmt.Fprintf(&b, " (NVRTC %s", r.EmbeddedNVRTC)
		if r.EmbeddedVariant != "" {
			fmt.Fprintf(&b, ", variant %s", r.EmbeddedVariant)
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, ", %d cached, %d compiled", r.CacheHits, r.Compiled)
	if r.NVRTCVersion != "" {
		fmt.Fprintf(&b, " (NVRTC %s)", r.NVRTCVersion)
	}
	if r.Rebuilt > 0 {
		fmt.Fprintf(&b, ", %d corrupt cache entries rebuilt", r.Rebuilt)
	}
	fmt.Fprintf(&b, "; build %v, load %v, New %v", r.BuildTime.Round(time.Microsecond),
		r.LoadTime.Round(time.Microsecond), r.Elapsed.Round(time.Microsecond))
	if n := len(r.Warnings); n > 0 {
		fmt.Fprintf(&b, "; %d warnings", n)
	}
	return b.String()
}

// reportOf summarises a kernels build.
func reportOf(b *kernels.Bundle) BuildReport {
	r := BuildReport{
		Arch: b.Arch, Mode: b.Mode,
		Embedded: b.Embedded, CacheHits: b.Hits, Compiled: b.Misses, Rebuilt: b.Rebuilt,
		NVRTCVersion: b.NVRTCVersion, EmbeddedNVRTC: b.EmbeddedNVRTC, CacheDir: b.CacheDir,
		EmbeddedVariant: b.EmbeddedVariant, DriverVersion: b.DriverVersion,
		Warnings: slices.Clone(b.Warnings),
	}
	for fam, m := range b.Modules {
		r.Families = append(r.Families, FamilyOrigin{Family: fam, Origin: m.Origin})
	}
	slices.SortFunc(r.Families, func(a, b FamilyOrigin) int { return strings.Compare(a.Family, b.Family) })
	return r
}
