package dataset

import (
	"bytes"
	"compress/gzip"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permlab/permlab/internal/longtest"
)

// idxBytes returns an IDX file with the given magic, sizes and payload.
func idxBytes(magic uint32, dims []int, payload []byte) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, magic)
	for _, d := range dims {
		binary.Write(&b, binary.BigEndian, uint32(d))
	}
	b.Write(payload)
	return b.Bytes()
}

func gzipBytes(t testing.TB, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func writeFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// tinyImages returns n images of h×w bytes, pixel k of the file being
// byte(7k+3), and their IDX file.
func tinyImages(n, h, w int) ([]byte, []byte) {
	payload := make([]byte, n*h*w)
	for k := range payload {
		payload[k] = byte(7*k + 3)
	}
	return payload, idxBytes(magicImages, []int{n, h, w}, payload)
}

func TestReadIDX(t *testing.T) {
	payload, imgFile := tinyImages(3, 4, 5)
	labels := []byte{0, 9, 4}
	labFile := idxBytes(magicLabels, []int{3}, labels)
	for _, gz := range []bool{false, true} {
		dir := t.TempDir()
		img, lab := imgFile, labFile
		if gz {
			img, lab = gzipBytes(t, img), gzipBytes(t, lab)
		}
		// The names carry no hint: compression is found from the content.
		im, err := ReadIDXImages(writeFile(t, dir, "a", img))
		if err != nil {
			t.Fatalf("gzip=%v: %v", gz, err)
		}
		if im.N != 3 || im.Channels != 1 || im.Height != 4 || im.Width != 5 || im.Labels != nil {
			t.Fatalf("gzip=%v: shape N=%d C=%d H=%d W=%d labels=%v", gz, im.N, im.Channels, im.Height, im.Width, im.Labels)
		}
		for k, b := range payload {
			if im.Pixels[k] != float64(b)/255 {
				t.Fatalf("gzip=%v: pixel %d = %v, want %v", gz, k, im.Pixels[k], float64(b)/255)
			}
		}
		if err := im.Validate(); err != nil {
			t.Fatal(err)
		}
		got, err := ReadIDXLabels(writeFile(t, dir, "b", lab))
		if err != nil {
			t.Fatalf("gzip=%v: %v", gz, err)
		}
		if len(got) != 3 || got[0] != 0 || got[1] != 9 || got[2] != 4 {
			t.Fatalf("gzip=%v: labels %v, want [0 9 4]", gz, got)
		}
	}
}

func TestReadIDXErrors(t *testing.T) {
	_, img := tinyImages(3, 4, 5) // 16 header bytes + 60 pixels
	gz := gzipBytes(t, img)
	corrupt := bytes.Clone(gz)
	corrupt[len(corrupt)-8] ^= 0xff // the CRC-32 of the gzip trailer
	huge := idxBytes(magicImages, []int{1 << 30, 1 << 10, 1 << 10}, nil)
	// 2³² · (2³² − 1) overflows an int64: the bound must be checked
	// before multiplying.
	overflow := idxBytes(magicImages, []int{1 << 16, 1 << 16, 1<<32 - 1}, nil)
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "truncated at offset 0: want 4 bytes of header"},
		{"short-header", img[:10], "truncated at offset 10: want 16 bytes of header"},
		{"short-payload", img[:50], "truncated at offset 50: want 60 bytes of pixels"},
		{"short-gzip-payload", gzipBytes(t, img[:50]), "truncated at offset 50: want 60 bytes of pixels"},
		{"cut-gzip", gz[:len(gz)-4], "short-gzip"},
		{"crc", corrupt, "corrupt at offset 76"},
		{"trailing", append(bytes.Clone(img), 0), "unexpected data after the payload at offset 76"},
		{"magic", idxBytes(magicLabels, []int{60}, img[16:]), "bad magic number 0x00000801 at offset 0: want 0x00000803"},
		{"huge", huge, "header at offset 8 announces more than"},
		{"overflow", overflow, "header at offset 12 announces more than"},
		{"gzip-header", []byte{0x1f, 0x8b, 0, 0}, "corrupt gzip header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), tc.name, tc.data)
			_, err := ReadIDXImages(p)
			if err == nil {
				t.Fatal("no error")
			}
			want := tc.want
			if tc.name == "cut-gzip" {
				want = "truncated at offset 76" // the payload is all there, the trailer is not
			}
			if !strings.Contains(err.Error(), tc.name) || !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q, want the file name and %q", err, want)
			}
		})
	}
	if _, err := ReadIDXLabels(filepath.Join(t.TempDir(), "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v, want fs.ErrNotExist", err)
	}
}

// writeMNIST writes a tiny MNIST-like folder: nTrain and nTest 2×3 images
// with labels k mod 10.
func writeMNIST(t testing.TB, dir string, nTrain, nTest int, gz bool) {
	t.Helper()
	for i, n := range []int{nTrain, nTest} {
		_, img := tinyImages(n, 2, 3)
		lab := make([]byte, n)
		for k := range lab {
			lab[k] = byte(k % 10)
		}
		files := [][]byte{img, idxBytes(magicLabels, []int{n}, lab)}
		for j, data := range files {
			name := MNISTFiles[2*i+j]
			if gz {
				data = gzipBytes(t, data)
			} else {
				name = strings.TrimSuffix(name, ".gz")
			}
			writeFile(t, dir, name, data)
		}
	}
}

