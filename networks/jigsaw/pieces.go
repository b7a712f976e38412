package jigsaw

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/permlab/permlab/perm"
)

// Grid is the geometry of a p × p puzzle cut from images of a fixed size.
//
// When p does not divide the image side, the image is centre-cropped to
// p·⌊H/p⌋ × p·⌊W/p⌋ before cutting, so that every piece has the same size and
// no blank padding pieces are added (NewGridCrop chooses a smaller square).
// For 28 px MNIST digits this drops at most a 2 px frame (p = 3, 5, 6), which
// is mostly blank: on the test digits, the 1 px of p = 3 cuts ink off 1.1% of
// them (0.01% of all ink), the 2 px frame of p = 6 off 11.9% (0.23% of the
// ink; the oracle subcommand of examples/jigsaw prints these shares).
//
// Pieces are numbered in row-major order of their position in the image:
// piece k = r·P + c sits in row r, column c. A piece is stored as a vector of
// Channels·PieceH·PieceW values in channel, row, column order (CHW), the layout
// a convolution over a batch of pieces reads.
type Grid struct {
	// P is the number of pieces per side; a puzzle has N = P² pieces.
	P int
	// Channels, Height and Width describe the full images (CHW).
	Channels, Height, Width int
	// PieceH and PieceW are the sides of one piece in pixels.
	PieceH, PieceW int
	// Top and Left are the offsets of the centred crop (see NewGridCrop).
	Top, Left int
}

// NewGrid returns the geometry of p × p puzzles cut from channels × height ×
// width images. It is an error if p < 1, if an image dimension is < 1, or if
// p exceeds a side, which would leave pieces of less than one pixel.
func NewGrid(channels, height, width, p int) (Grid, error) {
	return newGrid("NewGrid", channels, height, width, p, 0)
}

// NewGridCrop is NewGrid with the side of the centred square crop the pieces
// tile: crop = 0 is NewGrid's crop (p·⌊H/p⌋ × p·⌊W/p⌋); otherwise the image is
// centre-cropped to crop × crop (offset ⌊(side − crop)/2⌋) and cut into pieces
// of crop/p px. It is an error if crop is negative, not a multiple of p, or
// larger than the image.
//
// The crop decides how many pieces are blank, and so the best score any
// method can expect on the index-based metrics (see Oracle): for 3 × 3 MNIST
// puzzles a 24 px crop (8 px pieces) leaves fewer blank corners than the
// default 27 px (9 px pieces).
func NewGridCrop(channels, height, width, p, crop int) (Grid, error) {
	return newGrid("NewGridCrop", channels, height, width, p, crop)
}

// newGrid is NewGridCrop; its errors carry the name of the function called.
func newGrid(name string, channels, height, width, p, crop int) (Grid, error) {
	switch {
	case p < 1:
		return Grid{}, fmt.Errorf("jigsaw: %s: pieces per side %d must be >= 1", name, p)
	case channels < 1 || height < 1 || width < 1:
		return Grid{}, fmt.Errorf("jigsaw: %s: image %dx%dx%d must have positive dimensions", name, channels, height, width)
	case p > height || p > width:
		return Grid{}, fmt.Errorf("jigsaw: %s: %d pieces per side leave pieces of less than 1 px in a %dx%d image", name, p, height, width)
	case crop < 0:
		return Grid{}, fmt.Errorf("jigsaw: %s: crop %d must be >= 0", name, crop)
	case crop > height || crop > width:
		return Grid{}, fmt.Errorf("jigsaw: %s: crop %d exceeds the %dx%d image", name, crop, height, width)
	case crop%p != 0:
		return Grid{}, fmt.Errorf("jigsaw: %s: crop %d is not a multiple of %d pieces per side", name, crop, p)
	}
	ph, pw := height/p, width/p
	if crop > 0 {
		ph, pw = crop/p, crop/p
	}
	return Grid{
		P: p, Channels: channels, Height: height, Width: width,
		PieceH: ph, PieceW: pw,
		Top: (height - p*ph) / 2, Left: (width - p*pw) / 2,
	}, nil
}

