package decode

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/networks/jigsaw"
)

// TestPairWeightsMatchNet checks that the network's compatibilities written
// as PairWeights give the decoder's tables of the network itself.
func TestPairWeightsMatchNet(t *testing.T) {
	for _, depth := range []int{1, 2} {
		net, z := refineNet(t, depth, 3)
		w, err := NetPairWeights(net)
		require.NoError(t, err)
		nn2, ps := net.Grid().N(), net.Grid().PieceSize()
		for b := range z.Len() {
			scr := z.Scrambled[b*nn2*ps : (b+1)*nn2*ps]
			h, v := make([]float64, nn2*nn2), make([]float64, nn2*nn2)
			edgeTables(net, net.Edges(), h, v, scr)
			fh, fv := make([]float64, nn2*nn2), make([]float64, nn2*nn2)
			w.weightTables(net.Grid(), fh, fv, scr)
			for k := range h {
				assert.InDelta(t, h[k], fh[k], 1e-10*(1+math.Abs(h[k])), "depth %d puzzle %d h %d", depth, b, k)
				assert.InDelta(t, v[k], fv[k], 1e-10*(1+math.Abs(v[k])), "depth %d puzzle %d v %d", depth, b, k)
			}
		}
	}
	plainCfg := tinyConfig()
	plain, err := jigsaw.New(plainCfg, 1)
	require.NoError(t, err)
	_, err = NetPairWeights(plain)
	assert.ErrorContains(t, err, "no edge matching")
}

