package gemm

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/detgemm/detgemm/gemm/internal/entries"
	"github.com/detgemm/detgemm/kernels"
	"github.com/stretchr/testify/require"
)

// tcKeysOf is the tensor-core keys of one family's entry points (twins
// left out), in the registry's order.
func tcKeysOf(family string) []tcKey {
	var out []tcKey
	for id, en := range kernelEntries {
		if en.Family != family || en.Kind == "tmarows_one" {
			continue
		}
		for k, kid := range tcIDs {
			if kid == kernelID(id) {
				out = append(out, k)
			}
		}
	}
	return out
}

// TestGeneratedEntryListsAreCurrent: every kernels/cuda/z*_entries.cuh is
// exactly what `go generate ./gemm` writes from internal/entries, and
// every family's .cu includes its lists — so the Go tables and the CUDA
// entry points cannot drift apart.
func TestGeneratedEntryListsAreCurrent(t *testing.T) {
	names, lists := entries.Headers()
	dir := filepath.Join("..", "kernels", "cuda")
	for _, h := range names {
		got, err := os.ReadFile(filepath.Join(dir, h))
		require.NoError(t, err, "run go generate ./gemm")
		require.True(t, bytes.Equal(entries.Source(h, lists[h]), got), "%s is stale: run go generate ./gemm", h)
		src, err := kernels.Source(lists[h][0].Family)
		require.NoError(t, err)
		require.Contains(t, src, `#include "`+h+`"`, "%s.cu includes its entry list", lists[h][0].Family)
	}
	generated, err := filepath.Glob(filepath.Join(dir, "z*_entries.cuh"))
	require.NoError(t, err)
	require.Len(t, generated, len(names), "no stale generated list is left behind")
}

// TestEveryEntryIsNamedByItsKey: the name the engine gives a typed key
// (tcKey.name, kernelKey.simtName, ...) is the entry point the registry
// describes for it, and every description has a typed key.
func TestEveryEntryIsNamedByItsKey(t *testing.T) {
	named := map[kernelID]string{}
	for k, id := range simtIDs {
		named[id] = k.simtName()
	}
	for k, id := range simt64IDs {
		named[id] = k.simt64Name()
	}
	for k, id := range slabsIDs {
		named[id] = k.name()
	}
	for k, id := range slabs64IDs {
		named[id] = k.name64()
	}
	for k, id := range rowsIDs {
		named[id] = k.name()
	}
	for k, id := range rowsfIDs {
		named[id] = k.name()
	}
	for k, id := range rowsTMAIDs {
		named[id] = k.name()
	}
	for k, id := range foldIDs {
		named[id] = k.name()
	}
	for k, id := range streamIDs {
		named[id] = k.name()
	}
	for k, id := range tcIDs {
		named[id] = k.name()
	}
	for k, id := range tcOneIDs {
		named[id] = k.oneSlabName()
	}
	// Matmul's kernels (the triad's layouts among them are named above).
	for _, m := range []struct {
		ids  map[DType]kernelID
		verb string
	}{{mmStartIDs, "start"}, {mmEpiIDs, "epilogue"}, {mmBgradIDs, "bgrad"}} {
		for d, id := range m.ids {
			named[id] = fmt.Sprintf("detgemm_mm_%s_%v", m.verb, d)
		}
	}
	named[mmBFoldID] = "detgemm_mm_bgrad_fold"
	for k, id := range mmSlabsIDs {
		if _, ok := named[id]; !ok {
			named[id] = fmt.Sprintf("detgemm_slabs_%v_%v", k.l, k.in)
		}
	}
	for k, id := range mmTCIDs {
		if _, ok := named[id]; !ok {
			path := map[bool]string{true: "vec", false: "any"}[k.vec]
			named[id] = fmt.Sprintf("detgemm_%sacc_%v_%v_f32_%s", tcGeometries[k.tile].name, k.l, k.in, path)
		}
	}
	actName := func(code int) string {
		switch {
		case code >= entries.ActDGate:
			return "d" + entries.MatmulGates[code-entries.ActDGate-1]
		case code >= entries.ActGate:
			return entries.MatmulGates[code-entries.ActGate-1]
		}
		return entries.MatmulActs[code]
	}
	for k, id := range mmWGIDs {
		named[id] = fmt.Sprintf("detgemm_wgmm%s_%s_%v_%v_%v", wgGeometries[k.tile].name[2:], actName(k.act), k.l, k.in, k.out)
	}
	for k, id := range gatedFwdIDs {
		named[id] = fmt.Sprintf("detgemm_gated_fwd_%v_%v%s", k.h, k.out, map[bool]string{true: "_v4"}[k.v4])
	}
	for k, id := range gatedGeGLUFwdIDs {
		named[id] = fmt.Sprintf("detgemm_gated_geglu_fwd_%v_%v_v4", k.h, k.out)
	}
	for k, id := range gatedBwdIDs {
		named[id] = fmt.Sprintf("detgemm_gated_bwd_%v_%v%s", k.h, k.out, map[bool]string{true: "_v4"}[k.v4])
	}
	for k, id := range gatedBwdFIDs {
		named[id] = fmt.Sprintf("detgemm_gated_bwd_%v_f32dy%s", k.h, map[bool]string{true: "_v4"}[k.v4])
	}
	for k, id := range sp24IDs {
		named[id] = fmt.Sprintf("detgemm_sp24_%s_%v_%v", k.tile, k.in, k.out)
	}
	for k, id := range sp24WGIDs {
		named[id] = fmt.Sprintf("detgemm_sp24wg_%s_%s_%v_%v", k.tile, k.act, k.in, k.out)
	}
	for k, id := range sp24RowsIDs {
		named[id] = fmt.Sprintf("detgemm_sp24rows_%s_%v_%v", k.tile, k.in, k.out)
	}
	maps.Copy(named, sp24FormatNames())
	for k, id := range fp8IDs {
		named[id] = fmt.Sprintf("detgemm_fp8_%s_%s_%s_%s", k.tile, k.act, strings.ReplaceAll(k.pair, "_", ""), k.out)
	}
	for k, id := range fp8QuantIDs {
		switch k.kind {
		case "fp8amax":
			named[id] = "detgemm_fp8_amax_" + k.in
		case "fp8quant":
			named[id] = fmt.Sprintf("detgemm_fp8_quant_%s_%s", k.in, k.out)
		default:
			named[id] = "detgemm_fp8_scales"
		}
	}
	named[sp24StageID] = "detgemm_sp24wg_stage_meta"
	require.Len(t, named, len(kernelEntries)-1, "every entry point has exactly one key")
	for id, name := range named {
		require.Equal(t, id.entry().Name, name)
	}
}

