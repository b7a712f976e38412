package jigsaw

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPairWeightsMatchNet checks that the network's compatibilities written
// as PairWeights give the decoder's tables of the network itself.
func TestPairWeightsMatchNet(t *testing.T) {
	for _, depth := range []int{1, 2} {
		net, z := refineNet(t, depth, 3)
		w, err := net.PairWeights()
		require.NoError(t, err)
		nn2, ps := net.grid.N(), net.grid.PieceSize()
		for b := range z.Len() {
			scr := z.Scrambled[b*nn2*ps : (b+1)*nn2*ps]
			h, v := make([]float64, nn2*nn2), make([]float64, nn2*nn2)
			net.edgeTables(h, v, scr)
			fh, fv := make([]float64, nn2*nn2), make([]float64, nn2*nn2)
			w.weightTables(net.grid, fh, fv, scr)
			for k := range h {
				assert.InDelta(t, h[k], fh[k], 1e-10*(1+math.Abs(h[k])), "depth %d puzzle %d h %d", depth, b, k)
				assert.InDelta(t, v[k], fv[k], 1e-10*(1+math.Abs(v[k])), "depth %d puzzle %d v %d", depth, b, k)
			}
		}
	}
	plainCfg := tinyConfig()
	plain, err := New(plainCfg, 1)
	require.NoError(t, err)
	_, err = plain.PairWeights()
	assert.ErrorContains(t, err, "no edge matching")
}

// fitNet returns a 3 × 3 network for 12 × 12 images with one round of edge
// matching and random edge matrices, so that its own compatibilities
// decode badly.
func fitNet(t *testing.T) *Net {
	t.Helper()
	cfg := tinyConfig()
	cfg.P, cfg.Height, cfg.Width, cfg.Refine = 3, 12, 12, 1
	net, err := New(cfg, 3)
	require.NoError(t, err)
	randomizeEdges(net, rand.New(rand.NewPCG(4, 4)))
	return net
}

// TestFitPairs fits the compatibilities of an untrained network with
// random edge matrices on puzzles of smooth images, where pieces that
// belong together have similar facing strips, and checks that the fitted
// weights decode held-out puzzles far better than the network's own, that
// the hinge falls, and that the fit does not depend on GOMAXPROCS.
func TestFitPairs(t *testing.T) {
	net := fitNet(t)
	rng := rand.New(rand.NewPCG(7, 7))
	train, err := MakePuzzles(net.Grid(), smoothImages(rng, 120), nil, rng)
	require.NoError(t, err)
	held, err := MakePuzzles(net.Grid(), smoothImages(rng, 60), nil, rng)
	require.NoError(t, err)
	d := Decoder{Pairwise: 1, Anneal: 3000, Seed: 2}
	fc := FitConfig{Epochs: 6, Batch: 10, LR: 0.05, Anneal: 500, Seed: 1}
	var hist []FitProgress
	w, err := net.FitPairs(train, d, nil, fc, func(p FitProgress) { hist = append(hist, p) })
	require.NoError(t, err)
	require.Len(t, hist, 6)
	t.Logf("fit: %+v", hist)
	assert.Less(t, hist[5].Hinge, 0.7*hist[0].Hinge, "the hinge should fall")
	assert.Equal(t, 12*6, hist[5].StepsDone)

	before, err := net.EvaluateWith(held, d)
	require.NoError(t, err)
	d.Pair = w
	after, err := net.EvaluateWith(held, d)
	require.NoError(t, err)
	t.Logf("held-out prop. wrong %.3f with the network's compatibilities, %.3f fitted", before.PropWrong, after.PropWrong)
	assert.Greater(t, before.PropWrong, 0.4, "random edge matrices should decode badly")
	assert.Less(t, after.PropWrong, before.PropWrong/2, "fitted weights should decode far better")

	prev := runtime.GOMAXPROCS(1)
	w1, err := net.FitPairs(train, Decoder{Pairwise: 1, Seed: 2}, nil, fc, nil)
	runtime.GOMAXPROCS(prev)
	require.NoError(t, err)
	assert.Equal(t, w, w1, "FitPairs depends on GOMAXPROCS")

	// The saved weights load back bit for bit.
	path := filepath.Join(t.TempDir(), "pairs.json")
	require.NoError(t, SavePairsFile(path, w))
	back, err := LoadPairsFile(path)
	require.NoError(t, err)
	assert.Equal(t, w, back)
}

