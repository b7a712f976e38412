package perm

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// Perm is a permutation of {0, ..., n-1}: row i goes to column p[i].
// See the package documentation for the matrix convention.
type Perm []int

// Identity returns the identity permutation of size n. It returns an empty
// Perm for n <= 0.
func Identity(n int) Perm {
	if n <= 0 {
		return Perm{}
	}
	p := make(Perm, n)
	for i := range p {
		p[i] = i
	}
	return p
}

// Random returns a permutation of size n drawn uniformly at random
// (Fisher-Yates shuffle) using rng. If rng is nil the top-level functions of
// math/rand/v2 are used, and the result is not reproducible. It returns an
// empty Perm for n <= 0.
func Random(n int, rng *rand.Rand) Perm {
	p := Identity(n)
	intN := rand.IntN
	if rng != nil {
		intN = rng.IntN
	}
	for i := len(p) - 1; i > 0; i-- {
		j := intN(i + 1)
		p[i], p[j] = p[j], p[i]
	}
	return p
}

// FromSlice returns a copy of s as a Perm after checking that it is a
// permutation of {0, ..., len(s)-1}.
func FromSlice(s []int) (Perm, error) {
	p := append(Perm(nil), s...)
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if p == nil {
		p = Perm{}
	}
	return p, nil
}

// Validate returns an error unless p contains every integer in [0, len(p))
// exactly once.
func (p Perm) Validate() error {
	n := len(p)
	seen := make([]bool, n)
	for i, v := range p {
		if v < 0 || v >= n {
			return fmt.Errorf("perm: invalid permutation: p[%d] = %d out of range [0, %d)", i, v, n)
		}
		if seen[v] {
			return fmt.Errorf("perm: invalid permutation: value %d repeated (at index %d)", v, i)
		}
		seen[v] = true
	}
	return nil
}

// Clone returns a copy of p.
func (p Perm) Clone() Perm {
	return append(Perm{}, p...)
}

// Equal reports whether p and q have the same length and entries.
func (p Perm) Equal(q Perm) bool {
	if len(p) != len(q) {
		return false
	}
	for i := range p {
		if p[i] != q[i] {
			return false
		}
	}
	return true
}

// Inverse returns the inverse permutation q, with q[p[i]] = i. Its matrix is
// the transpose of p's. p must be valid (see Validate); entries out of range
// give an error.
func (p Perm) Inverse() (Perm, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("perm: Inverse: %w", err)
	}
	q := make(Perm, len(p))
	for i, v := range p {
		q[v] = i
	}
	return q, nil
}

// Compose returns r = p.Compose(q) with r[i] = q[p[i]]: first p, then q.
// In matrix form R = P Q, so applying r to a vector is the same as applying
// q and then p: r.Apply(x) = p.Apply(q.Apply(x)).
// It returns an error if the lengths differ or either is invalid.
func (p Perm) Compose(q Perm) (Perm, error) {
	if len(p) != len(q) {
		return nil, fmt.Errorf("perm: Compose: length mismatch %d != %d", len(p), len(q))
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("perm: Compose: receiver: %w", err)
	}
	if err := q.Validate(); err != nil {
		return nil, fmt.Errorf("perm: Compose: argument: %w", err)
	}
	r := make(Perm, len(p))
	for i, v := range p {
		r[i] = q[v]
	}
	return r, nil
}

// Permute returns y with y[i] = x[p[i]], the product P x for the matrix P of
// p. It returns an error if the lengths differ or p is invalid.
func Permute[T any](p Perm, x []T) ([]T, error) {
	if len(p) != len(x) {
		return nil, fmt.Errorf("perm: Permute: length mismatch: permutation %d, slice %d", len(p), len(x))
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("perm: Permute: %w", err)
	}
	y := make([]T, len(x))
	for i, v := range p {
		y[i] = x[v]
	}
	return y, nil
}

// Apply returns y with y[i] = x[p[i]], the product P x. It returns an error
// if the lengths differ or p is invalid.
func (p Perm) Apply(x []float64) ([]float64, error) {
	y, err := Permute(p, x)
	if err != nil {
		return nil, fmt.Errorf("perm: Apply: %w", err)
	}
	return y, nil
}

// ApplyRows returns the product P A: row i of the result is row p[i] of a.
// a must have len(p) rows (any number of columns). To undo a scrambling
// xTilde = P x, use p.Inverse() and ApplyRows.
func (p Perm) ApplyRows(a mat.Matrix) (*mat.Dense, error) {
	r, c := a.Dims()
	if r != len(p) {
		return nil, fmt.Errorf("perm: ApplyRows: matrix has %d rows, permutation has length %d", r, len(p))
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("perm: ApplyRows: %w", err)
	}
	if r == 0 || c == 0 {
		return &mat.Dense{}, nil
	}
	dst := mat.NewDense(r, c, nil)
	row := make([]float64, c)
	for i, src := range p {
		mat.Row(row, src, a)
		dst.SetRow(i, row)
	}
	return dst, nil
}

// Matrix returns the n×n permutation matrix P with P[i][p[i]] = 1 and zeros
// elsewhere. An empty p gives an empty (zero-value) *mat.Dense.
func (p Perm) Matrix() (*mat.Dense, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("perm: Matrix: %w", err)
	}
	n := len(p)
	if n == 0 {
		return &mat.Dense{}, nil
	}
	m := mat.NewDense(n, n, nil)
	for i, j := range p {
		m.Set(i, j, 1)
	}
	return m, nil
}

// MatrixTol is the absolute tolerance FromMatrix allows around 0 and 1, to
// accept permutation matrices that went through floating-point arithmetic
// (products, transposes of computed matrices). It is far too tight to round
// a doubly stochastic matrix to a permutation; use relax.Matching for that.
const MatrixTol = 1e-9

// FromMatrix returns the permutation p whose matrix is m: m must be square,
// every entry must lie within MatrixTol of 0 or 1, and each row and each
// column must contain exactly one entry near 1.
func FromMatrix(m mat.Matrix) (Perm, error) {
	r, c := m.Dims()
	if r != c {
		return nil, fmt.Errorf("perm: FromMatrix: matrix is %d×%d, not square", r, c)
	}
	n := r
	p := make(Perm, n)
	for i := range p {
		p[i] = -1
	}
	colUsed := make([]bool, n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			v := m.At(i, j)
			switch {
			case math.Abs(v) <= MatrixTol:
			case math.Abs(v-1) <= MatrixTol:
				if p[i] >= 0 {
					return nil, fmt.Errorf("perm: FromMatrix: row %d has more than one 1 (columns %d and %d)", i, p[i], j)
				}
				if colUsed[j] {
					return nil, fmt.Errorf("perm: FromMatrix: column %d has more than one 1", j)
				}
				p[i] = j
				colUsed[j] = true
			default:
				return nil, fmt.Errorf("perm: FromMatrix: entry (%d, %d) = %v is not 0 or 1 (tolerance %g)", i, j, v, MatrixTol)
			}
		}
		if p[i] < 0 {
			return nil, fmt.Errorf("perm: FromMatrix: row %d has no 1", i)
		}
	}
	return p, nil
}
