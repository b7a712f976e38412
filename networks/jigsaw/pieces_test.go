package jigsaw

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/perm"
)

// randomImages returns n images of c × h × w uniform values.
func randomImages(rng *rand.Rand, n, c, h, w int) []float64 {
	x := make([]float64, n*c*h*w)
	for i := range x {
		x[i] = rng.Float64()
	}
	return x
}

func TestNewGridCrop(t *testing.T) {
	for _, tc := range []struct {
		p, piece, top int
	}{
		{2, 14, 0}, {3, 9, 0}, {4, 7, 0}, {5, 5, 1}, {6, 4, 2}, {7, 4, 0}, {28, 1, 0},
	} {
		g, err := NewGrid(1, 28, 28, tc.p)
		require.NoError(t, err)
		assert.Equal(t, tc.piece, g.PieceH, "p=%d", tc.p)
		assert.Equal(t, tc.piece, g.PieceW, "p=%d", tc.p)
		assert.Equal(t, tc.top, g.Top, "p=%d", tc.p)
		assert.Equal(t, tc.top, g.Left, "p=%d", tc.p)
		assert.Equal(t, tc.p*tc.piece, g.CropH())
	}
}

func TestNewGridCropSide(t *testing.T) {
	for _, tc := range []struct {
		p, crop, piece, top int
	}{
		{3, 24, 8, 2}, {3, 27, 9, 0}, {3, 21, 7, 3}, {2, 28, 14, 0}, {4, 24, 6, 2}, {6, 24, 4, 2}, {1, 1, 1, 13},
	} {
		g, err := NewGridCrop(1, 28, 28, tc.p, tc.crop)
		require.NoError(t, err)
		assert.Equal(t, tc.piece, g.PieceH, "%+v", tc)
		assert.Equal(t, tc.piece, g.PieceW, "%+v", tc)
		assert.Equal(t, tc.top, g.Top, "%+v", tc)
		assert.Equal(t, tc.top, g.Left, "%+v", tc)
		assert.Equal(t, tc.crop, g.CropH(), "%+v", tc)
		assert.Equal(t, tc.crop, g.CropW(), "%+v", tc)
	}
	// Crop 0 is NewGrid's crop, and naming that crop gives the same grid.
	for _, p := range []int{2, 3, 4, 5, 6} {
		want, err := NewGrid(1, 28, 28, p)
		require.NoError(t, err)
		g, err := NewGridCrop(1, 28, 28, p, 0)
		require.NoError(t, err)
		assert.Equal(t, want, g)
		g, err = NewGridCrop(1, 28, 28, p, want.CropH())
		require.NoError(t, err)
		assert.Equal(t, want, g)
	}
	// A non-square image is cropped to a square.
	g, err := NewGridCrop(3, 20, 30, 2, 16)
	require.NoError(t, err)
	assert.Equal(t, Grid{P: 2, Channels: 3, Height: 20, Width: 30, PieceH: 8, PieceW: 8, Top: 2, Left: 7}, g)
	for _, tc := range []struct{ h, w, p, crop int }{
		{28, 28, 3, -3}, {28, 28, 3, 25}, {28, 28, 3, 30}, {20, 30, 2, 22}, {28, 28, 5, 24},
	} {
		_, err := NewGridCrop(1, tc.h, tc.w, tc.p, tc.crop)
		assert.Error(t, err, "%+v", tc)
	}
}

func TestOutside(t *testing.T) {
	// A 6 × 6 image cropped to its centred 4 × 4 square keeps rows and
	// columns 1 to 4.
	g, err := NewGridCrop(2, 6, 6, 2, 4)
	require.NoError(t, err)
	img := make([]float64, g.ImageSize())
	for c := range 2 {
		for y := range 6 {
			for x := range 6 {
				img[(c*6+y)*6+x] = float64(1 + c*100 + y*6 + x)
			}
		}
	}
	var want float64
	for c := range 2 {
		for y := range 6 {
			for x := range 6 {
				if y < 1 || y > 4 || x < 1 || x > 4 {
					want += float64(1 + c*100 + y*6 + x)
				}
			}
		}
	}
	got, err := g.Outside(img)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	// Negative pixels count by their size; an uncropped grid cuts nothing.
	img[0] = -img[0]
	got, err = g.Outside(img)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	full, err := NewGrid(2, 6, 6, 2)
	require.NoError(t, err)
	got, err = full.Outside(img)
	require.NoError(t, err)
	assert.Zero(t, got)
	_, err = g.Outside(img[1:])
	assert.Error(t, err)
}

func TestNewGridErrors(t *testing.T) {
	for _, tc := range []struct{ c, h, w, p int }{
		{1, 28, 28, 0}, {1, 28, 28, -2}, {1, 28, 28, 29}, {0, 28, 28, 2}, {1, 0, 28, 2}, {1, 28, 3, 4},
	} {
		_, err := NewGrid(tc.c, tc.h, tc.w, tc.p)
		assert.ErrorContains(t, err, "jigsaw: NewGrid: ", "%+v", tc)
		// The errors name the function called.
		_, err = NewGridCrop(tc.c, tc.h, tc.w, tc.p, 0)
		assert.ErrorContains(t, err, "jigsaw: NewGridCrop: ", "%+v", tc)
	}
	_, err := NewGridCrop(1, 28, 28, 3, 25)
	assert.EqualError(t, err, "jigsaw: NewGridCrop: crop 25 is not a multiple of 3 pieces per side")
}

func TestCutAssembleRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct{ c, h, w, p, crop int }{
		{1, 28, 28, 2, 0}, {1, 28, 28, 3, 0}, {1, 28, 28, 5, 0}, {1, 28, 28, 6, 0}, {3, 10, 13, 3, 0}, {2, 5, 5, 5, 0},
		{1, 28, 28, 3, 24}, {3, 10, 13, 3, 6},
	} {
		g, err := NewGridCrop(tc.c, tc.h, tc.w, tc.p, tc.crop)
		require.NoError(t, err)
		img := randomImages(rng, 1, tc.c, tc.h, tc.w)
		pieces := make([]float64, g.N()*g.PieceSize())
		require.NoError(t, g.Cut(pieces, img))
		crop := make([]float64, g.Channels*g.CropH()*g.CropW())
		require.NoError(t, g.Assemble(crop, pieces))
		// Uncrop puts the crop back; pixels outside it are zero.
		full := g.Uncrop(crop)
		for c := range tc.c {
			for y := range tc.h {
				for x := range tc.w {
					i := (c*tc.h+y)*tc.w + x
					in := y >= g.Top && y < g.Top+g.CropH() && x >= g.Left && x < g.Left+g.CropW()
					if in {
						require.Equal(t, img[i], full[i], "%+v (%d,%d,%d)", tc, c, y, x)
					} else {
						require.Zero(t, full[i])
					}
				}
			}
		}
	}
}

func TestCutPieceLayout(t *testing.T) {
	// A 4 × 4 image with pixel value 10·y + x, cut 2 × 2: piece 1 is the top
	// right quadrant, row by row.
	g, err := NewGrid(1, 4, 4, 2)
	require.NoError(t, err)
	img := make([]float64, 16)
	for y := range 4 {
		for x := range 4 {
			img[y*4+x] = float64(10*y + x)
		}
	}
	pieces := make([]float64, 16)
	require.NoError(t, g.Cut(pieces, img))
	assert.Equal(t, []float64{2, 3, 12, 13}, pieces[4:8])
	assert.Equal(t, []float64{20, 21, 30, 31}, pieces[8:12])
}

func TestCutErrors(t *testing.T) {
	g, err := NewGrid(1, 4, 4, 2)
	require.NoError(t, err)
	dst := make([]float64, 16)
	assert.Error(t, g.Cut(dst, make([]float64, 15)), "wrong image size")
	assert.Error(t, g.Cut(make([]float64, 8), make([]float64, 16)), "wrong destination size")
	bad := make([]float64, 16)
	bad[5] = math.NaN()
	assert.ErrorContains(t, g.Cut(dst, bad), "NaN")
	bad[5] = math.Inf(1)
	assert.Error(t, g.Cut(dst, bad))
	_, err = MakePuzzles(g, bad, nil, rand.New(rand.NewPCG(1, 1)))
	assert.Error(t, err, "MakePuzzles passes on the bad pixel")
	_, err = MakePuzzles(g, make([]float64, 17), nil, rand.New(rand.NewPCG(1, 1)))
	assert.Error(t, err, "not a whole number of images")
	_, err = MakePuzzles(g, make([]float64, 32), []int{1}, rand.New(rand.NewPCG(1, 1)))
	assert.Error(t, err, "one label for two images")
}

func TestScrambleAndReconstruct(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	g, err := NewGrid(3, 12, 12, 4)
	require.NoError(t, err)
	imgs := randomImages(rng, 5, 3, 12, 12)
	z, err := MakePuzzles(g, imgs, nil, rng)
	require.NoError(t, err)
	ps := g.PieceSize()
	np := g.N() * ps
	for b, p := range z.Perms {
		// Scrambled row i is true piece p[i].
		for i, j := range p {
			assert.Equal(t, z.Pieces[b*np+j*ps:b*np+(j+1)*ps], z.Scrambled[b*np+i*ps:b*np+(i+1)*ps])
		}
	}
	// Reassembling with the true permutations gives the images back.
	recs, err := Reconstruct(z, z.Perms)
	require.NoError(t, err)
	for b, r := range recs {
		assert.Equal(t, imgs[b*g.ImageSize():(b+1)*g.ImageSize()], r)
	}
	assert.Error(t, g.Scramble(make([]float64, np), z.Pieces[:np], perm.Perm{0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}))
}

func TestReconstructErrors(t *testing.T) {
	g, err := NewGrid(1, 4, 4, 2)
	require.NoError(t, err)
	z, err := MakePuzzles(g, make([]float64, 32), nil, rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, err)
	_, err = Reconstruct(z, z.Perms[:1])
	assert.Error(t, err, "one prediction for two puzzles")
	_, err = Reconstruct(z, []perm.Perm{{0, 1, 2, 3}, {0, 0, 2, 3}})
	assert.Error(t, err, "not a permutation")
	_, err = Reconstruct(z, []perm.Perm{{0, 1, 2, 3}, {0, 1, 2}})
	assert.Error(t, err, "wrong length")
}
