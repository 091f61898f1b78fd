package golden

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// checkedIn are the repository's golden files and their separators.
var checkedIn = []struct {
	path, sep string
}{
	{"../../testdata/golden/ieee.txt", Arrow},
	{"../../testdata/golden/tc_sm90.txt", Arrow},
	{"../../testdata/golden/triad.txt", Colon},
	{"../../testdata/golden/triad_gelu.txt", Colon},
	{"../../testdata/golden/triad_demo.txt", Colon},
}

func TestParseKeepsHeaderAndCasesInFileOrder(t *testing.T) {
	const text = "# first line\n#\n# third\n\nb 2 => d2\n  a 1 => d1  \n# a later comment is not header\nc => x loss=1\n"
	g, err := Parse("t.txt", strings.NewReader(text), Arrow)
	require.NoError(t, err)
	require.Equal(t, []string{"first line", "", "third"}, g.Header)
	require.Equal(t, []Entry{{"b 2", "d2"}, {"a 1", "d1"}, {"c", "x loss=1"}}, g.Entries)
	require.Equal(t, 3, g.Len())
	d, ok := g.Digest("a 1")
	require.True(t, ok)
	require.Equal(t, "d1", d)
	_, ok = g.Digest("missing")
	require.False(t, ok)
}

func TestParseRefusesMalformedFilesWithErrFormat(t *testing.T) {
	for _, c := range []struct {
		name, text, sep string
	}{
		{"no separator", "key digest\n", Arrow},
		{"other file's separator", "key: digest\n", Arrow},
		{"empty key", " => digest\n", Arrow},
		{"empty digest", "key => \n", Arrow},
		{"key twice", "k => a\nk => a\n", Arrow},
		{"no separator given", "k => a\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("t.txt", strings.NewReader(c.text), c.sep)
			require.ErrorIs(t, err, ErrFormat)
			require.Contains(t, err.Error(), "t.txt")
		})
	}
}

func TestReadMissingFileIsNotExist(t *testing.T) {
	_, err := Read(filepath.Join(t.TempDir(), "none.txt"), Arrow)
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestCompareReportsEveryDifferenceReadably(t *testing.T) {
	g, err := Parse("g.txt", strings.NewReader("a: h1 loss=1 sum=2\nb: h2 loss=3 sum=4\nc: h3 loss=5 sum=6\n"), Colon)
	require.NoError(t, err)
	for _, c := range []struct {
		name  string
		got   []Entry
		diffs []Diff
		text  []string // in the message
	}{
		{name: "all equal", got: []Entry{{"c", "h3 loss=5 sum=6"}, {"a", "h1 loss=1 sum=2"}, {"b", "h2 loss=3 sum=4"}}},
		{
			name:  "loss moved",
			got:   []Entry{{"a", "h1 loss=1 sum=2"}, {"b", "h2 loss=9 sum=4"}, {"c", "h3 loss=5 sum=6"}},
			diffs: []Diff{{"b", "h2 loss=3 sum=4", "h2 loss=9 sum=4"}},
			text:  []string{"g.txt: 1 of 3 cases differ", "file: h2 loss=3 sum=4", "got:  h2 loss=9 sum=4", "differs in: loss"},
		},
		{
			name:  "weights and sum moved",
			got:   []Entry{{"a", "hX loss=1 sum=7"}, {"b", "h2 loss=3 sum=4"}, {"c", "h3 loss=5 sum=6"}},
			diffs: []Diff{{"a", "h1 loss=1 sum=2", "hX loss=1 sum=7"}},
			text:  []string{"differs in: digest, sum"},
		},
		{
			name:  "a case the file lacks and a stale line",
			got:   []Entry{{"a", "h1 loss=1 sum=2"}, {"b", "h2 loss=3 sum=4"}, {"d", "h4"}},
			diffs: []Diff{{Key: "d", Got: "h4"}, {Key: "c", Want: "h3 loss=5 sum=6"}},
			text:  []string{"2 of 4 cases differ", "file: (no such case)", "got:  (not computed)"},
		},
		{
			name:  "layout changed",
			got:   []Entry{{"a", "h1"}, {"b", "h2 loss=3 sum=4"}, {"c", "h3 loss=5 sum=6"}},
			diffs: []Diff{{"a", "h1 loss=1 sum=2", "h1"}},
			text:  []string{"layout (3 fields in the file, 1 computed)"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := g.Compare(c.got)
			if c.diffs == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrMismatch)
			var m *MismatchError
			require.True(t, errors.As(err, &m))
			require.Equal(t, c.diffs, m.Diffs)
			for _, s := range c.text {
				require.Contains(t, err.Error(), s)
			}
		})
	}
}

func TestCheckComparesOneCase(t *testing.T) {
	g, err := Parse("g.txt", strings.NewReader("k => abc\n"), Arrow)
	require.NoError(t, err)
	require.NoError(t, g.Check("k", "abc"))
	require.ErrorIs(t, g.Check("k", "abd"), ErrMismatch)
	err = g.Check("other", "abc")
	require.ErrorIs(t, err, ErrMismatch)
	require.Contains(t, err.Error(), "(no such case)")
}

// The checked-in files parse, and Write reproduces each byte for byte
// from what Read returns: the tests that rewrite them (-update-golden,
// -update) change only the digests they recompute.
func TestWriteReproducesTheCheckedInFiles(t *testing.T) {
	for _, f := range checkedIn {
		t.Run(filepath.Base(f.path), func(t *testing.T) {
			want, err := os.ReadFile(f.path)
			require.NoError(t, err)
			g, err := Read(f.path, f.sep)
			require.NoError(t, err)
			require.NotZero(t, g.Len())
			require.NotEmpty(t, g.Header)
			out := filepath.Join(t.TempDir(), "sub", "copy.txt")
			require.NoError(t, Write(out, f.sep, g.Header, g.Entries))
			got, err := os.ReadFile(out)
			require.NoError(t, err)
			require.Equal(t, string(want), string(got))
			require.NoError(t, g.Compare(g.Entries))
		})
	}
}
