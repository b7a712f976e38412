package decode

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/networks/jigsaw"
	"github.com/permlab/permlab/perm"
)

func TestOnSide(t *testing.T) {
	// 3 × 3: count the sides of every position.
	want := []int{2, 1, 2, 1, 0, 1, 2, 1, 2}
	for q, w := range want {
		n := 0
		for d := range 4 {
			if onSide(3, q, d) {
				n++
			}
		}
		assert.Equal(t, w, n, "position %d", q)
	}
	assert.True(t, onSide(3, 2, 0) && onSide(3, 2, 3), "top right corner")
	assert.True(t, onSide(3, 6, 1) && onSide(3, 6, 2), "bottom left corner")
}

// TestBorderTerms checks the border terms of E against pixels read
// directly off the pieces (depth 1, one channel: a strip is the piece's
// outer row or column), and that borderFeatures is their gradient: E's
// border part at an arrangement is Σ_d Border[d]ᵀ features_d.
func TestBorderTerms(t *testing.T) {
	g, err := jigsaw.NewGrid(1, 12, 12, 3) // 4 × 4 pieces
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(5, 1))
	nn2, ps := g.N(), g.PieceSize()
	scr := randomImages(rng, 1, 1, 12, 12)
	w := &PairWeights{Depth: 1, LenH: 4, LenV: 4, H: make([]float64, 16), V: make([]float64, 16), Unary: 0.5}
	w.Border = make([][]float64, 4)
	for d := range w.Border {
		w.Border[d] = make([]float64, 4)
		for k := range w.Border[d] {
			w.Border[d][k] = rng.NormFloat64()
		}
	}
	require.NoError(t, w.validate(g))
	logits := make([]float64, nn2*nn2)
	for k := range logits {
		logits[k] = rng.NormFloat64()
	}
	s := newArranger(3)
	u := s.unaryScores(logits, w, g, scr)
	// pixel (y, x) of piece i.
	px := func(i, y, x int) float64 { return scr[i*ps+y*4+x] }
	for i := range nn2 {
		var side [4]float64
		for k := range 4 {
			side[0] += w.Border[0][k] * px(i, 0, k)
			side[1] += w.Border[1][k] * px(i, 3, k)
			side[2] += w.Border[2][k] * px(i, k, 0)
			side[3] += w.Border[3][k] * px(i, k, 3)
		}
		for q := range nn2 {
			want := 0.5 * logits[i*nn2+q]
			r, c := q/3, q%3
			if r == 0 {
				want += side[0]
			}
			if r == 2 {
				want += side[1]
			}
			if c == 0 {
				want += side[2]
			}
			if c == 2 {
				want += side[3]
			}
			assert.InDelta(t, want, u[i*nn2+q], 1e-12, "piece %d position %d", i, q)
		}
	}

	pred := perm.Perm(rng.Perm(nn2))
	gb := [][]float64{make([]float64, 4), make([]float64, 4), make([]float64, 4), make([]float64, 4)}
	borderFeatures(gb, 3, pred, jigsaw.Strips(g, scr, 1, 1), 1)
	viaFeatures, viaScores := 0.0, 0.0
	for d := range gb {
		for k, x := range gb[d] {
			viaFeatures += w.Border[d][k] * x
		}
	}
	for i, q := range pred {
		viaScores += u[i*nn2+q] - 0.5*logits[i*nn2+q]
	}
	assert.InDelta(t, viaScores, viaFeatures, 1e-12)

	// Without a border (and weight 1) the logits are used as they are.
	w.Border, w.Unary = nil, 0
	assert.Equal(t, &logits[0], &s.unaryScores(logits, w, g, scr)[0])
	assert.Equal(t, &logits[0], &s.unaryScores(logits, nil, g, scr)[0])
}

