package dataset

import (
	"fmt"
	"image"
	_ "image/jpeg" // register the JPEG decoder
	_ "image/png"  // register the PNG decoder
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// LoadImageFolder reads every .png, .jpg and .jpeg file in dir (not its
// subfolders), in the order of their names, as size×size images: each
// picture is centre-cropped to a square and resized by area averaging, and
// kept as three RGB channels or, with gray, one luma channel
// Y = 0.299 R + 0.587 G + 0.114 B. Transparent pixels are composited on
// black. The result has no labels.
//
// An empty folder, an unreadable picture or one of more than 2²⁶ pixels
// (8192 × 8192) is an error naming it. This is how the jigsaw puzzles run
// on one's own pictures.
func LoadImageFolder(dir string, size int, gray bool) (*Images, error) {
	if size < 1 {
		return nil, fmt.Errorf("dataset: LoadImageFolder: size %d must be >= 1", size)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("dataset: LoadImageFolder: %w", err)
	}
	var names []string
	for _, e := range entries {
		switch strings.ToLower(filepath.Ext(e.Name())) {
		case ".png", ".jpg", ".jpeg":
			if !e.IsDir() {
				names = append(names, e.Name())
			}
		}
	}
	slices.Sort(names)
	if len(names) == 0 {
		return nil, fmt.Errorf("dataset: LoadImageFolder: no .png, .jpg or .jpeg files in %s", dir)
	}
	ch := 3
	if gray {
		ch = 1
	}
	im := &Images{N: len(names), Channels: ch, Height: size, Width: size,
		Pixels: make([]float64, len(names)*ch*size*size)}
	for n, name := range names {
		src, err := decodeImage(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("dataset: LoadImageFolder: %s: %w", name, err)
		}
		resizeSquare(im.Image(n), src, size, gray)
	}
	return im, nil
}

// maxImagePixels bounds the pixels of a picture LoadImageFolder reads,
// 2²⁶ (8192 × 8192, or a 64-megapixel photograph). A picture's header
// declares its size and the decoders allocate the whole picture before
// they read its pixels, so a few bytes of a damaged file could otherwise
// ask for gigabytes.
const maxImagePixels = 1 << 26

func decodeImage(path string) (image.Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cfg, _, err := image.DecodeConfig(f)
	if err != nil {
		return nil, err
	}
	if cfg.Width < 1 || cfg.Height < 1 {
		return nil, fmt.Errorf("empty image")
	}
	if int64(cfg.Width)*int64(cfg.Height) > maxImagePixels {
		return nil, fmt.Errorf("%d × %d pixels, more than the %d this reads (scale it down)", cfg.Width, cfg.Height, maxImagePixels)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	img, _, err := image.Decode(f)
	if err != nil {
		return nil, err
	}
	if b := img.Bounds(); b.Dx() < 1 || b.Dy() < 1 {
		return nil, fmt.Errorf("empty image")
	}
	return img, nil
}

// resizeSquare writes the central square of src, resized to size×size by
// area averaging, into dst in CHW order.
//
// Area averaging gives each output pixel the mean of the source over the
// square it covers, with partly covered source pixels weighted by the
// covered fraction. It is separable: out = A · X · Aᵀ, where row i of the
// size×s matrix A holds the overlaps of [i·s/size, (i+1)·s/size) with the
// source pixels, divided by s/size.
func resizeSquare(dst []float64, src image.Image, size int, gray bool) {
	b := src.Bounds()
	s := min(b.Dx(), b.Dy())
	x0 := b.Min.X + (b.Dx()-s)/2
	y0 := b.Min.Y + (b.Dy()-s)/2
	ch := 3
	if gray {
		ch = 1
	}
	// Source square, channel-major.
	sq := make([]float64, ch*s*s)
	for y := range s {
		for x := range s {
			r, g, bl, _ := src.At(x0+x, y0+y).RGBA() // 16-bit, alpha-premultiplied
			fr, fg, fb := float64(r)/0xffff, float64(g)/0xffff, float64(bl)/0xffff
			if gray {
				sq[y*s+x] = min(1, 0.299*fr+0.587*fg+0.114*fb)
				continue
			}
			sq[y*s+x], sq[s*s+y*s+x], sq[2*s*s+y*s+x] = fr, fg, fb
		}
	}
	a := areaWeights(s, size)
	tmp := make([]float64, size*s) // A · X for one channel
	for c := range ch {
		x := sq[c*s*s : (c+1)*s*s]
		clear(tmp)
		for i := range size {
			for k, w := range a[i*s : (i+1)*s] {
				if w == 0 {
					continue
				}
				row := x[k*s : (k+1)*s]
				out := tmp[i*s : (i+1)*s]
				for j, v := range row {
					out[j] += w * v
				}
			}
		}
		out := dst[c*size*size : (c+1)*size*size]
		for i := range size {
			for j := range size {
				var v float64
				for k, w := range a[j*s : (j+1)*s] {
					v += w * tmp[i*s+k]
				}
				out[i*size+j] = min(1, max(0, v))
			}
		}
	}
}

// areaWeights returns the size×s matrix whose row i averages the source
// interval [i·s/size, (i+1)·s/size) over the pixels it overlaps. Each row
// sums to 1.
func areaWeights(s, size int) []float64 {
	a := make([]float64, size*s)
	scale := float64(s) / float64(size)
	for i := range size {
		lo, hi := float64(i)*scale, float64(i+1)*scale
		for k := int(lo); k < s && float64(k) < hi; k++ {
			overlap := min(hi, float64(k+1)) - max(lo, float64(k))
			if overlap > 0 {
				a[i*s+k] = overlap / scale
			}
		}
	}
	return a
}
