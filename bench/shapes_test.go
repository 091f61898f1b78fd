package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseShapesFileSkipsCommentsAndBlankLines(t *testing.T) {
	in := "# header\n\n  1 4096 4096  # decode\n\t128 4096 11008\n#  9 9 9\n   \n8192 8192 8192#tail\n"
	got, err := parseShapesFile(strings.NewReader(in), "s.txt")
	require.NoError(t, err)
	require.Equal(t, []shape{{1, 4096, 4096}, {128, 4096, 11008}, {8192, 8192, 8192}}, got)
}

func TestParseShapesFileReportsLineOfBadShape(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		line     int
		reason   string
	}{
		{"two fields", "# c\n1 2 3\n4 5\n", 3, "want 3 numbers"},
		{"four fields", "1 2 3 4\n", 1, "want 3 numbers"},
		{"not a number", "\n\n1 x 3\n", 3, "not an integer"},
		{"zero", "1 2 3\n0 2 3\n", 2, "outside 1.."},
		{"negative", "1 -2 3\n", 1, "outside 1.."},
		{"beyond C int", "1 2 2147483648\n", 1, "outside 1.."},
		{"empty", "# only comments\n\n", 0, "no shapes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseShapesFile(strings.NewReader(tc.in), "s.txt")
			require.Error(t, err)
			require.True(t, errors.Is(err, errShape))
			var se *shapeError
			require.True(t, errors.As(err, &se))
			require.Equal(t, tc.line, se.Line)
			require.Equal(t, "s.txt", se.Source)
			require.Contains(t, err.Error(), tc.reason)
			require.True(t, strings.HasPrefix(err.Error(), "s.txt:"), err.Error())
		})
	}
}

func TestParseShapeListReadsMxKxN(t *testing.T) {
	got, err := parseShapeList("1x4096x4096, 4096X4096X4096,2048×768×512")
	require.NoError(t, err)
	require.Equal(t, []shape{{1, 4096, 4096}, {4096, 4096, 4096}, {2048, 768, 512}}, got)

	for _, bad := range []string{"", "1x2", "1x2x3x4", "1x2x3,,4x5x6", "ax2x3", "0x1x1"} {
		_, err := parseShapeList(bad)
		require.ErrorIs(t, err, errShape, "input %q", bad)
	}
	_, err = parseShapeList("1x2x3,4x5")
	var se *shapeError
	require.True(t, errors.As(err, &se))
	require.Equal(t, 2, se.Line, "the item number locates the bad shape")
}

func TestBuiltinShapesEqualFile(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	path, ok := findShapesFile(wd)
	require.True(t, ok, "testdata/bench_shapes.txt is found from the package directory")
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	got, err := parseShapesFile(f, path)
	require.NoError(t, err)
	require.Equal(t, standardShapes, got, "bench/shapes.go's built-in list must equal %s", path)
}

func TestFindShapesFileStopsAtModuleRoot(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "a", "b")
	require.NoError(t, os.MkdirAll(deep, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "go.mod"), []byte("module x\n"), 0o644))
	_, ok := findShapesFile(deep)
	require.False(t, ok, "a module without the file has none")

	require.NoError(t, os.MkdirAll(filepath.Join(root, "testdata"), 0o755))
	want := filepath.Join(root, "testdata", "bench_shapes.txt")
	require.NoError(t, os.WriteFile(want, []byte("1 2 3\n"), 0o644))
	got, ok := findShapesFile(deep)
	require.True(t, ok)
	require.Equal(t, want, got)

	// The bench's own module (bench/go.mod) is passed over.
	require.NoError(t, os.WriteFile(filepath.Join(root, "a", "go.mod"), []byte("module "+benchModule+"\n\ngo 1.26\n"), 0o644))
	got, ok = findShapesFile(deep)
	require.True(t, ok, "the walk goes on past the bench's go.mod")
	require.Equal(t, want, got)
}

func TestLoadShapesPrecedence(t *testing.T) {
	file := filepath.Join(t.TempDir(), "s.txt")
	require.NoError(t, os.WriteFile(file, []byte("7 8 9\n"), 0o644))

	got, src, err := loadShapes("1x2x3", file)
	require.NoError(t, err)
	require.Equal(t, []shape{{1, 2, 3}}, got, "--shapes beats --shapes-file")
	require.Equal(t, "--shapes", src)

	got, src, err = loadShapes("", file)
	require.NoError(t, err)
	require.Equal(t, []shape{{7, 8, 9}}, got)
	require.Equal(t, file, src)

	_, _, err = loadShapes("", filepath.Join(t.TempDir(), "missing.txt"))
	require.ErrorIs(t, err, os.ErrNotExist, "a named file that is missing is an error, not a fallback")
}

func TestShapeStringAndFLOPs(t *testing.T) {
	s := shape{M: 2, K: 3, N: 5}
	require.Equal(t, "2x3x5", s.String())
	require.Equal(t, 60.0, s.FLOPs())
}
