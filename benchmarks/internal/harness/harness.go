// Package harness holds what the benchmark programs under benchmarks/ share
// for comparing permlab with a Python reference in the same run: raw float64
// files to hand data to the reference, a reference process in serve mode
// spoken to in JSON lines, and the timing protocol (wall and CPU time per
// step, interleaved runs of the two sides, medians, the machine's load).
package harness

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
)

// WriteF64 writes data to path as raw little-endian float64 values, the
// format the Python references read with numpy.fromfile.
func WriteF64(path string, data []float64) error {
	buf := make([]byte, 8*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint64(buf[8*i:], math.Float64bits(v))
	}
	return os.WriteFile(path, buf, 0o644)
}

// ReadF64 reads a file of raw little-endian float64 values. If want is
// non-negative the file must hold exactly want values; otherwise it may
// hold any number of them.
func ReadF64(path string, want int) ([]float64, error) {
	buf, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	switch {
	case want >= 0 && len(buf) != 8*want:
		return nil, fmt.Errorf("%s: %d bytes, want %d float64", path, len(buf), want)
	case len(buf)%8 != 0:
		return nil, fmt.Errorf("%s: size %d is not a multiple of 8", path, len(buf))
	}
	out := make([]float64, len(buf)/8)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(buf[8*i:]))
	}
	return out, nil
}
