package relax_test

import (
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/relax"
)

func ExampleStickBreaking() {
	// Four unconstrained numbers give a point of the 3×3 Birkhoff polytope.
	psi := mat.NewDense(2, 2, []float64{
		0.5, -1,
		2, 0,
	})
	x, logDet, err := relax.StickBreaking(psi)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("X =\n%.4f\n", mat.Formatted(x))
	fmt.Printf("log |det J| = %.4f\n", logDet)

	// The map is invertible on the interior of the polytope.
	back, _, err := relax.StickBreakingInverse(x)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("psi =\n%.4f\n", mat.Formatted(back))
	// Output:
	// X =
	// ⎡0.4519  0.1474  0.4007⎤
	// ⎢0.4314  0.2843  0.2843⎥
	// ⎣0.1168  0.5683  0.3150⎦
	// log |det J| = -7.9614
	// psi =
	// ⎡ 0.5000  -1.0000⎤
	// ⎣ 2.0000   0.0000⎦
}

func ExampleStickBreakingVar() {
	// Differentiate Σ_ij x_ij² + log |det J| with respect to ψ.
	tape := ad.NewTape()
	psi := tape.Variable(&ad.Tensor{Shape: []int{1, 1}, Data: []float64{0.3}})
	x, logDet := relax.StickBreakingVar(psi)
	loss := ad.Add(ad.Sum(ad.Square(x)), logDet)
	if err := tape.Backward(loss); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("x = %.4f\n", x.Value())
	fmt.Printf("d loss / d psi = %.4f\n", psi.Grad())
	// Output:
	// x = [0.5744 0.4256 0.4256 0.5744]
	// d loss / d psi = [-0.0033]
}