// N returns the number of pieces, P².
func (g Grid) N() int { return g.P * g.P }

// PieceSize returns the number of values in one piece, Channels·PieceH·PieceW.
func (g Grid) PieceSize() int { return g.Channels * g.PieceH * g.PieceW }

// ImageSize returns the number of values in one full image.
func (g Grid) ImageSize() int { return g.Channels * g.Height * g.Width }

// CropH returns the height of the cropped image the pieces tile.
func (g Grid) CropH() int { return g.P * g.PieceH }

// CropW returns the width of the cropped image the pieces tile.
func (g Grid) CropW() int { return g.P * g.PieceW }

// Cut writes the N pieces of img (CHW, ImageSize values) into dst, which must
// hold N·PieceSize values; piece k occupies dst[k·PieceSize : (k+1)·PieceSize].
// It returns an error for wrongly sized buffers and for NaN or infinite pixels.
func (g Grid) Cut(dst, img []float64) error {
	if len(img) != g.ImageSize() {
		return fmt.Errorf("jigsaw: Cut: image has %d values, want %d (%dx%dx%d)", len(img), g.ImageSize(), g.Channels, g.Height, g.Width)
	}
	if len(dst) != g.N()*g.PieceSize() {
		return fmt.Errorf("jigsaw: Cut: destination has %d values, want %d", len(dst), g.N()*g.PieceSize())
	}
	for i, v := range img {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("jigsaw: Cut: pixel %d is %v", i, v)
		}
	}
	ps := g.PieceSize()
	for r := 0; r < g.P; r++ {
		for c := 0; c < g.P; c++ {
			piece := dst[(r*g.P+c)*ps:]
			o := 0
			for ch := 0; ch < g.Channels; ch++ {
				for y := 0; y < g.PieceH; y++ {
					row := img[(ch*g.Height+g.Top+r*g.PieceH+y)*g.Width+g.Left+c*g.PieceW:]
					o += copy(piece[o:o+g.PieceW], row[:g.PieceW])
				}
			}
		}
	}
	return nil
}

// Outside returns the sum of the absolute values of the pixels of img (CHW,
// ImageSize values) that lie outside the crop, which no piece shows: the ink
// a crop cuts off.
func (g Grid) Outside(img []float64) (float64, error) {
	if len(img) != g.ImageSize() {
		return 0, fmt.Errorf("jigsaw: Outside: image has %d values, want %d (%dx%dx%d)", len(img), g.ImageSize(), g.Channels, g.Height, g.Width)
	}
	var s float64
	for c := range g.Channels {
		for y := range g.Height {
			row := img[(c*g.Height+y)*g.Width:][:g.Width]
			in := y >= g.Top && y < g.Top+g.CropH()
			for x, v := range row {
				if !in || x < g.Left || x >= g.Left+g.CropW() {
					s += math.Abs(v)
				}
			}
		}
	}
	return s, nil
}

// Assemble is the inverse of Cut on the cropped region: it writes the pieces
// in position order into dst, a Channels × CropH × CropW image (CHW).
func (g Grid) Assemble(dst, pieces []float64) error {
	if len(pieces) != g.N()*g.PieceSize() {
		return fmt.Errorf("jigsaw: Assemble: pieces have %d values, want %d", len(pieces), g.N()*g.PieceSize())
	}
	ch, cw := g.CropH(), g.CropW()
	if len(dst) != g.Channels*ch*cw {
		return fmt.Errorf("jigsaw: Assemble: destination has %d values, want %d", len(dst), g.Channels*ch*cw)
	}
	ps := g.PieceSize()
	for r := 0; r < g.P; r++ {
		for c := 0; c < g.P; c++ {
			piece := pieces[(r*g.P+c)*ps:]
			o := 0
			for k := 0; k < g.Channels; k++ {
				for y := 0; y < g.PieceH; y++ {
					row := dst[(k*ch+r*g.PieceH+y)*cw+c*g.PieceW:]
					o += copy(row[:g.PieceW], piece[o:o+g.PieceW])
				}
			}
		}
	}
	return nil
}

