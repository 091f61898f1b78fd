package kernels

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"io/fs"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/detgemm/detgemm/nvrtc"
)

// shippedArchs must always be in the embedded set: the architectures of
// the GPUs detgemm's users have (A100, A10/RTX 30xx, L4/L40/RTX 40xx,
// H100/H200).
var shippedArchs = []string{"sm_80", "sm_86", "sm_89", "sm_90a"}

// needEmbeddedSet skips t in a -tags detgemm_noembed build, and only there.
func needEmbeddedSet(t testing.TB) {
	t.Helper()
	if noEmbed {
		t.Skip("built with -tags detgemm_noembed: no embedded set")
	}
	if embeddedSubset {
		t.Skip("built with -tags detgemm_only_sm90a: only part of the embedded set")
	}
}

// TestEmbeddedSetMatchesSources is the staleness check CI runs (no GPU, no
// NVRTC): every family of every shipped architecture is in the base
// variant, and every variant holds every family of each architecture it
// has, all built from the sources and flags of this checkout. It compares
// source hashes, not CUBIN bytes, which NVRTC does not reproduce exactly.
func TestEmbeddedSetMatchesSources(t *testing.T) {
	needEmbeddedSet(t)
	const fix = "; the kernel sources or flags changed after the embedded set was built: " +
		"run `make generate` (go generate ./kernels, needs libnvrtc 12) and commit kernels/embedded and kernels/zembedded.go; " +
		"a stale cuda13 variant must be rebuilt with NVRTC 13 (kernels/embedded/README.md) or removed " +
		"(go run ./kernels/internal/gencubin -retable -drop-stale -out kernels/embedded -table kernels/zembedded.go)"
	vs := EmbeddedVariants()
	require.NotEmpty(t, vs)
	require.Equal(t, baseVariant, vs[0].Name, "the base variant comes first")
	require.Zero(t, vs[0].MinDriver, "the base variant loads on every driver")
	for _, a := range shippedArchs {
		arch, err := ParseArch(a)
		require.NoError(t, err)
		require.Contains(t, vs[0].Archs, arch, "the base variant lacks %s%s", a, fix)
	}
	seen := map[string]bool{}
	for _, r := range embeddedTable {
		k := r.variant + "/" + r.arch + "/" + r.family
		require.False(t, seen[k], "%s listed twice", k)
		seen[k] = true
	}
	for _, v := range vs {
		for _, arch := range v.Archs {
			for _, f := range FamiliesFor(arch) {
				k := v.Name + "/" + arch.String() + "/" + f
				i := slices.IndexFunc(embeddedTable, func(r embeddedRow) bool {
					return r.variant == v.Name && r.arch == arch.String() && r.family == f
				})
				require.GreaterOrEqual(t, i, 0, "%s missing%s", k, fix)
				row := embeddedTable[i]
				want, err := SourceHash(f, arch)
				require.NoError(t, err)
				require.Equal(t, want, row.sourceHash, "%s is stale%s", k, fix)
				require.Equal(t, v.MinDriver, row.minDriver, k)
				require.Equal(t, v.NVRTC, row.nvrtc, "%s: one NVRTC per variant", k)
				delete(seen, k)
			}
		}
	}
	require.Empty(t, seen, "rows for families or architectures that no longer exist%s", fix)
	require.NotEmpty(t, EmbeddedNVRTCVersion())
}

