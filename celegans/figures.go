// Figures of the experiment runner, drawn with gonum/plot.

package celegans

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// errPoints are points with vertical error bars.
type errPoints struct {
	plotter.XYs
	plotter.YErrors
}

// AccuracyFigure plots the accuracy over all neurons of every method on the
// cells of one table of the summary (3, 7, or 0 for cells of one's own): for
// each cell, one filled circle per method at the mean over seeds with an
// error bar of ± one standard deviation, and a cross of the same colour at the
// value published in the seed paper.
func AccuracyFigure(s *Summary, table int) (*plot.Plot, error) {
	if s == nil {
		return nil, fmt.Errorf("celegans: AccuracyFigure: nil summary")
	}
	_, by := s.tables()
	cells := by[table]
	if len(cells) == 0 {
		return nil, fmt.Errorf("celegans: AccuracyFigure: no cells of table %d in the summary", table)
	}
	p := plot.New()
	p.Title.Text = "Other cells: accuracy over all neurons"
	if table != 0 {
		p.Title.Text = fmt.Sprintf("Table %d: accuracy over all neurons", table)
	}
	p.Y.Label.Text = "accuracy (mean ± sd over seeds)"
	accuracyAxis(p)
	grid := plotter.NewGrid()
	grid.Vertical.Color = nil
	p.Add(grid)
	names := make([]string, len(cells))
	for i, c := range cells {
		names[i] = c.Header
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.5, float64(len(cells))-0.5

	nm := len(s.Methods)
	width := 0.7 / float64(nm)
	for k, m := range s.Methods {
		off := (float64(k) - float64(nm-1)/2) * width
		col := plotutil.Color(k)
		var ours errPoints
		var paper plotter.XYs
		for i, c := range cells {
			x := float64(i) + off
			if e, ok := s.Entry(c.Key, m); ok {
				ours.XYs = append(ours.XYs, plotter.XY{X: x, Y: e.Accuracy})
				// Accuracies lie in [0, 1]: clip the bars there.
				lo, hi := math.Min(e.AccuracySD, e.Accuracy), math.Min(e.AccuracySD, 1-e.Accuracy)
				ours.YErrors = append(ours.YErrors, struct{ Low, High float64 }{lo, hi})
			}
			if v, ok := paperValue(c, m); ok {
				paper = append(paper, plotter.XY{X: x, Y: v})
			}
		}
		if len(ours.XYs) > 0 {
			sc, err := plotter.NewScatter(ours.XYs)
			if err != nil {
				return nil, fmt.Errorf("celegans: AccuracyFigure: %w", err)
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(3), Shape: draw.CircleGlyph{}}
			eb, err := plotter.NewYErrorBars(ours)
			if err != nil {
				return nil, fmt.Errorf("celegans: AccuracyFigure: %w", err)
			}
			eb.Color = col
			eb.Width = vg.Points(1)
			eb.CapWidth = vg.Points(5)
			p.Add(eb, sc)
			p.Legend.Add(methodTitle(m), sc)
		}
		if len(paper) > 0 {
			sc, err := plotter.NewScatter(paper)
			if err != nil {
				return nil, fmt.Errorf("celegans: AccuracyFigure: %w", err)
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(4), Shape: draw.CrossGlyph{}}
			p.Add(sc)
		}
	}
	marker, err := plotter.NewScatter(plotter.XYs{})
	if err == nil {
		marker.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(4), Shape: draw.CrossGlyph{}}
		p.Legend.Add("seed paper", marker)
	}
	return p, nil
}

// TraceFigure plots the accuracy over all neurons against wall time of every
// method on one cell of the summary (key or label): one line per seed, from
// Outcome.Trace (recorded when Settings.TraceEvery > 0, from the current
// variational parameters or MCMC state), and a filled circle at the final
// estimate of each run (see Solve).
func TraceFigure(s *Summary, cell string) (*plot.Plot, error) {
	if s == nil {
		return nil, fmt.Errorf("celegans: TraceFigure: nil summary")
	}
	key := resolveCellKey(s, cell)
	header := key
	for _, c := range s.Cells {
		if c.Key == key {
			header = fmt.Sprintf("%s (%s)", key, c.Header)
		}
	}
	p := plot.New()
	p.Title.Text = "accuracy against wall time, " + header
	p.X.Label.Text = "wall time (s)"
	p.Y.Label.Text = "accuracy over all neurons"
	accuracyAxis(p)
	p.X.Min = 0
	p.Add(plotter.NewGrid())

	found := false
	xmax := 0.0
	for k, m := range s.Methods {
		col := plotutil.Color(k)
		var finals plotter.XYs
		var legend plot.Thumbnailer
		for _, r := range s.records {
			if r.Cell != key || r.Method != m {
				continue
			}
			found = true
			finals = append(finals, plotter.XY{X: r.ElapsedSec, Y: r.Accuracy})
			xmax = math.Max(xmax, r.ElapsedSec)
			if len(r.Trace) == 0 {
				continue
			}
			pts := make(plotter.XYs, len(r.Trace))
			for i, tp := range r.Trace {
				pts[i] = plotter.XY{X: tp.Sec, Y: tp.Accuracy}
			}
			l, err := plotter.NewLine(pts)
			if err != nil {
				return nil, fmt.Errorf("celegans: TraceFigure: %w", err)
			}
			l.Color = col
			l.Width = vg.Points(1.5)
			p.Add(l)
			if legend == nil {
				legend = l
			}
		}
		if len(finals) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(finals)
		if err != nil {
			return nil, fmt.Errorf("celegans: TraceFigure: %w", err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(3.5), Shape: draw.CircleGlyph{}}
		p.Add(sc)
		if legend == nil {
			legend = sc
		}
		p.Legend.Add(methodTitle(m), legend)
	}
	if !found {
		return nil, fmt.Errorf("celegans: TraceFigure: no runs of cell %q in the summary", cell)
	}
	if final, err := plotter.NewScatter(plotter.XYs{}); err == nil {
		final.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(3.5), Shape: draw.CircleGlyph{}}
		p.Legend.Add("final estimate (one per seed)", final)
	}
	if xmax > 0 {
		p.X.Max = 1.04 * xmax
	}
	return p, nil
}

// accuracyAxis sets the y axis to accuracies in [0, 1], with room above 1
// for the legend in the top left corner.
func accuracyAxis(p *plot.Plot) {
	p.Y.Min, p.Y.Max = 0, 1.32
	var ticks []plot.Tick
	for i := 0; i <= 10; i++ {
		t := plot.Tick{Value: float64(i) / 10}
		if i%2 == 0 {
			t.Label = fmt.Sprintf("%.1f", t.Value)
		}
		ticks = append(ticks, t)
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = vg.Points(8)
}

// savePlot writes p as a PNG of w x h inches.
func savePlot(p *plot.Plot, w, h float64, path string) error {
	if err := p.Save(vg.Length(w)*vg.Inch, vg.Length(h)*vg.Inch, path); err != nil {
		return fmt.Errorf("celegans: saving %s: %w", path, err)
	}
	return nil
}
