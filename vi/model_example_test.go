package vi_test

import (
	"context"
	"fmt"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/vi"
)

// match is the point-matching model y_i = r_{σ(i)} + ε_i, ε_i ~ N(0, s² I),
// with a uniform prior on σ.
type match struct {
	ref, obs *ad.Tensor // (n, 2)
	s        float64
}

func (m *match) Sites() []models.Site {
	return []models.Site{&models.PermSite{Name: "P", N: m.ref.Shape[0]}}
}

func (m *match) LogLik(t *ad.Tape, z *models.Sample) *ad.Var {
	n := m.ref.Shape[0]
	p := ad.Reshape(z.Perm("P"), z.K(), n, n) // (K, n, n)
	r := ad.Sub(ad.MatMul(p, t.Const(m.ref)), t.Const(m.obs))
	return ad.Scale(ad.SumAxis(ad.Reshape(ad.Square(r), z.K(), -1), 1), -0.5/(m.s*m.s))
}

func ExampleFitModel() {
	// Four points observed in the order (2, 0, 3, 1) with a little noise.
	ref := &ad.Tensor{Shape: []int{4, 2}, Data: []float64{0, 0, 1, 0, 0, 1, 1, 1}}
	obs := &ad.Tensor{Shape: []int{4, 2}, Data: []float64{0.05, 0.9, 0.1, -0.1, 0.9, 1.05, 1.1, 0.05}}
	m := &match{ref: ref, obs: obs, s: 0.2}

	res, err := vi.FitModel(context.Background(), m, vi.ModelOptions{Seed: 1, Steps: 1000})
	if err != nil {
		fmt.Println(err)
		return
	}
	p := res.Posterior.Perms["P"]
	fmt.Println("mode:", p.Mode[0])
	fmt.Printf("P(row 0 -> column 2) > 0.9: %v\n", p.Marginals[0].At(0, 2) > 0.9)

	ex, err := models.Exact(m)
	if err != nil {
		fmt.Println(err)
		return
	}
	tv, _ := ex.Perms["P"].MaxRowTV(p)
	fmt.Printf("max row TV to the exact posterior < 0.1: %v\n", tv < 0.1)
	// Output:
	// mode: [2 0 3 1]
	// P(row 0 -> column 2) > 0.9: true
	// max row TV to the exact posterior < 0.1: true
}