// TestEmbeddedSetDecodesToCUBINsForTheirArch opens every file of the set:
// it decompresses, its checksum holds, and it is a CUDA ELF image whose
// header names the architecture of its row, in the ELF ABI of its NVRTC;
// no file is left without a row.
func TestEmbeddedSetDecodesToCUBINsForTheirArch(t *testing.T) {
	needEmbeddedSet(t)
	files := map[string]bool{}
	require.NoError(t, fs.WalkDir(embeddedFS, embeddedDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && path.Ext(p) == ".gz" {
			files[p] = true
		}
		return err
	}))
	total := map[string]int{}
	for _, r := range embeddedTable {
		t.Run(r.variant+"/"+r.arch+"/"+r.family, func(t *testing.T) {
			cubin, log, err := decodeEmbedded(r)
			require.NoError(t, err)
			require.Len(t, cubin, r.size)
			// debug/elf refuses CUBINs (their EI_VERSION is CUDA's ABI
			// version), so the header is read by hand.
			require.GreaterOrEqual(t, len(cubin), 64)
			require.True(t, isELF(cubin))
			require.Equal(t, byte(elf.ELFCLASS64), cubin[elf.EI_CLASS])
			require.Equal(t, byte(elf.ELFDATA2LSB), cubin[elf.EI_DATA])
			require.Equal(t, elf.EM_CUDA, elf.Machine(binary.LittleEndian.Uint16(cubin[18:])))
			arch, err := ParseArch(r.arch)
			require.NoError(t, err)
			sm, newABI := cubinSM(cubin)
			require.Equal(t, arch.number(), sm, "the CUBIN's e_flags name its architecture")
			require.Equal(t, r.variant != baseVariant, newABI, "NVRTC %s writes the %s ELF ABI", r.nvrtc, map[bool]string{true: "new", false: "old"}[newABI])
			// ptxas's "wgmma.mma_async instructions are serialized"
			// (C7510-C7520) in the set's own log: the cuda13 set is built
			// on the GPU machine by NVRTC 13, which this machine's NVRTC
			// does not reproduce (gemm_sp24_wg's epilogue serialised every
			// kernel of the family under 13 only, 2026-11-27).
			for _, l := range strings.Split(log, "\n") {
				require.NotContains(t, l, "instructions are serialized", "%s %s: ptxas serialises wgmma", r.variant, r.family)
			}
			res := ParseResources(log)
			require.NotEmpty(t, res, "the ptxas report travels with the CUBIN")
			for _, k := range res {
				if ks, ok := knownSpills[k.Kernel]; ok {
					require.LessOrEqual(t, k.SpillStores+k.SpillLoads, ks.bytes, "%s spills past its ceiling", k.Kernel)
					t.Logf("%s spills %d bytes: %s", k.Kernel, k.SpillStores+k.SpillLoads, ks.why)
					continue
				}
				if n := k.SpillStores + k.SpillLoads; n > 0 && !slices.Contains(shippedArchs, r.arch) {
					// Not yet tuned on hardware: NVRTC on that machine
					// would spill just the same; bits are unaffected.
					t.Logf("%s spills %d bytes (%s is not tuned yet)", k.Kernel, n, r.arch)
					continue
				}
				require.Zero(t, k.SpillStores+k.SpillLoads, "%s spills", k.Kernel)
			}
		})
		delete(files, embeddedPath(r))
		total[r.variant] += r.packed
	}
	require.Empty(t, files, "files in kernels/embedded without a row in zembedded.go")
	t.Logf("embedded set: %d CUBINs, compressed bytes by variant %v", len(embeddedTable), total)
}

// cubinSM reads the SM number from a CUBIN's ELF header, and whether it
// uses the new CUDA ELF ABI (EI_ABIVERSION >= 8, written by NVRTC 13),
// which keeps the SM number in bits 8..15 of e_flags; the old ABI keeps it
// in the low byte. sm_90a and sm_90 both read 90.
func cubinSM(cubin []byte) (sm int, newABI bool) {
	if len(cubin) < 52 {
		return 0, false
	}
	flags := binary.LittleEndian.Uint32(cubin[48:])
	if cubin[elf.EI_ABIVERSION] >= 8 {
		return int(flags >> 8 & 0xff), true
	}
	return int(flags & 0xff), false
}

func TestCUBINSMReadsBothELFABIs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		abi    byte
		flags  uint32
		sm     int
		newABI bool
	}{
		{"old ABI sm_80", 7, 0x500550, 80, false},
		{"old ABI sm_90a", 7, 0x5a055a, 90, false},
		{"new ABI sm_90a", 8, 0x6005a04, 90, true},
		{"new ABI sm_100a", 8, 0x6006404, 100, true},
		{"new ABI sm_120", 8, 0x6007804, 120, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := make([]byte, 64)
			copy(h, "\x7fELF")
			h[elf.EI_ABIVERSION] = tc.abi
			binary.LittleEndian.PutUint32(h[48:], tc.flags)
			sm, newABI := cubinSM(h)
			require.Equal(t, tc.sm, sm)
			require.Equal(t, tc.newABI, newABI)
		})
	}
}

