package entries

// SP24FormatFamily holds the 2:4 format's kernels (sp24_format.cu): prune,
// compress and decompress along K.
const SP24FormatFamily = "sp24_format"

// sp24Format: the 2:4 format's entry points.
func sp24Format() (out []Entry) {
	return out
}