func TestFitPairsErrors(t *testing.T) {
	net := fitNet(t)
	rng := rand.New(rand.NewPCG(7, 7))
	z, err := MakePuzzles(net.Grid(), smoothImages(rng, 4), nil, rng)
	require.NoError(t, err)
	good := FitConfig{Epochs: 1, Batch: 2, LR: 0.01}
	for _, fc := range []FitConfig{
		{Epochs: 0, Batch: 2, LR: 0.01},
		{Epochs: 1, Batch: 0, LR: 0.01},
		{Epochs: 1, Batch: 2, LR: 0},
		{Epochs: 1, Batch: 2, LR: math.NaN()},
		{Epochs: 1, Batch: 2, LR: 0.01, Anneal: -1},
	} {
		_, err := net.FitPairs(z, Decoder{Pairwise: 1}, nil, fc, nil)
		assert.Error(t, err, "%+v", fc)
	}
	_, err = net.FitPairs(z, Decoder{Seam: 1}, nil, good, nil)
	assert.ErrorContains(t, err, "pairwise weight")
	w, err := net.PairWeights()
	require.NoError(t, err)
	bad := *w
	bad.H = bad.H[:3]
	_, err = net.FitPairs(z, Decoder{Pairwise: 1}, &bad, good, nil)
	assert.ErrorContains(t, err, "matrix entries")
	bad = *w
	bad.Depth = 2
	_, err = net.SolveWith(z, Decoder{Pairwise: 1, Pair: &bad})
	assert.ErrorContains(t, err, "strips of")
	bad = *w
	bad.V = append([]float64(nil), w.V...)
	bad.V[0] = math.Inf(1)
	_, err = net.SolveWith(z, Decoder{Pairwise: 1, Pair: &bad})
	assert.ErrorContains(t, err, "not finite")
	_, err = net.SolveWith(z, Decoder{Pair: w})
	assert.ErrorContains(t, err, "pairwise weight")

	// A network without edge matching decodes with fitted weights.
	cfg := tinyConfig()
	cfg.P, cfg.Height, cfg.Width = 3, 12, 12
	plain, err := New(cfg, 1)
	require.NoError(t, err)
	_, err = plain.SolveWith(z, Decoder{Pairwise: 1, Pair: w, Anneal: 10})
	assert.NoError(t, err)

	// Files of another format, version or shape are errors.
	dir := t.TempDir()
	for name, body := range map[string]string{
		"format":  `{"format":"x","version":1,"depth":1,"len_h":1,"len_v":1,"h":[1],"v":[1]}`,
		"version": `{"format":"permlab-jigsaw-pair-weights","version":9,"depth":1,"len_h":1,"len_v":1,"h":[1],"v":[1]}`,
		"shape":   `{"format":"permlab-jigsaw-pair-weights","version":1,"depth":1,"len_h":2,"len_v":1,"h":[1],"v":[1]}`,
		"unknown": `{"format":"permlab-jigsaw-pair-weights","version":1,"depth":1,"len_h":1,"len_v":1,"h":[1],"v":[1],"x":2}`,
		"trunc":   `{"format":"permlab-jigsaw-pair-weights","vers`,
	} {
		path := filepath.Join(dir, name+".json")
		require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
		_, err := LoadPairsFile(path)
		assert.Error(t, err, name)
	}
	_, err = LoadPairsFile(filepath.Join(dir, "missing.json"))
	assert.Error(t, err)
}
