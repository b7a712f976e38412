package jigsaw

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/perm"
)

func TestScoreHandMade(t *testing.T) {
	// Four one-pixel pieces; pieces 0 and 1 are identical (blank).
	pieces := []float64{0, 0, 1, 3}
	id := perm.Identity(4)
	for _, tc := range []struct {
		name string
		pred perm.Perm
		want Metrics
	}{
		{"exact", perm.Perm{0, 1, 2, 3}, Metrics{Puzzles: 1, KendallTau: 1}},
		{
			// Swapping the two blank pieces is wrong by index, right up to
			// identical pieces, and leaves the image unchanged.
			"blank swap", perm.Perm{1, 0, 2, 3},
			Metrics{Puzzles: 1, KendallTau: 4.0 / 6, PropWrong: 0.5, PropAnyWrong: 1},
		},
		{
			// Swapping pieces 2 and 3 puts 3 where 1 was and 1 where 3 was:
			// |d| = 2 at two of four pixels.
			"swap", perm.Perm{0, 1, 3, 2},
			Metrics{
				Puzzles: 1, KendallTau: 4.0 / 6, PropWrong: 0.5, PropAnyWrong: 1,
				L1: 1, MSE: 2, RMSE: math.Sqrt2, PropWrongIdentical: 0.5, PropAnyWrongIdentical: 1,
			},
		},
		{
			// The reversal: every pair discordant; positions 0 and 1 hold
			// 3 and 1 instead of 0 and 0, positions 2 and 3 hold blanks.
			"reverse", perm.Perm{3, 2, 1, 0},
			Metrics{
				Puzzles: 1, KendallTau: -1, PropWrong: 1, PropAnyWrong: 1,
				L1: (3 + 1 + 1 + 3) / 4.0, MSE: (9 + 1 + 1 + 9) / 4.0, RMSE: math.Sqrt(5),
				PropWrongIdentical: 1, PropAnyWrongIdentical: 1,
			},
		},
	} {
		got, err := Score(tc.pred, id, pieces, 1)
		require.NoError(t, err, tc.name)
		assert.InDelta(t, tc.want.KendallTau, got.KendallTau, 1e-15, tc.name)
		got.KendallTau = tc.want.KendallTau
		assert.Equal(t, tc.want, got, tc.name)
	}
}

func TestScoreNonIdentityTruth(t *testing.T) {
	// Scrambled piece i is true piece truth[i]; predicting truth exactly is
	// perfect whatever truth is, and the pieces' contents do not matter.
	pieces := []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6}
	truth := perm.Perm{2, 0, 1}
	m, err := Score(truth.Clone(), truth, pieces, 2)
	require.NoError(t, err)
	assert.Equal(t, Metrics{Puzzles: 1, KendallTau: 1}, m)
}

func TestScoreErrors(t *testing.T) {
	_, err := Score(perm.Perm{0, 1}, perm.Perm{0, 1, 2}, make([]float64, 3), 1)
	assert.Error(t, err)
	_, err = Score(perm.Perm{0, 1, 2}, perm.Perm{0, 1, 2}, make([]float64, 4), 1)
	assert.Error(t, err)
	_, err = Score(perm.Perm{0, 0, 2}, perm.Perm{0, 1, 2}, make([]float64, 3), 1)
	assert.Error(t, err, "not a permutation")
}

func TestMetricsAverage(t *testing.T) {
	var m Metrics
	m.add(Metrics{Puzzles: 1, KendallTau: 1, L1: 0.5})
	m.add(Metrics{Puzzles: 3, KendallTau: 0, L1: 0.1, PropAnyWrong: 1})
	assert.Equal(t, 4, m.Puzzles)
	assert.InDelta(t, 0.25, m.KendallTau, 1e-15)
	assert.InDelta(t, 0.2, m.L1, 1e-15)
	assert.InDelta(t, 0.75, m.PropAnyWrong, 1e-15)
}

// oraclePuzzles builds puzzles of 4 one-value pieces in true order
// pieces, each scrambled by a random permutation.
func oraclePuzzles(rng *rand.Rand, pieces []float64, count int) *Puzzles {
	z := &Puzzles{Grid: Grid{Channels: 1, P: 2, PieceH: 1, PieceW: 1}}
	for range count {
		q := perm.Random(4, rng)
		z.Perms = append(z.Perms, q)
		z.Pieces = append(z.Pieces, pieces...)
		for _, j := range q {
			z.Scrambled = append(z.Scrambled, pieces[j])
		}
	}
	return z
}

func TestOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	// Distinct pieces: the oracle is the truth.
	z := oraclePuzzles(rng, []float64{0.1, 0.2, 0.3, 0.4}, 50)
	pred, err := Oracle(z, rng)
	require.NoError(t, err)
	assert.Equal(t, z.Perms, pred)

	// Pieces A A B C: the two A's trade places half the time, so the
	// expected prop. wrong is (2 − 1)/4 and prop. any wrong 1/2; the
	// identical-piece metrics and the reconstruction are always perfect.
	const count = 20000
	z = oraclePuzzles(rng, []float64{0, 0, 0.5, 1}, count)
	pred, err = Oracle(z, rng)
	require.NoError(t, err)
	for b, p := range pred {
		require.NoError(t, p.Validate())
		for i, j := range z.Perms[b] {
			if j >= 2 {
				require.Equal(t, j, p[i], "distinct piece misplaced")
			}
		}
	}
	m, err := ScoreAll(z, pred)
	require.NoError(t, err)
	se := 0.5 / math.Sqrt(count) // sd of prop. wrong (0 or 1/2, each with probability 1/2)
	assert.InDelta(t, 0.25, m.PropWrong, 5*se)
	assert.InDelta(t, 0.5, m.PropAnyWrong, 10*se)
	assert.Zero(t, m.PropWrongIdentical)
	assert.Zero(t, m.PropAnyWrongIdentical)
	assert.Zero(t, m.L1)

	_, err = Oracle(nil, rng)
	assert.Error(t, err)
	_, err = Oracle(z, nil)
	assert.Error(t, err)
	z.Perms = z.Perms[:3]
	_, err = Oracle(z, rng)
	assert.Error(t, err)
}