// fitNet returns a 3 × 3 network for 12 × 12 images with one round of edge
// matching and random edge matrices, so that its own compatibilities
// decode badly.
func fitNet(t *testing.T) *jigsaw.Net {
	t.Helper()
	cfg := tinyConfig()
	cfg.P, cfg.Height, cfg.Width, cfg.Refine = 3, 12, 12, 1
	net, err := jigsaw.New(cfg, 3)
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
	train, err := jigsaw.MakePuzzles(net.Grid(), smoothImages(rng, 120), nil, rng)
	require.NoError(t, err)
	held, err := jigsaw.MakePuzzles(net.Grid(), smoothImages(rng, 60), nil, rng)
	require.NoError(t, err)
	d := Decoder{Pairwise: 1, Anneal: 3000, Seed: 2}
	fc := FitConfig{Epochs: 6, Batch: 10, LR: 0.05, Anneal: 500, Seed: 1}
	var hist []FitProgress
	w, err := FitPairs(net, train, d, nil, fc, func(p FitProgress) { hist = append(hist, p) })
	require.NoError(t, err)
	require.Len(t, hist, 6)
	t.Logf("fit: %+v", hist)
	assert.Less(t, hist[5].Hinge, 0.7*hist[0].Hinge, "the hinge should fall")
	assert.Equal(t, 12*6, hist[5].StepsDone)

	before, err := Evaluate(net, held, d)
	require.NoError(t, err)
	d.Pair = w
	after, err := Evaluate(net, held, d)
	require.NoError(t, err)
	t.Logf("held-out prop. wrong %.3f with the network's compatibilities, %.3f fitted", before.PropWrong, after.PropWrong)
	assert.Greater(t, before.PropWrong, 0.4, "random edge matrices should decode badly")
	assert.Less(t, after.PropWrong, before.PropWrong/2, "fitted weights should decode far better")

	prev := runtime.GOMAXPROCS(1)
	w1, err := FitPairs(net, train, Decoder{Pairwise: 1, Seed: 2}, nil, fc, nil)
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
	z, err := jigsaw.MakePuzzles(net.Grid(), smoothImages(rng, 4), nil, rng)
	require.NoError(t, err)
	good := FitConfig{Epochs: 1, Batch: 2, LR: 0.01}
	for _, fc := range []FitConfig{
		{Epochs: 0, Batch: 2, LR: 0.01},
		{Epochs: 1, Batch: 0, LR: 0.01},
		{Epochs: 1, Batch: 2, LR: 0},
		{Epochs: 1, Batch: 2, LR: math.NaN()},
		{Epochs: 1, Batch: 2, LR: 0.01, Anneal: -1},
		{Epochs: 1, Batch: 2, LR: 0.01, Margin: "pixel"},
	} {
		_, err := FitPairs(net, z, Decoder{Pairwise: 1}, nil, fc, nil)
		assert.Error(t, err, "%+v", fc)
	}
	_, err = FitPairs(net, z, Decoder{Seam: 1}, nil, good, nil)
	assert.ErrorContains(t, err, "pairwise weight")
	w, err := NetPairWeights(net)
	require.NoError(t, err)
	bad := *w
	bad.H = bad.H[:3]
	_, err = FitPairs(net, z, Decoder{Pairwise: 1}, &bad, good, nil)
	assert.ErrorContains(t, err, "matrix entries")
	bad = *w
	bad.Depth = 2
	_, err = Solve(net, z, Decoder{Pairwise: 1, Pair: &bad})
	assert.ErrorContains(t, err, "strips of")
	bad = *w
	bad.V = append([]float64(nil), w.V...)
	bad.V[0] = math.Inf(1)
	_, err = Solve(net, z, Decoder{Pairwise: 1, Pair: &bad})
	assert.ErrorContains(t, err, "not finite")
	_, err = Solve(net, z, Decoder{Pair: w})
	assert.ErrorContains(t, err, "pairwise weight")
	for _, u := range []float64{-1, math.NaN(), math.Inf(1)} {
		bad = *w
		bad.Unary = u
		_, err = Solve(net, z, Decoder{Pairwise: 1, Pair: &bad})
		assert.ErrorContains(t, err, "unary weight", "%v", u)
	}
	bad = *w
	bad.Border = [][]float64{make([]float64, w.LenV), make([]float64, w.LenV), make([]float64, w.LenH)}
	_, err = Solve(net, z, Decoder{Pairwise: 1, Pair: &bad})
	assert.ErrorContains(t, err, "3 border vectors")
	bad.Border = append(bad.Border, make([]float64, w.LenH+1))
	_, err = Solve(net, z, Decoder{Pairwise: 1, Pair: &bad})
	assert.ErrorContains(t, err, "border vector 3 has")
	bad.Border[3] = make([]float64, w.LenH)
	bad.Border[1][0] = math.NaN()
	_, err = Solve(net, z, Decoder{Pairwise: 1, Pair: &bad})
	assert.ErrorContains(t, err, "border vector 1 holds")

	// A network without edge matching decodes with fitted weights.
	cfg := tinyConfig()
	cfg.P, cfg.Height, cfg.Width = 3, 12, 12
	plain, err := jigsaw.New(cfg, 1)
	require.NoError(t, err)
	_, err = Solve(plain, z, Decoder{Pairwise: 1, Pair: w, Anneal: 10})
	assert.NoError(t, err)

	// Files of another format, version or shape are errors.
	dir := t.TempDir()
	for name, body := range map[string]string{
		"format":   `{"format":"x","version":1,"depth":1,"len_h":1,"len_v":1,"h":[1],"v":[1]}`,
		"version":  `{"format":"permlab-jigsaw-pair-weights","version":9,"depth":1,"len_h":1,"len_v":1,"h":[1],"v":[1]}`,
		"shape":    `{"format":"permlab-jigsaw-pair-weights","version":1,"depth":1,"len_h":2,"len_v":1,"h":[1],"v":[1]}`,
		"unknown":  `{"format":"permlab-jigsaw-pair-weights","version":1,"depth":1,"len_h":1,"len_v":1,"h":[1],"v":[1],"x":2}`,
		"trunc":    `{"format":"permlab-jigsaw-pair-weights","vers`,
		"v1unary":  `{"format":"permlab-jigsaw-pair-weights","version":1,"depth":1,"len_h":1,"len_v":1,"h":[1],"v":[1],"unary":2}`,
		"v2zero":   `{"format":"permlab-jigsaw-pair-weights","version":2,"depth":1,"len_h":1,"len_v":1,"h":[1],"v":[1]}`,
		"v2neg":    `{"format":"permlab-jigsaw-pair-weights","version":2,"depth":1,"len_h":1,"len_v":1,"h":[1],"v":[1],"unary":-1}`,
		"v2border": `{"format":"permlab-jigsaw-pair-weights","version":2,"depth":1,"len_h":1,"len_v":1,"h":[1],"v":[1],"unary":2,"border":[[1],[1],[1],[1]]}`,
		"v3three":  `{"format":"permlab-jigsaw-pair-weights","version":3,"depth":1,"len_h":1,"len_v":1,"h":[1],"v":[1],"border":[[1],[1],[1]]}`,
		"v3none":   `{"format":"permlab-jigsaw-pair-weights","version":3,"depth":1,"len_h":1,"len_v":1,"h":[1],"v":[1]}`,
		"v3len":    `{"format":"permlab-jigsaw-pair-weights","version":3,"depth":1,"len_h":1,"len_v":1,"h":[1],"v":[1],"border":[[1],[1],[1,2],[1]]}`,
		"v3neg":    `{"format":"permlab-jigsaw-pair-weights","version":3,"depth":1,"len_h":1,"len_v":1,"h":[1],"v":[1],"unary":-1,"border":[[1],[1],[1],[1]]}`,
	} {
		path := filepath.Join(dir, name+".json")
		require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
		_, err := LoadPairsFile(path)
		assert.Error(t, err, name)
	}
	_, err = LoadPairsFile(filepath.Join(dir, "missing.json"))
	assert.Error(t, err)
}

