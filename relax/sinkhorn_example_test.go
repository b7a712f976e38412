package relax_test

import (
	"fmt"
	"log"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/relax"
)

func ExampleSinkhorn() {
	// The best assignment of these scores is 0→1, 1→0, 2→2.
	x := mat.NewDense(3, 3, []float64{
		0.9, 1.0, 0.1,
		0.8, 0.2, 0.3,
		0.1, 0.4, 0.7,
	})
	for _, tau := range []float64{1, 0.1, 0.01} {
		s, err := relax.Sinkhorn(x, tau, 200)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("tau = %g:\n%.3f\n", tau, mat.Formatted(s))
	}
	// Output:
	// tau = 1:
	// ⎡0.363  0.436  0.202⎤
	// ⎢0.426  0.254  0.320⎥
	// ⎣0.212  0.310  0.478⎦
	// tau = 0.1:
	// ⎡0.057  0.943  0.000⎤
	// ⎢0.943  0.014  0.043⎥
	// ⎣0.000  0.043  0.957⎦
	// tau = 0.01:
	// ⎡0.000  1.000  0.000⎤
	// ⎢1.000  0.000  0.000⎥
	// ⎣0.000  0.000  1.000⎦
}

func ExampleSinkhorn_forbidden() {
	// −Inf marks forbidden assignments; they get probability zero.
	inf := math.Inf(-1)
	x := mat.NewDense(3, 3, []float64{
		0, inf, 0,
		0, 0, inf,
		inf, 0, 0,
	})
	s, err := relax.Sinkhorn(x, 1, 50)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%.3f\n", mat.Formatted(s))
	// Output:
	// ⎡0.500  0.000  0.500⎤
	// ⎢0.500  0.500  0.000⎥
	// ⎣0.000  0.500  0.500⎦
}

func ExampleSinkhornTol() {
	// Iterate until every row sums to one within 1e-9.
	x := mat.NewDense(3, 3, []float64{
		0.9, 1.0, 0.1,
		0.8, 0.2, 0.3,
		0.1, 0.4, 0.7,
	})
	s, iters, err := relax.SinkhornTol(x, 0.1, 1e-9, 10000)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d iterations\n%.6f\n", iters, mat.Formatted(s))
	// Output:
	// 142 iterations
	// ⎡0.056935  0.942936  0.000129⎤
	// ⎢0.942715  0.014237  0.043048⎥
	// ⎣0.000350  0.042827  0.956823⎦
}

func ExampleSinkhornVar() {
	// Gradient of Σ_i S_ii, the total mass the relaxed permutation puts on
	// the identity, with respect to the scores.
	tape := ad.NewTape()
	x := tape.Variable(&ad.Tensor{Shape: []int{2, 2}, Data: []float64{1, 0, 0, 0}})
	s := relax.SinkhornVar(x, 1, 20)
	eye := tape.Const(&ad.Tensor{Shape: []int{2, 2}, Data: []float64{1, 0, 0, 1}})
	loss := ad.Sum(ad.Mul(s, eye))
	if err := tape.Backward(loss); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("S = %.4f\n", s.Value())
	fmt.Printf("dloss/dX = %.4f\n", x.Grad())
	// Output:
	// S = [0.6225 0.3775 0.3775 0.6225]
	// dloss/dX = [0.2350 -0.2350 -0.2350 0.2350]
}