func TestLoadMNIST(t *testing.T) {
	for _, gz := range []bool{false, true} {
		dir := t.TempDir()
		writeMNIST(t, dir, 12, 5, gz)
		train, test, err := LoadMNIST(dir)
		if err != nil {
			t.Fatal(err)
		}
		if train.N != 12 || test.N != 5 || len(train.Labels) != 12 || train.Labels[11] != 1 || test.Labels[4] != 4 {
			t.Fatalf("gzip=%v: train %d images %v, test %d images %v", gz, train.N, train.Labels, test.N, test.Labels)
		}
	}
}

func TestLoadMNISTErrors(t *testing.T) {
	t.Run("no-folder", func(t *testing.T) {
		for _, dir := range []string{"", filepath.Join(t.TempDir(), "absent")} {
			_, _, err := LoadMNIST(dir)
			if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "-mnist DIR") {
				t.Fatalf("LoadMNIST(%q): %v, want fs.ErrNotExist and how to get the files", dir, err)
			}
		}
	})
	t.Run("missing-file", func(t *testing.T) {
		dir := t.TempDir()
		writeMNIST(t, dir, 12, 5, true)
		os.Remove(filepath.Join(dir, MNISTFiles[3]))
		_, _, err := LoadMNIST(dir)
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), MNISTFiles[3]) {
			t.Fatalf("%v, want fs.ErrNotExist naming %s", err, MNISTFiles[3])
		}
	})
	t.Run("count-mismatch", func(t *testing.T) {
		dir := t.TempDir()
		writeMNIST(t, dir, 12, 5, true)
		writeFile(t, dir, MNISTFiles[1], idxBytes(magicLabels, []int{11}, make([]byte, 11)))
		_, _, err := LoadMNIST(dir)
		if err == nil || !strings.Contains(err.Error(), "has 11 labels but train-images-idx3-ubyte.gz has 12 images") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("label-range", func(t *testing.T) {
		dir := t.TempDir()
		writeMNIST(t, dir, 12, 5, true)
		writeFile(t, dir, MNISTFiles[3], idxBytes(magicLabels, []int{5}, []byte{1, 2, 10, 3, 4}))
		_, _, err := LoadMNIST(dir)
		if err == nil || !strings.Contains(err.Error(), "t10k-labels-idx1-ubyte.gz: label 2 at offset 10 is 10, want 0..9") {
			t.Fatalf("error %v", err)
		}
	})
}

// mnistDir is where the project keeps MNIST, relative to this package.
const mnistDir = "../../shared/data/mnist"

// TestRealMNIST checks the real files when present: sizes, the label
// histogram (known from the MNIST distribution), and, by writing the parsed
// values back as IDX bytes, the MD5s of the uncompressed files given in
// shared/data/README.md, which proves the reader lost nothing.
func TestRealMNIST(t *testing.T) {
	longtest.Skip(t, "reads all 70,000 MNIST images")
	if _, err := os.Stat(mnistDir); err != nil {
		t.Skipf("MNIST not found at %s (see shared/data/README.md): %v", mnistDir, err)
	}
	train, test, err := LoadMNIST(mnistDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name               string
		im                 *Images
		n                  int
		hist               [10]int
		imageMD5, labelMD5 string
	}{
		{"train", train, 60000, [10]int{5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949},
			"6bbc9ace898e44ae57da46a324031adb", "a25bea736e30d166cdddb491f175f624"},
		{"test", test, 10000, [10]int{980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009},
			"2646ac647ad5339dbf082846283269ea", "27ae3e4e09519cfbb04c329615203637"},
	} {
		im := tc.im
		if im.N != tc.n || im.Channels != 1 || im.Height != 28 || im.Width != 28 {
			t.Fatalf("%s: N=%d C=%d H=%d W=%d, want %d×1×28×28", tc.name, im.N, im.Channels, im.Height, im.Width, tc.n)
		}
		if err := im.Validate(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var hist [10]int
		lab := make([]byte, im.N)
		for i, l := range im.Labels {
			hist[l]++
			lab[i] = byte(l)
		}
		if hist != tc.hist {
			t.Errorf("%s: label histogram %v, want %v", tc.name, hist, tc.hist)
		}
		pix := make([]byte, len(im.Pixels))
		for i, v := range im.Pixels {
			pix[i] = byte(math.Round(v * 255))
		}
		for _, f := range []struct {
			kind, want string
			data       []byte
		}{
			{"images", tc.imageMD5, idxBytes(magicImages, []int{im.N, 28, 28}, pix)},
			{"labels", tc.labelMD5, idxBytes(magicLabels, []int{im.N}, lab)},
		} {
			sum := md5.Sum(f.data)
			if got := hex.EncodeToString(sum[:]); got != f.want {
				t.Errorf("%s %s: MD5 of the re-encoded file %s, want %s", tc.name, f.kind, got, f.want)
			}
		}
	}
}

// FuzzReadIDX checks that no input makes the readers panic, and that what
// they accept is self-consistent.
func FuzzReadIDX(f *testing.F) {
	_, img := tinyImages(2, 3, 3)
	f.Add(img)
	f.Add(gzipBytes(f, img))
	f.Add(idxBytes(magicLabels, []int{3}, []byte{1, 2, 3}))
	f.Add(img[:11])
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := writeFile(t, dir, "fuzz", data)
		if im, err := ReadIDXImages(p); err == nil {
			if err := im.Validate(); err != nil {
				t.Fatalf("accepted images fail Validate: %v", err)
			}
		}
		if lab, err := ReadIDXLabels(p); err == nil {
			for _, l := range lab {
				if l < 0 || l > 255 {
					t.Fatalf("label %d is not a byte", l)
				}
			}
		}
	})
}
