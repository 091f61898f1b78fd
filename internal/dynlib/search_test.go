package dynlib

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSearchListsSkippedFoldersAndUnmatchedPatterns(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"cuda-12.9/lib64", "cuda-12.10/lib64", "cuda-13.0/lib64", "opt"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	missing := filepath.Join(root, "cuda", "lib64")
	got, skipped := Search([]string{"libx.so.1"}, []string{
		missing,
		filepath.Join(root, "cuda-*", "lib64"),
		filepath.Join(root, "nothing-*", "lib"),
		filepath.Join(root, "opt"),
	})
	require.Equal(t, []string{
		"libx.so.1",
		filepath.Join(root, "cuda-13.0/lib64/libx.so.1"),
		filepath.Join(root, "cuda-12.10/lib64/libx.so.1"),
		filepath.Join(root, "cuda-12.9/lib64/libx.so.1"),
		filepath.Join(root, "opt/libx.so.1"),
	}, got)
	require.Equal(t, []string{missing, filepath.Join(root, "nothing-*", "lib")}, skipped)
}

func TestSearchVisitsASymlinkedFolderOnce(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "cuda-13.0")
	require.NoError(t, os.MkdirAll(real, 0o755))
	link := filepath.Join(root, "cuda")
	if err := os.Symlink(real, link); err != nil {
		t.Skip("no symlinks here: ", err)
	}
	got, skipped := Search([]string{"libx.so"}, []string{link, filepath.Join(root, "cuda-*")})
	require.Equal(t, []string{"libx.so", filepath.Join(link, "libx.so")}, got)
	require.Empty(t, skipped)
}

func TestSortNewestFirst(t *testing.T) {
	for _, tt := range []struct {
		name     string
		in, want []string
	}{
		{"minor as a number", []string{"/usr/local/cuda-12.9", "/usr/local/cuda-12.10", "/usr/local/cuda-11.8"},
			[]string{"/usr/local/cuda-12.10", "/usr/local/cuda-12.9", "/usr/local/cuda-11.8"}},
		{"more parts is newer", []string{"/opt/cuda-12", "/opt/cuda-12.4"}, []string{"/opt/cuda-12.4", "/opt/cuda-12"}},
		{"python folders", []string{"/l/python3.11/x", "/l/python3.13/x", "/l/python3.9/x"},
			[]string{"/l/python3.13/x", "/l/python3.11/x", "/l/python3.9/x"}},
		{"ties by text", []string{"/b-1", "/a-1"}, []string{"/a-1", "/b-1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := append([]string(nil), tt.in...)
			SortNewestFirst(got)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestRootsExpandNewestFirstAndKeepUnmatchedPatterns(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"cuda-12.4", "cuda-13.0"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	got := Roots(filepath.Join(root, "cuda"), filepath.Join(root, "cuda-*"), "", filepath.Join(root, "none-*"))
	require.Equal(t, []string{
		filepath.Join(root, "cuda"),
		filepath.Join(root, "cuda-13.0"),
		filepath.Join(root, "cuda-12.4"),
		filepath.Join(root, "none-*"),
	}, got)
}

func TestNotFoundErrorLayout(t *testing.T) {
	err := &NotFoundError{
		Library: "X (libx)",
		Attempts: []Attempt{
			{Path: "libx.so.1", Err: errors.New("libx.so.1: cannot open shared object file: No such file or directory")},
			{Path: "/opt/libx.so.1", Err: errors.New("wrong version")},
		},
		Skipped: []string{"/usr/local/cuda/lib64", "/opt/cuda/lib64"},
		Hint:    "install X",
	}
	require.Equal(t, "X (libx) not found; tried 2 candidate(s):\n"+
		"  libx.so.1: cannot open shared object file: No such file or directory\n"+
		"  /opt/libx.so.1: wrong version\n"+
		"skipped (not present): /usr/local/cuda/lib64, /opt/cuda/lib64\n"+
		"install X", err.Error())
}

func TestNotFoundMatchesOnlyItsOwnSentinel(t *testing.T) {
	errA, errB := errors.New("A not found"), errors.New("B not found")
	for _, tt := range []struct {
		name     string
		sentinel error
		want     map[error]bool
	}{
		{"A", errA, map[error]bool{ErrNotFound: true, errA: true, errB: false}},
		{"B", errB, map[error]bool{ErrNotFound: true, errA: false, errB: true}},
		{"none", nil, map[error]bool{ErrNotFound: true, errA: false, errB: false}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Open(tt.name, []string{"libdetgemm-nope.so.1"}, nil)
			var nf *NotFoundError
			require.ErrorAs(t, err, &nf)
			nf.Sentinel = tt.sentinel
			for target, want := range tt.want {
				require.Equal(t, want, errors.Is(err, target), "errors.Is(%v)", target)
			}
		})
	}
}

func TestNotFoundUnwrapsEachCandidatesReason(t *testing.T) {
	stub := errors.New("stub")
	err := error(&NotFoundError{Library: "x", Attempts: []Attempt{{Path: "a", Err: stub}, {Path: "b"}}})
	require.ErrorIs(t, err, stub)
	require.Contains(t, err.Error(), "b: (no reason given)")
}

func TestUnsupportedOS(t *testing.T) {
	sentinel := errors.New("X not found")
	for _, goos := range []string{"linux", "windows", "freebsd"} {
		require.Nil(t, UnsupportedOS("X", sentinel, goos), goos)
	}
	err := error(UnsupportedOS("X (libx)", sentinel, "darwin"))
	require.ErrorIs(t, err, sentinel)
	require.ErrorIs(t, err, ErrNotFound)
	require.True(t, strings.HasPrefix(err.Error(), "X (libx) not found: CUDA is not available on macOS"), err.Error())
	require.Contains(t, err.Error(), "NVIDIA dropped macOS support")
}

func TestSymbolErrorMatchesItsSentinelAndPrintsPathOnce(t *testing.T) {
	own := errors.New("own")
	err := error(&SymbolError{Library: "/l/libx.so", Symbol: "f", Err: errors.New("/l/libx.so: undefined symbol: f"), Sentinel: own})
	require.ErrorIs(t, err, ErrSymbolNotFound)
	require.ErrorIs(t, err, own)
	require.NotErrorIs(t, err, errors.New("own"))
	require.NotErrorIs(t, &SymbolError{Library: "x", Symbol: "f"}, own, "no sentinel: only the generic one")
	for _, tt := range []struct{ lib, dlerr, want string }{
		{"/l/libx.so", "/l/libx.so: undefined symbol: f", "symbol f not found in /l/libx.so"},
		{"libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6: undefined symbol: f", "symbol f not found in libc.so.6"},
		{"libc.so.6", "something else", "symbol f not found in libc.so.6: something else"},
		{"libc.so.6", "", "symbol f not found in libc.so.6"},
	} {
		require.Equal(t, tt.want, (&SymbolError{Library: tt.lib, Symbol: "f", Err: errors.New(tt.dlerr)}).Error())
	}
	require.Equal(t, "symbol f not found in x", (&SymbolError{Library: "x", Symbol: "f"}).Error())
}
