package jigsaw

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
)

// Tile is one picture of a figure: Channels (1 or 3) × H × W values in
// [0, 1], CHW.
type Tile struct {
	Pix            []float64
	Channels, H, W int
}

// Montage lays rows of tiles on a white canvas, each tile scaled up by scale
// and separated by gap pixels, and returns the image. Rows may have different
// lengths and tiles different sizes; values are clamped to [0, 1].
func Montage(rows [][]Tile, scale, gap int) (*image.RGBA, error) {
	if scale < 1 || gap < 0 {
		return nil, fmt.Errorf("jigsaw: Montage: scale %d must be >= 1 and gap %d >= 0", scale, gap)
	}
	width, height := gap, gap
	for r, row := range rows {
		w, h := gap, 0
		for c, t := range row {
			if t.Channels != 1 && t.Channels != 3 || t.H < 1 || t.W < 1 || len(t.Pix) != t.Channels*t.H*t.W {
				return nil, fmt.Errorf("jigsaw: Montage: tile %d of row %d has %d values for %dx%dx%d", c, r, len(t.Pix), t.Channels, t.H, t.W)
			}
			w += t.W*scale + gap
			h = max(h, t.H*scale)
		}
		width = max(width, w)
		height += h + gap
	}
	img := image.NewRGBA(image.Rect(0, 0, width, height))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	y0 := gap
	for _, row := range rows {
		x0, h := gap, 0
		for _, t := range row {
			drawTile(img, t, x0, y0, scale)
			x0 += t.W*scale + gap
			h = max(h, t.H*scale)
		}
		y0 += h + gap
	}
	return img, nil
}

func drawTile(img *image.RGBA, t Tile, x0, y0, scale int) {
	level := func(v float64) uint8 {
		if math.IsNaN(v) {
			return 0
		}
		return uint8(math.Round(255 * math.Min(1, math.Max(0, v))))
	}
	plane := t.H * t.W
	for y := range t.H {
		for x := range t.W {
			var c color.RGBA
			if t.Channels == 1 {
				v := level(t.Pix[y*t.W+x])
				c = color.RGBA{v, v, v, 255}
			} else {
				c = color.RGBA{level(t.Pix[y*t.W+x]), level(t.Pix[plane+y*t.W+x]), level(t.Pix[2*plane+y*t.W+x]), 255}
			}
			for dy := range scale {
				for dx := range scale {
					img.SetRGBA(x0+x*scale+dx, y0+y*scale+dy, c)
				}
			}
		}
	}
}

// WritePNG encodes a montage of rows (see Montage) as PNG to w.
func WritePNG(w io.Writer, rows [][]Tile, scale, gap int) error {
	img, err := Montage(rows, scale, gap)
	if err != nil {
		return err
	}
	if err := png.Encode(w, img); err != nil {
		return fmt.Errorf("jigsaw: WritePNG: %w", err)
	}
	return nil
}
