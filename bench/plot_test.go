//go:build !noplot

package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFromFixturePlotSVG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.svg")
	_, stderr := renderFixture(t, "--plot", path, "--format", "csv")
	require.Contains(t, stderr, "plot written to")
	b, err := os.ReadFile(path)
	require.NoError(t, err)

	// The SVG parses as XML; its text holds the series names.
	dec := xml.NewDecoder(bytes.NewReader(b))
	var text strings.Builder
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
			}
		case xml.CharData:
			text.Write(tok)
			text.WriteByte('\n')
		}
	}
	require.Equal(t, "svg", root)
	for _, want := range []string{
		"fwd vs cuBLAS pedantic", "dx vs cuBLAS pedantic", "dw vs cuBLAS pedantic",
		"tc-fwd vs cuBLAS default", "tc-dx vs cuBLAS default", "tc-dw vs cuBLAS default",
		"cuBLAS default", "cuBLAS pedantic", "cuBLAS tf32", "detgemm fwd", "detgemm tc-fwd",
		"cuBLAS (= 1)", "roofline (100%)", "% of roofline", "4096x4096x4096", "bf16:", "f32:",
	} {
		require.Contains(t, text.String(), want)
	}
	require.NotContains(t, text.String(), "copy copy", "the floors are not drawn")
}
