package dataset

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// IDX magic numbers: 0x0000, the element type 0x08 (unsigned byte), and the
// number of dimensions.
const (
	magicLabels = 0x00000801
	magicImages = 0x00000803
)

// maxIDXBytes bounds the payload a header may announce (4 GiB), so that a
// corrupt header cannot make a reader allocate without limit.
const maxIDXBytes = 1 << 32

// idxReader reads an IDX stream and keeps the offset, in the uncompressed
// stream, for error messages.
type idxReader struct {
	name string // file name for messages
	r    io.Reader
	off  int64
}

// openIDX opens path and, if it starts with the gzip magic bytes 1f 8b,
// decompresses it on the fly.
func openIDX(path string) (*idxReader, io.Closer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("dataset: %w", err)
	}
	name := filepath.Base(path)
	br := bufio.NewReaderSize(f, 1<<16)
	head, err := br.Peek(2)
	if err != nil && !errors.Is(err, io.EOF) {
		f.Close()
		return nil, nil, fmt.Errorf("dataset: %s: %w", name, err)
	}
	x := &idxReader{name: name, r: br}
	if len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("dataset: %s: corrupt gzip header: %w", name, err)
		}
		x.r = zr
	}
	return x, f, nil
}

// read fills buf, reporting a short stream as truncation at the offset where
// it ended and any other failure (a bad gzip checksum) as corruption.
func (x *idxReader) read(buf []byte, what string, want int64) error {
	n, err := io.ReadFull(x.r, buf)
	x.off += int64(n)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("dataset: %s: truncated at offset %d: want %d bytes of %s", x.name, x.off, want, what)
	default:
		return fmt.Errorf("dataset: %s: corrupt at offset %d: %w", x.name, x.off, err)
	}
}

// header reads the magic number and the sizes, checking the magic against
// want.
func (x *idxReader) header(want uint32, kind string) ([]int, error) {
	var b [4]byte
	if err := x.read(b[:], "header", 4); err != nil {
		return nil, err
	}
	if m := binary.BigEndian.Uint32(b[:]); m != want {
		return nil, fmt.Errorf("dataset: %s: bad magic number 0x%08x at offset 0: want 0x%08x (IDX %s)", x.name, m, want, kind)
	}
	dims := make([]int, want&0xff)
	total := int64(1)
	for i := range dims {
		if err := x.read(b[:], "header", int64(4+4*len(dims))); err != nil {
			return nil, err
		}
		d := int64(binary.BigEndian.Uint32(b[:]))
		if d > 0 && total > maxIDXBytes/d {
			return nil, fmt.Errorf("dataset: %s: header at offset %d announces more than %d bytes", x.name, x.off-4, int64(maxIDXBytes))
		}
		total *= d
		dims[i] = int(d)
	}
	return dims, nil
}

// payload reads the n payload bytes in chunks, handing each to use, so that
// memory grows with the bytes actually present rather than with what the
// header claims; then it checks that the stream ends there.
func (x *idxReader) payload(n int64, what string, use func([]byte)) error {
	buf := make([]byte, min(n, 1<<20))
	for left := n; left > 0; {
		chunk := buf[:min(left, int64(len(buf)))]
		if err := x.read(chunk, what, n); err != nil {
			return err
		}
		left -= int64(len(chunk))
		use(chunk)
	}
	var b [1]byte
	switch k, err := x.r.Read(b[:]); {
	case k > 0:
		return fmt.Errorf("dataset: %s: unexpected data after the payload at offset %d", x.name, x.off)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("dataset: %s: truncated at offset %d: the gzip stream ends before its trailer", x.name, x.off)
	case err != nil && !errors.Is(err, io.EOF):
		return fmt.Errorf("dataset: %s: corrupt at offset %d: %w", x.name, x.off, err)
	}
	return nil
}

// ReadIDXLabels reads an IDX label file (magic 0x00000801, one dimension),
// raw or gzip-compressed, and returns its bytes as ints.
func ReadIDXLabels(path string) ([]int, error) {
	x, c, err := openIDX(path)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	dims, err := x.header(magicLabels, "labels")
	if err != nil {
		return nil, err
	}
	labels := make([]int, 0, min(dims[0], 1<<20))
	err = x.payload(int64(dims[0]), "labels", func(b []byte) {
		for _, v := range b {
			labels = append(labels, int(v))
		}
	})
	if err != nil {
		return nil, err
	}
	return labels, nil
}

// ReadIDXImages reads an IDX image file (magic 0x00000803, dimensions N, H,
// W), raw or gzip-compressed, into one-channel Images with pixel values b/255
// and no labels.
func ReadIDXImages(path string) (*Images, error) {
	x, c, err := openIDX(path)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	dims, err := x.header(magicImages, "images")
	if err != nil {
		return nil, err
	}
	n, h, w := dims[0], dims[1], dims[2]
	if h < 1 || w < 1 {
		return nil, fmt.Errorf("dataset: %s: image size %d×%d in the header, want both >= 1", x.name, h, w)
	}
	total := int64(n) * int64(h) * int64(w)
	pixels := make([]float64, 0, min(total, 1<<20))
	err = x.payload(total, "pixels", func(b []byte) {
		for _, v := range b {
			pixels = append(pixels, float64(v)/255)
		}
	})
	if err != nil {
		return nil, err
	}
	return &Images{N: n, Channels: 1, Height: h, Width: w, Pixels: pixels}, nil
}
