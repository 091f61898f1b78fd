//go:build !noplot

// The plot pulls in gonum's plot and its fonts; binaries built with -tags
// noplot (make gpu-bin's, which travel to the GPU machine) leave it out.

package main

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"os"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// plotBuilt says whether --plot can draw (not in a -tags noplot build).
const plotBuilt = true

// engineModes are the engine's rows, in the order the plot draws them.
var engineModes = []string{modeFwd, modeDX, modeDW, modeTCFwd, modeTCDX, modeTCDW}

// plotSeries is one bar series of a panel: a name for the legend, the
// mode it shows (which fixes its colour) and a value per shape (0: not
// measured).
type plotSeries struct {
	name   string
	mode   string
	values []float64
}

// modeColors gives each mode one colour in every panel: cuBLAS in greys
// and blues, the engine's IEEE tier in greens, its tensor-core tier in
// oranges and reds.
var modeColors = map[string]color.RGBA{
	modeDefault:  {0x1f, 0x4e, 0x9a, 0xff},
	modePedantic: {0x6b, 0x9b, 0xd1, 0xff},
	modeTF32:     {0x9a, 0x9a, 0x9a, 0xff},
	modeFwd:      {0x1b, 0x7f, 0x3b, 0xff},
	modeDX:       {0x4f, 0xb0, 0x5e, 0xff},
	modeDW:       {0xa6, 0xd8, 0x96, 0xff},
	modeTCFwd:    {0xc0, 0x39, 0x2b, 0xff},
	modeTCDX:     {0xe6, 0x7e, 0x22, 0xff},
	modeTCDW:     {0xf5, 0xc0, 0x6f, 0xff},
}

// colorOf is a mode's colour; modes not in the table get plotutil's.
func colorOf(mode string, i int) color.Color {
	if c, ok := modeColors[mode]; ok {
		return c
	}
	return plotutil.Color(i)
}

// Panel sizes of the SVG.
const (
	plotWidth       = 30 * vg.Centimeter
	plotPanelHeight = 11 * vg.Centimeter
)

// writePlot draws rep as an SVG to path: for each element type, one panel
// of the engine's speed against cuBLAS (cuBLAS's median over the row's,
// IEEE tiers against cuBLAS pedantic, the tensor-core tier against cuBLAS
// default: see fairReference) and one of every GEMM row's fraction of its
// roofline (%roof). The copy and read floors are not drawn.
func writePlot(path string, rep *report) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = drawPlot(f, rep)
	return errors.Join(err, f.Close())
}

// drawPlot is writePlot to a writer.
func drawPlot(w io.Writer, rep *report) error {
	panels, err := plotPanels(rep)
	if err != nil {
		return err
	}
	c := vgsvg.NewWith(vgsvg.UseWH(plotWidth, plotPanelHeight*vg.Length(len(panels))))
	drawPanels(draw.New(c), panels)
	_, err = c.WriteTo(w)
	return err
}

// drawPanels stacks the panels on dc, their data areas aligned.
func drawPanels(dc draw.Canvas, panels []*plot.Plot) {
	grid := make([][]*plot.Plot, len(panels))
	for i, p := range panels {
		grid[i] = []*plot.Plot{p}
	}
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadTop: vg.Centimeter / 2, PadBottom: vg.Centimeter / 4,
		PadLeft: vg.Centimeter / 4, PadRight: vg.Centimeter / 2, PadY: vg.Centimeter / 2}
	canvases := plot.Align(grid, tiles, dc)
	for i, p := range panels {
		p.Draw(canvases[i][0])
	}
}

