package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// shape is one GEMM: C[M,N] = A[M,K]·B[K,N], row-major.
type shape struct {
	M int `json:"m"`
	K int `json:"k"`
	N int `json:"n"`
}

// String is the MxKxN form used by --shapes and the table.
func (s shape) String() string { return fmt.Sprintf("%dx%dx%d", s.M, s.K, s.N) }

// FLOPs counts one multiply and one add per product: 2·M·N·K.
func (s shape) FLOPs() float64 { return 2 * float64(s.M) * float64(s.N) * float64(s.K) }

// standardShapes is the built-in copy of testdata/bench_shapes.txt, used when
// the file cannot be found (a binary run outside the repository).
// TestBuiltinShapesEqualFile keeps the two equal.
var standardShapes = []shape{
	{1, 4096, 4096},
	{16, 4096, 4096},
	{128, 4096, 11008},
	{2048, 768, 3072},
	{4096, 1536, 3072},
	{2048, 768, 512},
	{4096, 4096, 4096},
	{8192, 8192, 8192},
}

// shapeSets are the named opt-in lists of --shapes-set; the standard list
// (the shapes file) stays the default, so a plain run's time and the
// README's tables do not change.
var shapeSets = map[string][]shape{
	// transformer: issue 25's projections of a 4096-wide decoder layer
	// over M = 4096 tokens, as y = x·W with W [in, out]: qkv 4096→12288
	// (query, key and value, 4096 each, in one product), o_proj
	// 4096→4096, mlp_up 4096→14336 (the MLP width of Llama-3-8B and
	// Mistral-7B), mlp_down 14336→4096. o_proj is also in the standard
	// list; it is here so that this set alone covers the layer.
	"transformer": {
		{4096, 4096, 12288}, // qkv
		{4096, 4096, 4096},  // o_proj
		{4096, 4096, 14336}, // mlp_up
		{4096, 14336, 4096}, // mlp_down
	},
	// matmul: issue 21's speed targets for the general Matmul: the large
	// cubes (a fused epilogue within a few percent of the plain product,
	// the transposed layouts of NN) and two mid-sized transformer
	// projections (a fused epilogue faster than the product and a
	// separate activation pass).
	"matmul": {
		{4096, 4096, 4096},
		{8192, 8192, 8192},
		{2048, 768, 3072},
		{4096, 1536, 3072},
	},
	// sparse: issue 24's 2:4 sparse targets: the large products (bf16
	// 8192³ and a 4096-token MLP up-projection 4096→11008) and decode-like
	// M = 1, 16, 128 over K = 4096 into N = 4096 and 11008.
	"sparse": {
		{8192, 8192, 8192},
		{4096, 4096, 11008},
		{1, 4096, 4096},
		{1, 4096, 11008},
		{16, 4096, 4096},
		{16, 4096, 11008},
		{128, 4096, 4096},
		{128, 4096, 11008},
	},
	// fp8: the fp8 products' shapes: the large cubes (4096³, 8192³);
	// DeepGEMM's M = 4096, N = 7168, K = 16384; and decode / prefill
	// batches of M = 64 and 128 rows over K = 7168 (DeepSeek-V3's hidden
	// size) into N = 4096, 7168 and 24576. Every K is a multiple of 128:
	// whole 1 × 128 blocks for the block scales. (A shape is M, K, N.)
	"fp8": {
		{M: 4096, K: 4096, N: 4096},
		{M: 8192, K: 8192, N: 8192},
		{M: 4096, K: 16384, N: 7168},
		{M: 64, K: 7168, N: 4096},
		{M: 64, K: 7168, N: 7168},
		{M: 64, K: 7168, N: 24576},
		{M: 128, K: 7168, N: 4096},
		{M: 128, K: 7168, N: 7168},
		{M: 128, K: 7168, N: 24576},
	},
}

