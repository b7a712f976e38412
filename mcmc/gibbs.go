package mcmc

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// RegressionRows is the Gibbs update for the rows of the coefficient matrix
// W (m x d) of the linear-Gaussian model
//
//	y_t = W x_t + e_t,   e_t ~ N(0, NoiseVar I),
//
// with independent priors W[i, c] ~ N(0, PriorVar) on the entries in the
// support of row i and W[i, c] = 0 elsewhere. The data enter only through
// the sufficient statistics Sxx = Σ_t x_t x_tᵀ (d x d) and
// Syx = Σ_t y_t x_tᵀ (m x d). The conditional of each row is derived in the
// package documentation.
//
// A RegressionRows holds no scratch space, so one value may be shared by
// several chains.
type RegressionRows struct {
	// Support[i] lists the columns that may be non-zero in row i, each in
	// [0, d) and without repeats. A nil Support allows every column in
	// every row.
	Support [][]int
	// NoiseVar is the noise variance η² (> 0).
	NoiseVar float64
	// PriorVar is the prior variance σ_w² of each coefficient (> 0).
	PriorVar float64
}

// RowPosterior is the Gaussian conditional of one row of W restricted to its
// support: W[i, Support] ~ N(Mean, Precision⁻¹).
type RowPosterior struct {
	Support   []int
	Mean      []float64
	Precision *mat.SymDense
	chol      mat.Cholesky
}

// Cov returns the conditional covariance Precision⁻¹.
func (rp *RowPosterior) Cov() (*mat.SymDense, error) {
	var cov mat.SymDense
	if len(rp.Support) == 0 {
		return &cov, nil
	}
	if err := rp.chol.InverseTo(&cov); err != nil {
		return nil, fmt.Errorf("mcmc: RowPosterior.Cov: %w", err)
	}
	return &cov, nil
}

// Rand fills dst, which must have length len(Support), with a draw from the
// conditional, using rng.
func (rp *RowPosterior) Rand(rng *rand.Rand, dst []float64) error {
	k := len(rp.Support)
	if len(dst) != k {
		return fmt.Errorf("mcmc: RowPosterior.Rand: len(dst) = %d, want %d", len(dst), k)
	}
	if k == 0 {
		return nil
	}
	// Λ = Uᵀ U; the draw is μ + U⁻¹ z with z ~ N(0, I), by back substitution.
	var u mat.TriDense
	rp.chol.UTo(&u)
	raw := u.RawTriangular()
	for r := range dst {
		dst[r] = rng.NormFloat64()
	}
	for r := k - 1; r >= 0; r-- {
		row := raw.Data[r*raw.Stride : r*raw.Stride+k]
		v := dst[r]
		for c := r + 1; c < k; c++ {
			v -= row[c] * dst[c]
		}
		dst[r] = v / row[r]
	}
	for r := range dst {
		dst[r] += rp.Mean[r]
	}
	return nil
}

// Posterior returns the exact conditional of row i of W given the
// sufficient statistics sxx (d x d) and syx (m x d).
func (g *RegressionRows) Posterior(i int, sxx mat.Symmetric, syx mat.Matrix) (*RowPosterior, error) {
	m, d, err := g.check("Posterior", sxx, syx)
	if err != nil {
		return nil, err
	}
	if i < 0 || i >= m {
		return nil, fmt.Errorf("mcmc: RegressionRows.Posterior: row %d out of range [0, %d)", i, m)
	}
	rp, err := g.posterior(i, d, sxx, syx)
	if err != nil {
		return nil, fmt.Errorf("mcmc: RegressionRows.Posterior: %w", err)
	}
	return rp, nil
}

// SampleRow overwrites row i of w (m x d) with a draw from its conditional:
// the support entries are drawn, the others set to zero.
func (g *RegressionRows) SampleRow(rng *rand.Rand, w *mat.Dense, i int, sxx mat.Symmetric, syx mat.Matrix) error {
	m, d, err := g.check("SampleRow", sxx, syx)
	if err != nil {
		return err
	}
	if err := checkW("SampleRow", w, m, d); err != nil {
		return err
	}
	if i < 0 || i >= m {
		return fmt.Errorf("mcmc: RegressionRows.SampleRow: row %d out of range [0, %d)", i, m)
	}
	if err := g.sampleRow(rng, w, i, d, sxx, syx); err != nil {
		return fmt.Errorf("mcmc: RegressionRows.SampleRow: %w", err)
	}
	return nil
}

// Sample overwrites every row of w (m x d) with a draw from its conditional,
// rows in increasing order. Given the statistics the rows are conditionally
// independent, so this is an exact draw of W | data.
func (g *RegressionRows) Sample(rng *rand.Rand, w *mat.Dense, sxx mat.Symmetric, syx mat.Matrix) error {
	m, d, err := g.check("Sample", sxx, syx)
	if err != nil {
		return err
	}
	if err := checkW("Sample", w, m, d); err != nil {
		return err
	}
	for i := range m {
		if err := g.sampleRow(rng, w, i, d, sxx, syx); err != nil {
			return fmt.Errorf("mcmc: RegressionRows.Sample: %w", err)
		}
	}
	return nil
}

