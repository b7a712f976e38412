package main

import (
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/dataset"
	"github.com/permlab/permlab/networks/jigsaw"
	"github.com/permlab/permlab/networks/jigsaw/decode"
)

func TestNoDataIsAnError(t *testing.T) {
	err := run(context.Background(), options{})
	require.ErrorIs(t, err, errNoData)
	assert.Contains(t, err.Error(), "-mnist DIR")
	assert.Contains(t, err.Error(), "t10k-images-idx3-ubyte.gz")
}

// writePictures writes n small RGB pictures with a coloured gradient.
func writePictures(t *testing.T, dir string, n, side int) {
	for k := range n {
		img := image.NewRGBA(image.Rect(0, 0, side, side))
		for y := range side {
			for x := range side {
				img.Set(x, y, color.RGBA{uint8(16 * x), uint8(16 * y), uint8(20 * k), 255})
			}
		}
		f, err := os.Create(filepath.Join(dir, "pic"+string(rune('a'+k))+".png"))
		require.NoError(t, err)
		require.NoError(t, png.Encode(f, img))
		require.NoError(t, f.Close())
	}
}

func TestImagesFolderRun(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	writePictures(t, in, 10, 12)
	o := options{
		images: in, size: 12, out: out, p: 2, seed: 1, steps: 5, batch: 4, lr: 1e-3, quiet: true, figTaus: "1,0.1",
		cfg: jigsaw.Config{Filters: 2, Kernel: 3, Pool: 2, Tau: 1, Iters: 5, Samples: 1, Noise: 1},
	}
	require.NoError(t, run(context.Background(), o))
	b, err := os.ReadFile(filepath.Join(out, "jigsaw_images-"+filepath.Base(in)+"_p2.json"))
	require.NoError(t, err)
	var r record
	require.NoError(t, json.Unmarshal(b, &r))
	assert.Equal(t, 3, r.Config.Channels)
	assert.Equal(t, 1, r.Metrics.Puzzles, "one of ten pictures is held out")
	// The gradient pictures have no two equal pieces: the oracle is exact.
	require.NotNil(t, r.Oracle)
	assert.Equal(t, jigsaw.Metrics{Puzzles: 1, KendallTau: 1}, *r.Oracle)
	o.oracle = true
	assert.ErrorContains(t, run(context.Background(), o), "oracle needs -mnist")
	f, err := os.Open(filepath.Join(out, "jigsaw_images-"+filepath.Base(in)+"_p2.png"))
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	assert.Greater(t, img.Bounds().Dx(), 4*12)
	net, err := jigsaw.LoadFile(filepath.Join(out, "jigsaw_images-"+filepath.Base(in)+"_p2.gob"))
	require.NoError(t, err)
	assert.Equal(t, r.Params, net.NumParams())

	// -load evaluates the saved network without training: the same
	// metrics, the training fields from the JSON beside it.
	gob := filepath.Join(out, "jigsaw_images-"+filepath.Base(in)+"_p2.gob")

	// The figure subcommand draws the same figure, from the command line,
	// and writes nothing else.
	figDir := t.TempDir()
	code, stderr := runCLI("figure", "-images", in, "-size", "12", "-p", "2", "-load", gob, "-figtaus", "1,0.1", "-out", figDir)
	require.Equal(t, 0, code, stderr)
	drawn, err := os.ReadFile(filepath.Join(figDir, "jigsaw_images-"+filepath.Base(in)+"_p2_figure.png"))
	require.NoError(t, err)
	evalFig, err := os.ReadFile(filepath.Join(out, "jigsaw_images-"+filepath.Base(in)+"_p2.png"))
	require.NoError(t, err)
	assert.Equal(t, evalFig, drawn, "the figure of the training run")
	entries, err := os.ReadDir(figDir)
	require.NoError(t, err)
	assert.Len(t, entries, 1)
	again := t.TempDir()
	o.oracle, o.load, o.out = false, gob, again
	require.NoError(t, run(context.Background(), o))
	b, err = os.ReadFile(filepath.Join(again, "jigsaw_images-"+filepath.Base(in)+"_p2.json"))
	require.NoError(t, err)
	var l record
	require.NoError(t, json.Unmarshal(b, &l))
	assert.Equal(t, r.Metrics, l.Metrics)
	assert.Equal(t, gob, l.Model)
	assert.Equal(t, r.Steps, l.Steps)
	assert.Equal(t, r.Command, l.TrainCommand)
	assert.Nil(t, l.Decoder)
	_, err = os.Stat(filepath.Join(again, "jigsaw_images-"+filepath.Base(in)+"_p2.gob"))
	assert.True(t, os.IsNotExist(err), "-load must not write a checkpoint")
	// A run's JSON that cannot be read is an error, not silently skipped.
	odd := filepath.Join(t.TempDir(), "net.gob")
	data, err := os.ReadFile(gob)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(odd, data, 0o644))
	require.NoError(t, os.Mkdir(strings.TrimSuffix(odd, ".gob")+".json", 0o755))
	o.load = odd
	assert.Error(t, run(context.Background(), o))
	o.load = gob
	// The pairwise decoder needs edge matching; a wrong size is an error.
	o.dec = decode.Decoder{Pairwise: 1, Seed: 1}
	assert.ErrorContains(t, run(context.Background(), o), "edge matching")
	// The seam decoder works with any network and is recorded, with its
	// restarts and the split of its failures.
	o.dec = decode.Decoder{Seam: 1, Anneal: 100, Restarts: 2, Seed: 1}
	require.NoError(t, run(context.Background(), o))
	b, err = os.ReadFile(filepath.Join(again, "jigsaw_images-"+filepath.Base(in)+"_p2.json"))
	require.NoError(t, err)
	var sr record
	require.NoError(t, json.Unmarshal(b, &sr))
	require.NotNil(t, sr.Decoder)
	assert.Equal(t, o.dec, *sr.Decoder)
	assert.Equal(t, r.Metrics.Puzzles, sr.Metrics.Puzzles)
	require.NotNil(t, sr.Search)
	assert.Equal(t, r.Metrics.Puzzles, sr.Search.Puzzles)
	assert.Equal(t, sr.Search.Puzzles, sr.Search.Solved+sr.Search.SearchMisses+sr.Search.ScoreMisses)
	assert.Contains(t, formatMetrics(&sr), "of puzzles solved")
	assert.Nil(t, l.Search, "M(g) has no search gap")
	o.dec, o.p = decode.Decoder{Seed: 1}, 3
	assert.ErrorContains(t, run(context.Background(), o), "network for 2 x 2 pieces")
}

