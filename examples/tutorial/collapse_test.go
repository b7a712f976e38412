package main

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/models"
)

// collapsed is the tutorial model with A integrated out, so that
// models.Exact can enumerate it and MCMC can move σ without A.
//
// Given σ, the map A is a Bayesian linear regression. Write R_σ for the n×2
// matrix with rows r_{σ(i)}, y_d for column d of Y and a_d for row d of A.
// Then y_d = R_σ a_d + ε_d with ε_d ~ N(0, s² I) and a_d ~ N(0, I), the two
// rows independent. Completing the square in a_d,
//
//	−‖y_d − R_σ a‖²/(2s²) − ‖a‖²/2 = −‖y_d‖²/(2s²) + aᵀb_d − ½ aᵀΛa,
//	Λ = I + R_σᵀR_σ/s²,   b_d = R_σᵀ y_d / s²,
//
// so a_d | y, σ ~ N(Λ⁻¹b_d, Λ⁻¹), and integrating a out,
//
//	log p(y_d | σ) = −(n/2) log(2π s²) − ½ log det Λ − ‖y_d‖²/(2s²) + ½ b_dᵀΛ⁻¹b_d,
//
// the Gaussian N(y_d; 0, s² I + R_σR_σᵀ) in Woodbury form. Permuting the
// rows of R does not change R_σᵀR_σ = RᵀR, so Λ and its determinant are the
// same for every σ: only b_d depends on σ.
type collapsed struct{ *Alignment }

func (collapsed) CollapsedSites() []string { return []string{"A"} }

// posteriorA returns the Cholesky factor of Λ and the means Λ⁻¹b_d of the
// two rows of A given σ, and the collapsed log likelihood log p(Y | σ).
func (c collapsed) posteriorA(s *models.State) (*mat.Cholesky, [2]*mat.VecDense, float64, error) {
	var mu [2]*mat.VecDense
	ps := s.Perms["P"]
	n := c.Ref.Shape[0]
	if len(ps) != 1 || len(ps[0]) != n {
		return nil, mu, 0, errors.New("tutorial: state has no permutation of size n for site \"P\"")
	}
	rs := mat.NewDense(n, 2, nil) // R_σ
	for i, j := range ps[0] {
		rs.SetRow(i, c.Ref.Data[2*j:2*j+2])
	}
	s2 := c.S * c.S
	lam := mat.NewSymDense(2, nil)
	lam.SymOuterK(1/s2, rs.T())
	for d := range 2 {
		lam.SetSym(d, d, lam.At(d, d)+1)
	}
	var chol mat.Cholesky
	if !chol.Factorize(lam) {
		return nil, mu, 0, errors.New("tutorial: Λ is not positive definite")
	}
	ll := -float64(n)*math.Log(2*math.Pi*s2) - chol.LogDet() // both rows d
	y := mat.NewDense(n, 2, c.Obs.Data)
	for d := range 2 {
		yd := mat.Col(nil, d, y)
		var b mat.VecDense
		b.MulVec(rs.T(), mat.NewVecDense(n, yd))
		b.ScaleVec(1/s2, &b)
		mu[d] = new(mat.VecDense)
		if err := chol.SolveVecTo(mu[d], &b); err != nil {
			return nil, mu, 0, fmt.Errorf("tutorial: %w", err)
		}
		ll += -mat.Dot(mat.NewVecDense(n, yd), mat.NewVecDense(n, yd))/(2*s2) + mat.Dot(&b, mu[d])/2
	}
	return &chol, mu, ll, nil
}

// CollapsedLogLik implements models.Collapser: log p(Y | σ) above.
func (c collapsed) CollapsedLogLik(s *models.State) (float64, error) {
	_, _, ll, err := c.posteriorA(s)
	return ll, err
}

// SampleCollapsed implements models.Collapser: a_d = Λ⁻¹b_d + U⁻¹ξ with
// Λ = UᵀU and ξ ~ N(0, I), whose covariance is U⁻¹U⁻ᵀ = Λ⁻¹.
func (c collapsed) SampleCollapsed(rng *rand.Rand, s *models.State) error {
	chol, mu, _, err := c.posteriorA(s)
	if err != nil {
		return err
	}
	var u mat.TriDense
	chol.UTo(&u)
	a := make([]float64, 4)
	for d := range 2 {
		var x mat.VecDense
		if err := x.SolveVec(&u, mat.NewVecDense(2, []float64{rng.NormFloat64(), rng.NormFloat64()})); err != nil {
			return fmt.Errorf("tutorial: %w", err)
		}
		a[2*d] = mu[d].AtVec(0) + x.AtVec(0)
		a[2*d+1] = mu[d].AtVec(1) + x.AtVec(1)
	}
	s.Reals["A"] = a
	return nil
}
