package jigsaw

import (
	"fmt"
	"math"

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
