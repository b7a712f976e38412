package mcmc

import "github.com/permlab/permlab/perm"

// maskCopy is a kernel's copy of a mask, read in the proposal loops without
// perm.Mask's range checks (the callers check the column's range). Up to
// denseMaskMax rows it keeps one byte per pair, the fastest to read; above
// that one bit per pair (n²/8 bytes: 50 MB at n = 20,000 instead of 400).
type maskCopy struct {
	n, w  int
	bytes []bool   // n*n, row-major; nil when bits is used
	bits  []uint64 // row i is bits[i*w : (i+1)*w]
}

// denseMaskMax is the largest n whose mask copy keeps a byte per pair
// (16 MiB).
const denseMaskMax = 4096

func newMaskCopy(m *perm.Mask) *maskCopy { return newMaskCopyForm(m, m.Size() <= denseMaskMax) }

// newMaskCopyForm copies m with a byte per pair when bytes is true, a bit
// per pair otherwise.
func newMaskCopyForm(m *perm.Mask, bytes bool) *maskCopy {
	n := m.Size()
	b := &maskCopy{n: n, w: (n + 63) / 64}
	if bytes {
		b.bytes = make([]bool, n*n)
		for i := range n {
			for _, c := range m.Row(i) {
				b.bytes[i*n+c] = true
			}
		}
		return b
	}
	b.bits = make([]uint64, n*b.w)
	for i := range n {
		for _, c := range m.Row(i) {
			b.bits[i*b.w+c>>6] |= 1 << (uint(c) & 63)
		}
	}
	return b
}

// has reports whether row i may take column c; both must be in range.
func (b *maskCopy) has(i, c int) bool {
	if b.bytes != nil {
		return b.bytes[i*b.n+c]
	}
	return b.bits[i*b.w+c>>6]>>(uint(c)&63)&1 != 0
}
