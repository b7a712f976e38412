package dataset

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// FuzzLoadImageFolder checks that no picture makes LoadImageFolder panic or
// allocate what its header declares before checking it, and that what it
// accepts is one valid image of the size asked with values in [0, 1].
func FuzzLoadImageFolder(f *testing.F) {
	encode := func(img image.Image, asJPEG bool) []byte {
		var b bytes.Buffer
		var err error
		if asJPEG {
			err = jpeg.Encode(&b, img, &jpeg.Options{Quality: 90})
		} else {
			err = png.Encode(&b, img)
		}
		if err != nil {
			f.Fatal(err)
		}
		return b.Bytes()
	}
	rgba := image.NewNRGBA(image.Rect(0, 0, 6, 4))
	for i := range rgba.Pix {
		rgba.Pix[i] = uint8(37 * i)
	}
	gray16 := image.NewGray16(image.Rect(0, 0, 3, 5))
	for i := range gray16.Pix {
		gray16.Pix[i] = uint8(91 * i)
	}
	pal := image.NewPaletted(image.Rect(0, 0, 4, 4), color.Palette{color.Black, color.White, color.Transparent})
	for i := range pal.Pix {
		pal.Pix[i] = uint8(i % 3)
	}
	pngFile, jpegFile := encode(rgba, false), encode(rgba, true)
	for _, b := range [][]byte{pngFile, jpegFile, encode(gray16, false), encode(pal, false), encode(gray16, true)} {
		f.Add(b, uint8(3), false)
		f.Add(b, uint8(1), true)
		f.Add(b[:len(b)/2], uint8(4), false) // truncated
		flipped := slices.Clone(b)
		flipped[len(flipped)*2/3] ^= 0x10
		f.Add(flipped, uint8(2), true) // damaged
	}
	// A real picture of this repository.
	if b, err := os.ReadFile(filepath.Join("..", "models", "vae", "results", "figures", "concrete_seed1_recon.png")); err == nil {
		f.Add(b, uint8(8), false)
	}
	// Headers that declare huge pictures: a PNG whose IHDR (with a valid
	// checksum) says 65536 × 65536, and a JPEG whose frame says 65535 ×
	// 65535.
	huge := slices.Clone(pngFile)
	binary.BigEndian.PutUint32(huge[16:], 1<<16)
	binary.BigEndian.PutUint32(huge[20:], 1<<16)
	binary.BigEndian.PutUint32(huge[29:], crc32.ChecksumIEEE(huge[12:29]))
	f.Add(huge, uint8(2), false)
	if i := bytes.Index(jpegFile, []byte{0xff, 0xc0}); i >= 0 {
		hugeJPEG := slices.Clone(jpegFile)
		binary.BigEndian.PutUint16(hugeJPEG[i+5:], 0xffff)
		binary.BigEndian.PutUint16(hugeJPEG[i+7:], 0xffff)
		f.Add(hugeJPEG, uint8(2), false)
	}
	f.Add([]byte("not a picture"), uint8(2), false)
	f.Add([]byte("\x89PNG\r\n\x1a\n"), uint8(2), false)
	f.Add([]byte{0xff, 0xd8, 0xff}, uint8(2), false)
	f.Add([]byte{}, uint8(0), false)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, size uint8, gray bool) {
		writeFile(t, dir, "picture.png", data)
		s := int(size%16) + 1
		im, err := LoadImageFolder(dir, s, gray)
		if err != nil {
			return
		}
		ch := 3
		if gray {
			ch = 1
		}
		if im.N != 1 || im.Channels != ch || im.Height != s || im.Width != s {
			t.Fatalf("N=%d C=%d H=%d W=%d, want 1, %d, %d, %d", im.N, im.Channels, im.Height, im.Width, ch, s, s)
		}
		if err := im.Validate(); err != nil {
			t.Fatal(err)
		}
		for i, v := range im.Pixels {
			if !(v >= 0 && v <= 1) {
				t.Fatalf("pixel value %d is %v", i, v)
			}
		}
	})
}
