package relax_test

import (
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/relax"
)

func ExampleRound() {
	psi := mat.NewDense(3, 3, []float64{
		0.1, 0.7, 0.2,
		0.6, 0.3, 0.1,
		0.3, 0.0, 0.7,
	})
	p, err := relax.Round(psi)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p)
	// Output:
	// [1 0 2]
}

func ExampleRounding() {
	psi := mat.NewDense(3, 3, []float64{
		0.1, 0.7, 0.2,
		0.6, 0.3, 0.1,
		0.3, 0.0, 0.7,
	})
	const tau = 0.2
	pt, p, err := relax.Rounding(psi, tau, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("P~ =\n%.2f\nround = %v\n", mat.Formatted(pt), p)

	// Rounding is invertible: P~ has the same nearest permutation as psi.
	back, _, err := relax.RoundingInverse(pt, tau, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("psi =\n%.2f\n", mat.Formatted(back))
	fmt.Printf("log |det J| = %.4f\n", relax.RoundingLogDet(3, tau))
	// Output:
	// P~ =
	// ⎡0.02  0.94  0.04⎤
	// ⎢0.92  0.06  0.02⎥
	// ⎣0.06  0.00  0.94⎦
	// round = [1 0 2]
	// psi =
	// ⎡0.10  0.70  0.20⎤
	// ⎢0.60  0.30  0.10⎥
	// ⎣0.30  0.00  0.70⎦
	// log |det J| = -14.4849
}