// TestUnaryWeightScalesLogits checks that PairWeights.Unary multiplies the
// logits in E: with the logits weighted by 2, E is twice the score of the
// same matrices halved and unweighted, so decoding by pair swaps alone
// (which compares differences of E) finds the same arrangements.
func TestUnaryWeightScalesLogits(t *testing.T) {
	net := fitNet(t)
	rng := rand.New(rand.NewPCG(7, 8))
	z, err := jigsaw.MakePuzzles(net.Grid(), smoothImages(rng, 40), nil, rng)
	require.NoError(t, err)
	w, err := NetPairWeights(net)
	require.NoError(t, err)
	// Make the pairwise terms matter as much as the logits.
	for k := range w.H {
		w.H[k] *= 50
	}
	for k := range w.V {
		w.V[k] *= 50
	}
	weighted := *w
	weighted.Unary = 2
	half := *w
	half.H, half.V = make([]float64, len(w.H)), make([]float64, len(w.V))
	for k, x := range w.H {
		half.H[k] = x / 2
	}
	for k, x := range w.V {
		half.V[k] = x / 2
	}
	a, err := Solve(net, z, Decoder{Pairwise: 1, Pair: &weighted})
	require.NoError(t, err)
	b, err := Solve(net, z, Decoder{Pairwise: 1, Pair: &half})
	require.NoError(t, err)
	assert.Equal(t, a, b)
	plain, err := Solve(net, z, Decoder{Pairwise: 1, Pair: w})
	require.NoError(t, err)
	assert.NotEqual(t, a, plain, "the weight of the logits should change some decodings")
	one := *w
	one.Unary = 1
	c, err := Solve(net, z, Decoder{Pairwise: 1, Pair: &one})
	require.NoError(t, err)
	assert.Equal(t, plain, c, "Unary 1 and 0 should decode alike")
}

