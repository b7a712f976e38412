package sorting

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/relax"
)

// chunk is the number of lists whose logits are computed on one tape.
const chunk = 256

// checkList returns an error unless list has n finite numbers.
func checkList(list []float64, n int) error {
	if len(list) != n {
		return fmt.Errorf("list has %d numbers, the network sorts %d", len(list), n)
	}
	for i, x := range list {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("list[%d] = %v is not finite", i, x)
		}
	}
	return nil
}

// Logits returns the n×n logit matrix g(x̃) of list: row i scores the
// positions of list[i]. It returns an error unless list holds Config.N
// finite numbers.
func (net *Network) Logits(list []float64) (*mat.Dense, error) {
	gs, err := net.logitsBatch([][]float64{list})
	if err != nil {
		return nil, fmt.Errorf("sorting: Logits: %w", err)
	}
	n := net.cfg.N
	return mat.NewDense(n, n, gs[0]), nil
}

// logitsBatch returns the logits of every list, row-major n×n each.
func (net *Network) logitsBatch(lists [][]float64) ([][]float64, error) {
	n := net.cfg.N
	for k, list := range lists {
		if err := checkList(list, n); err != nil {
			return nil, fmt.Errorf("list %d: %w", k, err)
		}
	}
	out := make([][]float64, len(lists))
	t := ad.NewTape()
	for from := 0; from < len(lists); from += chunk {
		to := min(from+chunk, len(lists))
		input := ad.Zeros(to-from, n, 1)
		for k := from; k < to; k++ {
			net.cfg.Variant.transform(input.Data[(k-from)*n:(k-from+1)*n], lists[k])
		}
		t.Reset()
		g := net.logits(t, input).Value()
		if err := t.Err(); err != nil {
			return nil, err
		}
		for k := from; k < to; k++ {
			out[k] = slices.Clone(g[(k-from)*n*n : (k-from+1)*n*n])
		}
	}
	return out, nil
}

// Sort returns, for each list, the predicted permutation σ = M(g(x̃)): the
// number list[i] goes to position σ(i), so σ.Inverse().Apply(list) is the
// list in predicted increasing order. No noise is added. Every list must hold
// Config.N finite numbers.
func (net *Network) Sort(lists [][]float64) ([]perm.Perm, error) {
	gs, err := net.logitsBatch(lists)
	if err != nil {
		return nil, fmt.Errorf("sorting: Sort: %w", err)
	}
	n := net.cfg.N
	ms := make([]mat.Matrix, len(gs))
	for k, g := range gs {
		ms[k] = mat.NewDense(n, n, g)
	}
	ps, err := relax.MatchingBatch(ms)
	if err != nil {
		return nil, fmt.Errorf("sorting: Sort: %w", err)
	}
	return ps, nil
}

// Ranks returns the true positions of the numbers of list in increasing
// order: list[i] is the Ranks(list)[i]-th smallest (from 0), ties broken by
// index. It is the permutation Sort should predict.
func Ranks(list []float64) perm.Perm {
	order := make([]int, len(list))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case list[a] < list[b]:
			return -1
		case list[a] > list[b]:
			return 1
		}
		return 0
	})
	r := make(perm.Perm, len(list))
	for pos, i := range order {
		r[i] = pos
	}
	return r
}

// Metrics are the test measures of one interval, averaged over its lists.
type Metrics struct {
	Low          float64 `json:"low"`
	High         float64 `json:"high"`
	Lists        int     `json:"lists"`
	PropAnyWrong float64 `json:"prop_any_wrong"` // lists with at least one misplaced number (Table 1)
	PropWrong    float64 `json:"prop_wrong"`     // misplaced numbers
	KendallTau   float64 `json:"kendall_tau"`    // between predicted and true positions
}

// TestLists returns count lists of n numbers from U(low, high). The lists
// are low + (high − low)·u for uniform draws u taken in order from a PCG
// generator seeded with seed, so two intervals with the same seed are tested
// on the same u: their results differ only through the interval.
func TestLists(n, count int, low, high float64, seed uint64) ([][]float64, error) {
	switch {
	case n < 1:
		return nil, fmt.Errorf("sorting: TestLists: n must be >= 1, got %d", n)
	case count < 0:
		return nil, fmt.Errorf("sorting: TestLists: count must be >= 0, got %d", count)
	case math.IsNaN(low) || math.IsInf(low, 0) || math.IsNaN(high) || math.IsInf(high, 0) || !(high > low):
		return nil, fmt.Errorf("sorting: TestLists: want finite low < high, got U(%v, %v)", low, high)
	}
	rng := newRand(seed, streamTest)
	lists := make([][]float64, count)
	for k := range lists {
		lists[k] = make([]float64, n)
		for i := range lists[k] {
			lists[k][i] = low + (high-low)*rng.Float64()
		}
	}
	return lists, nil
}

// Evaluate sorts lists test lists from U(low, high) (see TestLists) with net
// and returns the metrics of its predictions.
func Evaluate(net *Network, low, high float64, lists int, seed uint64) (Metrics, error) {
	if net == nil {
		return Metrics{}, errors.New("sorting: Evaluate: nil network")
	}
	if lists < 1 {
		return Metrics{}, fmt.Errorf("sorting: Evaluate: lists must be >= 1, got %d", lists)
	}
	xs, err := TestLists(net.cfg.N, lists, low, high, seed)
	if err != nil {
		return Metrics{}, fmt.Errorf("sorting: Evaluate: %w", err)
	}
	m := Metrics{Low: low, High: high, Lists: lists}
	for from := 0; from < lists; from += chunk {
		batch := xs[from:min(from+chunk, lists)]
		preds, err := net.Sort(batch)
		if err != nil {
			return Metrics{}, fmt.Errorf("sorting: Evaluate: %w", err)
		}
		for k, pred := range preds {
			truth := Ranks(batch[k])
			any, err1 := perm.AnyWrong(pred, truth)
			wrong, err2 := perm.ProportionWrong(pred, truth)
			tau, err3 := perm.KendallTau(pred, truth)
			if err := errors.Join(err1, err2, err3); err != nil {
				return Metrics{}, fmt.Errorf("sorting: Evaluate: %w", err)
			}
			m.PropAnyWrong += any
			m.PropWrong += wrong
			m.KendallTau += tau
		}
	}
	m.PropAnyWrong /= float64(lists)
	m.PropWrong /= float64(lists)
	m.KendallTau /= float64(lists)
	return m, nil
}
