package train

import (
	"bytes"
	"context"
	"encoding/gob"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/permlab/permlab/internal/gobfile"
)

// FuzzResume checks that no checkpoint file makes Run panic, and that a run
// that resumes from what it accepts has a consistent history: a loss per
// step and the statistics of every finished epoch.
func FuzzResume(f *testing.F) {
	dir := f.TempDir()
	opts := func(path string) Options {
		o := baseOptions()
		o.Epochs = 2
		o.Checkpoint = path
		return o
	}
	// Checkpoints written by Run: after the first epoch, and inside the
	// second (copied when step 11 starts, after the checkpoint of step 10).
	done, inside := filepath.Join(dir, "done"), filepath.Join(dir, "inside")
	o := opts(done)
	o.Epochs = 1
	r := newRegression(37, 3)
	if _, err := Run(context.Background(), r.params(), r, o); err != nil {
		f.Fatal(err)
	}
	o = opts(filepath.Join(dir, "running"))
	o.CheckpointEvery = 5
	r = newRegression(37, 3)
	r.onStep = func(step int) {
		if step == 11 {
			b, err := os.ReadFile(o.Checkpoint)
			if err == nil {
				err = os.WriteFile(inside, b, 0o644)
			}
			if err != nil {
				f.Fatal(err)
			}
		}
	}
	if _, err := Run(context.Background(), r.params(), r, o); err != nil {
		f.Fatal(err)
	}
	for _, p := range []string{done, inside} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)*2/3])                   // truncated
		f.Add(append(slices.Clone(b), 1, 2, 3)) // trailing bytes
	}
	f.Add([]byte("garbage"))
	f.Add(bytes.Repeat([]byte{0xff}, 64))
	// Well-formed gob, damaged content.
	var ck loopCheckpoint
	if found, err := gobfile.Read(inside, &ck); err != nil || !found {
		f.Fatal(found, err)
	}
	for _, damage := range []func(*loopCheckpoint){
		func(c *loopCheckpoint) { c.Version = 2 },
		func(c *loopCheckpoint) { c.Step = -1 },
		func(c *loopCheckpoint) { c.Step = math.MaxInt },
		func(c *loopCheckpoint) { c.Losses[3] = math.NaN() },
		func(c *loopCheckpoint) { c.Losses = c.Losses[:2] },
		func(c *loopCheckpoint) { c.Extra = nil },
		func(c *loopCheckpoint) { c.Extra = c.Extra[:len(c.Extra)/2] },
		func(c *loopCheckpoint) { c.Settings = c.Settings[:1] },
		func(c *loopCheckpoint) { c.Settings[2].Value = "x" },
		func(c *loopCheckpoint) { c.Stopped = true },
		func(c *loopCheckpoint) { c.Values = c.Values[:1] },
		func(c *loopCheckpoint) { c.Values[0] = append(c.Values[0], 1) },
		func(c *loopCheckpoint) { c.Values[1][0] = math.Inf(-1) },
		func(c *loopCheckpoint) { c.Optim.Steps = -3 },
		func(c *loopCheckpoint) { c.Optim.Moments = c.Optim.Moments[:1] },
		func(c *loopCheckpoint) { c.Names = nil },
		func(c *loopCheckpoint) { c.Shapes = nil },
		func(c *loopCheckpoint) { c.Shapes = c.Shapes[:1] },
		func(c *loopCheckpoint) { c.Shapes = [][]int{{1 << 62, 1 << 62}} },
	} {
		var c loopCheckpoint
		if found, err := gobfile.Read(inside, &c); err != nil || !found {
			f.Fatal(found, err)
		}
		damage(&c)
		var b bytes.Buffer
		if err := gob.NewEncoder(&b).Encode(&c); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes())
	}
	path := filepath.Join(dir, "ck")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		o := opts(path)
		o.CheckpointEvery = 1000
		r := newRegression(37, 3)
		res, err := Run(context.Background(), r.params(), r, o)
		if err != nil {
			return
		}
		perEpoch := StepsPerEpoch(o.N, o.BatchSize)
		switch {
		case res.Steps != 2*perEpoch && !res.Stopped:
			t.Fatalf("ended at step %d of %d without a stop", res.Steps, 2*perEpoch)
		case res.Resumed < 0 || res.Resumed > res.Steps || len(res.Loss) != res.Steps:
			t.Fatalf("resumed at step %d, ended at %d with %d losses", res.Resumed, res.Steps, len(res.Loss))
		case len(res.Epochs) != res.Steps/perEpoch:
			t.Fatalf("%d epochs after %d steps", len(res.Epochs), res.Steps)
		}
	})
}
