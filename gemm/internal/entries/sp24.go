package entries

import "fmt"

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