// TestPixelMargin checks the loss of MarginPixels: 0 where a piece is
// identical to the true piece of a position, the l1 distance over its mean
// over the differing pairs elsewhere, so that a differing pair costs 1 on
// average.
func TestPixelMargin(t *testing.T) {
	g, err := jigsaw.NewGrid(1, 4, 4, 2)
	require.NoError(t, err)
	img := []float64{
		0, 0, 1, 0.5,
		0, 0, 0, 1,
		0.25, 0, 0, 0,
		0, 0, 0, 0,
	}
	// Pieces: top-left blank, top-right ink, bottom-left a speck, bottom-right blank.
	z, err := jigsaw.MakePuzzles(g, img, nil, rand.New(rand.NewPCG(1, 2)))
	require.NoError(t, err)
	scale, err := pixelMarginScale(z)
	require.NoError(t, err)
	nn2 := g.N()
	u := make([]float64, nn2*nn2)
	addPixelMargin(u, z, 0, scale)
	sum, count := 0.0, 0
	for i := range nn2 {
		for q := range nn2 {
			want := l1Dist(z.Scrambled[i*4:(i+1)*4], z.Pieces[q*4:(q+1)*4]) * scale
			assert.InDelta(t, want, u[i*nn2+q], 1e-15)
			if z.Perms[0][i] == q {
				assert.Zero(t, u[i*nn2+q], "a piece at its own position costs nothing")
			}
			if u[i*nn2+q] != 0 {
				sum += u[i*nn2+q]
				count++
			}
		}
	}
	// The blank pieces are identical: 2 x 2 zero pairs among them, and 4
	// pairs of each piece with its own position (2 of them blank ones
	// already counted), so 16 − 6 = 10 differing pairs.
	assert.Equal(t, 10, count)
	assert.InDelta(t, 1, sum/float64(count), 1e-12)
	// The ink piece (l1 2.5 from a blank one) costs more than the speck (0.25).
	ink, speck := -1, -1
	for i, q := range z.Perms[0] {
		switch q {
		case 1:
			ink = i
		case 2:
			speck = i
		}
	}
	assert.Greater(t, u[ink*nn2+0], u[speck*nn2+0])

	blank, err := jigsaw.MakePuzzles(g, make([]float64, 16), nil, rand.New(rand.NewPCG(1, 2)))
	require.NoError(t, err)
	_, err = pixelMarginScale(blank)
	assert.ErrorContains(t, err, "identical")
}

// TestFitPairsUnaryAndPixels fits the weight of the logits and the matrices
// with the pixel margin. The untrained network's logits say nothing about
// where a piece goes, so the fit should turn their weight down; the fitted
// weights should still decode held-out puzzles far better than the
// network's own, and save and load with their weight.
func TestFitPairsUnaryAndPixels(t *testing.T) {
	net := fitNet(t)
	rng := rand.New(rand.NewPCG(7, 7))
	train, err := jigsaw.MakePuzzles(net.Grid(), smoothImages(rng, 120), nil, rng)
	require.NoError(t, err)
	held, err := jigsaw.MakePuzzles(net.Grid(), smoothImages(rng, 60), nil, rng)
	require.NoError(t, err)
	d := Decoder{Pairwise: 1, Anneal: 3000, Seed: 2}
	fc := FitConfig{Epochs: 6, Batch: 10, LR: 0.02, Anneal: 500, Seed: 1, Margin: MarginPixels, FitUnary: true}
	var hist []FitProgress
	w, err := FitPairs(net, train, d, nil, fc, func(p FitProgress) { hist = append(hist, p) })
	require.NoError(t, err)
	require.Len(t, hist, 6)
	t.Logf("fit: %+v", hist)
	assert.Less(t, hist[5].Hinge, hist[0].Hinge, "the hinge should fall")
	assert.Less(t, w.Unary, 0.9, "the weight of uninformative logits should fall")
	assert.Equal(t, w.Unary, hist[5].Unary)

	before, err := Evaluate(net, held, d)
	require.NoError(t, err)
	d.Pair = w
	after, err := Evaluate(net, held, d)
	require.NoError(t, err)
	t.Logf("held-out prop. wrong %.3f with the network's compatibilities, %.3f fitted", before.PropWrong, after.PropWrong)
	assert.Less(t, after.PropWrong, before.PropWrong/2, "fitted weights should decode far better")

	path := filepath.Join(t.TempDir(), "pairs.json")
	raw := roundTripPairs(t, path, w)
	assert.Contains(t, string(raw), `"version": 2`)

	// Without FitUnary the weight stays where it started, and a file of
	// weights without one stays at version 1.
	fc.FitUnary, fc.Epochs = false, 1
	w1, err := FitPairs(net, train, Decoder{Pairwise: 1, Seed: 2}, nil, fc, nil)
	require.NoError(t, err)
	assert.Zero(t, w1.Unary)
	raw = roundTripPairs(t, path, w1)
	assert.Contains(t, string(raw), `"version": 1`)
	assert.NotContains(t, string(raw), "unary")
}