// Scramble writes the rows of the piece matrix X (N rows of PieceSize values)
// permuted by p into dst: dst row i is X row p[i], that is X̃ = P X in the
// convention of package perm. Unscramble with p.Inverse().
func (g Grid) Scramble(dst, pieces []float64, p perm.Perm) error {
	n, ps := g.N(), g.PieceSize()
	if len(p) != n {
		return fmt.Errorf("jigsaw: Scramble: permutation of %d items for %d pieces", len(p), n)
	}
	if err := p.Validate(); err != nil {
		return fmt.Errorf("jigsaw: Scramble: %w", err)
	}
	if len(pieces) != n*ps || len(dst) != n*ps {
		return fmt.Errorf("jigsaw: Scramble: buffers of %d and %d values, want %d", len(dst), len(pieces), n*ps)
	}
	for i, j := range p {
		copy(dst[i*ps:(i+1)*ps], pieces[j*ps:(j+1)*ps])
	}
	return nil
}

// Puzzles is a batch of scrambled images: for image b, Scrambled holds its
// pieces in scrambled order and Pieces in true order (both N·PieceSize values
// per image, images one after another), with Scrambled = Perms[b] applied to
// Pieces as in Grid.Scramble. Labels carries an integer per image (the digit
// class, or the output head to use); it may be nil.
type Puzzles struct {
	Grid      Grid
	Pieces    []float64
	Scrambled []float64
	Perms     []perm.Perm
	Labels    []int
}

// Len returns the number of puzzles (0 for nil).
func (z *Puzzles) Len() int {
	if z == nil {
		return 0
	}
	return len(z.Perms)
}

// MakePuzzles cuts each image of imgs (n images of Grid.ImageSize values, one
// after another) and scrambles it with a uniformly random permutation drawn
// from rng, in image order, so the batch is a function of rng's state. labels
// may be nil; otherwise it must have one entry per image.
func MakePuzzles(g Grid, imgs []float64, labels []int, rng *rand.Rand) (*Puzzles, error) {
	is := g.ImageSize()
	if is == 0 || len(imgs)%is != 0 || len(imgs) == 0 {
		return nil, fmt.Errorf("jigsaw: MakePuzzles: %d values is not a whole number of %dx%dx%d images", len(imgs), g.Channels, g.Height, g.Width)
	}
	n := len(imgs) / is
	if labels != nil && len(labels) != n {
		return nil, fmt.Errorf("jigsaw: MakePuzzles: %d labels for %d images", len(labels), n)
	}
	if rng == nil {
		return nil, fmt.Errorf("jigsaw: MakePuzzles: nil random source")
	}
	np := g.N() * g.PieceSize()
	z := &Puzzles{
		Grid:      g,
		Pieces:    make([]float64, n*np),
		Scrambled: make([]float64, n*np),
		Perms:     make([]perm.Perm, n),
	}
	if labels != nil {
		z.Labels = append([]int(nil), labels...)
	}
	for b := 0; b < n; b++ {
		if err := g.Cut(z.Pieces[b*np:(b+1)*np], imgs[b*is:(b+1)*is]); err != nil {
			return nil, fmt.Errorf("jigsaw: MakePuzzles: image %d: %w", b, err)
		}
		z.Perms[b] = perm.Random(g.N(), rng)
		if err := g.Scramble(z.Scrambled[b*np:(b+1)*np], z.Pieces[b*np:(b+1)*np], z.Perms[b]); err != nil {
			return nil, err
		}
	}
	return z, nil
}
