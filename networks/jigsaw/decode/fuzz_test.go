package decode

import (
	"bytes"
	"encoding/gob"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/permlab/permlab/internal/fuzzseed"
	"github.com/permlab/permlab/networks/jigsaw"
)

// FuzzLoadCritic checks that no file makes LoadCritic panic or allocate
// more than the file holds, and that a critic it accepts has the weights of
// its grid.
func FuzzLoadCritic(f *testing.F) {
	var saved []criticFile
	for _, g := range []struct{ c, h, w, p, crop int }{{1, 18, 18, 2, 16}, {3, 16, 20, 2, 0}} {
		grid, err := jigsaw.NewGridCrop(g.c, g.h, g.w, g.p, g.crop)
		if err != nil {
			f.Fatal(err)
		}
		c, err := NewCritic(grid, 1)
		if err != nil {
			f.Fatal(err)
		}
		var b bytes.Buffer
		if err := c.Save(&b); err != nil {
			f.Fatal(err)
		}
		fuzzseed.AddDamaged(f, b.Bytes())
		var cf criticFile
		if err := gob.NewDecoder(bytes.NewReader(b.Bytes())).Decode(&cf); err != nil {
			f.Fatal(err)
		}
		saved = append(saved, cf)
	}
	f.Add([]byte("garbage"))
	f.Add(bytes.Repeat([]byte{0xff}, 64))
	// Well-formed gob, damaged content.
	big, err := jigsaw.NewGrid(1, 1<<20, 1<<20, 2)
	if err != nil {
		f.Fatal(err)
	}
	for _, damage := range []func(*criticFile){
		func(c *criticFile) { c.Version = 2 },
		func(c *criticFile) { c.Grid = big },                // asks for 2⁴⁴ weights
		func(c *criticFile) { c.Grid.Channels = 1 << 40 },   // not a grid NewGrid makes
		func(c *criticFile) { c.Grid.P = 1 },                // too few pieces
		func(c *criticFile) { c.Values[0][0] = math.NaN() }, // NaN weight
		func(c *criticFile) { c.Values[2] = c.Values[2][:1] },
		func(c *criticFile) { c.Names = c.Names[:2] },
		func(c *criticFile) { c.Names[0] = "other" },
		func(c *criticFile) { c.Values = append(c.Values, []float64{1}) },
	} {
		c := saved[0]
		c.Names = slices.Clone(c.Names)
		c.Values = slices.Clone(c.Values)
		c.Values[0] = slices.Clone(c.Values[0])
		damage(&c)
		f.Add(fuzzseed.Gob(f, c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := LoadCritic(bytes.NewReader(data))
		if err != nil {
			return
		}
		if err := checkCriticGrid(c.Grid()); err != nil {
			t.Fatalf("accepted a critic of grid %+v: %v", c.Grid(), err)
		}
		if c.NumParams() != criticWeights(c.Grid()) {
			t.Fatalf("critic of %d weights, its grid has %d", c.NumParams(), criticWeights(c.Grid()))
		}
		for _, p := range c.Params() {
			if slices.ContainsFunc(p.Value.Data, func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }) {
				t.Fatalf("parameter %s holds a non-finite weight", p.Name)
			}
		}
	})
}

// FuzzLoadPairsFile checks that no file makes LoadPairsFile panic, that
// what it accepts has matrices and borders of the sizes it declares, and
// that it saves and loads again to the same weights.
func FuzzLoadPairsFile(f *testing.F) {
	dir := f.TempDir()
	path := filepath.Join(dir, "pairs.json")
	square := func(n int) []float64 {
		m := make([]float64, n*n)
		for i := range n {
			m[i*n+i] = 0.5
		}
		return m
	}
	for _, w := range []*PairWeights{
		{Depth: 1, LenH: 4, LenV: 4, H: square(4), V: square(4)},                                                      // version 1
		{Depth: 1, LenH: 2, LenV: 3, H: square(2), V: square(3), Unary: 0.5},                                          // version 2
		{Depth: 2, LenH: 2, LenV: 2, H: square(2), V: square(2), Border: [][]float64{{1, 2}, {3, 4}, {5, 6}, {7, 8}}}, // version 3
	} {
		if err := SavePairsFile(path, w); err != nil {
			f.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		fuzzseed.AddDamaged(f, b)
	}
	for _, s := range []string{
		`{"format":"permlab-jigsaw-pair-weights","version":1,"depth":1,"len_h":4294967296,"len_v":4294967296,"h":[],"v":[]}`,
		`{"format":"permlab-jigsaw-pair-weights","version":1,"depth":1,"len_h":-1,"len_v":1,"h":[1],"v":[1]}`,
		`{"format":"permlab-jigsaw-pair-weights","version":3,"depth":1,"len_h":1,"len_v":1,"h":[1],"v":[1],"border":[[1],[1],[1],[1,2]]}`,
		`{"format":"permlab-jigsaw-pair-weights","version":2,"depth":1,"len_h":1,"len_v":1,"h":[1],"v":[1],"unary":1e999}`,
		`{"format":"permlab-jigsaw-pair-weights","version":9}`,
		`{"format":"other"}`,
		`{"format":"permlab-jigsaw-pair-weights","version":1,"extra":1}`,
		"\x00\xff{",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		w, err := LoadPairsFile(path)
		if err != nil {
			return
		}
		switch {
		case w.Depth < 1 || w.LenH < 1 || w.LenV < 1 || len(w.H) != w.LenH*w.LenH || len(w.V) != w.LenV*w.LenV:
			t.Fatalf("accepted depth %d, strips of %d and %d with %d and %d entries", w.Depth, w.LenH, w.LenV, len(w.H), len(w.V))
		case w.Border != nil && len(w.Border) != 4:
			t.Fatalf("accepted %d border vectors", len(w.Border))
		}
		for d, b := range w.Border {
			if len(b) != w.borderLen(d) {
				t.Fatalf("border vector %d of %d entries for strips of %d", d, len(b), w.borderLen(d))
			}
		}
		again := filepath.Join(dir, "again.json")
		if err := SavePairsFile(again, w); err != nil {
			t.Fatal(err)
		}
		back, err := LoadPairsFile(again)
		if err != nil {
			t.Fatalf("weights LoadPairsFile accepted do not load again: %v", err)
		}
		if back.unary() != w.unary() {
			t.Fatalf("unary weight %v loads again as %v", w.unary(), back.unary())
		}
		back.Unary = w.Unary
		if !reflect.DeepEqual(back, w) {
			t.Fatalf("weights load again as %+v, want %+v", back, w)
		}
	})
}
