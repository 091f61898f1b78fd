package kernels

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/detgemm/detgemm/internal/nvrtctest"
	"github.com/detgemm/detgemm/nvrtc"
)

// envChild makes the test binary act as a second process writing the cache
// (see TestCacheWritersInTwoProcesses): it builds into the directory named
// by the variable and prints a childReport.
const envChild = "DETGEMM_KERNELS_TEST_CHILD_CACHE"

// cacheFamilies are two small families: the cache tests exercise the cache,
// not the compiler, so they build these instead of every kernel (the GEMM
// families take NVRTC tens of seconds per architecture).
var cacheFamilies = []string{"triad", "util"}

// nvrtcOnly makes a build compile with NVRTC even where the embedded set
// has the family: these tests exercise the compiler and the cache.
var nvrtcOnly = WithMode(ModeNVRTC)

var small = func(b *buildConfig) { WithFamilies(cacheFamilies...)(b); nvrtcOnly(b) }

type childReport struct {
	Hits, Misses int
	Warnings     []string
	Err          string
}

func TestMain(m *testing.M) {
	if dir := os.Getenv(envChild); dir != "" {
		os.Exit(runChild(dir))
	}
	os.Exit(m.Run())
}

func runChild(dir string) int {
	var rep childReport
	b, err := Build(Arch{Major: 8}, WithCacheDir(dir), WithCache(true), small)
	if err != nil {
		rep.Err = err.Error()
	} else {
		rep.Hits, rep.Misses, rep.Warnings = b.Hits, b.Misses, b.Warnings
	}
	if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil || rep.Err != "" {
		return 1
	}
	return 0
}

// archsFor is SupportedArchs less those this NVRTC cannot target.
func archsFor(t *testing.T, c *nvrtc.Compiler) []Arch {
	major, _ := c.Version()
	var out []Arch
	for _, a := range SupportedArchs() {
		if a.Specific && major < 12 {
			t.Logf("skipping %s: NVRTC %d has no architecture-specific targets", a, major)
			continue
		}
		out = append(out, a)
	}
	return out
}

// knownSpill is a kernel allowed to spill: at most bytes of spill stores
// and loads together, for the reason why.
type knownSpill struct {
	bytes int
	why   string
}

// knownSpills are the kernels allowed to spill, each with its ceiling and
// the reason; the list is meant to be empty, and a spill past its ceiling
// fails as any other would. The two below are Matmul's general-path
// product onto f32 planes for NT (gemm_tc's tcacc entries on the 128×256
// tile, at 255 registers with the slab offsets): 4 + 4 bytes on sm_80–89,
// 20 + 20 on sm_90a, in both NVRTC 12.4 and 13.0. Only Matmul's general
// path runs them (NT requests that neither DX nor the fused wgmma kernel
// serves); their bits are verified (gemm's TestMatmul*). Dropping them
// changes gemm_tc's sources, so both embedded sets must be rebuilt, the
// cuda13 one on a GPU machine.
//
// The ping-pong tile's ReLU and GELU forward (bf16) and DGELU (f16)
// kernels, every layout, spill one value of the tile loop (8 bytes stored,
// 20 loaded, once a tile, outside the epilogue's turns): the consumers hold
// 128 accumulators at 240 registers beside the whole-tile turns' row bases.
// Measured with the spill, those kernels are 2-7 % faster than the
// spill-free turns before them (bench/NOTES-matmul.md, twenty-seventh
// session); NVRTC 12.4 spills in all twelve, 13.0 in the eight forward ones.
var knownSpills = func() map[string]knownSpill {
	planes := knownSpill{40, "Matmul's general-path NT planes (see knownSpills)"}
	m := map[string]knownSpill{
		"detgemm_tc256acc_nt_bf16_f32_vec": planes,
		"detgemm_tc256acc_nt_f16_f32_vec":  planes,
	}
	pingPong := knownSpill{28, "the ping-pong tile's loop value beside the whole-tile turns (see knownSpills)"}
	for _, l := range []string{"nn", "nt", "tn", "tt"} {
		for _, k := range []string{"relu_" + l + "_bf16_bf16", "gelu_" + l + "_bf16_bf16", "dgelu_" + l + "_f16_f16"} {
			m["detgemm_wgmm128x128p_"+k] = pingPong
		}
	}
	return m
}()

