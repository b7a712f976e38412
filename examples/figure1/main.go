// Command figure1 reproduces Figure 1 of Mena et al. (ICLR 2018), which
// illustrates the matching and Sinkhorn operators and the Gumbel-Matching and
// Gumbel-Sinkhorn distributions on a random 5×5 matrix X:
//
//	(a) X and the matching operator M(X) = argmax_P ⟨P, X⟩;
//	(b) the Sinkhorn operator S^L(X/τ) for τ = 1, 0.5, 0.1, 0.01 (rows) and
//	    L = 1, 5, 20, 100, 1000 iterations (columns), approaching M(X) as
//	    τ → 0 and L grows (Theorem 1; small τ needs many iterations);
//	(c) samples of GM(X) = M(X + ε) (first row) and of GS(X, τ) =
//	    S^L((X + ε)/τ), L = 1000, at τ = 1 and τ = 0.01 (second and third
//	    rows), each column using the same Gumbel noise ε: at low temperature
//	    the two distributions are nearly indistinguishable (they differ only
//	    where X + ε has a near tie).
//
// X is drawn from N(0, 1) entrywise, redrawn until M(X) beats the second-best
// permutation by 0.25, so that the limit of Theorem 1 is visible at τ = 0.01.
//
// Every 5×5 grid is a heat map of the matrix, row 0 at the top; cells run
// from white (0) to dark blue (1) for doubly stochastic matrices, and over
// X's own range in (a).
//
// The figure is one PNG, figure1.png, in the directory given by -out:
//
//	go run ./examples/figure1 -out /tmp -seed 1
package main

import (
	"errors"
	"flag"
	"fmt"
	"image/color"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/permlab/permlab/internal/cli"
	"github.com/permlab/permlab/relax"
)

// Settings of the figure.
var (
	taus       = []float64{1, 0.5, 0.1, 0.01} // panel (b) rows
	iterCounts = []int{1, 5, 20, 100, 1000}   // panel (b) columns
	sampleTaus = []float64{1, 0.01}           // panel (c) Gumbel-Sinkhorn rows
)

const (
	size        = 5    // X is size×size
	samples     = 5    // panel (c) columns
	sampleIters = 1000 // Sinkhorn iterations for the samples
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command; it returns the exit status: 2 for a bad command line
// (nothing done), 1 for a failure.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("figure1", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", filepath.Join("out", "figure1"), "output directory (made if missing; the default is under out/, which git ignores)")
	seed := fs.Uint64("seed", 1, "seed of X and of the Gumbel noise")
	err := cli.Parse(fs, args)
	if err == nil {
		err = cli.OutputDir("-out", *out)
	}
	if err != nil {
		return cli.Exit(stderr, "figure1", err)
	}
	path := filepath.Join(*out, "figure1.png")
	if err := write(path, *seed); err != nil {
		return cli.Exit(stderr, "figure1", err)
	}
	fmt.Fprintln(stdout, "wrote", path)
	return 0
}

// figure holds every matrix the figure shows.
type figure struct {
	x, m *mat.Dense
	sink [][]*mat.Dense // [τ][L]
	gm   []*mat.Dense   // GM samples
	gs   [][]*mat.Dense // [temperature][sample]
	seed uint64
	xMin float64
	xMax float64
	gap  float64 // best minus second-best objective ⟨P, X⟩
}

// write draws the figure for seed into the PNG file path.
func write(path string, seed uint64) error {
	f, err := compute(seed)
	if err != nil {
		return err
	}
	return f.render(path)
}

// minGap is the margin by which M(X) must beat every other permutation.
// Theorem 1 needs M(X) unique; with a near tie, S(X/τ) at τ = 0.01 would
// still mix the tied permutations and the figure would not show the limit.
const minGap = 0.25

