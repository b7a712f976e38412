package vi

import (
	"bytes"
	"encoding/gob"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/permlab/permlab/ad/optim"
)

// FuzzReadCheckpoint checks that no checkpoint file makes readCheckpoint,
// restore or the plateau replay of FitModel panic, and that what they
// accept is a checkpoint Fit could have written: one finite ELBO per step,
// restored into the parameters and the optimizer as it stands.
func FuzzReadCheckpoint(f *testing.F) {
	dir := f.TempDir()
	// A checkpoint written by Fit itself.
	real := filepath.Join(dir, "real")
	g, err := NewNormal("z", 3, nil, 1, 2)
	if err != nil {
		f.Fatal(err)
	}
	if _, err := Fit(f.Context(), newGaussMean(), []Guide{g}, Options{Steps: 5, K: 2, Seed: 1, Checkpoint: real}); err != nil {
		f.Fatal(err)
	}
	file, err := os.ReadFile(real)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(file)
	f.Add(file[:len(file)/2])                  // truncated
	f.Add(append(slices.Clone(file), 0, 1, 2)) // trailing bytes
	f.Add([]byte("garbage"))                   // not gob
	f.Add(bytes.Repeat([]byte{0xff}, 64))      // huge lengths
	f.Add([]byte{})                            // empty
	flipped := slices.Clone(file)              // one byte changed
	flipped[len(flipped)/3] ^= 0x40
	f.Add(flipped)
	// Well-formed gob, damaged content.
	enc := func(ck checkpoint) []byte {
		var b bytes.Buffer
		if err := gob.NewEncoder(&b).Encode(ck); err != nil {
			f.Fatal(err)
		}
		return b.Bytes()
	}
	ok := checkpoint{Version: checkpointVersion, Step: 2, Names: []string{"z.mu", "z.rho"},
		Values: [][]float64{{1, 2, 3}, {0, 0, 0}}, ELBO: []float64{-3, -2},
		Optim: optim.State{Steps: 2, Moments: [][][]float64{{{0, 0, 0}, {0, 0, 0}}, {{0, 0, 0}, {0, 0, 0}}}}}
	f.Add(enc(ok))
	for _, damage := range []func(*checkpoint){
		func(c *checkpoint) { c.Version = 2 },
		func(c *checkpoint) { c.Step = -1 },
		func(c *checkpoint) { c.Step = math.MaxInt },
		func(c *checkpoint) { c.ELBO = []float64{math.NaN(), math.Inf(1)} },
		func(c *checkpoint) { c.Names = c.Names[:1] },
		func(c *checkpoint) { c.Values = [][]float64{{1}, {2}} },
		func(c *checkpoint) { c.Values[0][1] = math.NaN() },
		func(c *checkpoint) { c.Optim.Moments = c.Optim.Moments[:1] },
		func(c *checkpoint) { c.Optim.Steps = -5 },
	} {
		c := ok
		c.Names = slices.Clone(ok.Names)
		c.Values = [][]float64{slices.Clone(ok.Values[0]), slices.Clone(ok.Values[1])}
		c.Optim.Moments = slices.Clone(ok.Optim.Moments)
		damage(&c)
		f.Add(enc(c))
	}
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
		ck, err := readCheckpoint(path)
		if err != nil {
			return
		}
		if ck.Step < 0 || len(ck.ELBO) != ck.Step {
			t.Fatalf("accepted a checkpoint at step %d with %d ELBO values", ck.Step, len(ck.ELBO))
		}
		g, err := NewNormal("z", 3, nil, 1, 2)
		if err != nil {
			t.Fatal(err)
		}
		params := g.Params()
		opt, err := optim.NewAdam(params)
		if err != nil {
			t.Fatal(err)
		}
		if err := ck.restore(params, opt); err != nil {
			return
		}
		for i, p := range params {
			if !slices.Equal(p.Value.Data, ck.Values[i]) && !hasNaN(ck.Values[i]) {
				t.Fatalf("parameter %s restored as %v, the checkpoint has %v", p.Name, p.Value.Data, ck.Values[i])
			}
		}
		if st := opt.State(); st.Steps != ck.Optim.Steps || st.Steps < 0 {
			t.Fatalf("optimizer restored at step %d, the checkpoint has %d", st.Steps, ck.Optim.Steps)
		}
	})
}

func hasNaN(xs []float64) bool { return slices.ContainsFunc(xs, math.IsNaN) }
