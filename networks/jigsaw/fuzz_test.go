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

	"github.com/permlab/permlab/internal/fuzzseed"
)

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
		fuzzseed.AddDamaged(f, b.Bytes())
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
		f.Add(fuzzseed.Gob(f, c))
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
	fuzzseed.AddDamaged(f, file)
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
