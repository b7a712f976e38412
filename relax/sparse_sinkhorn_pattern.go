package relax

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/perm"
)

// SparsePattern is the structure of a sparse N×N candidate mask for the
// sparse Sinkhorn operators, in compressed sparse row (CSR) form: row i may
// be assigned only to the columns Cols()[RowPtr()[i]:RowPtr()[i+1]], in
// increasing order. The stored entries, row by row, are numbered
// 0, …, NNZ()−1, and a matrix on the pattern is the slice of its NNZ values
// in that order (see SparseLogits).
//
// A pattern is immutable and safe for concurrent use; a batch of matrices
// shares one. Its constructors copy their input, validate it and precompute
// what every Sinkhorn call needs: the transpose (the same entries column by
// column, for the column normalisations) and a perfect matching with the
// strongly connected components it induces, which tell whether the
// Sinkhorn iteration converges (see Blocks and TotalSupport). They take
// time about linear in NNZ in practice (a greedy matching completed by
// augmenting paths in breadth-first phases, as in Hopcroft-Karp; 20,000
// rows of 30 candidates take under 0.1 s).
//
// Validation: N ≥ 1, RowPtr of length N+1 from 0 to len(Cols),
// non-decreasing, every column in [0, N), strictly increasing within a row,
// every row and every column with at least one candidate, and a perfect
// matching on the candidates. Without one, S(X) does not exist and the
// Sinkhorn iteration does not converge; the constructors return an error
// wrapping ErrInfeasible.
type SparsePattern struct {
	n      int
	rowPtr []int   // n+1
	cols   []int   // nnz: column of each entry, CSR order
	colIdx []int32 // cols as int32, for the gathers
	colPtr []int   // n+1: CSC pointers
	rowIdx []int32 // nnz: row of each CSC entry
	tperm  []int32 // nnz: CSR index of each CSC entry
	match  []int   // a perfect matching: row i ↦ match[i]
	comp   []int32 // strongly connected component of each row
	blocks int
	total  bool
}

// spsMaxNNZ bounds the number of entries: indices are stored as int32.
const spsMaxNNZ = math.MaxInt32

// NewSparsePattern returns the n×n pattern with row pointers rowPtr and
// columns cols (copied), after validating it (see SparsePattern).
func NewSparsePattern(n int, rowPtr, cols []int) (*SparsePattern, error) {
	p, err := newSparsePattern(n, rowPtr, cols)
	if err != nil {
		return nil, fmt.Errorf("relax: NewSparsePattern: %w", err)
	}
	return p, nil
}

// SparsePatternFromRows returns the pattern whose row i has the candidate
// columns rows[i], which must be strictly increasing; N = len(rows).
func SparsePatternFromRows(rows [][]int) (*SparsePattern, error) {
	rowPtr := make([]int, len(rows)+1)
	for i, r := range rows {
		rowPtr[i+1] = rowPtr[i] + len(r)
	}
	cols := make([]int, 0, rowPtr[len(rows)])
	for _, r := range rows {
		cols = append(cols, r...)
	}
	p, err := newSparsePattern(len(rows), rowPtr, cols)
	if err != nil {
		return nil, fmt.Errorf("relax: SparsePatternFromRows: %w", err)
	}
	return p, nil
}

// SparsePatternFromMask returns the pattern of the allowed pairs of m. It
// reads the whole mask, O(N²).
func SparsePatternFromMask(m *perm.Mask) (*SparsePattern, error) {
	if m == nil {
		return nil, errors.New("relax: SparsePatternFromMask: nil mask")
	}
	n := m.Size()
	rowPtr := make([]int, n+1)
	var cols []int
	var row []bool
	for i := 0; i < n; i++ {
		row = m.CopyRow(row, i)
		for j, ok := range row {
			if ok {
				cols = append(cols, j)
			}
		}
		rowPtr[i+1] = len(cols)
	}
	p, err := newSparsePattern(n, rowPtr, cols)
	if err != nil {
		return nil, fmt.Errorf("relax: SparsePatternFromMask: %w", err)
	}
	return p, nil
}