// compute draws X ~ N(0, 1) (redrawn until M(X) wins by minGap) and the
// Gumbel noise from seed, and evaluates the operators.
func compute(seed uint64) (*figure, error) {
	rng := rand.New(rand.NewPCG(seed, 0xf161))
	f := &figure{seed: seed, x: mat.NewDense(size, size, nil)}
	for f.gap = 0; f.gap < minGap; f.gap = matchingGap(f.x) {
		for i := 0; i < size; i++ {
			for j := 0; j < size; j++ {
				f.x.Set(i, j, rng.NormFloat64())
			}
		}
	}
	f.xMin, f.xMax = mat.Min(f.x), mat.Max(f.x)
	var err error
	if f.m, err = matchingMatrix(f.x); err != nil {
		return nil, err
	}
	for _, tau := range taus {
		var row []*mat.Dense
		for _, l := range iterCounts {
			s, err := relax.Sinkhorn(f.x, tau, l)
			if err != nil {
				return nil, err
			}
			row = append(row, s)
		}
		f.sink = append(f.sink, row)
	}
	f.gs = make([][]*mat.Dense, len(sampleTaus))
	for k := 0; k < samples; k++ {
		noisy := mat.NewDense(size, size, nil)
		for i := 0; i < size; i++ {
			for j := 0; j < size; j++ {
				noisy.Set(i, j, f.x.At(i, j)+gumbel(rng))
			}
		}
		m, err := matchingMatrix(noisy)
		if err != nil {
			return nil, err
		}
		f.gm = append(f.gm, m)
		for t, tau := range sampleTaus {
			s, err := relax.Sinkhorn(noisy, tau, sampleIters)
			if err != nil {
				return nil, err
			}
			f.gs[t] = append(f.gs[t], s)
		}
	}
	return f, nil
}

// matchingGap returns the difference between the best and the second-best
// value of Σ_i x[i][σ(i)] over permutations σ, by enumeration.
func matchingGap(x *mat.Dense) float64 {
	n, _ := x.Dims()
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	first, second := math.Inf(-1), math.Inf(-1)
	var rec func(k int)
	rec = func(k int) {
		if k == n {
			v := 0.0
			for i, j := range p {
				v += x.At(i, j)
			}
			if v > first {
				first, second = v, first
			} else if v > second {
				second = v
			}
			return
		}
		for i := k; i < n; i++ {
			p[k], p[i] = p[i], p[k]
			rec(k + 1)
			p[k], p[i] = p[i], p[k]
		}
	}
	rec(0)
	return first - second
}

// gumbel draws a standard Gumbel variable, −log(−log U).
func gumbel(rng *rand.Rand) float64 {
	u := rng.Float64()
	for u == 0 {
		u = rng.Float64()
	}
	return -math.Log(-math.Log(u))
}

// matchingMatrix returns the permutation matrix of M(x).
func matchingMatrix(x *mat.Dense) (*mat.Dense, error) {
	p, err := relax.Matching(x)
	if err != nil {
		return nil, err
	}
	n, _ := x.Dims()
	m := mat.NewDense(n, n, nil)
	for i, j := range p {
		m.Set(i, j, 1)
	}
	return m, nil
}

// grid adapts a matrix to plotter.GridXYZ with row 0 at the top.
type grid struct{ m *mat.Dense }

func (g grid) Dims() (c, r int)   { r, c = g.m.Dims(); return c, r }
func (g grid) Z(c, r int) float64 { return g.m.At(r, c) }
func (g grid) X(c int) float64    { return float64(c) }
func (g grid) Y(r int) float64 {
	n, _ := g.m.Dims()
	return float64(n - 1 - r)
}

// blues is a sequential palette from white to dark blue.
type blues []color.Color

func (p blues) Colors() []color.Color { return p }

func newBlues(n int) blues {
	lo := [3]float64{255, 255, 255}
	hi := [3]float64{8, 48, 107}
	p := make(blues, n)
	for k := range p {
		t := float64(k) / float64(n-1)
		var c [3]uint8
		for i := range c {
			c[i] = uint8(math.Round(lo[i] + t*(hi[i]-lo[i])))
		}
		p[k] = color.RGBA{R: c[0], G: c[1], B: c[2], A: 255}
	}
	return p
}

// tile returns a heat-map plot of m over [lo, hi] titled title.
func tile(m *mat.Dense, lo, hi float64, pal palette.Palette, title string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(9)
	p.Title.Padding = vg.Points(3)
	h := plotter.NewHeatMap(grid{m}, pal)
	h.Min, h.Max = lo, hi
	p.Add(h)
	p.HideAxes()
	// A thin frame shows the extent of matrices that are mostly white.
	n, _ := m.Dims()
	frame, _ := plotter.NewLine(plotter.XYs{{X: -0.5, Y: -0.5}, {X: float64(n) - 0.5, Y: -0.5},
		{X: float64(n) - 0.5, Y: float64(n) - 0.5}, {X: -0.5, Y: float64(n) - 0.5}, {X: -0.5, Y: -0.5}})
	frame.Color = color.Gray{Y: 120}
	frame.Width = vg.Points(0.5)
	p.Add(frame)
	return p
}

