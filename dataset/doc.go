// Package dataset reads image data sets into dense float64 tensors: the IDX
// files of MNIST and folders of PNG or JPEG pictures.
//
// # Layout
//
// An Images value holds N images of C channels and H×W pixels as one slice
// in row-major NCHW order: pixel (c, y, x) of image n is
//
//	Pixels[((n·C + c)·H + y)·W + x]
//
// with intensities scaled to [0, 1] (a byte b becomes b/255). This is the
// layout the convolutions of package nn read, so a minibatch is a contiguous
// copy of whole images (Images.Batch).
//
// # IDX
//
// IDX is the format of the MNIST distribution (LeCun, Cortes and Burges): a
// big-endian header, then the payload. The header is a magic number
// 0x0000TTDD, where TT is the element type (0x08 for unsigned bytes, the only
// type MNIST uses) and DD the number of dimensions, followed by DD uint32
// sizes. Label files are 0x00000801 with one dimension (N); image files are
// 0x00000803 with three (N, 28, 28). The readers accept the files raw or
// gzip-compressed, deciding by the first bytes rather than the file name,
// and report a short, corrupt or oversized file as an error naming the file
// and the byte offset (in the uncompressed stream) where it went wrong.
//
// # Validation split
//
// MNIST has 60,000 training and 10,000 test images. The standard practice,
// followed here, is to hold out the last 10,000 training images for
// validation (model selection, early stopping) and to touch the test set
// once, for the number that is reported:
//
//	train, test, err := dataset.LoadMNIST(dir)
//	fit, val, err := train.Split(50000)
package dataset
