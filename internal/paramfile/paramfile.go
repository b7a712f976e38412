// Package paramfile holds what the parameter files of the jigsaw network and
// its critic share: the list of a model's parameters as names and values,
// the check of a file's parameters against the model's before they are
// copied in, and size arithmetic that saturates instead of overflowing, so
// that a damaged file's declared sizes can be checked before anything is
// allocated.
package paramfile

import (
	"fmt"
	"math"

	"github.com/permlab/permlab/ad"
)

// Values returns the names and the values (not copies) of ps, in order.
func Values(ps []*ad.Param) (names []string, values [][]float64) {
	for _, p := range ps {
		names = append(names, p.Name)
		values = append(values, p.Value.Data)
	}
	return names, values
}

// Set copies values into ps, after checking that a saved file's names and
// sizes are those of ps, in order, and its values finite. On error nothing
// is copied.
func Set(ps []*ad.Param, names []string, values [][]float64) error {
	if len(names) != len(ps) || len(values) != len(ps) {
		return fmt.Errorf("the file has %d parameters, want %d", len(names), len(ps))
	}
	for i, p := range ps {
		if p.Name != names[i] || len(p.Value.Data) != len(values[i]) {
			return fmt.Errorf("parameter %d is %q of %d values, the file has %q of %d", i, p.Name, len(p.Value.Data), names[i], len(values[i]))
		}
		for _, v := range values[i] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("parameter %q holds %v", p.Name, v)
			}
		}
	}
	for i, p := range ps {
		copy(p.Value.Data, values[i])
	}
	return nil
}

// Count returns the number of values of a saved file's parameters.
func Count(values [][]float64) int {
	n := 0
	for _, v := range values {
		n += len(v)
	}
	return n
}

// Mul returns a·b for a, b >= 0, or math.MaxInt when it overflows (or
// when either is negative).
func Mul(a, b int) int {
	if a < 0 || b < 0 || (a != 0 && b > math.MaxInt/a) {
		return math.MaxInt
	}
	return a * b
}

// Add returns a+b for a, b >= 0, or math.MaxInt when it overflows (or when
// either is negative).
func Add(a, b int) int {
	if a < 0 || b < 0 || b > math.MaxInt-a {
		return math.MaxInt
	}
	return a + b
}

// DenseWeights returns the number of weights of a dense layer from in to
// out units, with its bias or without, saturating as Mul does.
func DenseWeights(in, out int, bias bool) int {
	w := Mul(in, out)
	if bias {
		w = Add(w, out)
	}
	return w
}
