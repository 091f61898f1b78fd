package entries

import "fmt"

// SP24FormatFamily holds the 2:4 format's kernels (sp24_format.cu): prune,
// compress and decompress along K.
const SP24FormatFamily = "sp24_format"

// sp24Format: the 2:4 format's entry points (sp24_format.cu), each by
// element type and columns a thread (Vec: two 16-bit columns in one 32-bit
// access, for even N and leading dimension and a 4-byte aligned weight):
// prune in place (kind "sp24prune", f32/bf16/f16), compress reporting the
// first group with more than two nonzeros ("sp24compress"), prune and
// compress fused, the weight read only ("sp24prunecompress"), decompress
// ("sp24decompress"), mask in place ("sp24mask", f32/bf16/f16), and the
// metadata check ("sp24checkmeta", no type; its argument is the block's
// threads).
func sp24Format() (out []Entry) {
	add := func(kind, macro, name, d string, vec bool, extra ...string) {
		v, suffix := "1", ""
		if vec {
			v, suffix = "2", "_v2"
		}
		out = append(out, Entry{Key: Key{Kind: kind, In: d, Out: d, Vec: vec},
			Family: SP24FormatFamily, Header: HeaderFor(SP24FormatFamily), Macro: macro,
			Name: fmt.Sprintf("detgemm_sp24_%s_%s%s", name, d, suffix),
			Args: append([]string{up("sp24f", d), v}, extra...)})
	}
	for _, d := range ieeeIn {
		for _, vec := range []bool{false, true} {
			if vec && d == "f32" {
				continue // one f32 a thread is already a 32-bit access
			}
			add("sp24prune", "DETGEMM_SP24F_PRUNE_ENTRY", "prune", d, vec)
			add("sp24mask", "DETGEMM_SP24F_MASK_ENTRY", "mask", d, vec)
			if d == "f32" {
				continue // the compressed form holds 16-bit values
			}
			add("sp24compress", "DETGEMM_SP24F_COMPRESS_ENTRY", "compress", d, vec, "false")
			add("sp24prunecompress", "DETGEMM_SP24F_COMPRESS_ENTRY", "prunecompress", d, vec, "true")
			add("sp24decompress", "DETGEMM_SP24F_DECOMPRESS_ENTRY", "decompress", d, vec)
		}
	}
	out = append(out, Entry{Key: Key{Kind: "sp24checkmeta"}, Family: SP24FormatFamily, Header: HeaderFor(SP24FormatFamily),
		Macro: "DETGEMM_SP24F_CHECK_ENTRY", Name: "detgemm_sp24_checkmeta", Args: []string{"256"}})
	return out
}
