package dynlib

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCandidatesOrderAndMissingDirs(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	got := Candidates([]string{"libx.so.1", "libx.so.2"}, []string{a, filepath.Join(a, "missing"), b, a})
	require.Equal(t, []string{
		"libx.so.1", "libx.so.2",
		filepath.Join(a, "libx.so.1"), filepath.Join(a, "libx.so.2"),
		filepath.Join(b, "libx.so.1"), filepath.Join(b, "libx.so.2"),
	}, got)
}

func TestOpenListsEveryFailedCandidate(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "libfake.so.1")
	require.NoError(t, os.WriteFile(fake, []byte("not an ELF file"), 0o644))
	_, err := Open("fake library", []string{"libdetgemm-does-not-exist.so.7", fake}, nil)
	require.Error(t, err)
	require.True(t, errors.Is(err, ErrNotFound))
	var nf *NotFoundError
	require.True(t, errors.As(err, &nf))
	require.Len(t, nf.Attempts, 2)
	// Each path once: the loader's message repeats it, the error does not.
	for _, p := range []string{"libdetgemm-does-not-exist.so.7", fake} {
		require.Equal(t, 1, strings.Count(err.Error(), p), "%q printed once in:\n%v", p, err)
	}
	require.True(t, strings.HasPrefix(err.Error(), "fake library not found; tried 2 candidate(s):"))
}

func TestOpenCheckRejectsAndRecordsReason(t *testing.T) {
	libc := findLibc(t)
	reject := errors.New("stub library")
	_, err := Open("libc", []string{libc}, func(*Library) error { return reject })
	require.ErrorIs(t, err, ErrNotFound)
	require.Contains(t, err.Error(), "stub library")

	lib, err := Open("libc", []string{"libdetgemm-nope.so", libc}, nil)
	require.NoError(t, err)
	require.Equal(t, libc, lib.Path)
	p, err := lib.Lookup("strlen")
	require.NoError(t, err)
	require.NotZero(t, p)
	_, err = lib.Lookup("detgemm_no_such_symbol")
	require.ErrorIs(t, err, ErrSymbolNotFound)
	require.Contains(t, err.Error(), "detgemm_no_such_symbol")
}

func findLibc(t *testing.T) string {
	for _, p := range []string{"libc.so.6", "/usr/lib/libSystem.B.dylib"} {
		if _, err := open(p); err == nil {
			return p
		}
	}
	t.Skip("no libc to open on this system")
	return ""
}

func TestOverrideIsTheWholeList(t *testing.T) {
	dir := t.TempDir()
	names := []string{"libx.so.2", "libx.so.1"}
	require.Equal(t, []string{filepath.Join(dir, "libx.so.2"), filepath.Join(dir, "libx.so.1")}, Override(names, dir),
		"a directory stands for each name inside it, in order")
	require.Equal(t, []string{"/opt/x/libx.so.9"}, Override(names, "/opt/x/libx.so.9"), "a file path stands for itself")
	require.Equal(t, []string{"libx.so.9"}, Override(names, "libx.so.9"), "a soname stands for itself")
}
