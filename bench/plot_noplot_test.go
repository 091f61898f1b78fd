//go:build noplot

package main

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNoPlotBuildRefusesPlotFlag(t *testing.T) {
	_, err := parseFlags([]string{"--from", fixtureV1, "--plot", filepath.Join(t.TempDir(), "x.svg")}, io.Discard)
	require.ErrorIs(t, err, errNoPlot)
	require.Contains(t, err.Error(), "--from")
	require.ErrorIs(t, writePlot("x.svg", fixtureReport()), errNoPlot)
}