func TestCropFlag(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	writePictures(t, in, 10, 12)
	o := options{
		images: in, size: 12, out: out, p: 2, seed: 1, steps: 3, batch: 4, lr: 1e-3, quiet: true, figTaus: "1",
		cfg: jigsaw.Config{Crop: 8, Filters: 2, Kernel: 3, Pool: 2, Tau: 1, Iters: 5, Samples: 1, Noise: 1},
	}
	require.NoError(t, run(context.Background(), o))
	base := filepath.Join(out, "jigsaw_images-"+filepath.Base(in)+"_p2")
	b, err := os.ReadFile(base + ".json")
	require.NoError(t, err)
	var r record
	require.NoError(t, json.Unmarshal(b, &r))
	assert.Equal(t, 8, r.Config.Crop)
	net, err := jigsaw.LoadFile(base + ".gob")
	require.NoError(t, err)
	g := net.Grid()
	assert.Equal(t, [4]int{4, 4, 2, 2}, [4]int{g.PieceH, g.PieceW, g.Top, g.Left}, "8 px centred in 12 px, 4 px pieces")

	// -load keeps the network's crop; asking for another one is an error.
	o.load, o.out = base+".gob", t.TempDir()
	o.cfg.Crop = 0
	require.NoError(t, run(context.Background(), o))
	o.cfg.Crop = 8
	require.NoError(t, run(context.Background(), o))
	o.cfg.Crop = 10
	assert.ErrorContains(t, run(context.Background(), o), "8x8 px crop, -crop asks for 10")
	// A crop the size does not divide is an error.
	o.load, o.cfg.Crop = "", 7
	assert.ErrorContains(t, run(context.Background(), o), "not a multiple")

	// -table2 does not skip a finished size cut another way.
	// Without -crop it prints what the file holds.
	rec := &record{P: 3, Config: jigsaw.Config{Height: 28, Width: 28, Crop: 24}}
	assert.NoError(t, sameCrop(rec, options{cfg: jigsaw.Config{Crop: 24}}))
	assert.ErrorContains(t, sameCrop(rec, options{results: "t.jsonl", cfg: jigsaw.Config{Crop: 27}}), "t.jsonl holds p=3 cut from a 24x24 px crop")
	assert.NoError(t, sameCrop(rec, options{}), "no -crop: print the file's table")
	assert.NoError(t, sameCrop(rec, options{load: "nets"}), "-load without -crop takes the networks' crop")
	def := &record{P: 3, Config: jigsaw.Config{Height: 28, Width: 28}}
	assert.Error(t, sameCrop(def, options{cfg: jigsaw.Config{Crop: 24}}))
	assert.NoError(t, sameCrop(def, options{cfg: jigsaw.Config{Crop: 27}}), "27 px is the default square at 3 x 3")
}

func TestRecordsRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "t.jsonl")
	recs, err := readRecords(path)
	require.NoError(t, err)
	assert.Empty(t, recs)
	require.NoError(t, appendRecord(path, &record{P: 2, Steps: 10, Batch: 4, Metrics: jigsaw.Metrics{Puzzles: 5, KendallTau: 1}}))
	require.NoError(t, appendRecord(path, &record{P: 4, Steps: 10, Batch: 4, Metrics: jigsaw.Metrics{Puzzles: 5, KendallTau: 0.5, RMSE: 0.25}}))
	recs, err = readRecords(path)
	require.NoError(t, err)
	require.Len(t, recs, 2)
	table := formatTable(recs)
	lines := strings.Split(table, "\n")
	assert.Contains(t, lines[2], "| Kendall tau | 1.000 (1.00) | - | 0.500 (0.43) | - | - |")
	assert.Contains(t, table, "| l2 | 0.000 (0.00) | - | 0.250 (0.26) |")
	assert.NotContains(t, table, "best possible", "no record has an oracle")
	recs[4].Oracle = &jigsaw.Metrics{Puzzles: 5, KendallTau: 0.75}
	assert.Contains(t, formatTable(recs), "| Kendall tau, best possible | - | - | 0.750 | - | - |")
	assert.NotContains(t, formatTable(recs), "decoder")
	recs[4].Decoder, recs[4].DecodeSec = &decode.Decoder{Pairwise: 5, Anneal: 400000}, 90
	assert.Contains(t, formatTable(recs), "| decoder: pairwise weight, annealing proposals, minutes | - | - | 5, 400000, 1.5 | - | - |")
	recs[2].Decoder = &decode.Decoder{Seam: 2, Anneal: 1000}
	assert.Contains(t, formatTable(recs), "| decoder: pairwise weight, seam weight, annealing proposals, minutes | 0, 2, 1000, 0.0 | - | 5, 0, 400000, 1.5 | - | - |")
	assert.NotContains(t, formatTable(recs), "fitted")
	recs[4].Pairs = filepath.Join("results", "pairs", "p4.json")
	assert.Contains(t, formatTable(recs), "| decoder: fitted compatibilities | - | - | p4.json | - | - |")
	assert.NotContains(t, formatTable(recs), "temperatures", "no record sets them")
	recs[4].Decoder.StartTemp, recs[4].Decoder.EndTemp = 6, 3
	assert.Contains(t, formatTable(recs), "| decoder: annealing temperatures, start to end | 60 to 0.03 | - | 6 to 3 | - | - |")
	assert.NotContains(t, formatTable(recs), "centred square", "no record sets a crop")
	recs[2].Config = jigsaw.Config{P: 2, Height: 28, Width: 28}
	recs[4].Config = jigsaw.Config{P: 4, Height: 28, Width: 28, Crop: 24}
	assert.Contains(t, formatTable(recs), "| centred crop, piece side | 28 px, 14 px | - | 24 px, 6 px | - | - |")
}

