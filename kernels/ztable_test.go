//go:build !detgemm_only_sm90a

package kernels_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/detgemm/detgemm/kernels/internal/embedset"
)

// TestTableIsGeneratedFromTheFiles: zembedded.go is exactly what
// gencubin -retable writes from the files under kernels/embedded (their
// gzip headers), so the table can never drift from the set by hand. It
// reads the files from disk (so it also runs with detgemm_noembed); the
// GPU machine's binaries (detgemm_only_sm90a) leave it out.
func TestTableIsGeneratedFromTheFiles(t *testing.T) {
	es, err := embedset.ReadSet(os.DirFS("embedded"))
	require.NoError(t, err, "a file of kernels/embedded is damaged or misplaced")
	want, err := embedset.TableSource(es)
	require.NoError(t, err)
	got, err := os.ReadFile("zembedded.go")
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got), "kernels/zembedded.go differs from the files under kernels/embedded: "+
		"regenerate it with `go run ./kernels/internal/gencubin -retable -out kernels/embedded -table kernels/zembedded.go`, never by hand")
}
