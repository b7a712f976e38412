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
	"slices"

	"github.com/permlab/permlab/ad"
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

// MaxRelDiff compares a and b, which hold the entries of params one after
// the other (gradients or values). It returns the largest |a - b| over all
// entries, each divided by the largest |b| of its own parameter (left
// undivided where that parameter's b is all zeros). A NaN in either counts
// as an infinite difference, so a comparison against a tolerance fails on
// it.
func MaxRelDiff(params []*ad.Param, a, b []float64) float64 {
	worst, off := 0.0, 0
	for _, q := range params {
		m := q.Value.Size()
		bs := b[off : off+m]
		scale := 0.0
		if m > 0 {
			scale = math.Max(math.Abs(slices.Max(bs)), math.Abs(slices.Min(bs)))
		}
		for i, v := range a[off : off+m] {
			d := math.Abs(v - bs[i])
			if scale > 0 {
				d /= scale
			}
			if math.IsNaN(d) {
				d = math.Inf(1)
			}
			worst = math.Max(worst, d)
		}
		off += m
	}
	return worst
}
