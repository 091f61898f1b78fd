//go:build noplot

package main

// plotBuilt says whether --plot can draw: not in this build.
const plotBuilt = false

// writePlot is unavailable in a noplot build; parseFlags refuses --plot
// before anything runs.
func writePlot(string, *report) error { return errNoPlot }
