package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
)

// errNoPlot says what to do instead when the binary was built without the
// plot (-tags noplot).
var errNoPlot = errors.New("--plot: this bench was built without plotting (-tags noplot); draw the saved JSON elsewhere with go run ./bench --from FILE.json --plot OUT.svg")

// renderSaved writes a saved report (cfg.from) as cfg.format on stdout and
// as an SVG to cfg.plotPath. It loads no driver, so it runs anywhere.
func renderSaved(cfg *config, stdout, stderr io.Writer) error {
	rep, newer, err := readReport(cfg.from)
	if err != nil {
		return err
	}
	if newer && !cfg.quiet {
		fmt.Fprintf(stderr, "bench: %s was written by a newer bench (%s; this one writes %s): fields this bench does not know are left out\n",
			cfg.from, rep.Schema, reportSchema)
	}
	if slices.Contains(cfg.explicit, "dtypes") {
		rows := rep.Rows[:0:0]
		for _, r := range rep.Rows {
			if slices.Contains(cfg.dtypes, r.DType) {
				rows = append(rows, r)
			}
		}
		rep.Rows = rows
	}
	return emit(cfg, rep, stdout, stderr)
}

// emit writes the report as cfg.format on stdout and draws cfg.plotPath.
func emit(cfg *config, rep *report, stdout, stderr io.Writer) error {
	if err := renderReport(stdout, rep, cfg.format, shellJoin(cfg.args)); err != nil {
		return err
	}
	if cfg.plotPath != "" {
		if err := writePlot(cfg.plotPath, rep); err != nil {
			return fmt.Errorf("--plot %s: %w", cfg.plotPath, err)
		}
		if !cfg.quiet {
			fmt.Fprintf(stderr, "plot written to %s\n", cfg.plotPath)
		}
	}
	return nil
}