// framedImages returns n images of h × h pixels of uniform noise inside a
// blank frame one pixel wide: only the pieces on the puzzle's border have a
// blank edge, on the side that faces out.
func framedImages(rng *rand.Rand, n, h int) []float64 {
	x := make([]float64, n*h*h)
	for i := range n {
		for y := 1; y < h-1; y++ {
			for c := 1; c < h-1; c++ {
				x[i*h*h+y*h+c] = rng.Float64()
			}
		}
	}
	return x
}

// TestFitPairsBorder fits border vectors with the matrices on framed noise,
// where a piece goes shows only in which of its edges are blank. The
// fit should learn to penalise ink on every side of the puzzle, decode
// held-out puzzles better than a fit without the border, give a border of
// zeros the score of no border, and save and load its vectors (version 3).
func TestFitPairsBorder(t *testing.T) {
	net := fitNet(t)
	rng := rand.New(rand.NewPCG(7, 3))
	train, err := jigsaw.MakePuzzles(net.Grid(), framedImages(rng, 120, 12), nil, rng)
	require.NoError(t, err)
	held, err := jigsaw.MakePuzzles(net.Grid(), framedImages(rng, 60, 12), nil, rng)
	require.NoError(t, err)
	d := Decoder{Pairwise: 1, Anneal: 3000, Seed: 2}
	fc := FitConfig{Epochs: 6, Batch: 10, LR: 0.05, Anneal: 500, Seed: 1, FitBorder: true}
	var hist []FitProgress
	w, err := FitPairs(net, train, d, nil, fc, func(p FitProgress) { hist = append(hist, p) })
	require.NoError(t, err)
	require.Len(t, hist, 6)
	t.Logf("fit: %+v", hist)
	assert.Less(t, hist[5].Hinge, hist[0].Hinge, "the hinge should fall")
	assert.Positive(t, hist[5].BorderNorm)
	require.Len(t, w.Border, 4)
	for side, beta := range w.Border {
		sum := 0.0
		for _, x := range beta {
			sum += x
		}
		assert.Negative(t, sum, "ink on side %d of the puzzle should cost", side)
	}
	fc.FitBorder = false
	plain, err := FitPairs(net, train, d, nil, fc, nil)
	require.NoError(t, err)
	assert.Nil(t, plain.Border)

	dp, db := d, d
	dp.Pair, db.Pair = plain, w
	without, err := Evaluate(net, held, dp)
	require.NoError(t, err)
	with, err := Evaluate(net, held, db)
	require.NoError(t, err)
	t.Logf("held-out prop. wrong %.3f fitted without a border, %.3f with", without.PropWrong, with.PropWrong)
	assert.Less(t, with.PropWrong, without.PropWrong/2, "the border should help")

	// A border of zeros scores as no border: the same decodings.
	zero := *plain
	zero.Border = [][]float64{make([]float64, plain.LenV), make([]float64, plain.LenV), make([]float64, plain.LenH), make([]float64, plain.LenH)}
	dz := d
	dz.Pair = &zero
	a, err := Solve(net, held, dp)
	require.NoError(t, err)
	b, err := Solve(net, held, dz)
	require.NoError(t, err)
	assert.Equal(t, a, b)

	raw := roundTripPairs(t, filepath.Join(t.TempDir(), "pairs.json"), w)
	assert.Contains(t, string(raw), `"version": 3`)

	// A deeper fit starts from the same border: the border terms of the
	// deepened weights score alike (TestDeepenKeepsScores checks the
	// tables).
	deep := w.deepen(net.Grid(), 3)
	require.NoError(t, deep.validate(net.Grid()))
	nn2 := net.Grid().N()
	logits := make([]float64, nn2*nn2)
	s1, s2 := newArranger(3), newArranger(3)
	scr := scrambledOf(held, 0)
	u1 := s1.unaryScores(logits, w, net.Grid(), scr)
	u2 := s2.unaryScores(logits, deep, net.Grid(), scr)
	for k := range u1 {
		assert.InDelta(t, u1[k], u2[k], 1e-12*(1+math.Abs(u1[k])))
	}
}
