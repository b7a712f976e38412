// Package fuzzseed builds the seed corpora of the fuzz tests that load
// saved files: a file and the damaged copies of it that a loader must
// refuse without panicking.
package fuzzseed

import (
	"bytes"
	"encoding/gob"
	"slices"
	"testing"
)

// Gob returns the gob encoding of v.
func Gob(tb testing.TB, v any) []byte {
	tb.Helper()
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(v); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// AddDamaged adds file, and copies of it truncated, with a byte changed,
// and with bytes appended, to the corpus of f.
func AddDamaged(f *testing.F, file []byte) {
	f.Add(file)
	f.Add(file[:len(file)/2])
	f.Add(file[:len(file)-1])
	flipped := slices.Clone(file)
	flipped[len(flipped)/3] ^= 0x21
	f.Add(flipped)
	f.Add(append(slices.Clone(file), 0, 0xff, 7))
}