func newSparsePattern(n int, rowPtr, cols []int) (*SparsePattern, error) {
	if n < 1 {
		return nil, fmt.Errorf("size must be >= 1, got %d", n)
	}
	if len(rowPtr) != n+1 {
		return nil, fmt.Errorf("len(RowPtr) = %d, want N+1 = %d", len(rowPtr), n+1)
	}
	if rowPtr[0] != 0 || rowPtr[n] != len(cols) {
		return nil, fmt.Errorf("RowPtr must run from 0 to len(Cols) = %d, got %d to %d", len(cols), rowPtr[0], rowPtr[n])
	}
	if len(cols) > spsMaxNNZ {
		return nil, fmt.Errorf("%d entries: at most %d are supported", len(cols), spsMaxNNZ)
	}
	nnz := len(cols)
	p := &SparsePattern{
		n:      n,
		rowPtr: append([]int(nil), rowPtr...),
		cols:   append([]int(nil), cols...),
		colIdx: make([]int32, nnz),
		colPtr: make([]int, n+1),
		rowIdx: make([]int32, nnz),
		tperm:  make([]int32, nnz),
	}
	for i := 0; i < n; i++ {
		lo, hi := p.rowPtr[i], p.rowPtr[i+1]
		if hi < lo {
			return nil, fmt.Errorf("RowPtr decreases at row %d (%d > %d)", i, lo, hi)
		}
		if hi > nnz {
			return nil, fmt.Errorf("RowPtr[%d] = %d exceeds len(Cols) = %d", i+1, hi, nnz)
		}
		if hi == lo {
			return nil, fmt.Errorf("row %d has no candidate", i)
		}
		prev := -1
		for _, j := range p.cols[lo:hi] {
			if j < 0 || j >= n {
				return nil, fmt.Errorf("row %d: column %d out of range [0, %d)", i, j, n)
			}
			if j <= prev {
				return nil, fmt.Errorf("row %d: columns must be strictly increasing, got %d after %d", i, j, prev)
			}
			prev = j
		}
	}
	// The transpose by counting sort: within a column the rows come in
	// increasing order.
	for e, j := range p.cols {
		p.colIdx[e] = int32(j)
		p.colPtr[j+1]++
	}
	for j := 0; j < n; j++ {
		if p.colPtr[j+1] == 0 {
			return nil, fmt.Errorf("column %d has no candidate", j)
		}
		p.colPtr[j+1] += p.colPtr[j]
	}
	next := append([]int(nil), p.colPtr[:n]...)
	for i := 0; i < n; i++ {
		for e := p.rowPtr[i]; e < p.rowPtr[i+1]; e++ {
			j := p.cols[e]
			q := next[j]
			next[j]++
			p.rowIdx[q] = int32(i)
			p.tperm[q] = int32(e)
		}
	}
	match, colMatch, free := spsMaxMatching(n, p.rowPtr, p.colIdx)
	if free >= 0 {
		return nil, fmt.Errorf("%w: row %d cannot be matched (a set of rows has fewer candidate columns than rows)", ErrInfeasible, free)
	}
	p.match = match
	p.comp, p.blocks = spsComponents(n, p.rowPtr, p.colIdx, colMatch)
	p.total = true
	for i := 0; i < n && p.total; i++ {
		for _, j := range p.colIdx[p.rowPtr[i]:p.rowPtr[i+1]] {
			if p.comp[colMatch[j]] != p.comp[i] {
				p.total = false
				break
			}
		}
	}
	return p, nil
}

// N returns the size of the matrices on the pattern.
func (p *SparsePattern) N() int { return p.n }

// NNZ returns the number of stored entries (candidates).
func (p *SparsePattern) NNZ() int { return len(p.cols) }

// RowPtr returns the row pointers, of length N+1: row i's entries are
// RowPtr()[i] up to RowPtr()[i+1]. The slice is the pattern's own and must
// not be modified.
func (p *SparsePattern) RowPtr() []int { return p.rowPtr }

// Cols returns the column of every entry, row by row. The slice is the
// pattern's own and must not be modified.
func (p *SparsePattern) Cols() []int { return p.cols }

