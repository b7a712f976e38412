package perm

import (
	"fmt"
	"math"
)

// checkPair validates two permutations of the same non-zero length.
func checkPair(fn string, pred, truth Perm) error {
	if len(pred) != len(truth) {
		return fmt.Errorf("perm: %s: length mismatch: pred %d, truth %d", fn, len(pred), len(truth))
	}
	if len(pred) == 0 {
		return fmt.Errorf("perm: %s: empty permutations", fn)
	}
	if err := pred.Validate(); err != nil {
		return fmt.Errorf("perm: %s: pred: %w", fn, err)
	}
	if err := truth.Validate(); err != nil {
		return fmt.Errorf("perm: %s: truth: %w", fn, err)
	}
	return nil
}

// KendallTau returns Kendall's tau-a rank correlation between the orderings
// pred and truth:
//
//	tau = (C - D) / (n(n-1)/2),
//
// where, over the pairs i < j, C counts the pairs ordered the same way by
// both (sign(pred[i]-pred[j]) = sign(truth[i]-truth[j])) and D the pairs
// ordered oppositely. Permutations have no ties, so tau-a equals tau-b. The
// result is 1 when pred equals truth, -1 when it is truth reversed, and has
// mean 0 for a uniformly random pred. A single item (n = 1) has no pairs
// and gives 1 by convention. It runs in O(n log n) by counting inversions.
func KendallTau(pred, truth Perm) (float64, error) {
	if err := checkPair("KendallTau", pred, truth); err != nil {
		return 0, err
	}
	n := len(pred)
	if n == 1 {
		return 1, nil
	}
	// Visit positions in increasing truth order and read pred there; a pair
	// is discordant exactly when it is an inversion of that sequence.
	seq := make([]int, n)
	for i, t := range truth {
		seq[t] = pred[i]
	}
	d := countInversions(seq, make([]int, n))
	pairs := float64(n) * float64(n-1) / 2
	return (pairs - 2*float64(d)) / pairs, nil
}

// countInversions returns the number of pairs i < j with a[i] > a[j],
// sorting a in the process (bottom-up merge sort using buf).
func countInversions(a, buf []int) int64 {
	n := len(a)
	var inv int64
	for width := 1; width < n; width *= 2 {
		for lo := 0; lo < n-width; lo += 2 * width {
			mid := lo + width
			hi := min(lo+2*width, n)
			i, j, k := lo, mid, lo
			for i < mid && j < hi {
				if a[i] <= a[j] {
					buf[k] = a[i]
					i++
				} else {
					buf[k] = a[j]
					inv += int64(mid - i)
					j++
				}
				k++
			}
			k += copy(buf[k:], a[i:mid])
			copy(buf[k:], a[j:hi])
			copy(a[lo:hi], buf[lo:hi])
		}
	}
	return inv
}

// ProportionWrong returns the fraction of positions i with pred[i] !=
// truth[i] ("Prop. wrong" in the seed paper): 0 for a perfect prediction,
// (n-1)/n on average for a uniformly random one.
func ProportionWrong(pred, truth Perm) (float64, error) {
	if err := checkPair("ProportionWrong", pred, truth); err != nil {
		return 0, err
	}
	wrong := 0
	for i := range pred {
		if pred[i] != truth[i] {
			wrong++
		}
	}
	return float64(wrong) / float64(len(pred)), nil
}

// AnyWrong returns 1 if pred differs from truth in at least one position and
// 0 otherwise. Its mean over a test set is the seed paper's "Prop. any
// wrong".
func AnyWrong(pred, truth Perm) (float64, error) {
	if err := checkPair("AnyWrong", pred, truth); err != nil {
		return 0, err
	}
	if pred.Equal(truth) {
		return 0, nil
	}
	return 1, nil
}

// L1 returns the mean absolute difference (1/n) Σ |x[i] - y[i]| between a
// reconstruction x and its target y (the seed paper's "l1"; for images,
// flatten the pixels). NaN entries propagate to the result.
func L1(x, y []float64) (float64, error) {
	if err := checkVecs("L1", x, y); err != nil {
		return 0, err
	}
	var s float64
	for i, v := range x {
		s += math.Abs(v - y[i])
	}
	return s / float64(len(x)), nil
}

// L2 returns the mean squared difference (1/n) Σ (x[i] - y[i])² between a
// reconstruction x and its target y (the seed paper's "l2": the squared
// error its reference implementation averages, not its square root). NaN
// entries propagate to the result.
func L2(x, y []float64) (float64, error) {
	if err := checkVecs("L2", x, y); err != nil {
		return 0, err
	}
	var s float64
	for i, v := range x {
		d := v - y[i]
		s += d * d
	}
	return s / float64(len(x)), nil
}

func checkVecs(fn string, x, y []float64) error {
	if len(x) != len(y) {
		return fmt.Errorf("perm: %s: length mismatch %d != %d", fn, len(x), len(y))
	}
	if len(x) == 0 {
		return fmt.Errorf("perm: %s: empty input", fn)
	}
	return nil
}
