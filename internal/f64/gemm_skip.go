package f64

import "fmt"

// Blocks describes where an m×k matrix may be nonzero, in the blocks of
// six rows that kern6x8 computes together: for block b (rows 6b … 6b+5)
// the column ranges that hold every nonzero entry of its rows, and the
// 8-column panels those ranges touch. The rows after the last full block
// (fewer than six) are treated as dense. A Blocks is read-only once built
// and may be shared by goroutines.
//
// It serves two products that skip work for a matrix with a sparsity
// pattern, such as a relaxed permutation on a candidate mask:
// GemmSkip, where the matrix is the left factor and its zero runs are
// skipped in the inner sums, and GemmOn, where the pattern is that of the
// output and only the blocks it touches are computed. Both give every
// entry they compute the bits Gemm gives it: a skipped term is a product
// with an exact zero, which leaves a running sum of fused multiply-adds
// unchanged. How much they save depends on the row order: rows whose
// nonzeros lie in similar column ranges should be neighbours.
type Blocks struct {
	m, k    int
	runs    [][][2]int // per block: [lo, hi) column ranges, increasing
	byPanel [][]int    // per 8-column panel: the blocks whose ranges touch it
	nnz     int        // entries inside the runs of the full blocks
}

// blockRows is the number of rows of a block: kern6x8's.
const blockRows = 6

// runGap is the shortest run of zero columns that GemmSkip skips: a
// shorter gap is cheaper to multiply through than to restart the kernel
// over (a restart costs about as much as ten columns of a 6×8 tile).
const runGap = 8

// NewBlocks returns the Blocks of the m×k matrix whose row i is zero
// outside the columns cols[i], each list increasing and in [0, k). It
// returns an error if cols does not have m rows or a list is out of range
// or not increasing.
func NewBlocks(m, k int, cols [][]int) (*Blocks, error) {
	if m < 0 || k < 0 || len(cols) != m {
		return nil, fmt.Errorf("f64: NewBlocks: %d row lists for a %d×%d matrix", len(cols), m, k)
	}
	for i, cs := range cols {
		for t, c := range cs {
			if c < 0 || c >= k || (t > 0 && c <= cs[t-1]) {
				return nil, fmt.Errorf("f64: NewBlocks: row %d: columns must be increasing and in [0, %d)", i, k)
			}
		}
	}
	nb := m / blockRows
	np := (k + panelWidth - 1) / panelWidth
	s := &Blocks{m: m, k: k, runs: make([][][2]int, nb), byPanel: make([][]int, np)}
	used := make([]bool, k)
	for b := range nb {
		lo, hi := k, 0 // the block's columns lie in [lo, hi)
		for _, cs := range cols[b*blockRows : (b+1)*blockRows] {
			for _, c := range cs {
				used[c] = true
			}
			if len(cs) > 0 {
				lo, hi = min(lo, cs[0]), max(hi, cs[len(cs)-1]+1)
			}
		}
		var runs [][2]int
		for c := lo; c < hi; c++ {
			if !used[c] {
				continue
			}
			used[c] = false
			if len(runs) > 0 && c-runs[len(runs)-1][1] < runGap {
				runs[len(runs)-1][1] = c + 1
			} else {
				runs = append(runs, [2]int{c, c + 1})
			}
		}
		s.runs[b] = runs
		last := -1 // the last panel recorded for this block
		for _, r := range runs {
			s.nnz += blockRows * (r[1] - r[0])
			for q := max(r[0]/panelWidth, last+1); q <= (r[1]-1)/panelWidth; q++ {
				s.byPanel[q] = append(s.byPanel[q], b)
				last = q
			}
		}
	}
	return s, nil
}

// Dims returns the shape m×k of the described matrix.
func (s *Blocks) Dims() (m, k int) { return s.m, s.k }

// Density returns the share of the full blocks' entries that lie in
// their column ranges: GemmSkip's work over Gemm's on those rows.
func (s *Blocks) Density() float64 {
	nb := s.m / blockRows
	if nb == 0 || s.k == 0 {
		return 1
	}
	return float64(s.nnz) / float64(nb*blockRows*s.k)
}