// TestEmbeddedVariantFollowsTheDriver: the newest variant the driver can
// load is taken, family by family; an unknown driver gets the base
// variant; an architecture only a newer variant holds needs NVRTC (auto)
// or fails (embedded) on an older driver.
func TestEmbeddedVariantFollowsTheDriver(t *testing.T) {
	needEmbeddedSet(t)
	t.Setenv(EnvKernels, "")
	t.Setenv(EnvEmbeddedVariant, "")
	hasVariant := func(v, arch string) bool {
		return slices.ContainsFunc(embeddedTable, func(r embeddedRow) bool { return r.variant == v && r.arch == arch })
	}
	if !hasVariant("cuda13", "sm_90a") {
		t.Skip("this embedded set has no cuda13 variant for sm_90a")
	}
	hopper := Arch{Major: 9, Specific: true}
	blackwell := Arch{Major: 10, Specific: true}
	base := EmbeddedNVRTCVersion()
	for _, tc := range []struct {
		name    string
		arch    Arch
		driver  int
		force   string
		mode    Mode
		variant string // "": not embedded
		err     error  // in ModeEmbedded
	}{
		{"hopper, driver unknown", hopper, 0, "", ModeAuto, "base", nil},
		{"hopper, CUDA 12.4 driver", hopper, 12040, "", ModeAuto, "base", nil},
		{"hopper, CUDA 12.9 driver", hopper, 12090, "", ModeEmbedded, "base", nil},
		{"hopper, CUDA 13.0 driver", hopper, 13000, "", ModeAuto, "cuda13", nil},
		{"hopper, CUDA 13.1 driver", hopper, 13010, "", ModeEmbedded, "cuda13", nil},
		{"hopper, CUDA 13.0 driver, base forced", hopper, 13000, "base", ModeEmbedded, "base", nil},
		{"hopper, CUDA 12.4 driver, cuda13 forced", hopper, 12040, "cuda13", ModeEmbedded, "", ErrNotEmbedded},
		{"ampere, CUDA 13.0 driver", Arch{Major: 8}, 13000, "", ModeAuto, "base", nil},
		{"blackwell, CUDA 12.8 driver, auto", blackwell, 12080, "", ModeAuto, "", nil},
		{"blackwell, CUDA 12.8 driver, embedded", blackwell, 12080, "", ModeEmbedded, "", ErrNotEmbedded},
		{"blackwell, CUDA 13.0 driver", blackwell, 13000, "", ModeAuto, "cuda13", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.variant == "cuda13" && !hasVariant("cuda13", tc.arch.String()) {
				t.Skipf("no cuda13 variant for %s", tc.arch)
			}
			opts := []BuildOption{WithMode(tc.mode), WithDriverVersion(tc.driver), WithCache(false), WithEmbeddedVariant(tc.force)}
			require.Equal(t, tc.variant != "", EmbeddedFor(tc.arch, opts...))
			sentinel := errors.New("would open NVRTC")
			b := NewBuilder(nil, opts...)
			b.open = func() (*nvrtc.Compiler, error) { return nil, sentinel }
			got, err := b.Build(tc.arch)
			switch {
			case tc.err != nil:
				require.ErrorIs(t, err, tc.err)
				require.Contains(t, err.Error(), "CUDA 13.0 driver")
				return
			case tc.variant == "":
				require.ErrorIs(t, err, sentinel, "compiled with NVRTC")
				return
			}
			require.NoError(t, err)
			require.Equal(t, len(FamiliesFor(tc.arch)), got.Embedded)
			require.Equal(t, tc.variant, got.EmbeddedVariant)
			require.Equal(t, tc.driver, got.DriverVersion)
			require.Empty(t, got.Warnings)
			for f, m := range got.Modules {
				require.Equal(t, tc.variant, m.Variant, f)
				sm, newABI := cubinSM(m.CUBIN)
				require.Equal(t, tc.arch.number(), sm, f)
				require.Equal(t, tc.variant != "base", newABI, f)
			}
			if tc.variant == "base" {
				require.Equal(t, base, got.EmbeddedNVRTC)
			} else {
				require.True(t, strings.HasPrefix(got.EmbeddedNVRTC, "13."), got.EmbeddedNVRTC)
			}
		})
	}
	t.Setenv(EnvEmbeddedVariant, "cuda99")
	_, err := Build(hopper, WithMode(ModeEmbedded))
	require.ErrorIs(t, err, ErrBadVariant)
	require.Contains(t, err.Error(), EnvEmbeddedVariant)
	t.Setenv(EnvEmbeddedVariant, "BASE")
	got, err := Build(hopper, WithMode(ModeEmbedded), WithDriverVersion(13000), WithFamilies("util"))
	require.NoError(t, err)
	require.Equal(t, "base", got.EmbeddedVariant, "the environment forces a variant")
}

