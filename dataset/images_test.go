package dataset

import (
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// ramp returns n images of c×h×w with value (v mod 97)/96 at flat index v,
// labelled by index.
func ramp(n, c, h, w int) *Images {
	im := &Images{N: n, Channels: c, Height: h, Width: w, Pixels: make([]float64, n*c*h*w), Labels: make([]int, n)}
	for i := range im.Pixels {
		im.Pixels[i] = float64(i%97) / 96
	}
	for i := range im.Labels {
		im.Labels[i] = i
	}
	return im
}

func TestBatchSubsetSplit(t *testing.T) {
	im := ramp(5, 2, 3, 2)
	s := im.Size()
	idx := []int{4, 0, 4}
	dst := im.Batch(idx, make([]float64, 1))
	if len(dst) != 3*s {
		t.Fatalf("Batch: %d values, want %d", len(dst), 3*s)
	}
	for k, i := range idx {
		if !slices.Equal(dst[k*s:(k+1)*s], im.Pixels[i*s:(i+1)*s]) {
			t.Fatalf("Batch: image %d is not image %d", k, i)
		}
	}
	if again := im.Batch(idx[:1], dst); &again[0] != &dst[0] {
		t.Error("Batch: a long enough dst was not reused")
	}
	sub := im.Subset(idx)
	if sub.N != 3 || !slices.Equal(sub.Labels, []int{4, 0, 4}) || !slices.Equal(sub.Pixels, im.Batch(idx, nil)) {
		t.Fatalf("Subset: N=%d labels %v", sub.N, sub.Labels)
	}
	sub.Pixels[0] = -1
	if im.Pixels[4*s] == -1 {
		t.Error("Subset shares storage")
	}
	a, b, err := im.Split(2)
	if err != nil {
		t.Fatal(err)
	}
	if a.N != 2 || b.N != 3 || !slices.Equal(a.Labels, []int{0, 1}) || !slices.Equal(b.Labels, []int{2, 3, 4}) ||
		!slices.Equal(b.Pixels, im.Pixels[2*s:]) || a.Validate() != nil || b.Validate() != nil {
		t.Fatalf("Split(2): %d + %d images, labels %v %v", a.N, b.N, a.Labels, b.Labels)
	}
	if _, _, err := im.Split(6); err == nil {
		t.Error("Split(6) of 5 images: no error")
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Images)
		want string
	}{
		{"nan", func(im *Images) { im.Pixels[7] = math.NaN() }, "image 0 value 7 is NaN"},
		{"range", func(im *Images) { im.Pixels[13] = 1.5 }, "image 1 value 1 is 1.5"},
		{"negative", func(im *Images) { im.Pixels[0] = -0.1 }, "is -0.1"},
		{"short", func(im *Images) { im.Pixels = im.Pixels[1:] }, "23 pixels, want N·C·H·W = 24"},
		{"labels", func(im *Images) { im.Labels = im.Labels[:1] }, "1 labels for 2 images"},
		{"shape", func(im *Images) { im.Width = 0 }, "bad shape"},
	} {
		im := ramp(2, 1, 3, 4)
		if err := im.Validate(); err != nil {
			t.Fatal(err)
		}
		tc.edit(im)
		if err := im.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

// writePicture saves img as PNG or JPEG (by the extension of name).
func writePicture(t *testing.T, dir, name string, img image.Image) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if strings.HasSuffix(name, ".png") {
		err = png.Encode(f, img)
	} else {
		err = jpeg.Encode(f, img, &jpeg.Options{Quality: 100})
	}
	if err != nil {
		t.Fatal(err)
	}
}

func TestLoadImageFolder(t *testing.T) {
	dir := t.TempDir()
	// b.png: 6×4 RGB; its central 4×4 square (columns 1..4) has value
	// 10(x+4y) in red, 255 in green, 0 in blue.
	b := image.NewRGBA(image.Rect(0, 0, 6, 4))
	for y := range 4 {
		for x := range 6 {
			b.Set(x, y, color.RGBA{uint8(10 * ((x - 1) + 4*y)), 255, 0, 255})
		}
	}
	writePicture(t, dir, "b.png", b)
	// a.jpg: a flat gray 8×8 picture, sorted first.
	a := image.NewGray(image.Rect(0, 0, 8, 8))
	for i := range a.Pix {
		a.Pix[i] = 128
	}
	writePicture(t, dir, "a.jpg", a)
	writeFile(t, dir, "notes.txt", []byte("not a picture"))

	im, err := LoadImageFolder(dir, 2, false)
	if err != nil {
		t.Fatal(err)
	}
	if im.N != 2 || im.Channels != 3 || im.Height != 2 || im.Width != 2 || im.Labels != nil {
		t.Fatalf("N=%d C=%d H=%d W=%d", im.N, im.Channels, im.Height, im.Width)
	}
	if err := im.Validate(); err != nil {
		t.Fatal(err)
	}
	const jpegTol = 2.0 / 255 // JPEG at quality 100 keeps a flat gray within a level or two
	for _, v := range im.Image(0) {
		if math.Abs(v-128.0/255) > jpegTol {
			t.Fatalf("a.jpg: value %v, want %v", v, 128.0/255)
		}
	}
	// Each output pixel of b is the mean of a 2×2 block of the crop: red
	// 10(x+4y) averaged over x∈{2j,2j+1}, y∈{2i,2i+1} is 10(2j+0.5+4(2i+0.5)).
	got := im.Image(1)
	for i := range 2 {
		for j := range 2 {
			wantR := 10 * (2*float64(j) + 0.5 + 4*(2*float64(i)+0.5)) / 255
			for c, want := range []float64{wantR, 1, 0} {
				if v := got[c*4+i*2+j]; math.Abs(v-want) > 1e-12 {
					t.Errorf("b.png channel %d pixel (%d,%d) = %v, want %v", c, i, j, v, want)
				}
			}
		}
	}

	gray, err := LoadImageFolder(dir, 4, true)
	if err != nil {
		t.Fatal(err)
	}
	if gray.Channels != 1 || gray.Height != 4 {
		t.Fatalf("gray: C=%d H=%d", gray.Channels, gray.Height)
	}
	// At size 4 the crop of b is taken as is: Y = 0.299 R + 0.587 G.
	for y := range 4 {
		for x := range 4 {
			want := (0.299*float64(10*(x+4*y)) + 0.587*255) / 255
			if v := gray.Image(1)[y*4+x]; math.Abs(v-want) > 1e-12 {
				t.Fatalf("gray b.png (%d,%d) = %v, want %v", y, x, v, want)
			}
		}
	}
}

func TestLoadImageFolderErrors(t *testing.T) {
	empty := t.TempDir()
	writeFile(t, empty, "readme.md", []byte("x"))
	if _, err := LoadImageFolder(empty, 8, false); err == nil || !strings.Contains(err.Error(), "no .png, .jpg or .jpeg files") {
		t.Errorf("empty folder: %v", err)
	}
	bad := t.TempDir()
	writeFile(t, bad, "broken.png", []byte("\x89PNG not really"))
	if _, err := LoadImageFolder(bad, 8, false); err == nil || !strings.Contains(err.Error(), "broken.png") {
		t.Errorf("unreadable picture: %v", err)
	}
	if _, err := LoadImageFolder(bad, 0, false); err == nil {
		t.Error("size 0: no error")
	}
	if _, err := LoadImageFolder(filepath.Join(bad, "absent"), 8, false); err == nil {
		t.Error("missing folder: no error")
	}
}

func TestAreaWeights(t *testing.T) {
	// Rows sum to 1 whether shrinking, enlarging or keeping the size.
	for _, c := range [][2]int{{7, 3}, {3, 7}, {5, 5}, {28, 10}} {
		a := areaWeights(c[0], c[1])
		for i := range c[1] {
			var sum float64
			for _, w := range a[i*c[0] : (i+1)*c[0]] {
				sum += w
			}
			if math.Abs(sum-1) > 1e-12 {
				t.Errorf("areaWeights(%d, %d): row %d sums to %v", c[0], c[1], i, sum)
			}
		}
	}
}
