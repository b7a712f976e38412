package jigsaw

import (
	"bytes"
	"image/png"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMontage(t *testing.T) {
	grey := Tile{Pix: []float64{0, 1, 0.5, 2}, Channels: 1, H: 2, W: 2}
	// CHW: the red plane, then green, then blue.
	rgb := Tile{Pix: []float64{1, 0, 0, 1, 0, 0}, Channels: 3, H: 1, W: 2}
	img, err := Montage([][]Tile{{grey, rgb}, {rgb}}, 3, 1)
	require.NoError(t, err)
	// Width: gap + 6 + gap + 6 + gap; height: gap + 6 + gap + 3 + gap.
	assert.Equal(t, 15, img.Bounds().Dx())
	assert.Equal(t, 12, img.Bounds().Dy())
	assert.Equal(t, uint8(0), img.RGBAAt(1, 1).R, "black pixel")
	assert.Equal(t, uint8(255), img.RGBAAt(4, 1).R, "white pixel")
	assert.Equal(t, uint8(128), img.RGBAAt(1, 4).G, "grey 0.5")
	assert.Equal(t, uint8(255), img.RGBAAt(4, 4).B, "2 is clamped to 1")
	c := img.RGBAAt(8, 1)
	assert.Equal(t, [3]uint8{255, 0, 0}, [3]uint8{c.R, c.G, c.B}, "red")
	c = img.RGBAAt(11, 1)
	assert.Equal(t, [3]uint8{0, 255, 0}, [3]uint8{c.R, c.G, c.B}, "green")
	var buf bytes.Buffer
	require.NoError(t, WritePNG(&buf, [][]Tile{{grey}}, 2, 0))
	_, err = png.Decode(&buf)
	require.NoError(t, err)

	_, err = Montage([][]Tile{{{Pix: []float64{1}, Channels: 2, H: 1, W: 1}}}, 1, 0)
	assert.Error(t, err, "two channels")
	_, err = Montage([][]Tile{{{Pix: []float64{1, 2}, Channels: 1, H: 1, W: 1}}}, 1, 0)
	assert.Error(t, err, "wrong size")
	_, err = Montage(nil, 0, 0)
	assert.Error(t, err, "scale 0")
}
