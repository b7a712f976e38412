package relax_test

import (
	"errors"
	"fmt"

	"github.com/permlab/permlab/relax"
)

func ExampleMatchingSparse() {
	// Four rows, each with a short list of candidate columns and scores,
	// in compressed sparse row form.
	s := relax.SparseScores{
		N:      4,
		RowPtr: []int{0, 2, 4, 6, 8},
		Cols: []int{
			0, 1, // row 0
			0, 2, // row 1
			1, 3, // row 2
			2, 3, // row 3
		},
		Vals: []float64{
			5, 4,
			6, 1,
			3, 2,
			7, 1,
		},
	}
	p, err := relax.MatchingSparse(s)
	if err != nil {
		fmt.Println(err)
		return
	}
	v, _ := s.Objective(p)
	fmt.Println("permutation:", p, "objective:", v)

	// If rows 2 and 3 may only take column 3, no perfect matching exists.
	t := relax.SparseScores{
		N:      4,
		RowPtr: []int{0, 2, 4, 5, 6},
		Cols:   []int{0, 1, 0, 2, 3, 3},
		Vals:   []float64{5, 4, 6, 1, 3, 2},
	}
	_, err = relax.MatchingSparse(t)
	fmt.Println(errors.Is(err, relax.ErrInfeasible))
	fmt.Println(err)
	// Output:
	// permutation: [1 0 3 2] objective: 19
	// true
	// relax: MatchingSparse: no perfect matching on the allowed entries: row 3 cannot be matched: the 2 rows reachable from it have 1 candidate columns between them
}
