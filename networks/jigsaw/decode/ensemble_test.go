package decode

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/networks/jigsaw"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/relax"
)

// secondNet returns a network for the grid of refineNet with other weights.
func secondNet(t *testing.T, depth int) *jigsaw.Net {
	t.Helper()
	cfg := tinyConfig()
	cfg.P, cfg.Height, cfg.Width, cfg.Refine, cfg.EdgeDepth = 3, 9, 9, 2, depth
	net, err := jigsaw.New(cfg, 77)
	require.NoError(t, err)
	randomizeEdges(net, rand.New(rand.NewPCG(3, 3)))
	return net
}

// TestEnsembleOfCopies checks that an ensemble of one network, or of two
// copies of it, decodes exactly as the network does: the mean of equal
// scores is the score.
func TestEnsembleOfCopies(t *testing.T) {
	net, z := refineNet(t, 1, 10)
	for _, d := range []Decoder{{}, {Pairwise: 2, Seam: 0.5, Anneal: 3000, Seed: 3}} {
		want, err := Solve(net, z, d)
		require.NoError(t, err)
		for _, k := range []int{1, 2} {
			nets := make([]*jigsaw.Net, k)
			for i := range nets {
				nets[i] = net
			}
			e, err := NewEnsemble(nets...)
			require.NoError(t, err)
			got, err := e.Solve(z, d)
			require.NoError(t, err)
			assert.Equal(t, want, got, "%d copies, %+v", k, d)
		}
	}
}

// TestEnsembleMeanScore checks the ensemble's score against its definition:
// at any arrangement it is the mean of the networks' scores, so the mean
// score SearchGap reports is the mean of theirs; the linear assignment is
// M of the mean logits; and the decoder never ends below E(M(ḡ)).
func TestEnsembleMeanScore(t *testing.T) {
	a, z := refineNet(t, 2, 12)
	b := secondNet(t, 2)
	e, err := NewEnsemble(a, b)
	require.NoError(t, err)
	assert.Equal(t, 2, e.Len())
	assert.Equal(t, a.Grid(), e.Grid())

	ga, err := a.LogitMatrices(z)
	require.NoError(t, err)
	gb, err := b.LogitMatrices(z)
	require.NoError(t, err)
	plain := make([]perm.Perm, len(ga))
	for i := range ga {
		var mean mat.Dense
		mean.Add(ga[i], gb[i])
		mean.Scale(0.5, &mean)
		plain[i], err = relax.Matching(&mean)
		require.NoError(t, err)
	}
	zero, err := e.Solve(z, Decoder{})
	require.NoError(t, err)
	assert.Equal(t, plain, zero, "the zero Decoder is M(ḡ)")

	d := Decoder{Pairwise: 1.5, Seam: 0.7, Anneal: 4000, Seed: 2}
	got, err := e.Solve(z, d)
	require.NoError(t, err)
	for _, preds := range [][]perm.Perm{plain, got, z.Perms} {
		ge, err := e.SearchGap(z, preds, d)
		require.NoError(t, err)
		sa, err := SearchGap(a, z, preds, d)
		require.NoError(t, err)
		sb, err := SearchGap(b, z, preds, d)
		require.NoError(t, err)
		assert.InDelta(t, (sa.MeanScore+sb.MeanScore)/2, ge.MeanScore, 1e-9)
		assert.InDelta(t, (sa.MeanTrueScore+sb.MeanTrueScore)/2, ge.MeanTrueScore, 1e-9)
	}
	// Puzzle by puzzle: E of the ensemble at the decoded arrangement is at
	// least E at M(ḡ), and equals the mean of the networks' E.
	ea, eb := energyOf(a, z, ga, d), energyOf(b, z, gb, d)
	for i := range got {
		require.NoError(t, got[i].Validate())
		atGot := (ea(i, got[i]) + eb(i, got[i])) / 2
		atPlain := (ea(i, plain[i]) + eb(i, plain[i])) / 2
		assert.GreaterOrEqual(t, atGot, atPlain-1e-9, "puzzle %d", i)
		one, err := e.SearchGap(&jigsaw.Puzzles{Grid: z.Grid, Pieces: z.Pieces[i*9*9 : (i+1)*9*9],
			Scrambled: z.Scrambled[i*9*9 : (i+1)*9*9], Perms: z.Perms[i : i+1]}, got[i:i+1], d)
		require.NoError(t, err)
		assert.InDelta(t, atGot, one.MeanScore, 1e-9, "puzzle %d", i)
	}
	checkSerialAndEvaluate(t, e, z, d, got)
}

func TestEnsembleErrors(t *testing.T) {
	net, z := refineNet(t, 1, 2)
	_, err := NewEnsemble()
	assert.ErrorContains(t, err, "no networks")
	_, err = NewEnsemble(net, nil)
	assert.ErrorContains(t, err, "network 1 is nil")

	other := tinyConfig()
	other.P, other.Height, other.Width, other.Refine = 3, 12, 12, 1
	big, err := jigsaw.New(other, 1)
	require.NoError(t, err)
	_, err = NewEnsemble(net, big)
	assert.ErrorContains(t, err, "network 1 cuts")

	plainCfg := tinyConfig()
	plainCfg.P, plainCfg.Height, plainCfg.Width = 3, 9, 9
	plain, err := jigsaw.New(plainCfg, 1)
	require.NoError(t, err)
	e, err := NewEnsemble(net, plain)
	require.NoError(t, err)
	_, err = e.Solve(z, Decoder{Pairwise: 1})
	assert.ErrorContains(t, err, "network 1: a pairwise weight needs a network with edge matching")
	_, err = e.Solve(z, Decoder{Seam: 1, Anneal: 10})
	assert.NoError(t, err, "the seam term needs no edge matching")
	_, err = e.Solve(z, Decoder{Pairwise: math.NaN()})
	assert.ErrorContains(t, err, "decode: Solve: network 0: pairwise weight")

	w, err := NetPairWeights(net)
	require.NoError(t, err)
	two, err := NewEnsemble(net, net)
	require.NoError(t, err)
	_, err = two.Solve(z, Decoder{Pairwise: 1, Pair: w})
	assert.ErrorContains(t, err, "fitted pair weights belong to one network")
	_, err = two.SearchGap(z, z.Perms, Decoder{Pairwise: 1, Pair: w})
	assert.ErrorContains(t, err, "decode: SearchGap: fitted pair weights")
	one, err := NewEnsemble(net)
	require.NoError(t, err)
	_, err = one.Solve(z, Decoder{Pairwise: 1, Pair: w})
	assert.NoError(t, err, "one network may use fitted weights")
	_, err = two.SearchGap(z, z.Perms, Decoder{})
	assert.ErrorContains(t, err, "no quadratic score")
}