// render draws the three panels into one PNG at path.
func (f *figure) render(path string) error {
	const cols = 5
	tileW := 1.35 * vg.Inch
	tileH := tileW + 0.2*vg.Inch // square heat map plus its title
	heading := 0.45 * vg.Inch
	margin := 0.15 * vg.Inch
	rows := []int{1, len(taus), 1 + len(sampleTaus)}
	width := 2*margin + cols*tileW
	height := 2 * margin
	for _, r := range rows {
		height += heading + vg.Length(r)*tileH
	}
	img := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(150))
	dc := draw.New(img)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())

	pal := newBlues(256)
	headStyle := text.Style{
		Color:   color.Black,
		Font:    font.From(plot.DefaultFont, vg.Points(12)),
		XAlign:  draw.XLeft,
		YAlign:  draw.YTop,
		Handler: plot.DefaultTextHandler,
	}
	headStyle.Font.Weight = 700 // bold
	noteStyle := headStyle
	noteStyle.Font = font.From(plot.DefaultFont, vg.Points(9))

	panels := [][][]*plot.Plot{
		{{tile(f.x, f.xMin, f.xMax, pal, fmt.Sprintf("X (N(0,1), seed %d)", f.seed)), tile(f.m, 0, 1, pal, "M(X)")}},
		nil,
		nil,
	}
	for t, tau := range taus {
		var row []*plot.Plot
		for l, iters := range iterCounts {
			row = append(row, tile(f.sink[t][l], 0, 1, pal, fmt.Sprintf("τ = %g, L = %d", tau, iters)))
		}
		panels[1] = append(panels[1], row)
	}
	var gmRow []*plot.Plot
	for k, m := range f.gm {
		gmRow = append(gmRow, tile(m, 0, 1, pal, fmt.Sprintf("GM sample %d", k+1)))
	}
	panels[2] = append(panels[2], gmRow)
	for t, tau := range sampleTaus {
		var row []*plot.Plot
		for k, s := range f.gs[t] {
			row = append(row, tile(s, 0, 1, pal, fmt.Sprintf("GS, τ = %g, #%d", tau, k+1)))
		}
		panels[2] = append(panels[2], row)
	}
	titles := []string{
		"(a) Matching operator M(X) = argmax <P, X> over permutation matrices P",
		"(b) Sinkhorn operator S^L(X/τ) approaches M(X) as τ → 0 and L grows",
		fmt.Sprintf("(c) Samples of GM(X) = M(X+ε) and GS(X, τ) = S((X+ε)/τ), L = %d; same ε per column", sampleIters),
	}

	top := dc.Max.Y - margin
	for s, section := range panels {
		dc.FillText(headStyle, vg.Point{X: dc.Min.X + margin, Y: top - 0.08*vg.Inch}, titles[s])
		top -= heading
		h := vg.Length(rows[s]) * tileH
		area := draw.Crop(dc, margin, -margin, top-h-dc.Min.Y, top-dc.Max.Y)
		plots := make([][]*plot.Plot, rows[s])
		for r := range plots {
			plots[r] = make([]*plot.Plot, cols)
			if r < len(section) {
				copy(plots[r], section[r])
			}
		}
		tiles := draw.Tiles{Rows: rows[s], Cols: cols, PadX: 0.08 * vg.Inch, PadY: 0.04 * vg.Inch}
		canvases := plot.Align(plots, tiles, area)
		for r := range plots {
			for c := range plots[r] {
				if plots[r][c] != nil {
					plots[r][c].Draw(canvases[r][c])
				}
			}
		}
		top -= h
	}
	dc.FillText(noteStyle, vg.Point{X: dc.Min.X + margin + 2*tileW + 0.2*vg.Inch, Y: dc.Max.Y - margin - heading - 0.4*vg.Inch},
		"White = 0, dark blue = 1 (X: its min to max).")
	dc.FillText(noteStyle, vg.Point{X: dc.Min.X + margin + 2*tileW + 0.2*vg.Inch, Y: dc.Max.Y - margin - heading - 0.62*vg.Inch},
		"Rows of each grid are rows i of the matrix,")
	dc.FillText(noteStyle, vg.Point{X: dc.Min.X + margin + 2*tileW + 0.2*vg.Inch, Y: dc.Max.Y - margin - heading - 0.84*vg.Inch},
		"columns are the assigned positions j.")

	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	w, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return errors.Join(err, w.Close())
}