// shapeSetNames lists shapeSets' names, sorted, for help and errors.
func shapeSetNames() string {
	names := make([]string, 0, len(shapeSets))
	for n := range shapeSets {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// loadShapesOrSet is loadShapes, or the named set when set is not "".
func loadShapesOrSet(list, file, set string) ([]shape, string, error) {
	if set == "" {
		return loadShapes(list, file)
	}
	s, ok := shapeSets[set]
	if !ok {
		return nil, "", fmt.Errorf("--shapes-set %q: want one of %s", set, shapeSetNames())
	}
	return append([]shape(nil), s...), "--shapes-set " + set, nil
}

// shapesFileRel is the shapes file's path under the module root.
var shapesFileRel = filepath.Join("testdata", "bench_shapes.txt")

// errShape is matched (errors.Is) by every *shapeError.
var errShape = errors.New("bad shape")

// shapeError locates a shape that does not parse: the file and line for
// shapes files, the list item for --shapes.
type shapeError struct {
	Source string // file name, or "--shapes"
	Line   int    // 1-based line (files) or item (--shapes)
	Text   string // the offending text
	Reason string
}

// Error reads "file:line: \"text\": reason".
func (e *shapeError) Error() string {
	return fmt.Sprintf("%s:%d: %q: %s", e.Source, e.Line, e.Text, e.Reason)
}

// Is reports errShape.
func (e *shapeError) Is(target error) bool { return target == errShape }

// parseShapesFile reads "M K N" lines; '#' starts a comment, blank lines are
// skipped. name labels errors.
func parseShapesFile(r io.Reader, name string) ([]shape, error) {
	var out []shape
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		body, _, _ := strings.Cut(text, "#")
		f := strings.Fields(body)
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 {
			return nil, &shapeError{name, line, strings.TrimSpace(text), fmt.Sprintf("want 3 numbers M K N, got %d fields", len(f))}
		}
		s, reason := shapeOf(f[0], f[1], f[2])
		if reason != "" {
			return nil, &shapeError{name, line, strings.TrimSpace(text), reason}
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(out) == 0 {
		return nil, &shapeError{name, 0, "", "no shapes"}
	}
	return out, nil
}

// parseShapeList reads the --shapes form: comma-separated MxKxN.
func parseShapeList(list string) ([]shape, error) {
	var out []shape
	for i, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		f := strings.FieldsFunc(strings.ToLower(item), func(r rune) bool { return r == 'x' || r == '×' })
		if len(f) != 3 {
			return nil, &shapeError{"--shapes", i + 1, item, "want MxKxN"}
		}
		s, reason := shapeOf(f[0], f[1], f[2])
		if reason != "" {
			return nil, &shapeError{"--shapes", i + 1, item, reason}
		}
		out = append(out, s)
	}
	return out, nil
}

// shapeOf parses three dimensions; each must be a positive C int, which is
// what cuBLAS and the engine take.
func shapeOf(m, k, n string) (shape, string) {
	var d [3]int
	for i, s := range [3]string{m, k, n} {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return shape{}, fmt.Sprintf("%q is not an integer", s)
		}
		if v < 1 || v > math.MaxInt32 {
			return shape{}, fmt.Sprintf("%d is outside 1..%d", v, math.MaxInt32)
		}
		d[i] = int(v)
	}
	return shape{M: d[0], K: d[1], N: d[2]}, ""
}

// benchModule is the bench's own module path: its go.mod (bench/go.mod) is
// passed over on the way up to the library's module root.
const benchModule = "github.com/detgemm/detgemm/bench"

// findShapesFile walks up from dir to the first directory holding a go.mod
// other than the bench's own and returns its testdata/bench_shapes.txt when
// that file exists.
func findShapesFile(dir string) (string, bool) {
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && modulePath(b) != benchModule {
			p := filepath.Join(dir, shapesFileRel)
			if _, err := os.Stat(p); err == nil {
				return p, true
			}
			return "", false
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// modulePath is the path on a go.mod's module line ("" if none).
func modulePath(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	return ""
}

// loadShapes applies the precedence: --shapes, then --shapes-file, then the
// repository's file, then the built-in list. source says which was used.
func loadShapes(list, file string) (shapes []shape, source string, err error) {
	if list != "" {
		s, err := parseShapeList(list)
		return s, "--shapes", err
	}
	if file == "" {
		wd, err := os.Getwd()
		if err == nil {
			file, _ = findShapesFile(wd)
		}
	}
	if file == "" {
		return append([]shape(nil), standardShapes...), "built-in list (" + shapesFileRel + " not found)", nil
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, file, err
	}
	defer f.Close()
	s, err := parseShapesFile(f, file)
	return s, file, err
}
