package relax_test

import (
	"fmt"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/relax"
)

// Four neurons, each with two or three candidate identities. The logits
// are stored per candidate, row by row; the operator returns the
// probabilities of the same candidates, a doubly stochastic matrix on the
// pattern.
func ExampleSparseSinkhorn() {
	p, err := relax.SparsePatternFromRows([][]int{{0, 1}, {0, 1, 2}, {1, 2, 3}, {2, 3}})
	if err != nil {
		panic(err)
	}
	x := &relax.SparseLogits{Pattern: p, Values: []float64{
		2, 0,
		0, 1, 0,
		0, 1, 0,
		0, 2,
	}}
	s, err := relax.SparseSinkhorn(x, 0.5, 50)
	if err != nil {
		panic(err)
	}
	for i := 0; i < p.N(); i++ {
		lo, hi := p.RowPtr()[i], p.RowPtr()[i+1]
		fmt.Printf("row %d: columns %v, probabilities %.3f\n", i, p.Row(i), s.Values[lo:hi])
	}
	// Output:
	// row 0: columns [0 1], probabilities [0.955 0.045]
	// row 1: columns [0 1 2], probabilities [0.045 0.841 0.114]
	// row 2: columns [1 2 3], probabilities [0.114 0.841 0.045]
	// row 3: columns [2 3], probabilities [0.045 0.955]
}

// The differentiable form takes the candidates' values as a Var of shape
// (NNZ), or (B, NNZ) for a batch on the same pattern.
func ExampleSparseLogSinkhornVar() {
	p, err := relax.SparsePatternFromRows([][]int{{0, 1}, {0, 1}})
	if err != nil {
		panic(err)
	}
	tp := ad.NewTape()
	x := tp.Variable(&ad.Tensor{Shape: []int{p.NNZ()}, Data: []float64{1, 0, 0, 1}})
	logS := relax.SparseLogSinkhornVar(x, p, 1, 20)
	// The log-likelihood of the identity assignment: 2 log σ(1) at the
	// limit, with gradient ±(1 − σ(1)).
	loss := ad.Sum(ad.Take(logS, []int{0, 3}))
	if err := tp.Backward(loss); err != nil {
		panic(err)
	}
	fmt.Printf("log-likelihood %.4f, gradient %.4f\n", loss.Item(), x.Grad())
	// Output:
	// log-likelihood -0.6265, gradient [0.2689 -0.2689 -0.2689 0.2689]
}