func TestParseSizes(t *testing.T) {
	got, err := parseSizes("")
	require.NoError(t, err)
	assert.Equal(t, tableSizes, got)
	got, err = parseSizes("3, 4,6,2")
	require.NoError(t, err)
	assert.Equal(t, []int{3, 4, 6, 2}, got)
	for _, bad := range []string{"1", "7", "3,x", "3,3", "3,"} {
		_, err := parseSizes(bad)
		assert.Error(t, err, bad)
	}
}

// TestTrainingResumes: a run that finds the checkpoint of a shorter run in
// -out goes on from it and ends where a run of its length in one go ends.
func TestTrainingResumes(t *testing.T) {
	in := t.TempDir()
	writePictures(t, in, 10, 12)
	o := options{
		images: in, size: 12, p: 2, seed: 1, steps: 8, batch: 4, lr: 1e-3, quiet: true, figTaus: "1",
		cfg: jigsaw.Config{Filters: 2, Kernel: 3, Pool: 2, Tau: 1, Iters: 5, Samples: 1, Noise: 1},
	}
	name := "jigsaw_images-" + filepath.Base(in) + "_p2"
	read := func(dir string) (record, *jigsaw.Net) {
		b, err := os.ReadFile(filepath.Join(dir, name+".json"))
		require.NoError(t, err)
		var r record
		require.NoError(t, json.Unmarshal(b, &r))
		net, err := jigsaw.LoadFile(filepath.Join(dir, name+".gob"))
		require.NoError(t, err)
		return r, net
	}
	o.out = t.TempDir()
	require.NoError(t, run(context.Background(), o))
	whole, wholeNet := read(o.out)
	assert.Zero(t, whole.ResumedFrom)

	o.out, o.steps = t.TempDir(), 3
	require.NoError(t, run(context.Background(), o))
	short, _ := read(o.out)
	o.steps = 8
	require.NoError(t, run(context.Background(), o))
	resumed, resumedNet := read(o.out)
	assert.Equal(t, 3, resumed.ResumedFrom)
	assert.Greater(t, resumed.TrainSec, short.TrainSec, "train_seconds counts the earlier invocation")
	assert.Equal(t, whole.FinalLoss, resumed.FinalLoss)
	assert.Equal(t, whole.Metrics, resumed.Metrics)
	for i, p := range wholeNet.Params() {
		assert.Equal(t, p.Value.Data, resumedNet.Params()[i].Value.Data, p.Name)
	}
	// Another learning rate is another run: refused, not mixed in.
	o.lr = 2e-3
	assert.ErrorContains(t, run(context.Background(), o), "delete it to start afresh")
}