// OnDensity returns the share of the full blocks' entries, in whole
// 8-column panels, that GemmOn computes for an output with this pattern:
// its work over Gemm's on those rows.
func (s *Blocks) OnDensity() float64 {
	nb := s.m / blockRows
	if nb == 0 || s.k == 0 {
		return 1
	}
	cols := 0
	for q, bs := range s.byPanel {
		cols += len(bs) * min(panelWidth, s.k-q*panelWidth)
	}
	return float64(cols) / float64(nb*s.k)
}

// GemmSkip sets c = a·B, like Gemm, for the m×k row-major a that is zero
// outside s (m×k): in each block of rows it multiplies only the column
// ranges of s. Every entry has the bits Gemm gives it. a must be zero
// outside s: GemmSkip skips most of those entries but reads some (short
// gaps between ranges, the narrow last panel, the rows after the last
// full block). It panics if the shapes do not match.
func GemmSkip(a []float64, s *Blocks, b *Packed, c []float64) {
	m, k, n := s.m, b.k, b.n
	if s.k != k || len(a) != m*k || len(c) != m*n {
		panic("f64: GemmSkip: shapes do not match")
	}
	if denseFallback(m, a, b, c) {
		return
	}
	eachFullPanel(m, a, b, c, func(q int, panel []float64, c0 int) {
		for bl, runs := range s.runs {
			i := bl * blockRows
			if len(runs) == 0 {
				for r := range blockRows {
					clear(c[(i+r)*n+c0 : (i+r)*n+c0+panelWidth])
				}
				continue
			}
			for t, r := range runs {
				lo := r[0]
				if t == 0 {
					kern6x8(r[1]-lo, &a[i*k+lo], k, &panel[lo*panelWidth], &c[i*n+c0], n)
				} else {
					kern6x8acc(r[1]-lo, &a[i*k+lo], k, &panel[lo*panelWidth], &c[i*n+c0], n)
				}
			}
		}
	})
}

// eachFullPanel runs full(q, panel, c0) for every full 8-column panel q
// of b (packed panel, first column c0), which computes the rows of the
// full blocks of six; the narrow last panel and the rows after the last
// full block it computes densely through gemmPanelRows, as Gemm does.
func eachFullPanel(m int, a []float64, b *Packed, c []float64, full func(q int, panel []float64, c0 int)) {
	k, n := b.k, b.n
	var tile [gemmMR * panelWidth]float64
	rest := m / blockRows * blockRows
	for q := range b.Panels() {
		c0 := q * panelWidth
		if n-c0 < panelWidth {
			gemmPanelRows(m, k, n, a, b.panels, c, q, 0, false, &tile)
			continue
		}
		full(q, b.panels[q*k*panelWidth:], c0)
		if rest < m {
			gemmPanelRows(m, k, n, a, b.panels, c, q, rest, false, &tile)
		}
	}
}

// denseFallback computes c = a·B with gemm where GemmSkip and GemmOn have
// nothing to skip: without the assembly kernels, and for empty products.
// It reports whether it did.
func denseFallback(m int, a []float64, b *Packed, c []float64) bool {
	if m == 0 || b.n == 0 {
		return true
	}
	if b.k == 0 || !useAsm {
		gemm(m, a, b, c, 0, b.Panels(), false)
		return true
	}
	return false
}

// GemmOn computes the entries of c = a·B, for the m×k row-major a, on the
// pattern s (m×n): in each block of rows, the 8-column panels that s's
// ranges touch (and every panel of the rows after the last full block and
// of a narrow last panel). Every entry it computes has the bits Gemm gives
// it. Every entry of c on s is computed; entries off s may be computed
// too, or left as they were. It panics if the shapes do not match.
func GemmOn(a []float64, b *Packed, c []float64, s *Blocks) {
	m, k, n := s.m, b.k, b.n
	if s.k != n || len(a) != m*k || len(c) != m*n {
		panic("f64: GemmOn: shapes do not match")
	}
	if denseFallback(m, a, b, c) {
		return
	}
	eachFullPanel(m, a, b, c, func(q int, panel []float64, c0 int) {
		for _, bl := range s.byPanel[q] {
			i := bl * blockRows
			kern6x8(k, &a[i*k], k, &panel[0], &c[i*n+c0], n)
		}
	})
}