// TestFallbackWhenTheDriverRefusesACUBIN: a family the driver would not
// load comes from the next older variant, then from NVRTC, each with a
// warning (ModeAuto); ModeEmbedded names the driver and the way out.
func TestFallbackWhenTheDriverRefusesACUBIN(t *testing.T) {
	needEmbeddedSet(t)
	t.Setenv(EnvKernels, "")
	t.Setenv(EnvEmbeddedVariant, "")
	hopper := Arch{Major: 9, Specific: true}
	if !slices.ContainsFunc(embeddedTable, func(r embeddedRow) bool { return r.variant == "cuda13" && r.arch == hopper.String() }) {
		t.Skip("this embedded set has no cuda13 variant for sm_90a")
	}
	refused := errors.New("CUDA_ERROR_NO_BINARY_FOR_GPU")

	b, err := Build(hopper, WithMode(ModeEmbedded), WithDriverVersion(13000), WithFamilies("util"))
	require.NoError(t, err)
	_, err = b.Fallback("util", refused)
	require.ErrorIs(t, err, ErrEmbeddedLoad)
	require.ErrorIs(t, err, refused)
	for _, s := range []string{"driver 13.0", "cuda13", "R580", EnvEmbeddedVariant + "=base", EnvKernels + "=auto"} {
		require.Contains(t, err.Error(), s)
	}

	sentinel := errors.New("would open NVRTC")
	bl := NewBuilder(nil, WithMode(ModeAuto), WithDriverVersion(13000), WithFamilies("util", "triad"), WithCache(false))
	bl.open = func() (*nvrtc.Compiler, error) { return nil, sentinel }
	b, err = bl.Build(hopper)
	require.NoError(t, err)
	require.Equal(t, "cuda13", b.EmbeddedVariant)
	m, err := b.Fallback("util", refused)
	require.NoError(t, err)
	require.Equal(t, "base", m.Variant)
	require.Same(t, m, b.Modules["util"])
	require.Equal(t, "base+cuda13", b.EmbeddedVariant)
	require.Equal(t, 2, b.Embedded)
	require.Len(t, b.Warnings, 1)
	require.Contains(t, b.Warnings[0], "using variant base")
	_, err = b.Fallback("util", refused)
	require.ErrorIs(t, err, sentinel, "after the oldest variant, NVRTC")
	require.Contains(t, b.Warnings[len(b.Warnings)-1], "compiled with NVRTC instead")
}

func TestSourceHashSeparatesFamiliesAndArchs(t *testing.T) {
	seen := map[string]string{}
	for _, a := range SupportedArchs() {
		for _, f := range FamiliesFor(a) {
			h, err := SourceHash(f, a)
			require.NoError(t, err)
			require.Len(t, h, 64)
			again, err := SourceHash(f, a)
			require.NoError(t, err)
			require.Equal(t, h, again, "deterministic")
			id := f + "/" + a.String()
			require.NotContains(t, seen, h, "%s and %s hash alike", id, seen[h])
			seen[h] = id
		}
	}
	_, err := SourceHash("no_such_family", Arch{Major: 8})
	require.ErrorIs(t, err, ErrUnknownFamily)
}