// Row returns the candidate columns of row i in increasing order, or nil
// for i out of range. The slice is the pattern's own and must not be
// modified.
func (p *SparsePattern) Row(i int) []int {
	if i < 0 || i >= p.n {
		return nil
	}
	return p.cols[p.rowPtr[i]:p.rowPtr[i+1]]
}

// Index returns the number of the entry (i, j), or −1 if (i, j) is not a
// candidate (or out of range).
func (p *SparsePattern) Index(i, j int) int {
	if i < 0 || i >= p.n {
		return -1
	}
	lo, hi := p.rowPtr[i], p.rowPtr[i+1]
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch c := p.cols[m]; {
		case c == j:
			return m
		case c < j:
			lo = m + 1
		default:
			hi = m
		}
	}
	return -1
}

// Matching returns a perfect matching on the candidates (a new slice), the
// one found when the pattern was built.
func (p *SparsePattern) Matching() perm.Perm {
	return append(perm.Perm(nil), p.match...)
}

// Blocks returns the number of blocks of the pattern: the fully
// indecomposable components of its bipartite graph, the strongly connected
// components of the graph on rows with an edge i → i′ whenever row i has a
// candidate column matched to row i′. With one block the Sinkhorn iteration
// converges linearly to a limit S(X) that is positive on every candidate,
// and the implicit system of SparseSinkhornImplicitVar is non-singular. With
// several, the limit is block diagonal (after permuting rows and columns),
// entries between blocks tend to zero (see TotalSupport), and the
// potentials are not unique.
func (p *SparsePattern) Blocks() int { return p.blocks }

// TotalSupport reports whether every candidate lies on some perfect matching
// of the pattern. A candidate on none has probability zero in the limit
// S(X): the truncated operator gives it a probability that decays only like
// O(1/L) and its log-probability drifts to −∞, and convergence is
// sublinear. Prune removes such candidates.
func (p *SparsePattern) TotalSupport() bool { return p.total }

// Prune returns the pattern without the candidates that lie on no perfect
// matching, and the numbers (in p) of the entries it keeps, in order, so
// that values on p are carried over by picking those entries. If p has
// total support it returns p itself.
func (p *SparsePattern) Prune() (*SparsePattern, []int) {
	keep := make([]int, 0, len(p.cols))
	colMatch := make([]int, p.n)
	for i, j := range p.match {
		colMatch[j] = i
	}
	for i := 0; i < p.n; i++ {
		for e := p.rowPtr[i]; e < p.rowPtr[i+1]; e++ {
			if p.comp[colMatch[p.cols[e]]] == p.comp[i] {
				keep = append(keep, e)
			}
		}
	}
	if len(keep) == len(p.cols) {
		return p, keep
	}
	rowPtr := make([]int, p.n+1)
	cols := make([]int, len(keep))
	for k, e := range keep {
		cols[k] = p.cols[e]
	}
	k := 0
	for i := 0; i < p.n; i++ {
		for k < len(keep) && keep[k] < p.rowPtr[i+1] {
			k++
		}
		rowPtr[i+1] = k
	}
	q, err := newSparsePattern(p.n, rowPtr, cols)
	if err != nil {
		// The matching's own entries are kept, so every row and column
		// keeps a candidate and the matching survives.
		panic("relax: SparsePattern.Prune: " + err.Error())
	}
	return q, keep
}

// Scores returns the assignment problem with the given scores (one per
// entry, in entry order) on the pattern's candidates, for MatchingSparse
// and SparseMatcher. The result shares the pattern's row pointers and
// columns, which the caller must not modify, and values, which it does
// not copy: the two sparse types are one structure, a SparsePattern the
// validated and immutable form that the Sinkhorn operators precompute
// from, a SparseScores the plain form of one problem. len(values) must be
// NNZ.
func (p *SparsePattern) Scores(values []float64) (*SparseScores, error) {
	if len(values) != len(p.cols) {
		return nil, fmt.Errorf("relax: SparsePattern.Scores: %d values for %d entries", len(values), len(p.cols))
	}
	return &SparseScores{N: p.n, RowPtr: p.rowPtr, Cols: p.cols, Vals: values}, nil
}

