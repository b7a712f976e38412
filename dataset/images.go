package dataset

import (
	"fmt"
	"math"
)

// Images is a set of N images of Channels×Height×Width pixels, stored in one
// row-major NCHW slice with values in [0, 1] (see the package doc).
type Images struct {
	N, Channels, Height, Width int

	// Pixels holds N·Channels·Height·Width values; image n starts at
	// n·Size().
	Pixels []float64

	// Labels holds one class per image, or is nil for unlabelled images.
	Labels []int
}

// Size returns the number of values in one image, Channels·Height·Width.
func (im *Images) Size() int { return im.Channels * im.Height * im.Width }

// Image returns the pixels of image n, aliasing Pixels. It panics if n is out
// of range, as indexing a slice does.
func (im *Images) Image(n int) []float64 {
	s := im.Size()
	return im.Pixels[n*s : (n+1)*s : (n+1)*s]
}

// Validate checks that the sizes are positive and consistent with Pixels and
// Labels and that every pixel is a number in [0, 1].
func (im *Images) Validate() error {
	if im == nil {
		return fmt.Errorf("dataset: Validate: nil Images")
	}
	if im.N < 0 || im.Channels < 1 || im.Height < 1 || im.Width < 1 {
		return fmt.Errorf("dataset: Validate: bad shape N=%d C=%d H=%d W=%d", im.N, im.Channels, im.Height, im.Width)
	}
	if want := im.N * im.Size(); len(im.Pixels) != want {
		return fmt.Errorf("dataset: Validate: %d pixels, want N·C·H·W = %d", len(im.Pixels), want)
	}
	if im.Labels != nil && len(im.Labels) != im.N {
		return fmt.Errorf("dataset: Validate: %d labels for %d images", len(im.Labels), im.N)
	}
	for i, v := range im.Pixels {
		if math.IsNaN(v) || v < 0 || v > 1 {
			n, r := i/im.Size(), i%im.Size()
			return fmt.Errorf("dataset: Validate: image %d value %d is %v, want a number in [0, 1]", n, r, v)
		}
	}
	return nil
}

// Batch copies the images idx[0], idx[1], … one after another into dst,
// growing it if it is too short, and returns dst[:len(idx)·Size()]. A
// training loop passes the same dst every step and allocates nothing. It
// panics if an index is out of range, as indexing a slice does.
func (im *Images) Batch(idx []int, dst []float64) []float64 {
	s := im.Size()
	n := len(idx) * s
	if cap(dst) < n {
		dst = make([]float64, n)
	}
	dst = dst[:n]
	for k, i := range idx {
		copy(dst[k*s:(k+1)*s], im.Image(i))
	}
	return dst
}

// BatchLabels returns the labels of images idx, appended to dst[:0], or nil
// when the images have no labels.
func (im *Images) BatchLabels(idx []int, dst []int) []int {
	if im.Labels == nil {
		return nil
	}
	dst = dst[:0]
	for _, i := range idx {
		dst = append(dst, im.Labels[i])
	}
	return dst
}

// Subset returns a new Images holding copies of images idx, in that order,
// with their labels. It panics if an index is out of range.
func (im *Images) Subset(idx []int) *Images {
	return &Images{
		N: len(idx), Channels: im.Channels, Height: im.Height, Width: im.Width,
		Pixels: im.Batch(idx, nil),
		Labels: im.BatchLabels(idx, nil),
	}
}

// Split returns the first nFirst images and the rest, sharing storage with
// im (no copy). For MNIST the usual validation split is Split(50000): the
// first 50,000 training images to fit, the last 10,000 to validate.
func (im *Images) Split(nFirst int) (first, rest *Images, err error) {
	if nFirst < 0 || nFirst > im.N {
		return nil, nil, fmt.Errorf("dataset: Split: nFirst %d out of range [0, %d]", nFirst, im.N)
	}
	s := im.Size()
	first = &Images{N: nFirst, Channels: im.Channels, Height: im.Height, Width: im.Width,
		Pixels: im.Pixels[: nFirst*s : nFirst*s]}
	rest = &Images{N: im.N - nFirst, Channels: im.Channels, Height: im.Height, Width: im.Width,
		Pixels: im.Pixels[nFirst*s:]}
	if im.Labels != nil {
		first.Labels = im.Labels[:nFirst:nFirst]
		rest.Labels = im.Labels[nFirst:]
	}
	return first, rest, nil
}