func TestEveryFamilyCompilesWithoutSpillsOrStack(t *testing.T) {
	c := nvrtctest.Compiler(t)
	for _, arch := range archsFor(t, c) {
		t.Run(arch.String(), func(t *testing.T) {
			b, err := NewBuilder(c, WithCache(false), nvrtcOnly).Build(arch)
			require.NoError(t, err)
			require.Equal(t, arch, b.Arch)
			require.Len(t, b.Modules, len(FamiliesFor(arch)))
			require.Equal(t, len(FamiliesFor(arch)), b.Misses)
			require.Zero(t, b.Hits)
			for _, fam := range FamiliesFor(arch) {
				m := b.Modules[fam]
				require.NotNil(t, m, fam)
				require.Equal(t, fam, m.Family)
				require.True(t, isELF(m.CUBIN), "%s: CUBIN is ELF", fam)
				// ptxas's "wgmma.mma_async instructions are serialized"
				// (C7510-C7515): a kernel that compiles but runs its
				// wgmma one at a time (gemm_wgmma's 16-bit slab variants
				// did, 2026-11-21, and ran a third slower).
				require.NotContains(t, m.Log, "instructions are serialized", "%s: ptxas serialises wgmma", fam)
				require.Contains(t, m.Log, "for '"+arch.String()+"'", "%s: the log reports the requested target", fam)
				for _, k := range kernelNames(t, fam) {
					_, ok := m.Resource(k)
					require.True(t, ok, "%s: ptxas reported kernel %s; the log:\n%s", fam, k, m.Log)
				}
				for _, r := range m.Resources {
					if ks, ok := knownSpills[r.Kernel]; ok {
						require.LessOrEqual(t, r.SpillStores+r.SpillLoads, ks.bytes, "%s/%s spills past its ceiling", fam, r.Kernel)
						t.Logf("%s/%s spills %d bytes, stack %d: %s", fam, r.Kernel, r.SpillStores+r.SpillLoads, r.StackBytes, ks.why)
						continue
					}
					require.Zero(t, r.SpillStores, "%s/%s spills (stores)", fam, r.Kernel)
					require.Zero(t, r.SpillLoads, "%s/%s spills (loads)", fam, r.Kernel)
					require.Zero(t, r.StackBytes, "%s/%s uses stack", fam, r.Kernel)
					require.False(t, r.Device, "%s: %s was not inlined", fam, r.Kernel)
					require.Positive(t, r.Registers, "%s/%s", fam, r.Kernel)
				}
			}
		})
	}
}

func TestCacheSecondBuildIsAllHitsWithIdenticalBytes(t *testing.T) {
	c := nvrtctest.Compiler(t)
	dir := t.TempDir()
	arch := Arch{Major: 9, Specific: true}
	if major, _ := c.Version(); major < 12 {
		arch = Arch{Major: 9}
	}
	cold, err := NewBuilder(c, small, WithCacheDir(dir)).Build(arch)
	require.NoError(t, err)
	require.Equal(t, len(cacheFamilies), cold.Misses)
	require.Zero(t, cold.Hits)
	require.Empty(t, cold.Warnings)
	require.Equal(t, dir, cold.CacheDir)

	warm, err := NewBuilder(c, small, WithCacheDir(dir)).Build(arch)
	require.NoError(t, err)
	require.Equal(t, len(cacheFamilies), warm.Hits)
	require.Zero(t, warm.Misses)
	require.Empty(t, warm.Warnings)
	for fam, m := range cold.Modules {
		w := warm.Modules[fam]
		require.True(t, w.Cached)
		require.False(t, m.Cached)
		require.Equal(t, OriginCache, w.Origin, fam)
		require.Equal(t, OriginCompiled, m.Origin, fam)
		require.Equal(t, m.CUBIN, w.CUBIN, fam)
		require.Equal(t, m.Log, w.Log, fam)
		require.Equal(t, m.Resources, w.Resources, fam)
	}
	t.Logf("%d small families for %s with NVRTC %s: cold %v, cached %v",
		len(cacheFamilies), arch, cold.NVRTCVersion, cold.Elapsed, warm.Elapsed)

	// Another architecture is another entry, not a hit.
	other, err := NewBuilder(c, small, WithCacheDir(dir)).Build(Arch{Major: 8})
	require.NoError(t, err)
	require.Zero(t, other.Hits)
}