func (g *RegressionRows) sampleRow(rng *rand.Rand, w *mat.Dense, i, d int, sxx mat.Symmetric, syx mat.Matrix) error {
	rp, err := g.posterior(i, d, sxx, syx)
	if err != nil {
		return err
	}
	vals := make([]float64, len(rp.Support))
	if err := rp.Rand(rng, vals); err != nil {
		return err
	}
	for c := range d {
		w.Set(i, c, 0)
	}
	for a, c := range rp.Support {
		w.Set(i, c, vals[a])
	}
	return nil
}

func (g *RegressionRows) posterior(i, d int, sxx mat.Symmetric, syx mat.Matrix) (*RowPosterior, error) {
	s, err := g.support(i, d)
	if err != nil {
		return nil, err
	}
	k := len(s)
	if k == 0 {
		return &RowPosterior{Support: s, Mean: []float64{}, Precision: &mat.SymDense{}}, nil
	}
	rp := &RowPosterior{Support: s, Mean: make([]float64, k), Precision: mat.NewSymDense(k, nil)}
	invNoise, invPrior := 1/g.NoiseVar, 1/g.PriorVar
	b := mat.NewVecDense(k, nil)
	for a, ca := range s {
		for bb := a; bb < k; bb++ {
			v := sxx.At(ca, s[bb]) * invNoise
			if bb == a {
				v += invPrior
			}
			rp.Precision.SetSym(a, bb, v)
		}
		b.SetVec(a, syx.At(i, ca)*invNoise)
	}
	if ok := rp.chol.Factorize(rp.Precision); !ok {
		return nil, fmt.Errorf("row %d: posterior precision is not positive definite (is Sxx a finite positive semi-definite matrix?)", i)
	}
	mean := mat.NewVecDense(k, rp.Mean)
	if err := rp.chol.SolveVecTo(mean, b); err != nil {
		return nil, fmt.Errorf("row %d: solving for the mean: %w", i, err)
	}
	for _, v := range rp.Mean {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("row %d: posterior mean is not finite (are the statistics finite?)", i)
		}
	}
	return rp, nil
}

// support returns the support of row i after checking it.
func (g *RegressionRows) support(i, d int) ([]int, error) {
	if g.Support == nil {
		s := make([]int, d)
		for c := range s {
			s[c] = c
		}
		return s, nil
	}
	s := g.Support[i]
	seen := make([]bool, d)
	for _, c := range s {
		if c < 0 || c >= d {
			return nil, fmt.Errorf("row %d: support column %d out of range [0, %d)", i, c, d)
		}
		if seen[c] {
			return nil, fmt.Errorf("row %d: support column %d repeated", i, c)
		}
		seen[c] = true
	}
	out := make([]int, len(s))
	copy(out, s)
	return out, nil
}

func (g *RegressionRows) check(fn string, sxx mat.Symmetric, syx mat.Matrix) (m, d int, err error) {
	switch {
	case sxx == nil || syx == nil:
		return 0, 0, fmt.Errorf("mcmc: RegressionRows.%s: nil statistics", fn)
	case !(g.NoiseVar > 0) || math.IsInf(g.NoiseVar, 1):
		return 0, 0, fmt.Errorf("mcmc: RegressionRows.%s: NoiseVar must be finite and > 0, got %v", fn, g.NoiseVar)
	case !(g.PriorVar > 0) || math.IsInf(g.PriorVar, 1):
		return 0, 0, fmt.Errorf("mcmc: RegressionRows.%s: PriorVar must be finite and > 0, got %v", fn, g.PriorVar)
	}
	d = sxx.SymmetricDim()
	m, dy := syx.Dims()
	if dy != d {
		return 0, 0, fmt.Errorf("mcmc: RegressionRows.%s: Syx is %d x %d, want %d columns to match Sxx (%d x %d)", fn, m, dy, d, d, d)
	}
	if g.Support != nil && len(g.Support) != m {
		return 0, 0, fmt.Errorf("mcmc: RegressionRows.%s: len(Support) = %d, want %d rows as in Syx", fn, len(g.Support), m)
	}
	return m, d, nil
}

func checkW(fn string, w *mat.Dense, m, d int) error {
	if w == nil {
		return errors.New("mcmc: RegressionRows." + fn + ": nil W")
	}
	if r, c := w.Dims(); r != m || c != d {
		return fmt.Errorf("mcmc: RegressionRows.%s: W is %d x %d, want %d x %d", fn, r, c, m, d)
	}
	return nil
}