// Mask returns the pattern as a perm.Mask (O(N²) memory).
func (p *SparsePattern) Mask() *perm.Mask {
	m, _ := perm.NewMask(p.n)
	for i := 0; i < p.n; i++ {
		for _, j := range p.Row(i) {
			_ = m.Set(i, j, true)
		}
	}
	return m
}

// Dense returns the N×N matrix holding values (one per entry) on the
// pattern and fill elsewhere: −Inf turns logits into the dense operators'
// input, 0 turns probabilities into a dense matrix.
func (p *SparsePattern) Dense(values []float64, fill float64) (*mat.Dense, error) {
	if len(values) != len(p.cols) {
		return nil, fmt.Errorf("relax: SparsePattern.Dense: %d values for %d entries", len(values), len(p.cols))
	}
	n := p.n
	d := make([]float64, n*n)
	if fill != 0 {
		for k := range d {
			d[k] = fill
		}
	}
	for i := 0; i < n; i++ {
		for e := p.rowPtr[i]; e < p.rowPtr[i+1]; e++ {
			d[i*n+p.cols[e]] = values[e]
		}
	}
	return mat.NewDense(n, n, d), nil
}

// Values returns the entries of the N×N matrix m on the pattern, in entry
// order.
func (p *SparsePattern) Values(m mat.Matrix) ([]float64, error) {
	if d, ok := m.(*mat.Dense); m == nil || ok && d == nil {
		return nil, errors.New("relax: SparsePattern.Values: nil matrix")
	}
	if r, c := m.Dims(); r != p.n || c != p.n {
		return nil, fmt.Errorf("relax: SparsePattern.Values: matrix is %d×%d, pattern %d×%d", r, c, p.n, p.n)
	}
	v := make([]float64, len(p.cols))
	for i := 0; i < p.n; i++ {
		for e := p.rowPtr[i]; e < p.rowPtr[i+1]; e++ {
			v[e] = m.At(i, p.cols[e])
		}
	}
	return v, nil
}

// SparseLogits is a batch of N×N matrices on one sparse pattern: matrix k
// holds Values[k·NNZ : (k+1)·NNZ], its entries in the pattern's order.
// Entries outside the pattern are forbidden (probability zero); a stored
// value of −Inf forbids its entry too.
type SparseLogits struct {
	Pattern *SparsePattern
	Values  []float64
}

// Batch returns the number of matrices, len(Values)/NNZ.
func (s *SparseLogits) Batch() int {
	if s == nil || s.Pattern == nil {
		return 0
	}
	return len(s.Values) / s.Pattern.NNZ()
}

// Matrix returns the values of matrix k, 0 ≤ k < Batch() (a view into
// Values).
func (s *SparseLogits) Matrix(k int) []float64 {
	nnz := s.Pattern.NNZ()
	return s.Values[k*nnz : (k+1)*nnz]
}

// check validates the batch's shape.
func (s *SparseLogits) check() error {
	switch {
	case s == nil:
		return errors.New("nil logits")
	case s.Pattern == nil:
		return errors.New("nil pattern")
	case len(s.Values)%s.Pattern.NNZ() != 0:
		return fmt.Errorf("%d values are not a whole number of matrices of %d entries", len(s.Values), s.Pattern.NNZ())
	}
	return nil
}

