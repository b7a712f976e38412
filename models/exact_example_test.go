package models_test

import (
	"fmt"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/perm"
)

// Counts is permuted Poisson regression: counts y_i ~ Poisson(exp(a + b·x_σ(i)))
// whose covariates x came in an unknown order σ, with a, b ~ N(0, 1). The
// coefficients are not conjugate: no Collapser can integrate them out, and
// Exact integrates them numerically.
type Counts struct {
	X, Y []float64
}

func (m *Counts) Sites() []models.Site {
	return []models.Site{
		&models.PermSite{Name: "P", N: len(m.X)},
		&models.RealSite{Name: "a", Prior: models.Normal{Sigma: 1}},
		&models.RealSite{Name: "b", Prior: models.Normal{Sigma: 1}},
	}
}

// LogLik is Σ_i y_i η_i − e^{η_i} with η = a + b·P x; the constant
// −Σ log y_i! is dropped.
func (m *Counts) LogLik(t *ad.Tape, z *models.Sample) *ad.Var {
	n, k := len(m.X), z.K()
	px := ad.Reshape(ad.MatMul(ad.Reshape(z.Perm("P"), k, n, n), t.Const(&ad.Tensor{Shape: []int{n, 1}, Data: m.X})), k, n)
	eta := ad.Add(ad.Reshape(z.Real("a"), k, 1), ad.Mul(ad.Reshape(z.Real("b"), k, 1), px))
	ll := ad.Sub(ad.Mul(eta, t.Const(&ad.Tensor{Shape: []int{n}, Data: m.Y})), ad.Exp(eta))
	return ad.SumAxis(ll, 1)
}

// Exact on a model whose real sites no Collapser integrates out: the
// coefficients a and b are integrated numerically for each of the 4! orders
// of the covariates, and reported with the permutation's posterior.
func ExampleExact_nonConjugate() {
	m := &Counts{X: []float64{0, 1, 2, 3}, Y: []float64{1, 2, 6, 15}}
	ex, err := models.Exact(m)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("states:", ex.States)
	fmt.Println("MAP:", ex.MAP.Perms["P"][0])
	p, _ := ex.Prob(ex.MAP)
	fmt.Printf("P(MAP | y) = %.2f\n", p)
	p, _ = ex.Prob(&models.State{Perms: map[string][]perm.Perm{"P": {{1, 0, 2, 3}}}})
	fmt.Printf("P(first two swapped | y) = %.2f\n", p)
	fmt.Printf("P(row 0 → column 0 | y) = %.2f\n", ex.Perms["P"].Marginals[0].At(0, 0))
	for _, name := range []string{"a", "b"} {
		r := ex.Reals[name]
		fmt.Printf("%s: %.2f ± %.2f\n", name, r.Mean[0], r.Std[0])
	}
	fmt.Println("error estimate within tolerance:", ex.QuadError <= models.ExactQuadTol)
	// Output:
	// states: 24
	// MAP: [0 1 2 3]
	// P(MAP | y) = 0.65
	// P(first two swapped | y) = 0.27
	// P(row 0 → column 0 | y) = 0.68
	// a: 0.09 ± 0.72
	// b: 0.81 ± 0.40
	// error estimate within tolerance: true
}
