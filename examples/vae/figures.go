package main

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/permlab/permlab/dataset"
	"github.com/permlab/permlab/models/vae"
)

// writeFigures writes curves.png, recon.png and samples.png into dir.
func writeFigures(dir string, m *vae.Model, s summary, val *dataset.Images) error {
	if err := curves(filepath.Join(dir, "curves.png"), s); err != nil {
		return err
	}
	const n = 10
	val = val.Subset(seq(min(n, val.N)))
	rec, err := m.Reconstruct(val.Pixels, val.N)
	if err != nil {
		return err
	}
	if err := grid(filepath.Join(dir, "recon.png"), append(append([]float64(nil), val.Pixels...), rec...), 2, val.N, 28, 28); err != nil {
		return err
	}
	smp, err := m.SamplePrior(n*n, rand.New(rand.NewPCG(s.Seed, 0x736d70))) // "smp"
	if err != nil {
		return err
	}
	return grid(filepath.Join(dir, "samples.png"), smp, n, n, 28, 28)
}

// curves plots the training and validation −ELBO by epoch.
func curves(path string, s summary) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("categorical VAE, %s", s.Estimator)
	p.X.Label.Text = "epoch"
	p.Y.Label.Text = "−ELBO (nats)"
	tr, va := make(plotter.XYs, len(s.TrainLoss)), plotter.XYs{}
	for i, v := range s.TrainLoss {
		tr[i] = plotter.XY{X: float64(i + 1), Y: v}
	}
	for i, v := range s.ValNegELBO {
		if v != nil { // nil: unknown, val.json lost
			va = append(va, plotter.XY{X: float64(i + 1), Y: *v})
		}
	}
	lt, err := plotter.NewLine(tr)
	if err != nil {
		return err
	}
	p.Add(lt)
	p.Legend.Add("train (relaxed, mean over epoch)", lt)
	if len(va) > 0 {
		lv, pv, err := plotter.NewLinePoints(va) // points: an epoch alone shows
		if err != nil {
			return err
		}
		lv.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		pv.Radius = vg.Points(2)
		p.Add(lv, pv)
		p.Legend.Add("validation (discrete, end of epoch)", lv, pv)
	}
	p.Legend.Top = true
	return p.Save(6*vg.Inch, 4*vg.Inch, path)
}

// grid writes rows×cols images of h×w intensities in [0, 1], one after another
// in px, as a grey PNG with a one-pixel border.
func grid(path string, px []float64, rows, cols, h, w int) error {
	img := image.NewGray(image.Rect(0, 0, cols*(w+1)+1, rows*(h+1)+1))
	for i := range img.Pix {
		img.Pix[i] = 128
	}
	for k := 0; k < rows*cols && (k+1)*h*w <= len(px); k++ {
		r, c := k/cols, k%cols
		for y := range h {
			for x := range w {
				v := px[k*h*w+y*w+x]
				img.SetGray(c*(w+1)+1+x, r*(h+1)+1+y, color.Gray{Y: uint8(255*v + 0.5)})
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
