package dist_test

import (
	"fmt"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/dist"
)

func ExampleStickBreaking() {
	// A distribution on 3×3 doubly stochastic matrices.
	d := dist.StickBreaking{
		Mu:    mat.NewDense(2, 2, []float64{1, -1, 0, 0}),
		Sigma: mat.NewDense(2, 2, []float64{0.5, 0.5, 0.5, 0.5}),
	}
	x, err := d.Rand(nil, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		fmt.Println(err)
		return
	}
	lp, err := d.LogProb(x)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("X =\n%.3f\nlog q(X) = %.3f\n", mat.Formatted(x), lp)
	// Output:
	// X =
	// ⎡0.622  0.105  0.274⎤
	// ⎢0.135  0.403  0.463⎥
	// ⎣0.244  0.493  0.264⎦
	// log q(X) = 6.627
}
