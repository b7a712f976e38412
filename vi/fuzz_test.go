package vi

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// FuzzReadCheckpoint checks that no checkpoint file makes Fit's resumption
// or the plateau replay of FitModel panic, and that a fit that accepts one
// goes on to a consistent result: one finite ELBO per step. (The checkpoint
// format is package train's Loop's, whose own fuzz target damages its
// fields one by one.)
func FuzzReadCheckpoint(f *testing.F) {
	dir := f.TempDir()
	// Checkpoints written by Fit itself, at its end and in its middle.
	var files [][]byte
	for _, steps := range []int{5, 3} {
		real := filepath.Join(dir, "real")
		os.Remove(real)
		g, err := NewNormal("z", 3, nil, 1, 2)
		if err != nil {
			f.Fatal(err)
		}
		if _, err := Fit(f.Context(), newGaussMean(), []Guide{g}, Options{Steps: steps, K: 2, Seed: 1, Checkpoint: real}); err != nil {
			f.Fatal(err)
		}
		file, err := os.ReadFile(real)
		if err != nil {
			f.Fatal(err)
		}
		files = append(files, file)
	}
	for _, file := range files {
		f.Add(file)
		f.Add(file[:len(file)/2])                  // truncated
		f.Add(append(slices.Clone(file), 0, 1, 2)) // trailing bytes
		for _, at := range []int{len(file) / 5, len(file) / 3, len(file) / 2, len(file) * 4 / 5} {
			flipped := slices.Clone(file) // one byte changed
			flipped[at] ^= 0x40
			f.Add(flipped)
		}
	}
	f.Add([]byte("garbage"))              // not gob
	f.Add(bytes.Repeat([]byte{0xff}, 64)) // huge lengths
	f.Add([]byte{})                       // empty
	path := filepath.Join(dir, "ck")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		plateau, err := NewPlateau(3, 1)
		if err != nil {
			t.Fatal(err)
		}
		if steps, err := replayPlateau(path, plateau, 100); err == nil && (steps < 0 || steps > 100) {
			t.Fatalf("replayPlateau: %d steps of 100", steps)
		}
		g, err := NewNormal("z", 3, nil, 1, 2)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Fit(t.Context(), newGaussMean(), []Guide{g}, Options{Steps: 6, K: 2, Seed: 1, Checkpoint: path})
		if err != nil {
			return
		}
		if res.Steps != 6 || len(res.ELBO) != 6 || res.Resumed < 0 || res.Resumed > 6 {
			t.Fatalf("resumed at %d, %d steps with %d ELBO values", res.Resumed, res.Steps, len(res.ELBO))
		}
		for i, v := range res.ELBO {
			if v != v || v > 1e300 || v < -1e300 {
				t.Fatalf("ELBO %d is %v", i, v)
			}
		}
	})
}