// TestEveryAcceptedCombinationHasAnEntry: each family serves every layout
// and (input, output) pair its planner may pick it for.
func TestEveryAcceptedCombinationHasAnEntry(t *testing.T) {
	ieee := func(l layout) [][2]DType {
		if l == layoutTN {
			return [][2]DType{{F32, F32}, {BF16, F32}, {F16, F32}}
		}
		return [][2]DType{{F32, F32}, {BF16, BF16}, {BF16, F32}, {F16, F16}, {F16, F32}}
	}
	half := func(l layout) [][2]DType {
		if l == layoutTN {
			return [][2]DType{{BF16, F32}, {F16, F32}}
		}
		return [][2]DType{{BF16, BF16}, {BF16, F32}, {F16, F16}, {F16, F32}}
	}
	for _, l := range []layout{layoutNN, layoutNT, layoutTN} {
		for _, io := range ieee(l) {
			require.NotZero(t, simtIDs[kernelKey{l, io[0], io[1]}])
			require.NotZero(t, simt64IDs[kernelKey{l, io[0], io[1]}])
			require.NotZero(t, slabsIDs[slabsKey{l, io[0]}])
			require.NotZero(t, slabs64IDs[slabsKey{l, io[0]}])
			require.NotZero(t, foldIDs[foldKey{io[1], l == layoutTN}])
			if l == layoutTN {
				for _, sr := range []int64{streamTall, streamShort} {
					require.NotZero(t, streamIDs[streamKey{io[0], sr}])
				}
				continue
			}
			for _, mr := range []int{4, 16, 32} {
				require.NotZero(t, rowsIDs[rowsKey{l, io[0], mr}])
				require.NotZero(t, rowsfIDs[rowsFusedKey{l, io[0], io[1], mr}])
			}
			for _, mr := range []int{1, 4, 16} {
				require.NotZero(t, rowsTMAIDs[rowsTMAKey{l, io[0], io[1], mr, false}])
			}
			if io[0].Half() {
				require.NotZero(t, rowsTMAIDs[rowsTMAKey{l, io[0], io[1], 1, true}])
			}
		}
		for _, io := range half(l) {
			for _, tile := range tcTilesBySize {
				for _, vec := range []bool{true, false} {
					if vec || tcGeometries[tile].anyVariant {
						require.NotZero(t, tcIDs[tcKey{tile, l, io[0], io[1], vec}], "%v %v %v", tile, l, io)
					}
				}
			}
			for _, tile := range append(append([]tcTile{}, wgTilesBySize...), wgNarrowTiles...) {
				if wgGeometries[tile].ntOnly && l != layoutNT {
					continue
				}
				require.NotZero(t, tcIDs[tcKey{tile, l, io[0], io[1], true}], "%v %v %v", tile, l, io)
			}
			if io[1] == F32 {
				for _, tile := range wgSlabTiles {
					require.NotZero(t, tcIDs[tcKey{tile, l, io[0], io[1], true}])
				}
			}
			if l == layoutTN {
				for _, vec := range []bool{true, false} {
					require.NotZero(t, tcIDs[tcKey{tcTileDW64, l, io[0], io[1], vec}])
				}
				continue
			}
			for _, tile := range append(append([]tcTile{}, tcRowsTiles...), tcRowsTMATiles...) {
				require.NotZero(t, tcIDs[tcKey{tile, l, io[0], io[1], true}])
			}
		}
	}
	require.Len(t, tcKeysOf(wgFamily), (len(wgTilesBySize)+1)*10+4,
		"3 layouts: nn and nt × 2 inputs × 2 outputs, tn × 2 inputs; 128×96: nt only")
	require.Len(t, tcKeysOf(wgSlabsFamily), len(wgSlabTiles)*6+8,
		"the slab variants: f32 outputs only; 128×192r: nn and nt × 2 inputs × 2 outputs")
	require.Len(t, tcKeysOf(tcDWFamily), len(tcDWTiles)*2*2)
	for _, en := range kernelEntries[1:] {
		require.True(t, strings.HasPrefix(en.Name, "detgemm_"), en.Name)
	}
}