// TestDeepenKeepsScores checks that pair weights moved to deeper strips
// (FitConfig.Depth) give the same compatibility tables, with one and with
// several channels, and that FitPairs fits at the deeper strips.
func TestDeepenKeepsScores(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	for _, ch := range []int{1, 2} {
		g, err := jigsaw.NewGrid(ch, 12, 15, 3) // 4 × 5 pieces
		require.NoError(t, err)
		w := &PairWeights{Depth: 1, LenH: jigsaw.StripLen(g, 1, 2), LenV: jigsaw.StripLen(g, 1, 0)}
		w.H, w.V = make([]float64, w.LenH*w.LenH), make([]float64, w.LenV*w.LenV)
		for k := range w.H {
			w.H[k] = rng.NormFloat64()
		}
		for k := range w.V {
			w.V[k] = rng.NormFloat64()
		}
		nn2 := g.N()
		scr := make([]float64, nn2*g.PieceSize())
		for k := range scr {
			scr[k] = rng.Float64()
		}
		h, v := make([]float64, nn2*nn2), make([]float64, nn2*nn2)
		w.weightTables(g, h, v, scr)
		for _, depth := range []int{2, 4} {
			deep := w.deepen(g, depth)
			require.NoError(t, deep.validate(g))
			dh, dv := make([]float64, nn2*nn2), make([]float64, nn2*nn2)
			deep.weightTables(g, dh, dv, scr)
			for k := range h {
				assert.InDelta(t, h[k], dh[k], 1e-12*(1+math.Abs(h[k])), "channels %d depth %d h %d", ch, depth, k)
				assert.InDelta(t, v[k], dv[k], 1e-12*(1+math.Abs(v[k])), "channels %d depth %d v %d", ch, depth, k)
			}
		}
	}

	net := fitNet(t)
	z, err := jigsaw.MakePuzzles(net.Grid(), smoothImages(rng, 20), nil, rng)
	require.NoError(t, err)
	fc := FitConfig{Epochs: 1, Batch: 5, LR: 0.01, Anneal: 100, Seed: 1, Depth: 4}
	w, err := FitPairs(net, z, Decoder{Pairwise: 1}, nil, fc, nil)
	require.NoError(t, err)
	assert.Equal(t, 4, w.Depth)
	assert.Len(t, w.H, 16*16)
	fc.Depth = 5
	_, err = FitPairs(net, z, Decoder{Pairwise: 1}, nil, fc, nil)
	assert.ErrorContains(t, err, "strip depth")
	start, err := NetPairWeights(net)
	require.NoError(t, err)
	deep := start.deepen(net.Grid(), 2)
	fc.Depth = 1
	_, err = FitPairs(net, z, Decoder{Pairwise: 1}, deep, fc, nil)
	assert.ErrorContains(t, err, "below")
	fc.Depth = -1
	_, err = FitPairs(net, z, Decoder{Pairwise: 1}, nil, fc, nil)
	assert.ErrorContains(t, err, "strip depth")
}

// roundTripPairs saves w to path, checks that it loads back equal, and
// returns the file's bytes.
func roundTripPairs(t *testing.T, path string, w *PairWeights) []byte {
	t.Helper()
	require.NoError(t, SavePairsFile(path, w))
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	back, err := LoadPairsFile(path)
	require.NoError(t, err)
	assert.Equal(t, w, back)
	return raw
}