// TestFitPairsFlags runs -fit-pairs on a small validation set of smooth
// images with a network with edge matching, then decodes with -pairs: the
// fitted weights are saved, recorded and used, and bad combinations of
// flags are errors.
func TestFitPairsFlags(t *testing.T) {
	cfg := jigsaw.Config{P: 3, Channels: 1, Height: 12, Width: 12, Filters: 2, Kernel: 3, Pool: 2, Tau: 1, Iters: 5, Samples: 1, Noise: 1, Refine: 1, Heads: 1}
	net, err := jigsaw.New(cfg, 1)
	require.NoError(t, err)
	val := &dataset.Images{N: 30, Channels: 1, Height: 12, Width: 12, Pixels: make([]float64, 30*144)}
	for b := range val.N {
		for y := range 12 {
			for x := range 12 {
				val.Pixels[b*144+y*12+x] = math.Sin(0.2*float64(x+b) + 0.15*float64(y*(1+b%3)))
			}
		}
	}
	path := filepath.Join(t.TempDir(), "pairs.json")
	o := options{load: "net.gob", val: true, evalN: 10, fitPairs: path, quiet: true, seed: 1,
		dec: decode.Decoder{Pairwise: 1, Anneal: 200, Seed: 1},
		fit: decode.FitConfig{Epochs: 2, Batch: 5, LR: 0.01, Anneal: 100, Seed: 1}}
	var rec record
	w, err := pairWeights(o, net, val, &rec)
	require.NoError(t, err)
	require.NotNil(t, w)
	require.NotNil(t, rec.Fit)
	assert.Equal(t, 20, rec.Fit.Puzzles, "the images after the first -eval")
	assert.Equal(t, 10, rec.Fit.First)
	assert.Len(t, rec.Fit.Epochs, 2)
	assert.Equal(t, path, rec.Pairs)
	back, err := decode.LoadPairsFile(path)
	require.NoError(t, err)
	assert.Equal(t, w, back)
	o.fitN = 7
	_, err = pairWeights(o, net, val, &rec)
	require.NoError(t, err)
	assert.Equal(t, 7, rec.Fit.Puzzles)

	// -fit-unary and -fit-margin pixels: the weight of the logits is
	// fitted, saved and reported per epoch; a margin of another name is
	// an error.
	o.fitN = 0
	o.fit.FitUnary, o.fit.Margin = true, decode.MarginPixels
	w, err = pairWeights(o, net, val, &rec)
	require.NoError(t, err)
	assert.NotZero(t, w.Unary)
	assert.Equal(t, w.Unary, rec.Fit.Epochs[1].Unary)
	assert.Equal(t, decode.MarginPixels, rec.Fit.Config.Margin)
	back, err = decode.LoadPairsFile(path)
	require.NoError(t, err)
	assert.Equal(t, w, back)
	o.fit.Margin = "ink"
	_, err = pairWeights(o, net, val, &rec)
	assert.ErrorContains(t, err, "margin")

	// -fit-border: the border vectors are fitted, saved and reported.
	o.fit.Margin, o.fit.FitBorder = decode.MarginPieces, true
	w, err = pairWeights(o, net, val, &rec)
	require.NoError(t, err)
	require.Len(t, w.Border, 4)
	assert.True(t, rec.Fit.Config.FitBorder)
	assert.Positive(t, rec.Fit.Epochs[1].BorderNorm)
	back, err = decode.LoadPairsFile(path)
	require.NoError(t, err)
	assert.Equal(t, w, back)
	o.fit.FitBorder = false

	// -pairs reads them back.
	o2 := options{pairs: path}
	var rec2 record
	w2, err := pairWeights(o2, net, val, &rec2)
	require.NoError(t, err)
	assert.NotNil(t, w2)
	assert.Equal(t, path, rec2.Pairs)
	assert.Nil(t, rec2.Fit)

	for name, bad := range map[string]options{
		"both":    {pairs: path, fitPairs: path},
		"no load": {fitPairs: path, val: true, evalN: 10},
		"no val":  {fitPairs: path, load: "x", evalN: 10},
		"table2":  {fitPairs: path, load: "x", val: true, evalN: 10, table2: true},
		"no eval": {fitPairs: path, load: "x", val: true},
		"all":     {fitPairs: path, load: "x", val: true, evalN: 30},
	} {
		_, err := pairWeights(bad, net, val, &record{})
		assert.Error(t, err, name)
	}
}

