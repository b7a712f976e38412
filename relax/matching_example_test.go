package relax_test

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/relax"
)

func ExampleMatching() {
	// Scores of assigning each row (worker) to each column (task).
	x := mat.NewDense(3, 3, []float64{
		7, 5, 1,
		6, 2, 3,
		9, 8, 4,
	})
	p, err := relax.Matching(x)
	if err != nil {
		fmt.Println(err)
		return
	}
	v, _ := relax.Objective(x, p)
	fmt.Println("permutation:", p, "objective:", v)
	// Output:
	// permutation: [0 2 1] objective: 18
}

func ExampleMatchingMasked() {
	x := mat.NewDense(3, 3, []float64{
		7, 5, 1,
		6, 2, 3,
		9, 8, 4,
	})
	// Row 2 may only take column 0; row 0 may not take column 1 (-Inf).
	allowed, _ := perm.FullMask(3)
	_ = allowed.Set(2, 1, false)
	_ = allowed.Set(2, 2, false)
	x.Set(0, 1, math.Inf(-1))
	p, err := relax.MatchingMasked(x, allowed)
	fmt.Println(p, err)

	// Forbid column 0 for everyone: no perfect matching is left.
	for i := range 3 {
		_ = allowed.Set(i, 0, false)
	}
	_, err = relax.MatchingMasked(x, allowed)
	fmt.Println(errors.Is(err, relax.ErrInfeasible))
	// Output:
	// [2 1 0] <nil>
	// true
}

func ExampleMatcher() {
	// A Matcher reuses its workspace: repeated solves do not allocate.
	var m relax.Matcher
	dst := make(perm.Perm, 2)
	for _, data := range [][]float64{
		{1, 0, 0, 1},
		{0, 1, 1, 0},
	} {
		p, err := m.SolveRaw(dst, 2, data, nil)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(p, m.Value())
	}
	// Output:
	// [0 1] 2
	// [1 0] 2
}