func TestCacheCorruptEntryIsRebuiltAndReplaced(t *testing.T) {
	c := nvrtctest.Compiler(t)
	arch := Arch{Major: 8, Minor: 6}
	for _, damage := range []struct {
		name string
		fn   func([]byte) []byte
	}{
		{"flipped byte in the CUBIN", func(b []byte) []byte { b[entryHeaderLen+20] ^= 0x01; return b }},
		{"flipped byte in the header", func(b []byte) []byte { b[50] ^= 0x80; return b }},
		{"truncated", func(b []byte) []byte { return b[:len(b)/2] }},
		{"empty", func([]byte) []byte { return nil }},
	} {
		t.Run(damage.name, func(t *testing.T) {
			dir := t.TempDir()
			first, err := NewBuilder(c, small, WithCacheDir(dir)).Build(arch)
			require.NoError(t, err)
			entries, err := filepath.Glob(filepath.Join(dir, "*.cubin"))
			require.NoError(t, err)
			require.Len(t, entries, len(cacheFamilies))
			victim := entries[0]
			b, err := os.ReadFile(victim)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(victim, damage.fn(bytes.Clone(b)), 0o644))

			again, err := NewBuilder(c, small, WithCacheDir(dir)).Build(arch)
			require.NoError(t, err)
			require.Equal(t, 1, again.Misses, "the damaged entry is rebuilt")
			require.Equal(t, 1, again.Rebuilt, "counted as rebuilt after corruption")
			require.Equal(t, len(cacheFamilies)-1, again.Hits)
			require.Len(t, again.Warnings, 1)
			require.Contains(t, again.Warnings[0], filepath.Base(victim))
			for fam, m := range first.Modules {
				require.Equal(t, m.CUBIN, again.Modules[fam].CUBIN, "%s: the rebuilt CUBIN is the original", fam)
			}

			// The file is a new entry, not byte for byte the old one: its
			// ptxas log carries compile times.
			fixed, err := os.ReadFile(victim)
			require.NoError(t, err)
			require.NotEqual(t, damage.fn(bytes.Clone(b)), fixed, "the corrupt file was replaced")
			third, err := NewBuilder(c, small, WithCacheDir(dir)).Build(arch)
			require.NoError(t, err)
			require.Equal(t, len(cacheFamilies), third.Hits, "the replacement is a good entry")
			require.Zero(t, third.Rebuilt)
			for fam, m := range first.Modules {
				require.Equal(t, m.CUBIN, third.Modules[fam].CUBIN, "%s: the cached CUBIN is the original", fam)
			}
		})
	}
}

func TestCacheWritersInOneProcess(t *testing.T) {
	c := nvrtctest.Compiler(t)
	dir := t.TempDir()
	const writers = 4
	var wg sync.WaitGroup
	bundles := make([]*Bundle, writers)
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() { bundles[i], errs[i] = NewBuilder(c, small, WithCacheDir(dir)).Build(Arch{Major: 8, Minor: 9}) })
	}
	wg.Wait()
	for i := range writers {
		require.NoError(t, errs[i])
		require.Empty(t, bundles[i].Warnings, "writer %d", i)
	}
	requireCleanValidCache(t, c, dir, Arch{Major: 8, Minor: 9})
}

func TestCacheWritersInTwoProcesses(t *testing.T) {
	c := nvrtctest.Compiler(t)
	dir := t.TempDir()
	const procs = 2
	outs := make([]bytes.Buffer, procs)
	cmds := make([]*exec.Cmd, procs)
	for i := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envChild+"="+dir)
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		require.NoError(t, cmd.Start())
		cmds[i] = cmd
	}
	misses := 0
	for i, cmd := range cmds {
		err := cmd.Wait()
		require.NoError(t, err, "child %d: %s", i, outs[i].String())
		var rep childReport
		require.NoError(t, json.Unmarshal(outs[i].Bytes(), &rep), "child %d: %s", i, outs[i].String())
		require.Empty(t, rep.Err)
		require.Empty(t, rep.Warnings, "child %d", i)
		require.Equal(t, len(cacheFamilies), rep.Hits+rep.Misses)
		misses += rep.Misses
	}
	require.GreaterOrEqual(t, misses, len(cacheFamilies), "someone compiled each family")
	requireCleanValidCache(t, c, dir, Arch{Major: 8})
}

// requireCleanValidCache checks that dir holds exactly one valid entry per
// family and no leftover temporary file, and that they serve a full hit.
func requireCleanValidCache(t *testing.T, c *nvrtc.Compiler, dir string, arch Arch) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.Len(t, names, len(cacheFamilies), "entries: %v", names)
	for _, n := range names {
		require.False(t, strings.HasPrefix(n, ".tmp-"), "leftover temporary file %s", n)
	}
	b, err := NewBuilder(c, small, WithCacheDir(dir)).Build(arch)
	require.NoError(t, err)
	require.Equal(t, len(cacheFamilies), b.Hits)
	require.Empty(t, b.Warnings)
	fresh, err := NewBuilder(c, small, WithCache(false)).Build(arch)
	require.NoError(t, err)
	for fam, m := range fresh.Modules {
		require.Equal(t, m.CUBIN, b.Modules[fam].CUBIN, fam)
	}
}