// plotPanels builds the panels of the plot, two per element type.
func plotPanels(rep *report) ([]*plot.Plot, error) {
	ix := indexRows(rep.Rows)
	var dtypes []dtype
	for _, pk := range ix.problems {
		if !slices.Contains(dtypes, pk.d) {
			dtypes = append(dtypes, pk.d)
		}
	}
	var panels []*plot.Plot
	for _, dt := range dtypes {
		var shapes []shape
		for _, pk := range ix.problems {
			if pk.d == dt {
				shapes = append(shapes, pk.s)
			}
		}
		names := make([]string, len(shapes))
		for i, s := range shapes {
			names[i] = s.String()
		}

		var speed []plotSeries
		for _, m := range engineModes {
			ser := plotSeries{name: fmt.Sprintf("%s vs cuBLAS %s", m, fairReference(m)), mode: m, values: make([]float64, len(shapes))}
			any := false
			for i, s := range shapes {
				pk := problemKey{s, dt}
				if r := ix.get(pk, m); r != nil {
					any = true
					ser.values[i] = ratio(ix.get(pk, fairReference(m)), r)
				}
			}
			if any {
				speed = append(speed, ser)
			}
		}
		if len(speed) > 0 {
			p, err := barPanel(fmt.Sprintf("%s: cuBLAS time / detgemm time (above 1: detgemm faster); IEEE tiers vs cuBLAS pedantic, tensor-core tier vs cuBLAS default", dt),
				"cuBLAS ÷ detgemm", names, speed, 1, "cuBLAS (= 1)")
			if err != nil {
				return nil, err
			}
			panels = append(panels, p)
		}

		var roof []plotSeries
		for _, m := range allModes {
			if m == modeCopy || m == modeRead {
				continue
			}
			var ser *plotSeries
			for i, s := range shapes {
				r := ix.get(problemKey{s, dt}, m)
				if r == nil {
					continue
				}
				if ser == nil {
					ser = &plotSeries{name: r.Backend + " " + m, mode: m, values: make([]float64, len(shapes))}
				}
				if r.Error == "" {
					ser.values[i] = 100 * r.Roofline.Fraction
				}
			}
			if ser != nil {
				roof = append(roof, *ser)
			}
		}
		if len(roof) > 0 {
			p, err := barPanel(fmt.Sprintf("%s: fraction of the roofline (floor = max(bytes / measured copy bandwidth, FLOPs / datasheet peak))", dt),
				"% of roofline", names, roof, 100, "roofline (100%)")
			if err != nil {
				return nil, err
			}
			panels = append(panels, p)
		}
	}
	if len(panels) == 0 {
		return nil, fmt.Errorf("nothing to plot: the report has no measured rows")
	}
	panels[0].Title.Text = fmt.Sprintf("detgemm bench: %s, %s, commit %s (no bar: not measured, or failed)\n%s",
		rep.GPU.Name, mdDate(rep.Date), orUnknown(rep.Commit), panels[0].Title.Text)
	return panels, nil
}

// barPanel draws grouped bars, one group per name, one bar per series, a
// dashed reference line at ref, and a legend above the bars (the y range is
// stretched to leave it room).
func barPanel(title, ylabel string, names []string, series []plotSeries, ref float64, refName string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	p.Y.Min = 0
	p.NominalX(names...)
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(8)

	// One unit of x per shape, the bars of a shape filling 80 % of it.
	p.X.Min, p.X.Max = -0.5, float64(len(names))-0.5
	group := (plotWidth - 3*vg.Centimeter) / vg.Length(max(len(names), 1)) * 0.8
	bw := group / vg.Length(len(series))
	top := ref
	for i, s := range series {
		b, err := plotter.NewBarChart(plotter.Values(s.values), bw)
		if err != nil {
			return nil, fmt.Errorf("plot %q: %w", s.name, err)
		}
		b.LineStyle.Width = 0
		b.Color = colorOf(s.mode, i)
		b.Offset = (vg.Length(i) - vg.Length(len(series)-1)/2) * bw
		p.Add(b)
		p.Legend.Add(s.name, b)
		top = max(top, slices.Max(s.values))
	}
	line := plotter.NewFunction(func(float64) float64 { return ref })
	line.Color = color.Gray{Y: 64}
	line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(line)
	p.Legend.Add(refName, line)
	// Room above the bars for the legend: one line per entry.
	p.Y.Max = top * (1.25 + 0.08*float64(len(series)+1))
	return p, nil
}
