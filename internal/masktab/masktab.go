// Package masktab keeps a read-only copy of an n × n table of allowed
// (row, column) pairs for the proposal and search loops of the samplers and
// the polish, which read it without perm.Mask's range checks.
//
// Up to DenseMax rows the table keeps one byte per pair, the fastest to
// read; above that one bit per pair, n²/8 bytes (50 MB at n = 20,000 where
// bytes would take 400 MB).
package masktab

// DenseMax is the largest n whose table keeps a byte per pair (16 MiB).
const DenseMax = 4096

// Table is an n × n table of allowed pairs. Exactly one of Bytes and Bits
// is set. Hot loops may read Bytes directly: pair (i, c) is Bytes[i*N+c].
type Table struct {
	N, W  int      // rows (and columns); words per row of Bits
	Bytes []bool   // N*N, row-major; nil when Bits is used
	Bits  []uint64 // row i is Bits[i*W : (i+1)*W]; bit c%64 of word c/64 is (i, c)
}

// New returns the table of an n × n mask whose row i allows the columns
// row(i), with a byte per pair when n <= DenseMax.
func New(n int, row func(i int) []int) *Table { return NewForm(n, row, n <= DenseMax) }

// NewForm is New with the form chosen by the caller: a byte per pair when
// bytes is true, a bit per pair otherwise.
func NewForm(n int, row func(i int) []int, bytes bool) *Table {
	t := &Table{N: n, W: (n + 63) / 64}
	if bytes {
		t.Bytes = make([]bool, n*n)
		for i := range n {
			for _, c := range row(i) {
				t.Bytes[i*n+c] = true
			}
		}
		return t
	}
	t.Bits = make([]uint64, n*t.W)
	for i := range n {
		for _, c := range row(i) {
			t.Bits[i*t.W+c>>6] |= 1 << (uint(c) & 63)
		}
	}
	return t
}

// Has reports whether row i may take column c; a column outside [0, N)
// is never allowed (as perm.Mask.Allowed says). i must be in [0, N).
func (t *Table) Has(i, c int) bool {
	if uint(c) >= uint(t.N) {
		return false
	}
	if t.Bytes != nil {
		return t.Bytes[i*t.N+c]
	}
	return t.Bits[i*t.W+c>>6]>>(uint(c)&63)&1 != 0
}
