package perm

import (
	"fmt"
	"math/bits"
)

// Mask is a set of allowed (row, column) pairs for an n x n assignment:
// row i may be matched to column j only if Allowed(i, j). Masks express
// candidate constraints such as "observed neuron i can only be one of these
// named neurons". The zero Mask is empty; use NewMask or FullMask.
//
// A mask keeps one bit per pair, n²/8 bytes: 50 MB at n = 20,000.
type Mask struct {
	n    int
	w    int      // words per row, ⌈n/64⌉
	bits []uint64 // row i is bits[i*w : (i+1)*w]; bit j%64 of word j/64 is pair (i, j)
}

// NewMask returns an n x n mask with nothing allowed.
func NewMask(n int) (*Mask, error) {
	if n < 0 {
		return nil, fmt.Errorf("perm: NewMask: negative size %d", n)
	}
	w := (n + 63) / 64
	return &Mask{n: n, w: w, bits: make([]uint64, n*w)}, nil
}

// FullMask returns an n x n mask with every pair allowed.
func FullMask(n int) (*Mask, error) {
	m, err := NewMask(n)
	if err != nil {
		return nil, err
	}
	for i := 0; i < n; i++ {
		row := m.bits[i*m.w : (i+1)*m.w]
		for k := range row {
			row[k] = ^uint64(0)
		}
		if r := n % 64; r != 0 {
			row[m.w-1] = 1<<r - 1
		}
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
	return m.bits[i*m.w+j>>6]>>(j&63)&1 != 0
}

// Set sets whether row i may be matched to column j. It returns an error for
// indices outside the mask.
func (m *Mask) Set(i, j int, ok bool) error {
	if i < 0 || j < 0 || i >= m.n || j >= m.n {
		return fmt.Errorf("perm: Mask.Set: index (%d, %d) out of range for size %d", i, j, m.n)
	}
	if ok {
		m.bits[i*m.w+j>>6] |= 1 << (j & 63)
	} else {
		m.bits[i*m.w+j>>6] &^= 1 << (j & 63)
	}
	return nil
}

// Row returns the allowed columns of row i in increasing order.
func (m *Mask) Row(i int) []int {
	var cols []int
	for k, word := range m.bits[i*m.w : (i+1)*m.w] {
		for word != 0 {
			cols = append(cols, k*64+bits.TrailingZeros64(word))
			word &= word - 1
		}
	}
	return cols
}

// Count returns the number of allowed pairs.
func (m *Mask) Count() int {
	c := 0
	for _, word := range m.bits {
		c += bits.OnesCount64(word)
	}
	return c
}

// Clone returns a deep copy of m.
func (m *Mask) Clone() *Mask {
	return &Mask{n: m.n, w: m.w, bits: append([]uint64(nil), m.bits...)}
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
	row := m.bits[i*m.w : (i+1)*m.w]
	for j := range dst {
		dst[j] = row[j>>6]>>(j&63)&1 != 0
	}
	return dst
}