// spsMaxMatching finds a maximum matching of the bipartite graph (rows,
// columns, candidates): a greedy start, then phases as in Hopcroft-Karp,
// each a breadth-first layering from the free rows and depth-first
// augmentations along it. Unlike Hopcroft-Karp proper these accept a free
// column at any layer; every path found augments the current matching and
// each phase finds at least one, so the result is a maximum matching. It
// returns
// the row and column matches (−1 for unmatched) and an unmatched row, or
// −1 if the matching is perfect.
func spsMaxMatching(n int, rowPtr []int, cols []int32) (rowMatch []int, colMatch []int32, free int) {
	rowMatch = make([]int, n)
	colMatch = make([]int32, n)
	for j := range colMatch {
		colMatch[j] = -1
	}
	for i := 0; i < n; i++ {
		rowMatch[i] = -1
		for _, j := range cols[rowPtr[i]:rowPtr[i+1]] {
			if colMatch[j] < 0 {
				colMatch[j] = int32(i)
				rowMatch[i] = int(j)
				break
			}
		}
	}
	dist := make([]int32, n)
	it := make([]int, n)
	queue := make([]int32, 0, n)
	stack := make([]int32, 0, 64)
	for {
		// Breadth-first layers from the free rows.
		queue = queue[:0]
		for i := 0; i < n; i++ {
			if rowMatch[i] < 0 {
				dist[i] = 0
				queue = append(queue, int32(i))
			} else {
				dist[i] = -1
			}
		}
		if len(queue) == 0 {
			return rowMatch, colMatch, -1
		}
		found := false
		for q := 0; q < len(queue); q++ {
			u := queue[q]
			for _, j := range cols[rowPtr[u]:rowPtr[u+1]] {
				w := colMatch[j]
				if w < 0 {
					found = true
				} else if dist[w] < 0 {
					dist[w] = dist[u] + 1
					queue = append(queue, w)
				}
			}
		}
		if !found {
			for i := 0; i < n; i++ {
				if rowMatch[i] < 0 {
					return rowMatch, colMatch, i
				}
			}
		}
		// Depth-first augmentations along the layers, with an explicit
		// stack; it[u] is the next candidate of row u to try.
		for i := 0; i < n; i++ {
			it[i] = rowPtr[i]
		}
		for root := 0; root < n; root++ {
			if rowMatch[root] >= 0 {
				continue
			}
			stack = append(stack[:0], int32(root))
			for len(stack) > 0 {
				u := stack[len(stack)-1]
				pushed := false
				for ; it[u] < rowPtr[u+1]; it[u]++ {
					j := cols[it[u]]
					w := colMatch[j]
					if w < 0 {
						// Augment: every row on the stack takes the
						// column it is trying.
						for _, x := range stack {
							c := cols[it[x]]
							colMatch[c] = x
							rowMatch[x] = int(c)
						}
						stack = stack[:0]
						pushed = true
						break
					}
					if dist[w] == dist[u]+1 {
						stack = append(stack, w)
						pushed = true
						break
					}
				}
				if pushed {
					continue
				}
				dist[u] = -1 // dead end for this phase
				stack = stack[:len(stack)-1]
				if len(stack) > 0 {
					it[stack[len(stack)-1]]++
				}
			}
		}
	}
}

// spsComponents returns the strongly connected components of the graph on
// rows with an edge i → colMatch[j] for every candidate j of row i (Tarjan's
// algorithm, iterative), as a component number per row, and their number.
func spsComponents(n int, rowPtr []int, cols []int32, colMatch []int32) ([]int32, int) {
	index := make([]int32, n)
	low := make([]int32, n)
	onStack := make([]bool, n)
	comp := make([]int32, n)
	for i := range index {
		index[i] = -1
	}
	type frame struct {
		u int32
		e int
	}
	var calls []frame
	var tstack []int32
	next := int32(0)
	ncomp := 0
	visit := func(u int32) {
		index[u], low[u] = next, next
		next++
		tstack = append(tstack, u)
		onStack[u] = true
		calls = append(calls, frame{u, rowPtr[u]})
	}
	for s := 0; s < n; s++ {
		if index[s] >= 0 {
			continue
		}
		visit(int32(s))
		for len(calls) > 0 {
			f := &calls[len(calls)-1]
			u := f.u
			if f.e < rowPtr[u+1] {
				v := colMatch[cols[f.e]]
				f.e++
				if index[v] < 0 {
					visit(v)
				} else if onStack[v] {
					low[u] = min(low[u], index[v])
				}
				continue
			}
			calls = calls[:len(calls)-1]
			if low[u] == index[u] {
				for {
					v := tstack[len(tstack)-1]
					tstack = tstack[:len(tstack)-1]
					onStack[v] = false
					comp[v] = int32(ncomp)
					if v == u {
						break
					}
				}
				ncomp++
			}
			if len(calls) > 0 {
				p := calls[len(calls)-1].u
				low[p] = min(low[p], low[u])
			}
		}
	}
	return comp, ncomp
}
