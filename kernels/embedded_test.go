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
// NVRTC): every family of every shipped architecture is in the set, built
// from the sources and flags of this checkout. It compares source hashes,
// not CUBIN bytes, which NVRTC does not reproduce exactly.
func TestEmbeddedSetMatchesSources(t *testing.T) {
	needEmbeddedSet(t)
	const fix = "; the kernel sources or flags changed after the embedded set was built: " +
		"run `make generate` (go generate ./kernels, needs libnvrtc) and commit kernels/embedded and kernels/zembedded.go"
	for _, a := range shippedArchs {
		require.Contains(t, embeddedArchs, a, "embedded set lacks %s%s", a, fix)
	}
	seen := map[string]bool{}
	for _, r := range embeddedTable {
		seen[r.family+"/"+r.arch] = true
	}
	for _, name := range embeddedArchs {
		arch, err := ParseArch(name)
		require.NoError(t, err)
		for _, f := range FamiliesFor(arch) {
			row, why := embeddedRowFor(f, arch)
			require.Empty(t, why, "%s for %s: %s%s", f, arch, why, fix)
			want, err := SourceHash(f, arch)
			require.NoError(t, err)
			require.Equal(t, want, row.sourceHash, "%s for %s%s", f, arch, fix)
			delete(seen, f+"/"+name)
		}
	}
	require.Empty(t, seen, "rows for families or architectures that no longer exist%s", fix)
	require.NotEmpty(t, embeddedNVRTC)
}

// TestEmbeddedSetDecodesToCUBINsForTheirArch opens every file of the set:
// it decompresses, its checksum holds, and it is a CUDA ELF image whose
// header names the architecture of its row; no file is left without a row.
func TestEmbeddedSetDecodesToCUBINsForTheirArch(t *testing.T) {
	needEmbeddedSet(t)
	files := map[string]bool{}
	require.NoError(t, fs.WalkDir(embeddedFS, embeddedDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files[p] = true
		}
		return err
	}))
	total := 0
	for _, r := range embeddedTable {
		t.Run(r.arch+"/"+r.family, func(t *testing.T) {
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
			require.Equal(t, arch.number(), cubinSM(t, cubin), "the CUBIN's e_flags name its architecture")
			res := ParseResources(log)
			require.NotEmpty(t, res, "the ptxas report travels with the CUBIN")
			for _, k := range res {
				require.Zero(t, k.SpillStores+k.SpillLoads, "%s spills", k.Kernel)
			}
		})
		delete(files, path.Join(embeddedDir, r.arch, r.family+".gz"))
		total += r.packed
	}
	require.Empty(t, files, "files in kernels/embedded without a row in zembedded.go")
	t.Logf("embedded set: %d CUBINs, %d bytes compressed", len(embeddedTable), total)
}

// cubinSM reads the SM number from a CUBIN's ELF header: e_flags holds it
// in its low byte (sm_90a and sm_90 both read 90).
func cubinSM(t *testing.T, cubin []byte) int {
	t.Helper()
	require.GreaterOrEqual(t, len(cubin), 52)
	return int(binary.LittleEndian.Uint32(cubin[48:]) & 0xff)
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
				require.Equal(t, embeddedNVRTC, got.EmbeddedNVRTC)
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
