package nn

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/permlab/permlab/ad"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testNet returns a small convolutional network whose weights depend on
// seed.
func testNet(t *testing.T, seed uint64) Sequential {
	rng := rand.New(rand.NewPCG(seed, 1))
	conv, err := NewConv2D(rng, "conv", 1, 4, 3, 1, 1, HeNormal)
	require.NoError(t, err)
	fc, err := NewDense(rng, "fc", 4*3*3, 5, GlorotUniform)
	require.NoError(t, err)
	// Non-zero biases, so that a round trip that dropped them would show.
	for i := range conv.B.Value.Data {
		conv.B.Value.Data[i] = rng.NormFloat64()
	}
	for i := range fc.B.Value.Data {
		fc.B.Value.Data[i] = rng.NormFloat64()
	}
	return Sequential{conv, ReLU{}, MaxPool2D{Size: 2}, Flatten{}, fc}
}

func forward(net Sequential, x *ad.Tensor) []float64 {
	tp := ad.NewTape()
	return append([]float64(nil), net.Forward(tp, tp.Const(x)).Value()...)
}

func TestSaveLoadRoundTrip(t *testing.T) {
	src, dst := testNet(t, 1), testNet(t, 2)
	x := randTensor(rand.New(rand.NewPCG(9, 9)), 3, 1, 6, 6)
	require.NotEqual(t, forward(src, x), forward(dst, x))

	var buf bytes.Buffer
	require.NoError(t, Save(&buf, src.Params()))
	require.NoError(t, Load(bytes.NewReader(buf.Bytes()), dst.Params()))
	assert.Equal(t, forward(src, x), forward(dst, x))

	// Order in the file does not matter; names do.
	ps := src.Params()
	rev := []*ad.Param{ps[3], ps[2], ps[1], ps[0]}
	buf.Reset()
	require.NoError(t, Save(&buf, rev))
	other := testNet(t, 3)
	require.NoError(t, Load(&buf, other.Params()))
	assert.Equal(t, forward(src, x), forward(other, x))
}

func TestSaveFileLoadFile(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "net.plnn")
	src, dst := testNet(t, 1), testNet(t, 2)
	require.NoError(t, SaveFile(name, src.Params()))
	// Overwrite atomically: no temporary files are left behind.
	require.NoError(t, SaveFile(name, src.Params()))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.NoError(t, LoadFile(name, dst.Params()))
	x := randTensor(rand.New(rand.NewPCG(9, 9)), 2, 1, 6, 6)
	assert.Equal(t, forward(src, x), forward(dst, x))

	assert.Error(t, LoadFile(filepath.Join(dir, "missing"), dst.Params()))
	assert.Error(t, SaveFile(filepath.Join(dir, "no", "such", "dir"), src.Params()))
}

func TestLoadMismatch(t *testing.T) {
	a := ad.NewParam("a", ad.Zeros(2, 3))
	b := ad.NewParam("b", ad.Zeros(4))
	var buf bytes.Buffer
	require.NoError(t, Save(&buf, []*ad.Param{a, b}))
	file := buf.Bytes()
	for _, c := range []struct {
		params []*ad.Param
		msg    string
	}{
		{[]*ad.Param{a, ad.NewParam("b", ad.Zeros(2, 2))}, `param "b" has shape [4] in the file, [2 2] in the model`},
		{[]*ad.Param{a}, `file holds param "b", which the model lacks`},
		{[]*ad.Param{a, b, ad.NewParam("c", ad.Zeros(1))}, `param "c" is missing from the file`},
		{[]*ad.Param{a, ad.NewParam("B", ad.Zeros(4))}, `file holds param "b"`},
		{[]*ad.Param{a, a}, `duplicate param name "a"`},
	} {
		before := append([]float64(nil), c.params[0].Value.Data...)
		err := Load(bytes.NewReader(file), c.params)
		assert.ErrorContains(t, err, c.msg)
		assert.Equal(t, before, c.params[0].Value.Data, "a failed Load must not change values")
	}
	assert.ErrorContains(t, Save(&buf, []*ad.Param{a, a}), `duplicate param name "a"`)
	assert.ErrorContains(t, Save(&buf, []*ad.Param{nil}), "param 0 is nil")
}

func TestLoadCorrupt(t *testing.T) {
	net := testNet(t, 1)
	var buf bytes.Buffer
	require.NoError(t, Save(&buf, net.Params()))
	file := buf.Bytes()
	target := testNet(t, 2).Params()

	// Every truncation is an error.
	for n := range len(file) {
		err := Load(bytes.NewReader(file[:n]), target)
		require.Error(t, err, "truncated to %d bytes", n)
		require.True(t, errors.Is(err, ErrCorrupt), "truncated to %d bytes: %v", n, err)
	}
	// Every single-bit flip is an error (CRC-32 detects all of them).
	rng := rand.New(rand.NewPCG(5, 5))
	bad := make([]byte, len(file))
	for range 2000 {
		copy(bad, file)
		i := rng.IntN(len(bad))
		bad[i] ^= 1 << rng.IntN(8)
		err := Load(bytes.NewReader(bad), target)
		require.ErrorIs(t, err, ErrCorrupt, "bit flip in byte %d", i)
	}
	copy(bad, file)
	bad[0] = 'X'
	assert.ErrorContains(t, Load(bytes.NewReader(bad), target), "bad magic")
	copy(bad, file)
	bad[4] = 2
	assert.ErrorContains(t, Load(bytes.NewReader(bad), target), "unsupported version 2")
	// Trailing garbage after a valid file is caught by the checksum.
	assert.ErrorIs(t, Load(bytes.NewReader(append(append([]byte(nil), file...), 0)), target), ErrCorrupt)
}

// FuzzLoad checks that Load never panics, whatever the bytes.
func FuzzLoad(f *testing.F) {
	var buf bytes.Buffer
	p := ad.NewParam("w", ad.Zeros(2, 2))
	if err := Save(&buf, []*ad.Param{p}); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes()[:buf.Len()-4])
	f.Add([]byte("PLNN"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = Load(bytes.NewReader(data), []*ad.Param{p})
		// With a valid checksum appended, the fuzzer reaches the parser.
		sum := binary.LittleEndian.AppendUint32(append([]byte(nil), data...), crc32.ChecksumIEEE(data))
		_ = Load(bytes.NewReader(sum), []*ad.Param{p})
	})
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestSaveWriteError(t *testing.T) {
	err := Save(failWriter{}, testNet(t, 1).Params())
	assert.ErrorContains(t, err, "nn: Save: disk full")
}