// TestEveryVariantFitsContractShapes: on every fake GPU, each registered
// variant whose kernels the engine loads fits at least three shapes of the
// contract suite's list, one with a ragged edge, so the GPU suite cannot
// pass a variant by running it on nothing.
func TestEveryVariantFitsContractShapes(t *testing.T) {
	for _, d := range planDevices {
		e, _ := fakeEngine(d)
		for _, v := range variants {
			if !variantLoaded(e, v) {
				continue
			}
			cases := contractCases(e, v)
			shapes, ragged := map[[4]int]bool{}, false
			for _, c := range cases {
				shapes[[4]int{len(c.op), c.a, c.r, c.b}] = true
				ragged = ragged || c.ragged()
			}
			require.GreaterOrEqual(t, len(shapes), 3, "%s on %s: %v", v.name, d.name, cases)
			require.True(t, ragged, "%s on %s", v.name, d.name)
			t.Logf("%s on %s: %d cases", v.name, d.name, len(cases))
		}
	}
}

// tcIDs is every tensor-core entry point by key: the union of the
// families' lookup tables.
var tcIDs = func() map[tcKey]kernelID {
	m := map[tcKey]kernelID{}
	for _, ids := range []map[tcKey]kernelID{tcTileIDs, tcRowsIDs, tcDWIDs, wgIDs} {
		for k, id := range ids {
			m[k] = id
		}
	}
	return m
}()

// TestEveryFamilyIsChosenAndItsClassBoundHolds: every registered family
// description (planner.go's families, names unique) is the planner's
// choice for some call of the fingerprint's grid on some fake GPU with
// the zero filter, so none is dead; and no family's plan ever costs less
// than its declared class, the bound by which the planner's loop skips a
// family that cannot beat the best so far.
func TestEveryFamilyIsChosenAndItsClassBoundHolds(t *testing.T) {
	names := map[string]bool{}
	for _, fam := range families {
		require.False(t, names[fam.name], "two families named %s", fam.name)
		names[fam.name] = true
	}
	chosen := map[*family]bool{}
	calls := planCalls()
	for _, d := range planDevices {
		e, _ := fakeEngine(d)
		for i := 0; i < len(calls); i += 7 {
			p, err := calls[i].call().build(true)
			if err != nil {
				continue
			}
			pl, err := e.choose(p, &filter{})
			require.NoError(t, err, "%s: %+v", d.name, calls[i])
			chosen[pl.fam] = true
			for _, fam := range families {
				if fam.tc != (p.tier == TierTensorCore) || !fam.layouts.has(p.layout) || fam.archOK != nil && !fam.archOK(&e.device) {
					continue
				}
				_, c, ok, err := fam.plan(&e.device, p, filter{})
				require.NoError(t, err, "the zero filter is never refused")
				if ok {
					require.False(t, c.less(cost{class: fam.class}), "%s costs %+v, below its class %d", fam.name, c, fam.class)
				}
			}
		}
	}
	for _, fam := range families {
		require.True(t, chosen[fam], "%s is never chosen", fam.name)
	}
}
