package entries

import (
	"fmt"
	"strings"
)

// SP24Family holds the 2:4-sparse forward's kernels (gemm_sp24.cu):
// mma.sp tensor-core tiles over a weight compressed along K.
const SP24Family = "gemm_sp24"

// SP24Tiles are the sparse forward's tile shapes (gemm_sp24.cu's CfgS,
// CfgM, CfgL): "s" 32 columns × 16 rows a block for M <= 16, "m" 64 × 64
// for M <= 128, "l" 128 × 128. All run the same chain per element.
var SP24Tiles = []string{"s", "m", "l"}

// sp24: the sparse forward, by input type (bf16, f16), output type (the
// input's or f32) and tile.
func sp24() (out []Entry) {
	for _, in := range halfIn {
		for _, o := range []string{in, "f32"} {
			for _, t := range SP24Tiles {
				out = append(out, Entry{Key: Key{Kind: "sp24", In: in, Out: o, Tile: t},
					Family: SP24Family, Header: HeaderFor(SP24Family), Macro: "DETGEMM_SP24_ENTRY",
					Name: fmt.Sprintf("detgemm_sp24_%s_%s_%s", t, in, o),
					Args: []string{up("epi", in), up("epi", o), "sp24::Cfg" + map[string]string{"s": "S", "m": "M", "l": "L"}[t]}})
			}
		}
	}
	return out
}

// SP24WGFamily holds the 2:4-sparse forward's Hopper kernels
// (gemm_sp24_wg.cu): wgmma.sp k32 steps, TMA-fed, persistent, in BM × BN
// tiles (n × m); the same chain per element as gemm_sp24's.
const SP24WGFamily = "gemm_sp24_wg"

// SP24WGTiles are the Hopper sparse forward's tiles (gemm_sp24_wg.cu's
// T64, T128, T256, T64x64): 64 columns n of Y by 128 rows m, 128 by 128
// or 256, 64 by 64.
var SP24WGTiles = []string{"w64", "w128", "w256", "w64x64"}

// SP24WGActs are the activations compiled into the Hopper sparse
// forward's epilogue.
var SP24WGActs = []string{"none", "relu", "gelu"}

// sp24wg: the Hopper sparse forward, by tile, activation, input type and
// output type.
func sp24wg() (out []Entry) {
	for _, t := range SP24WGTiles {
		for _, act := range SP24WGActs {
			if t == "w256" && act == "gelu" {
				continue // its epilogue spilled at 256 columns; GELU takes the 128 tile
			}
			for _, in := range halfIn {
				for _, o := range []string{in, "f32"} {
					out = append(out, Entry{Key: Key{Kind: "sp24wg", In: in, Out: o, Tile: t, Act: act},
						Family: SP24WGFamily, Header: HeaderFor(SP24WGFamily), Macro: "DETGEMM_SP24WG_ENTRY",
						Name: fmt.Sprintf("detgemm_sp24wg_%s_%s_%s_%s", t, act, in, o),
						Args: []string{up("epi", in), up("epi", o), "spw::T" + t[1:], "epi::ACT_" + strings.ToUpper(act)}})
				}
			}
		}
	}
	// The metadata staged for the producer's bulk copies (kind
	// "sp24wgstage").
	out = append(out, Entry{Key: Key{Kind: "sp24wgstage"}, Family: SP24WGFamily, Header: HeaderFor(SP24WGFamily),
		Macro: "DETGEMM_SP24WG_STAGE_ENTRY", Name: "detgemm_sp24wg_stage_meta"})
	return out
}

// SP24RowsFamily holds the 2:4-sparse forward's few-row Hopper kernels
// (gemm_sp24_rows.cu): mma.sp tiles of 32 columns fed by TMA, for decode.
const SP24RowsFamily = "gemm_sp24_rows"

// SP24RowsTiles are the few-row tiles (gemm_sp24_rows.cu's R8, R16, R32):
// 32 columns n of Y by 8, 16 or 32 rows m.
var SP24RowsTiles = []string{"r8", "r16", "r32"}

// sp24Rows: the few-row sparse forward, by tile, input type and output
// type.
func sp24Rows() (out []Entry) {
	for _, t := range SP24RowsTiles {
		for _, in := range halfIn {
			for _, o := range []string{in, "f32"} {
				out = append(out, Entry{Key: Key{Kind: "sp24rows", In: in, Out: o, Tile: t},
					Family: SP24RowsFamily, Header: HeaderFor(SP24RowsFamily), Macro: "DETGEMM_SP24ROWS_ENTRY",
					Name: fmt.Sprintf("detgemm_sp24rows_%s_%s_%s", t, in, o),
					Args: []string{up("epi", in), up("epi", o), "sp24r::R" + t[1:]}})
			}
		}
	}
	return out
}
