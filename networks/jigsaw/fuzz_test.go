package jigsaw

import (
	"bytes"
	"context"
	"encoding/gob"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// gobBytes returns the gob encoding of v.
func gobBytes(tb testing.TB, v any) []byte {
	tb.Helper()
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(v); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// addDamaged adds file, and copies of it truncated, with a byte changed,
// and with bytes appended, to the corpus of f.
func addDamaged(f *testing.F, file []byte) {
	f.Add(file)
	f.Add(file[:len(file)/2])
	f.Add(file[:len(file)-1])
	flipped := slices.Clone(file)
	flipped[len(flipped)/3] ^= 0x21
	f.Add(flipped)
	f.Add(append(slices.Clone(file), 0, 0xff, 7))
}

// FuzzLoadCritic checks that no file makes LoadCritic panic or allocate
// more than the file holds, and that a critic it accepts has the weights of
// its grid.
func FuzzLoadCritic(f *testing.F) {
	var saved []criticFile
	for _, g := range []struct{ c, h, w, p, crop int }{{1, 18, 18, 2, 16}, {3, 16, 20, 2, 0}} {
		grid, err := NewGridCrop(g.c, g.h, g.w, g.p, g.crop)
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
		addDamaged(f, b.Bytes())
		var cf criticFile
		if err := gob.NewDecoder(bytes.NewReader(b.Bytes())).Decode(&cf); err != nil {
			f.Fatal(err)
		}
		saved = append(saved, cf)
	}
	f.Add([]byte("garbage"))
	f.Add(bytes.Repeat([]byte{0xff}, 64))
	// Well-formed gob, damaged content.
	big, err := NewGrid(1, 1<<20, 1<<20, 2)
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
		f.Add(gobBytes(f, c))
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

// FuzzLoad checks that no file makes Load panic or build a network of
// another size than its weights, and that what it accepts saves and loads
// again to the same network.
func FuzzLoad(f *testing.F) {
	var saved []checkpoint
	for _, mod := range []func(*Config){
		func(*Config) {},
		func(c *Config) { c.Heads = 3 },
		func(c *Config) { c.Hidden, c.Context = 6, true },
		func(c *Config) { c.Refine, c.EdgeDepth = 1, 2 },
		func(c *Config) { c.Height, c.Width, c.Crop, c.Pool = 11, 9, 8, 3 },
	} {
		cfg := tinyConfig()
		mod(&cfg)
		n, err := New(cfg, 3)
		if err != nil {
			f.Fatal(err)
		}
		if w := cfg.weights(n.Grid()); w != n.NumParams() {
			f.Fatalf("config %+v: weights gives %d, New makes %d", cfg, w, n.NumParams())
		}
		var b bytes.Buffer
		if err := n.Save(&b); err != nil {
			f.Fatal(err)
		}
		addDamaged(f, b.Bytes())
		var ck checkpoint
		if err := gob.NewDecoder(bytes.NewReader(b.Bytes())).Decode(&ck); err != nil {
			f.Fatal(err)
		}
		saved = append(saved, ck)
	}
	f.Add([]byte("not a checkpoint"))
	f.Add(bytes.Repeat([]byte{0x80}, 64))
	for _, damage := range []func(*checkpoint){
		func(c *checkpoint) { c.Config.Height, c.Config.Width = 1<<30, 1<<30 },                       // huge pieces
		func(c *checkpoint) { c.Config.Filters = 1 << 40 },                                           // huge layer
		func(c *checkpoint) { c.Config.Height, c.Config.Width, c.Config.Pool = 1<<14, 1<<14, 1<<13 }, // pool hides huge pieces
		func(c *checkpoint) { c.Config.P = 1 << 31 },
		func(c *checkpoint) { c.Config.Kernel = 2 },
		func(c *checkpoint) { c.Config.Tau = math.NaN() },
		func(c *checkpoint) { c.Values[0][0] = math.Inf(1) },
		func(c *checkpoint) { c.Values = c.Values[:1] },
		func(c *checkpoint) { c.Names = nil },
	} {
		c := saved[0]
		c.Names = slices.Clone(c.Names)
		c.Values = slices.Clone(c.Values)
		c.Values[0] = slices.Clone(c.Values[0])
		damage(&c)
		f.Add(gobBytes(f, c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := Load(bytes.NewReader(data))
		if err != nil {
			return
		}
		if w := n.Config().weights(n.Grid()); w != n.NumParams() {
			t.Fatalf("config %+v: weights gives %d, the network has %d", n.Config(), w, n.NumParams())
		}
		var b bytes.Buffer
		if err := n.Save(&b); err != nil {
			t.Fatal(err)
		}
		back, err := Load(&b)
		if err != nil {
			t.Fatalf("a network Load accepted does not load again: %v", err)
		}
		if !reflect.DeepEqual(weights(back), weights(n)) || back.Config() != n.Config() {
			t.Fatal("a network Load accepted loads again as another")
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
		addDamaged(f, b)
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

// FuzzLoadTrainState checks that no training checkpoint makes Train's
// resume panic, and that one it accepts is consistent: a finite loss per
// step, no more steps than asked.
func FuzzLoadTrainState(f *testing.F) {
	cfg := tinyConfig()
	cfg.Hidden = 3
	data := Data{Pixels: blobs(rand.New(rand.NewPCG(1, 2)), 12)}
	dir := f.TempDir()
	path := filepath.Join(dir, "train.ckpt")
	tc := TrainConfig{Steps: 6, Batch: 2, LR: 0.01, Seed: 3, CheckpointEvery: 2, Checkpoint: path}
	n, err := New(cfg, 1)
	if err != nil {
		f.Fatal(err)
	}
	short := tc
	short.Steps = 3
	if _, err := n.Train(context.Background(), data, short); err != nil {
		f.Fatal(err)
	}
	file, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	addDamaged(f, file)
	f.Add([]byte("garbage"))
	// (The checkpoint is package train's Loop's, whose fuzz target damages
	// its fields one by one; Train's own part is the random state and the
	// seconds.)
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		n, err := New(cfg, 1)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := n.Train(context.Background(), data, tc)
		if err != nil {
			return
		}
		if tr.ResumedFrom < 0 || tr.ResumedFrom > tc.Steps || len(tr.Losses) != tc.Steps || !(tr.Seconds >= 0) {
			t.Fatalf("resumed from step %d of %d, %d losses, %v s", tr.ResumedFrom, tc.Steps, len(tr.Losses), tr.Seconds)
		}
	})
}