func TestOracleSpread(t *testing.T) {
	// 2 × 2 puzzles of 4 × 4 images whose two bottom pieces are blank and
	// whose two top pieces differ: the oracle swaps the blank pair half the
	// time, so on average 1 of 4 pieces is wrong.
	const n = 400
	imgs := make([]float64, n*16)
	for b := range n {
		imgs[b*16+0] = 1 // top left piece
		imgs[b*16+3] = 2 // top right piece
	}
	g, err := jigsaw.NewGrid(1, 4, 4, 2)
	require.NoError(t, err)
	z, err := jigsaw.MakePuzzles(g, imgs, nil, evalRNG(1))
	require.NoError(t, err)
	d0, err := oracleDraw(z, 1, 0)
	require.NoError(t, err)
	d1, err := oracleDraw(z, 1, 1)
	require.NoError(t, err)
	assert.NotEqual(t, d0.PropWrong, d1.PropWrong, "another draw places the blank pieces otherwise")
	s, err := oracleSpread(z, 1, 30, nil)
	require.NoError(t, err)
	given, err := oracleSpread(z, 1, 30, d0)
	require.NoError(t, err)
	assert.Equal(t, s, given, "draw 0 passed in is draw 0 computed")
	// Per draw, prop. wrong is (2/4)·(swapped share) with the share a
	// binomial mean of n puzzles at 1/2: mean 1/4, sd (1/2)·sqrt(1/(4n)) = 0.0125.
	assert.InDelta(t, 0.25, s[1][0], 0.01)
	assert.InDelta(t, 0.0125, s[1][1], 0.006)
	assert.InDelta(t, 0.5, s[2][0], 0.02, "prop. any wrong is the swapped share")
	assert.InDelta(t, 2*s[1][1], s[2][1], 1e-12)
}

func TestEnsembleFlag(t *testing.T) {
	in := t.TempDir()
	writePictures(t, in, 10, 12)
	o := options{
		images: in, size: 12, p: 2, steps: 3, batch: 4, lr: 1e-3, quiet: true, figTaus: "1",
		cfg: jigsaw.Config{Filters: 2, Kernel: 3, Pool: 2, Tau: 1, Iters: 5, Samples: 1, Noise: 1, Refine: 1},
	}
	name := "jigsaw_images-" + filepath.Base(in) + "_p2"
	gobs := make([]string, 2)
	for k := range gobs {
		o.seed, o.out = uint64(k+1), t.TempDir()
		require.NoError(t, run(context.Background(), o))
		gobs[k] = filepath.Join(o.out, name+".gob")
	}
	read := func(dir string) record { return readRecord(t, dir, name) }
	o.seed, o.dec = 1, decode.Decoder{Pairwise: 1, Anneal: 50, Seed: 1}
	o.load, o.out = gobs[0], t.TempDir()
	require.NoError(t, run(context.Background(), o))
	alone := read(o.out)
	assert.Empty(t, alone.Ensemble)

	// The same network twice decodes as it does alone.
	o.ensemble, o.out = gobs[0], t.TempDir()
	require.NoError(t, run(context.Background(), o))
	twice := read(o.out)
	assert.Equal(t, alone.Metrics, twice.Metrics)
	assert.Equal(t, alone.Search, twice.Search)

	// Another network is recorded with its seed and training.
	o.ensemble, o.out = " "+gobs[1]+" ", t.TempDir()
	require.NoError(t, run(context.Background(), o))
	r := read(o.out)
	require.Len(t, r.Ensemble, 1)
	m := r.Ensemble[0]
	assert.Equal(t, gobs[1], m.Model)
	assert.Equal(t, uint64(2), m.Seed)
	assert.Equal(t, 3, m.Steps)
	assert.Positive(t, m.TrainSec)
	assert.NotEmpty(t, m.TrainCommand)
	table := formatTable(map[int]*record{2: &r})
	assert.Contains(t, table, fmt.Sprintf("| ensemble: networks, seeds, training minutes in all | 2, 1 2, %.1f | - |", (r.TrainSec+m.TrainSec)/60))
	assert.NotContains(t, formatTable(map[int]*record{2: &alone}), "ensemble")

	o.load = ""
	assert.ErrorContains(t, run(context.Background(), o), "it needs -load")
	o.load, o.pairs = gobs[0], "pairs.json"
	assert.ErrorContains(t, run(context.Background(), o), "excludes -pairs and fit-pairs")
	o.pairs, o.ensemble = "", filepath.Join(t.TempDir(), "missing.gob")
	assert.ErrorContains(t, run(context.Background(), o), "-ensemble")
	o.ensemble, o.p = gobs[1], 3
	assert.ErrorContains(t, run(context.Background(), o), "network for 2 x 2 pieces")
}