func TestParseModeAndPrecedence(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Mode
		err  bool
	}{
		{"", ModeAuto, false}, {"auto", ModeAuto, false}, {" Embedded ", ModeEmbedded, false},
		{"nvrtc", ModeNVRTC, false}, {"NVRTC", ModeNVRTC, false}, {"cache", ModeAuto, true}, {"1", ModeAuto, true},
	} {
		m, err := ParseMode(tc.in)
		if tc.err {
			require.ErrorIs(t, err, ErrBadMode, tc.in)
			require.Contains(t, err.Error(), "want auto, embedded or nvrtc")
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, m, tc.in)
		if tc.in != "" {
			require.Equal(t, strings.ToLower(strings.TrimSpace(tc.in)), m.String(), "String names what ParseMode reads")
		}
	}
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == EnvKernels {
				return v
			}
			return ""
		}
	}
	for _, tc := range []struct {
		name string
		opts []BuildOption
		env  string
		want Mode
		err  error
	}{
		{"default", nil, "", ModeAuto, nil},
		{"environment", nil, "nvrtc", ModeNVRTC, nil},
		{"option wins", []BuildOption{WithMode(ModeEmbedded)}, "nvrtc", ModeEmbedded, nil},
		{"option wins over a bad environment", []BuildOption{WithMode(ModeAuto)}, "bogus", ModeAuto, nil},
		{"bad environment", nil, "bogus", ModeAuto, ErrBadMode},
		{"bad option", []BuildOption{WithMode(Mode(7))}, "", ModeAuto, ErrBadMode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cfg buildConfig
			for _, o := range tc.opts {
				o(&cfg)
			}
			m, err := resolveMode(cfg, env(tc.env))
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, m)
		})
	}
	t.Setenv(EnvKernels, "bogus")
	_, err := Build(Arch{Major: 8})
	require.ErrorIs(t, err, ErrBadMode)
	require.Contains(t, err.Error(), EnvKernels)
}

// TestBuildSelectsTheSourceByArchAndMode: which architectures and modes
// are served by the embedded set, which need NVRTC (a Builder with no
// compiler fails exactly when it would have to compile).
func TestBuildSelectsTheSourceByArchAndMode(t *testing.T) {
	needEmbeddedSet(t)
	t.Setenv(EnvKernels, "")
	noNVRTC := func() *Builder { return NewBuilder(nil, WithCache(false)) }
	for _, tc := range []struct {
		arch     Arch
		mode     Mode
		embedded bool  // served by the set, no NVRTC
		err      error // nil: needs NVRTC (the Builder has none)
	}{
		{Arch{Major: 8}, ModeAuto, true, nil},
		{Arch{Major: 8, Minor: 6}, ModeEmbedded, true, nil},
		{Arch{Major: 8, Minor: 9}, ModeAuto, true, nil},
		{Arch{Major: 9, Specific: true}, ModeAuto, true, nil},
		{Arch{Major: 9, Specific: true}, ModeNVRTC, false, nil},
		{Arch{Major: 8, Minor: 7}, ModeAuto, false, nil}, // Orin: not shipped
		{Arch{Major: 9}, ModeAuto, false, nil},           // plain sm_90: Hopper gets sm_90a
		{Arch{Major: 8, Minor: 7}, ModeEmbedded, false, ErrNotEmbedded},
	} {
		t.Run(tc.arch.String()+"/"+tc.mode.String(), func(t *testing.T) {
			b := noNVRTC()
			b.cfg.mode, b.cfg.modeSet = tc.mode, true
			got, err := b.Build(tc.arch)
			switch {
			case tc.embedded:
				require.NoError(t, err)
				require.Equal(t, len(FamiliesFor(tc.arch)), got.Embedded)
				require.Len(t, got.Modules, got.Embedded)
				require.Zero(t, got.Hits+got.Misses)
				require.Empty(t, got.NVRTCVersion, "NVRTC was not needed")
				require.Equal(t, EmbeddedNVRTCVersion(), got.EmbeddedNVRTC, "no driver version: the base variant")
				require.Equal(t, baseVariant, got.EmbeddedVariant)
				require.Empty(t, got.CacheDir, "no cache directory needed")
				require.Empty(t, got.Warnings)
				require.False(t, got.Cold())
				for f, m := range got.Modules {
					require.Equal(t, OriginEmbedded, m.Origin, f)
					require.True(t, isELF(m.CUBIN), f)
					require.NotEmpty(t, m.Resources, f)
				}
				require.True(t, Embedded(tc.arch))
			case tc.err != nil:
				require.ErrorIs(t, err, tc.err)
				require.Contains(t, err.Error(), tc.arch.String())
				require.Contains(t, err.Error(), EnvKernels)
			default:
				require.Error(t, err)
				require.Contains(t, err.Error(), "no NVRTC compiler", "it had to compile")
			}
		})
	}
	// Families limit the embedded build too.
	b := noNVRTC()
	b.cfg.families = []string{"util"}
	got, err := b.Build(Arch{Major: 8, Minor: 6})
	require.NoError(t, err)
	require.Equal(t, 1, got.Embedded)
	require.Contains(t, got.Modules, "util")
	require.True(t, Embedded(Arch{Major: 8, Minor: 6}, "util", "triad"))
	require.False(t, Embedded(Arch{Major: 8, Minor: 6}, "gemm_wgmma"))
}

