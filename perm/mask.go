package perm

import "fmt"

// Mask is a set of allowed (row, column) pairs for an n x n assignment:
// row i may be matched to column j only if Allowed(i, j). Masks express
// candidate constraints such as "observed neuron i can only be one of these
// named neurons". The zero Mask is empty; use NewMask or FullMask.
type Mask struct {
	n     int
	allow []bool // row-major n*n
}

// NewMask returns an n x n mask with nothing allowed.
func NewMask(n int) (*Mask, error) {
	if n < 0 {
		return nil, fmt.Errorf("perm: NewMask: negative size %d", n)
	}
	return &Mask{n: n, allow: make([]bool, n*n)}, nil
}

// FullMask returns an n x n mask with every pair allowed.
func FullMask(n int) (*Mask, error) {
	m, err := NewMask(n)
	if err != nil {
		return nil, err
	}
	for i := range m.allow {
		m.allow[i] = true
	}
	return m, nil
}

// Size returns n.
func (m *Mask) Size() int { return m.n }

// Allowed reports whether row i may be matched to column j.
// Out-of-range indices are reported as not allowed.
func (m *Mask) Allowed(i, j int) bool {
	if i < 0 || j < 0 || i >= m.n || j >= m.n {
		return false
	}
	return m.allow[i*m.n+j]
}

// Set sets whether row i may be matched to column j. It returns an error for
// indices outside the mask.
func (m *Mask) Set(i, j int, ok bool) error {
	if i < 0 || j < 0 || i >= m.n || j >= m.n {
		return fmt.Errorf("perm: Mask.Set: index (%d, %d) out of range for size %d", i, j, m.n)
	}
	m.allow[i*m.n+j] = ok
	return nil
}

// Row returns the allowed columns of row i in increasing order.
func (m *Mask) Row(i int) []int {
	var cols []int
	for j := 0; j < m.n; j++ {
		if m.allow[i*m.n+j] {
			cols = append(cols, j)
		}
	}
	return cols
}

// Count returns the number of allowed pairs.
func (m *Mask) Count() int {
	c := 0
	for _, a := range m.allow {
		if a {
			c++
		}
	}
	return c
}

// Clone returns a deep copy of m.
func (m *Mask) Clone() *Mask {
	return &Mask{n: m.n, allow: append([]bool(nil), m.allow...)}
}

// Admits reports whether every pair (i, p[i]) of the permutation p is
// allowed. It is false when len(p) differs from the mask size.
func (m *Mask) Admits(p Perm) bool {
	if len(p) != m.n {
		return false
	}
	for i, j := range p {
		if !m.Allowed(i, j) {
			return false
		}
	}
	return true
}

// CopyRow copies row i of the mask into dst (dst[j] = Allowed(i, j)),
// growing dst if its capacity is below Size, and returns it. It returns nil
// for i out of range. Solvers use it to read a row without a call per entry.
func (m *Mask) CopyRow(dst []bool, i int) []bool {
	if i < 0 || i >= m.n {
		return nil
	}
	if cap(dst) < m.n {
		dst = make([]bool, m.n)
	}
	dst = dst[:m.n]
	copy(dst, m.allow[i*m.n:(i+1)*m.n])
	return dst
}
