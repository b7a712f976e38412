package jigsaw

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/permlab/permlab/perm"
)

// Metrics are the seed paper's jigsaw measures, averaged over puzzles.
//
// KendallTau, PropWrong and PropAnyWrong compare the predicted permutation
// with the true one by piece index, as the paper does: swapping two blank
// pieces counts as an error. L1, MSE and RMSE compare the hard
// reconstruction with the (cropped) image pixel by pixel; MSE is the mean
// squared error and RMSE its square root per image, averaged over images (the
// paper's "l2" column behaves like an RMSE, see the package documentation).
// PropWrongIdentical and PropAnyWrongIdentical count a piece as right when the
// piece placed at a position equals the true one there pixel for pixel, so
// that interchangeable identical pieces (blank MNIST corners) are not errors.
type Metrics struct {
	Puzzles               int     `json:"puzzles"`
	KendallTau            float64 `json:"kendall_tau"`
	PropWrong             float64 `json:"prop_wrong"`
	PropAnyWrong          float64 `json:"prop_any_wrong"`
	L1                    float64 `json:"l1"`
	MSE                   float64 `json:"l2_mse"`
	RMSE                  float64 `json:"l2_rmse"`
	PropWrongIdentical    float64 `json:"prop_wrong_identical"`
	PropAnyWrongIdentical float64 `json:"prop_any_wrong_identical"`
}

// Score returns the metrics of one puzzle: pred[i] is the predicted position
// of scrambled piece i, truth[i] its true position, and pieces holds the N
// pieces of the image in true order (N·ps values, ps values a piece).
func Score(pred, truth perm.Perm, pieces []float64, ps int) (Metrics, error) {
	n := len(truth)
	if len(pred) != n {
		return Metrics{}, fmt.Errorf("jigsaw: Score: predicted permutation has %d items, want %d", len(pred), n)
	}
	if ps < 1 || len(pieces) != n*ps {
		return Metrics{}, fmt.Errorf("jigsaw: Score: %d piece values for %d pieces of %d", len(pieces), n, ps)
	}
	var m Metrics
	var err error
	if m.KendallTau, err = perm.KendallTau(pred, truth); err != nil {
		return Metrics{}, fmt.Errorf("jigsaw: Score: %w", err)
	}
	if m.PropWrong, err = perm.ProportionWrong(pred, truth); err != nil {
		return Metrics{}, fmt.Errorf("jigsaw: Score: %w", err)
	}
	if m.PropAnyWrong, err = perm.AnyWrong(pred, truth); err != nil {
		return Metrics{}, fmt.Errorf("jigsaw: Score: %w", err)
	}
	// Scrambled piece i is true piece truth[i]; the hard reconstruction puts
	// it at position pred[i], where true piece pred[i] belongs.
	var abs, sq float64
	wrong := 0
	for i := range n {
		placed := pieces[truth[i]*ps : (truth[i]+1)*ps]
		want := pieces[pred[i]*ps : (pred[i]+1)*ps]
		same := true
		for k, v := range placed {
			d := v - want[k]
			if d != 0 {
				same = false
			}
			abs += math.Abs(d)
			sq += d * d
		}
		if !same {
			wrong++
		}
	}
	total := float64(n * ps)
	m.L1 = abs / total
	m.MSE = sq / total
	m.RMSE = math.Sqrt(m.MSE)
	m.PropWrongIdentical = float64(wrong) / float64(n)
	if wrong > 0 {
		m.PropAnyWrongIdentical = 1
	}
	m.Puzzles = 1
	return m, nil
}

// add accumulates o into m, weighting both by their puzzle counts.
func (m *Metrics) add(o Metrics) {
	if o.Puzzles == 0 {
		return
	}
	a, b := float64(m.Puzzles), float64(o.Puzzles)
	w := func(x, y float64) float64 { return (a*x + b*y) / (a + b) }
	m.KendallTau = w(m.KendallTau, o.KendallTau)
	m.PropWrong = w(m.PropWrong, o.PropWrong)
	m.PropAnyWrong = w(m.PropAnyWrong, o.PropAnyWrong)
	m.L1 = w(m.L1, o.L1)
	m.MSE = w(m.MSE, o.MSE)
	m.RMSE = w(m.RMSE, o.RMSE)
	m.PropWrongIdentical = w(m.PropWrongIdentical, o.PropWrongIdentical)
	m.PropAnyWrongIdentical = w(m.PropAnyWrongIdentical, o.PropAnyWrongIdentical)
	m.Puzzles += o.Puzzles
}

// Oracle returns, for every puzzle of z, the prediction of a solver that
// knows the image: each scrambled piece goes to a position whose true piece
// is identical to it pixel for pixel, and pieces that are identical to one
// another (the blank corners of an MNIST digit) share their positions in an
// order drawn uniformly from rng.
//
// Nothing in a scrambled puzzle tells identical pieces apart, and the
// scrambling is uniform, so every solver, however good, places them in
// effect at random among themselves. ScoreAll of the oracle's predictions
// is therefore the best that any method can expect on the index-based
// metrics (Kendall tau, prop. wrong, prop. any wrong) for these puzzles;
// its reconstruction errors and identical-piece metrics are 0. A group of k
// identical pieces leaves k − 1 of them wrong on average.
func Oracle(z *Puzzles, rng *rand.Rand) ([]perm.Perm, error) {
	if z == nil || rng == nil {
		return nil, errors.New("jigsaw: Oracle: nil puzzles or random source")
	}
	n, ps := z.Grid.N(), z.Grid.PieceSize()
	if len(z.Perms) != z.Len() || len(z.Pieces) != z.Len()*n*ps {
		return nil, fmt.Errorf("jigsaw: Oracle: %d permutations and %d piece values for %d puzzles of %d pieces", len(z.Perms), len(z.Pieces), z.Len(), n)
	}
	out := make([]perm.Perm, z.Len())
	for b := range out {
		truth, pieces := z.Perms[b], z.Pieces[b*n*ps:(b+1)*n*ps]
		if len(truth) != n {
			return nil, fmt.Errorf("jigsaw: Oracle: puzzle %d: permutation of %d items, want %d", b, len(truth), n)
		}
		// group[j] is the first true position whose piece equals piece j.
		group := make([]int, n)
		for j := range n {
			group[j] = j
			for k := range j {
				if group[k] == k && slices.Equal(pieces[j*ps:(j+1)*ps], pieces[k*ps:(k+1)*ps]) {
					group[j] = k
					break
				}
			}
		}
		// The positions of each group, shuffled, go to the scrambled
		// pieces of that group in scrambled order.
		slots := make(map[int][]int)
		for j := range n {
			slots[group[j]] = append(slots[group[j]], j)
		}
		for g := range n {
			s := slots[g]
			rng.Shuffle(len(s), func(i, k int) { s[i], s[k] = s[k], s[i] })
		}
		pred := make(perm.Perm, n)
		for i, j := range truth {
			g := group[j]
			pred[i], slots[g] = slots[g][0], slots[g][1:]
		}
		out[b] = pred
	}
	return out, nil
}
