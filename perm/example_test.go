package perm_test

import (
	"fmt"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/perm"
)

func Example() {
	// Scramble the rows of an object with p, then reconstruct with p⁻¹.
	p, err := perm.FromSlice([]int{2, 0, 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	x := mat.NewDense(3, 2, []float64{
		0, 0,
		1, 1,
		2, 2,
	})
	scrambled, _ := p.ApplyRows(x) // row i of scrambled is row p[i] of x
	inv, _ := p.Inverse()
	back, _ := inv.ApplyRows(scrambled)
	fmt.Println("scrambled rows:", scrambled.RawMatrix().Data)
	fmt.Println("restored:", mat.Equal(back, x))

	// Metrics of a prediction that swaps two items.
	pred := perm.Perm{0, 2, 1}
	truth := perm.Identity(3)
	tau, _ := perm.KendallTau(pred, truth)
	wrong, _ := perm.ProportionWrong(pred, truth)
	any, _ := perm.AnyWrong(pred, truth)
	fmt.Printf("tau=%.3f wrong=%.3f any=%v\n", tau, wrong, any)
	// Output:
	// scrambled rows: [2 2 0 0 1 1]
	// restored: true
	// tau=0.333 wrong=0.667 any=1
}

func ExampleRandom() {
	rng := rand.New(rand.NewPCG(1, 2))
	p := perm.Random(5, rng)
	fmt.Println(p.Validate() == nil, len(p))
	// Output:
	// true 5
}

func ExamplePerm_Compose() {
	p := perm.Perm{1, 2, 0}
	q := perm.Perm{2, 1, 0}
	r, _ := p.Compose(q) // r[i] = q[p[i]]; matrix R = P Q
	fmt.Println(r)
	// Output:
	// [1 0 2]
}

func ExampleL2() {
	recon := []float64{0.1, 0.9, 1.0}
	target := []float64{0, 1, 1}
	l1, _ := perm.L1(recon, target)
	l2, _ := perm.L2(recon, target)
	fmt.Printf("l1=%.4f l2=%.4f\n", l1, l2)
	// Output:
	// l1=0.0667 l2=0.0067
}