// TestCriticFlags checks -train-critic and -critic: a trained critic is
// saved with its record, read back by -critic to the same metrics, and shown
// in Table 2; bad combinations are errors.
func TestCriticFlags(t *testing.T) {
	in := t.TempDir()
	writePictures(t, in, 12, 16)
	o := options{
		images: in, size: 16, p: 2, steps: 3, batch: 4, lr: 1e-3, quiet: true, figTaus: "1", seed: 1,
		cfg: jigsaw.Config{Filters: 2, Kernel: 3, Pool: 2, Tau: 1, Iters: 5, Samples: 1, Noise: 1, Refine: 1},
	}
	o.out = t.TempDir()
	require.NoError(t, run(context.Background(), o))
	name := "jigsaw_images-" + filepath.Base(in) + "_p2"
	read := func(dir string) record { return readRecord(t, dir, name) }
	o.load = filepath.Join(o.out, name+".gob")
	o.dec = decode.Decoder{Pairwise: 1, Anneal: 50, Seed: 1}
	o.criticCfg = decode.CriticConfig{Epochs: 2, HardShare: 0.5, HardTop: 2, Seed: 1}
	file := filepath.Join(t.TempDir(), "critic.gob")
	o.trainCritic, o.out = file, t.TempDir()
	require.NoError(t, run(context.Background(), o))
	trained := read(o.out)
	require.NotNil(t, trained.Critic)
	assert.Equal(t, file, trained.Critic.File)
	assert.Equal(t, 2, trained.Critic.Config.Epochs)
	assert.Equal(t, 32, trained.Critic.Config.Batch, "the defaults are recorded")
	assert.Positive(t, trained.Critic.Steps)
	assert.Positive(t, trained.Critic.TrainSec)
	require.NotNil(t, trained.Decoder)
	assert.Equal(t, float64(defaultCriticWeight), trained.Decoder.CriticWeight)
	require.NotNil(t, trained.Search)
	_, err := os.Stat(file + ".json")
	require.NoError(t, err)

	// -critic reads it back, with its training record.
	o.trainCritic, o.critic, o.out = "", file, t.TempDir()
	require.NoError(t, run(context.Background(), o))
	loaded := read(o.out)
	assert.Equal(t, trained.Metrics, loaded.Metrics)
	assert.Equal(t, trained.Critic.Steps, loaded.Critic.Steps)
	assert.Contains(t, formatTable(map[int]*record{2: &loaded}),
		fmt.Sprintf("| decoder: critic weight, critic training minutes | %g, %.1f | - |", float64(defaultCriticWeight), loaded.Critic.TrainSec/60))

	o.dec.CriticWeight = 3
	o.out = t.TempDir()
	require.NoError(t, run(context.Background(), o))
	assert.Equal(t, 3.0, read(o.out).Decoder.CriticWeight)

	o.trainCritic = file
	assert.ErrorContains(t, run(context.Background(), o), "exclude each other")
	o.trainCritic, o.critic = "", ""
	assert.ErrorContains(t, run(context.Background(), o), "-critic-weight needs")
	o.critic = filepath.Join(t.TempDir(), "none.gob")
	assert.ErrorContains(t, run(context.Background(), o), "-critic")
	o.critic, o.dec.CriticWeight = "", 0
	o.table2, o.mnist, o.images, o.trainCritic, o.sizes = true, t.TempDir(), "", file, "2,3"
	assert.ErrorContains(t, run(context.Background(), o), "give one size")
}

// readRecord reads the JSON record name.json a run wrote to dir.
func readRecord(t *testing.T, dir, name string) record {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name+".json"))
	require.NoError(t, err)
	var r record
	require.NoError(t, json.Unmarshal(b, &r))
	return r
}