func TestCacheOffByEnvironmentWritesNothing(t *testing.T) {
	c := nvrtctest.Compiler(t)
	dir := t.TempDir()
	t.Setenv(EnvCacheDir, dir)
	t.Setenv(EnvCache, "off")
	for range 2 {
		b, err := NewBuilder(c, small).Build(Arch{Major: 8})
		require.NoError(t, err)
		require.Equal(t, len(cacheFamilies), b.Misses)
		require.Zero(t, b.Hits)
		require.Empty(t, b.CacheDir)
		require.Empty(t, b.Warnings)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries)
}

func TestCacheEnvironmentDirIsUsed(t *testing.T) {
	c := nvrtctest.Compiler(t)
	dir := filepath.Join(t.TempDir(), "from-env")
	t.Setenv(EnvCacheDir, dir)
	t.Setenv(EnvCache, "")
	b, err := Build(Arch{Major: 8}, WithCompiler(c), small)
	require.NoError(t, err)
	require.Equal(t, dir, b.CacheDir)
	entries, err := filepath.Glob(filepath.Join(dir, "*-sm_80-*.cubin"))
	require.NoError(t, err)
	require.Len(t, entries, len(cacheFamilies))
}

func TestUnwritableCacheStillBuilds(t *testing.T) {
	c := nvrtctest.Compiler(t)
	file := filepath.Join(t.TempDir(), "not-a-dir")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	b, err := NewBuilder(c, small, WithCacheDir(filepath.Join(file, "cache"))).Build(Arch{Major: 8})
	require.NoError(t, err, "a broken cache never fails the build")
	require.Equal(t, len(cacheFamilies), b.Misses)
	require.NotEmpty(t, b.Warnings)
	for _, m := range b.Modules {
		require.True(t, isELF(m.CUBIN))
	}
}

func TestBuildRefusesNVRTCAppendFlags(t *testing.T) {
	c := nvrtctest.Compiler(t)
	t.Setenv("NVRTC_APPEND_FLAGS", "--fmad=true")
	_, err := NewBuilder(c, small, WithCache(false)).Build(Arch{Major: 8})
	require.ErrorIs(t, err, ErrAppendFlags)
}

func TestBuildNamesArchitecturesNVRTCCannotTarget(t *testing.T) {
	c := nvrtctest.Compiler(t)
	archs, err := c.SupportedArchs()
	require.NoError(t, err)
	last := archs[len(archs)-1]
	beyond := Arch{Major: last/10 + 1} // one generation past what this NVRTC knows
	_, err = NewBuilder(c, small, WithCache(false)).Build(beyond)
	require.ErrorIs(t, err, ErrArchNotInNVRTC)
	require.Contains(t, err.Error(), beyond.String())
	major, minor := c.Version()
	require.Contains(t, err.Error(), fmt.Sprintf("NVRTC %d.%d", major, minor))
}

func TestBuilderWithoutCompilerFails(t *testing.T) {
	_, err := NewBuilder(nil, nvrtcOnly).Build(Arch{Major: 8})
	require.Error(t, err)
}

func TestWithFamiliesBuildsOnlyThoseAndRejectsUnknown(t *testing.T) {
	c := nvrtctest.Compiler(t)
	b, err := NewBuilder(c, WithCache(false), nvrtcOnly, WithFamilies("util", "util")).Build(Arch{Major: 8})
	require.NoError(t, err)
	require.Len(t, b.Modules, 1)
	require.Contains(t, b.Modules, "util")
	_, err = NewBuilder(c, WithCache(false), nvrtcOnly, WithFamilies("no_such_family")).Build(Arch{Major: 8})
	require.ErrorIs(t, err, ErrUnknownFamily)
	_, err = NewBuilder(c, WithCache(false), nvrtcOnly, WithFamilies("gemm_wgmma")).Build(Arch{Major: 9})
	require.ErrorIs(t, err, ErrFamilyArch, "wgmma exists on sm_90a only")
}

// TestCheckFamiliesBuildWhenNamed: a test-only family is left out of a
// whole build but compiles, like any family, when WithFamilies names it.
func TestCheckFamiliesBuildWhenNamed(t *testing.T) {
	c := nvrtctest.Compiler(t)
	arch := Arch{Major: 8}
	b, err := NewBuilder(c, WithCache(false), nvrtcOnly, WithFamilies(CheckFamilies()...)).Build(arch)
	require.NoError(t, err)
	require.Len(t, b.Modules, len(CheckFamilies()))
	for _, fam := range CheckFamilies() {
		m := b.Modules[fam]
		require.NotNil(t, m, fam)
		for _, k := range kernelNames(t, fam) {
			r, ok := m.Resource(k)
			require.True(t, ok, "%s: ptxas reported kernel %s", fam, k)
			require.Zero(t, r.SpillStores+r.SpillLoads+r.StackBytes, "%s/%s spills or uses stack", fam, k)
		}
	}
}