// TestStaleOrDamagedEmbeddedEntryIsNeverLoaded: a row whose source hash
// does not match (sources edited, set not regenerated) or whose file does
// not check out is refused: an error in ModeEmbedded, a warning and an
// NVRTC compile in ModeAuto.
func TestStaleOrDamagedEmbeddedEntryIsNeverLoaded(t *testing.T) {
	needEmbeddedSet(t)
	t.Setenv(EnvKernels, "")
	arch := Arch{Major: 8}
	for _, tc := range []struct {
		name   string
		damage func(*embeddedRow)
		why    string
	}{
		{"stale source hash", func(r *embeddedRow) { r.sourceHash = strings.Repeat("0", 64) }, "stale"},
		{"checksum", func(r *embeddedRow) { r.cubinSHA256 = strings.Repeat("0", 64) }, "checksum mismatch"},
		{"length", func(r *embeddedRow) { r.size++ }, "CUBIN length"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i := slices.IndexFunc(embeddedTable, func(r embeddedRow) bool { return r.family == "util" && r.arch == arch.String() })
			require.GreaterOrEqual(t, i, 0)
			saved := embeddedTable[i]
			t.Cleanup(func() { embeddedTable[i] = saved })
			tc.damage(&embeddedTable[i])
			hashes.Clear()
			t.Cleanup(func() { hashes.Clear() })

			// Embedded reads the table only; a damaged file is found when
			// it is decoded.
			require.Equal(t, tc.why != "stale", Embedded(arch, "util"))
			_, err := NewBuilder(nil, WithMode(ModeEmbedded), WithFamilies("util")).Build(arch)
			require.ErrorIs(t, err, ErrNotEmbedded)
			require.Contains(t, err.Error(), tc.why)

			sentinel := errors.New("would open NVRTC")
			b := NewBuilder(nil, WithMode(ModeAuto), WithFamilies("util", "triad"), WithCache(false))
			b.open = func() (*nvrtc.Compiler, error) { return nil, sentinel }
			_, err = b.Build(arch)
			require.ErrorIs(t, err, sentinel, "auto falls back to NVRTC for the refused family")
		})
	}
}

// BenchmarkBuildEmbedded is the CPU part of a start on a shipped
// architecture: decompressing and checking every family of sm_90a.
func BenchmarkBuildEmbedded(b *testing.B) {
	needEmbeddedSet(b)
	arch := Arch{Major: 9, Specific: true}
	for b.Loop() {
		if _, err := NewBuilder(nil, WithMode(ModeEmbedded)).Build(arch); err != nil {
			b.Fatal(err)
		}
	}
}
