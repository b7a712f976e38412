package relax

import (
	"fmt"
	"math"
	"sync"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/perm"
)

// SparseScores is an n×n assignment problem on a sparse candidate graph,
// stored in compressed sparse row (CSR) form: row i may be matched only to
// the columns Cols[RowPtr[i]:RowPtr[i+1]], with the scores
// Vals[RowPtr[i]:RowPtr[i+1]]. The candidates of a row may come in any
// order but must be distinct columns in [0, N). A score of -Inf forbids its
// candidate, as in MatchingMasked; NaN and +Inf are errors.
//
// It is the sparse counterpart of a dense score matrix with a perm.Mask:
// NewSparseScores builds it from one, and MatchingSparse solves it in time
// that grows with the number of candidates instead of N².
type SparseScores struct {
	N      int
	RowPtr []int     // len N+1, RowPtr[0] = 0, non-decreasing, RowPtr[N] = len(Cols)
	Cols   []int     // candidate columns, row by row
	Vals   []float64 // their scores
}

// NewSparseScores returns the candidates of the n×n matrix x allowed by the
// mask (nil: every entry) whose score is not -Inf, each row's columns in
// increasing order. It reads every entry of x once, so it is O(n²); build a
// SparseScores directly for problems too large to hold densely. NaN or +Inf
// entries among the candidates are reported by MatchingSparse, not here.
func NewSparseScores(x mat.Matrix, allowed *perm.Mask) (SparseScores, error) {
	if x == nil {
		return SparseScores{}, fmt.Errorf("relax: NewSparseScores: nil matrix")
	}
	r, c := x.Dims()
	if r != c {
		return SparseScores{}, fmt.Errorf("relax: NewSparseScores: matrix is %d×%d, not square", r, c)
	}
	n := r
	if allowed != nil && allowed.Size() != n {
		return SparseScores{}, fmt.Errorf("relax: NewSparseScores: mask size %d does not match matrix size %d", allowed.Size(), n)
	}
	s := SparseScores{N: n, RowPtr: make([]int, n+1)}
	var data []float64
	stride := 0
	if rm, ok := x.(mat.RawMatrixer); ok && n > 0 {
		raw := rm.RawMatrix()
		data, stride = raw.Data, raw.Stride
	}
	var mrow []bool
	ninf := math.Inf(-1)
	for i := range n {
		if allowed != nil {
			mrow = allowed.CopyRow(mrow, i)
		}
		for j := range n {
			if mrow != nil && !mrow[j] {
				continue
			}
			var v float64
			if data != nil {
				v = data[i*stride+j]
			} else {
				v = x.At(i, j)
			}
			if v == ninf {
				continue
			}
			s.Cols = append(s.Cols, j)
			s.Vals = append(s.Vals, v)
		}
		s.RowPtr[i+1] = len(s.Cols)
	}
	return s, nil
}

// Validate checks the structure of s: the lengths of its slices, the row
// pointers, and that every candidate column is in range and appears once in
// its row. It does not look at the scores.
func (s *SparseScores) Validate() error {
	var seen []int32
	return s.validate("SparseScores.Validate", &seen)
}

// validate is Validate with a reusable scratch slice (len ≥ N after the
// call) for the duplicate check.
func (s *SparseScores) validate(fn string, seen *[]int32) error {
	n := s.N
	if n < 0 {
		return fmt.Errorf("relax: %s: negative size %d", fn, n)
	}
	if len(s.RowPtr) != n+1 {
		return fmt.Errorf("relax: %s: len(RowPtr) = %d, want N+1 = %d", fn, len(s.RowPtr), n+1)
	}
	if s.RowPtr[0] != 0 {
		return fmt.Errorf("relax: %s: RowPtr[0] = %d, want 0", fn, s.RowPtr[0])
	}
	if len(s.Cols) != len(s.Vals) || s.RowPtr[n] != len(s.Cols) {
		return fmt.Errorf("relax: %s: RowPtr[N] = %d, len(Cols) = %d, len(Vals) = %d: want all equal", fn, s.RowPtr[n], len(s.Cols), len(s.Vals))
	}
	for i := range n {
		if lo, hi := s.RowPtr[i], s.RowPtr[i+1]; hi < lo {
			return fmt.Errorf("relax: %s: RowPtr decreases at row %d (%d > %d)", fn, i, lo, hi)
		}
	}
	if cap(*seen) < n {
		*seen = make([]int32, n)
	}
	mark := (*seen)[:n]
	clear(mark)
	for i := range n {
		lo, hi := s.RowPtr[i], s.RowPtr[i+1]
		for _, j := range s.Cols[lo:hi] {
			if j < 0 || j >= n {
				return fmt.Errorf("relax: %s: row %d: column %d out of range [0, %d)", fn, i, j, n)
			}
			if mark[j] == int32(i+1) {
				return fmt.Errorf("relax: %s: row %d: column %d appears twice", fn, i, j)
			}
			mark[j] = int32(i + 1)
		}
	}
	return nil
}

// Objective returns Σ_i s[i][p[i]], the value MatchingSparse maximises, summed
// in row order. It is an error if p is not a permutation of length N or
// uses a pair that is not a candidate.
func (s *SparseScores) Objective(p perm.Perm) (float64, error) {
	if len(p) != s.N || len(s.RowPtr) != s.N+1 {
		return 0, fmt.Errorf("relax: SparseScores.Objective: size %d, permutation has length %d", s.N, len(p))
	}
	if err := p.Validate(); err != nil {
		return 0, fmt.Errorf("relax: SparseScores.Objective: %w", err)
	}
	var sum float64
	for i, j := range p {
		lo, hi := s.RowPtr[i], s.RowPtr[i+1]
		if lo < 0 || hi < lo || hi > len(s.Cols) || hi > len(s.Vals) {
			return 0, fmt.Errorf("relax: SparseScores.Objective: bad RowPtr at row %d", i)
		}
		found := false
		for e, c := range s.Cols[lo:hi] {
			if c == j {
				sum += s.Vals[lo+e]
				found = true
				break
			}
		}
		if !found {
			return 0, fmt.Errorf("relax: SparseScores.Objective: (%d, %d) is not a candidate", i, j)
		}
	}
	return sum, nil
}

// MatchingSparse returns the permutation p maximising Σ_i s[i][p[i]] over
// the candidate pairs of s, the exact solution of the assignment problem
// restricted to them (as MatchingMasked on the dense equivalent). If the
// candidates admit no perfect matching the error wraps ErrInfeasible and
// names a row that cannot be matched; a malformed s, NaN or +Inf scores are
// other errors. Ties between optimal permutations are broken
// deterministically but arbitrarily; compare solutions with
// SparseScores.Objective.
//
// The time grows with the number of candidates, not N²: see SparseMatcher.
func MatchingSparse(s SparseScores) (perm.Perm, error) {
	m := sparseMatcherPool.Get().(*SparseMatcher)
	defer sparseMatcherPool.Put(m)
	return m.solve("MatchingSparse", nil, &s)
}

var sparseMatcherPool = sync.Pool{New: func() any { return new(SparseMatcher) }}

// SparseMatcher solves assignment problems on sparse candidate graphs,
// reusing its workspace across calls: once it has grown to the problem's
// size, Solve with a dst of capacity N does not allocate. The zero value is
// ready to use; a SparseMatcher must not be used by several goroutines at
// once.
//
// The algorithm is the successive shortest augmenting path method of
// Jonker and Volgenant, on the minimisation problem with costs c = -s,
// with the dense solver's initialisation (column reduction, reduction
// transfer, two capped passes of augmenting row reduction) restricted to the
// candidate edges, and each remaining free row assigned by Dijkstra's
// algorithm over the candidate edges with reduced costs c[i][j] - v[j] -
// u[i] >= 0 and a 4-ary heap of the labelled matched columns. Free
// columns never enter the heap: the cheapest one reached is kept aside and
// the search stops as soon as the heap's minimum is not below it, so a
// search touches only the edges of the rows closer than its augmenting
// path, and its cost is O(E' log V') for the E' edges and V' columns it
// reaches, independent of N (per-column state is reset by an epoch stamp,
// not by clearing). Only the scanned columns' prices change (by d[j] - d,
// d the path length), which keeps every reduced cost non-negative. A search
// that exhausts the heap without reaching a free column has found, by Hall's
// theorem, a set of rows with fewer candidate columns than rows.
//
// Shortest paths were chosen over an ε-scaling auction because they are
// exact for real scores: the auction's final ε-complementary slackness
// proves optimality only to within N·ε, which is exact for integer scores
// (ε < 1/N) but not for floats, and its running time depends on the range
// of the scores. Here, as in the dense solver, only rounding of the
// reduced-cost sums can make the result differ from the optimum, by a few
// ulps of the path lengths; integer-valued scores (up to 2^53/N in size)
// are solved exactly. Scores whose largest magnitude could overflow the
// prices are scaled by a power of two as in Matcher.
type SparseMatcher struct {
	lap   sparseLAP
	seen  []int32 // validation scratch
	value float64
}

// Solve returns the permutation maximising Σ_i s[i][p[i]] over the
// candidates of s, written to dst if it has capacity N (else to a new
// Perm). Errors are as for MatchingSparse.
func (m *SparseMatcher) Solve(dst perm.Perm, s *SparseScores) (perm.Perm, error) {
	if s == nil {
		return nil, fmt.Errorf("relax: SparseMatcher.Solve: nil SparseScores")
	}
	return m.solve("SparseMatcher.Solve", dst, s)
}

// Value returns the objective Σ_i s[i][p[i]] of the last successful solve,
// summed in row order from the original scores.
func (m *SparseMatcher) Value() float64 { return m.value }

func (m *SparseMatcher) solve(fn string, dst perm.Perm, s *SparseScores) (perm.Perm, error) {
	m.value = 0
	if err := s.validate(fn, &m.seen); err != nil {
		return nil, err
	}
	n := s.N
	if int64(len(s.Cols)) >= math.MaxInt32 || int64(n) >= math.MaxInt32 {
		return nil, fmt.Errorf("relax: %s: %d rows and %d candidates exceed the 2^31 limit", fn, n, len(s.Cols))
	}
	if err := m.load(fn, s); err != nil {
		return nil, err
	}
	if dst == nil || cap(dst) < n {
		dst = make(perm.Perm, n)
	}
	dst = dst[:n]
	if n == 0 {
		return dst, nil
	}
	lap := &m.lap
	if j := lap.columnReduction(); j >= 0 {
		return nil, fmt.Errorf("relax: %s: %w: column %d is no row's candidate", fn, ErrInfeasible, j)
	}
	nfree := lap.reductionTransfer()
	for pass := 0; pass < 2 && nfree > 0; pass++ {
		nfree = lap.augmentingRowReduction(nfree)
	}
	lap.budget = -1
	for _, f := range lap.free[:nfree] {
		if reached, ok := lap.augment(int(f)); !ok {
			return nil, fmt.Errorf("relax: %s: %w: row %d cannot be matched: the %d rows reachable from it have %d candidate columns between them",
				fn, ErrInfeasible, f, reached+1, reached)
		}
	}
	var sum float64
	for i := range n {
		dst[i] = int(lap.rowsol[i])
		sum += s.Vals[lap.rowEdge[i]]
	}
	m.value = sum
	return dst, nil
}

// load copies s into the workspace (costs c = -Vals), checks the scores
// and scales them if needed.
func (m *SparseMatcher) load(fn string, s *SparseScores) error {
	n := s.N
	lap := &m.lap
	lap.resize(n, len(s.Cols))
	for i, p := range s.RowPtr {
		lap.rowPtr[i] = int32(p)
	}
	for e, j := range s.Cols {
		lap.cols[e] = int32(j)
	}
	inf := math.Inf(1)
	maxAbs := 0.0
	cost := lap.cost
	for i := range n {
		lo, hi := s.RowPtr[i], s.RowPtr[i+1]
		ok := false
		for e := lo; e < hi; e++ {
			x := s.Vals[e]
			switch {
			case x != x:
				return fmt.Errorf("relax: %s: NaN at (%d, %d)", fn, i, s.Cols[e])
			case x > math.MaxFloat64:
				return fmt.Errorf("relax: %s: +Inf at (%d, %d)", fn, i, s.Cols[e])
			case x < -math.MaxFloat64:
				cost[e] = inf
				continue
			}
			cost[e] = -x
			maxAbs = max(maxAbs, math.Abs(x))
			ok = true
		}
		if !ok {
			return fmt.Errorf("relax: %s: %w: row %d has no candidate column", fn, ErrInfeasible, i)
		}
	}
	if e := priceScale(maxAbs, n); e != 0 {
		for k, c := range cost {
			cost[k] = math.Ldexp(c, e)
		}
	}
	return nil
}

// priceScale returns the power of two by which costs of largest magnitude
// maxAbs must be scaled so that prices of an n×n problem neither overflow
// nor lose precision to underflow (0: no scaling). See Matcher.
func priceScale(maxAbs float64, n int) int {
	if maxAbs == 0 {
		return 0
	}
	limit := math.MaxFloat64 / float64(16*(n+1))
	const tiny = 0x1p-900
	switch {
	case maxAbs > limit:
		_, e1 := math.Frexp(maxAbs)
		_, e2 := math.Frexp(limit)
		return e2 - e1 - 1
	case maxAbs < tiny:
		_, e1 := math.Frexp(maxAbs)
		return -e1
	}
	return 0
}

// sparseLAP is the shortest augmenting path solver on a candidate graph in
// CSR form (see SparseMatcher), shared by SparseMatcher and, as the first
// phase on the cheapest entries of each row, by the dense Matcher. Costs
// are minimised; +Inf costs are forbidden.
type sparseLAP struct {
	n       int
	rowPtr  []int32   // n+1 row pointers
	cols    []int32   // candidate columns
	cost    []float64 // their costs
	col     []lapCol  // per-column state
	rowsol  []int32   // column of each row, -1 if free
	rowEdge []int32   // edge index of each row's assignment
	heap    []int32   // 4-ary heap of labelled unscanned columns by d
	scanned []int32   // columns scanned by the current search
	free    []int32   // free rows
	count   []int32   // column reduction: columns won by each row
	epoch   uint32
	// budget limits the edges that augment may still relax (< 0: no
	// limit); a search that would exceed it gives up.
	budget int
}

// lapCol is the state of one column, kept together so that relaxing an
// edge touches one cache line.
type lapCol struct {
	v     float64 // price
	d     float64 // tentative distance, when stamp is the search's epoch
	row   int32   // assigned row, -1 if free
	stamp uint32  // search epoch that labelled the column
	hpos  int32   // heap position of a labelled column, -1 once scanned
	pred  int32   // predecessor row of a labelled column
}

// resize sizes the workspace for n rows and nnz candidates and resets the
// search stamps.
func (s *sparseLAP) resize(n, nnz int) {
	s.n = n
	if cap(s.cost) < nnz {
		s.cost = make([]float64, nnz)
		s.cols = make([]int32, nnz)
	}
	s.cost, s.cols = s.cost[:nnz], s.cols[:nnz]
	if cap(s.col) < n || cap(s.rowPtr) < n+1 {
		s.rowPtr = make([]int32, n+1)
		s.col = make([]lapCol, n)
		s.rowsol = make([]int32, n)
		s.rowEdge = make([]int32, n)
		s.heap = make([]int32, 0, n)
		s.scanned = make([]int32, 0, n)
		s.free = make([]int32, n)
		s.count = make([]int32, n)
	}
	s.rowPtr = s.rowPtr[:n+1]
	s.col = s.col[:n]
	s.rowsol, s.rowEdge = s.rowsol[:n], s.rowEdge[:n]
	s.free, s.count = s.free[:n], s.count[:n]
	for j := range s.col {
		s.col[j].stamp = 0
	}
	s.epoch = 0
}

// columnReduction sets v[j] = min_i c[i][j] over the candidates and gives
// each column to the first row attaining it, a row keeping the highest
// column it wins (the others stay free). It returns a column with no
// finite candidate, or -1.
func (s *sparseLAP) columnReduction() int {
	n := s.n
	inf := math.Inf(1)
	c, col, rowPtr, cols := s.cost, s.col, s.rowPtr, s.cols
	rowsol, rowEdge, count := s.rowsol, s.rowEdge, s.count
	// Scratch until the searches: the row and edge attaining the minimum
	// are kept in pred and hpos.
	for j := range col {
		col[j].v = inf
		col[j].row = -1
	}
	for i := range n {
		rowsol[i] = -1
		count[i] = 0
		lo, hi := rowPtr[i], rowPtr[i+1]
		ce := c[lo:hi]
		for k, j := range cols[lo:hi] {
			cj := &col[j]
			if x := ce[k]; x < cj.v {
				cj.v = x
				cj.pred, cj.hpos = int32(i), lo+int32(k)
			}
		}
	}
	for j := range col {
		if col[j].v == inf {
			return j
		}
	}
	for j := n - 1; j >= 0; j-- {
		i := col[j].pred
		count[i]++
		if count[i] == 1 {
			rowsol[i] = int32(j)
			rowEdge[i] = col[j].hpos
			col[j].row = i
		}
	}
	return -1
}

// reductionTransfer lowers the price of the column of each row that won
// exactly one column by the row's second smallest reduced cost, lists the
// rows that won none in free and returns their number.
func (s *sparseLAP) reductionTransfer() int {
	inf := math.Inf(1)
	c, col, rowPtr, cols := s.cost, s.col, s.rowPtr, s.cols
	free := s.free
	nfree := 0
	for i := range s.n {
		switch s.count[i] {
		case 0:
			free[nfree] = int32(i)
			nfree++
		case 1:
			j1 := s.rowsol[i]
			lo, hi := rowPtr[i], rowPtr[i+1]
			mn := inf
			ce := c[lo:hi]
			for k, j := range cols[lo:hi] {
				if j != j1 {
					mn = min(mn, ce[k]-col[j].v)
				}
			}
			if mn < inf {
				col[j1].v -= mn
			}
		}
	}
	return nfree
}

// augmentingRowReduction is Matcher.augmentingRowReduction on the
// candidate edges: one capped pass over the first nfree rows of free,
// returning the new number of free rows.
func (s *sparseLAP) augmentingRowReduction(nfree int) int {
	inf := math.Inf(1)
	c, col, rowPtr, cols := s.cost, s.col, s.rowPtr, s.cols
	rowsol, rowEdge, free := s.rowsol, s.rowEdge, s.free
	budget := 4 * nfree
	k, prev := 0, nfree
	nfree = 0
	for k < prev {
		if budget == 0 {
			nfree += copy(free[nfree:], free[k:prev])
			break
		}
		budget--
		i := free[k]
		k++
		lo, hi := rowPtr[i], rowPtr[i+1]
		u1, k1, u2, k2 := twoSmallestSparse(c[lo:hi], cols[lo:hi], col)
		if k1 < 0 || u1 == inf {
			// Only forbidden candidates: leave the row to augment.
			free[nfree] = i
			nfree++
			continue
		}
		e1 := lo + int32(k1)
		j1 := cols[e1]
		i0 := col[j1].row
		strict := u1 < u2 && u2 < inf
		if strict {
			col[j1].v -= u2 - u1
		} else if u2 == u1 && i0 >= 0 {
			e1 = lo + int32(k2)
			j1 = cols[e1]
			i0 = col[j1].row
		}
		rowsol[i] = j1
		rowEdge[i] = e1
		col[j1].row = i
		if i0 >= 0 {
			rowsol[i0] = -1
			if strict {
				k--
				free[k] = i0
			} else {
				free[nfree] = i0
				nfree++
			}
		}
	}
	return nfree
}

// twoSmallestSparse returns the smallest and second smallest reduced costs
// ce[k] - v[cols[k]] and their positions k (-1 and +Inf when missing).
func twoSmallestSparse(ce []float64, cols []int32, col []lapCol) (u1 float64, k1 int, u2 float64, k2 int) {
	u1, u2 = math.Inf(1), math.Inf(1)
	k1, k2 = -1, -1
	ce = ce[:len(cols)]
	for k, j := range cols {
		h := ce[k] - col[j].v
		if h < u2 {
			if h >= u1 {
				u2, k2 = h, k
			} else {
				u2, k2 = u1, k1
				u1, k1 = h, k
			}
		}
	}
	return u1, k1, u2, k2
}

// augment assigns the free row f along a shortest augmenting path found by
// Dijkstra's algorithm over the candidate edges, then updates the prices of
// the scanned columns (see SparseMatcher). If no free column is reachable
// it returns ok = false and the number of columns reached, changing
// nothing; it also gives up, with ok = false, when the search would relax
// more edges than s.budget allows (when s.budget >= 0).
func (s *sparseLAP) augment(f int) (reached int, ok bool) {
	s.epoch++
	if s.epoch == 0 { // wrapped: forget all old stamps
		for j := range s.col {
			s.col[j].stamp = 0
		}
		s.epoch = 1
	}
	c, col, rowPtr, cols, rowEdge := s.cost, s.col, s.rowPtr, s.cols, s.rowEdge
	h := colHeap{col: col, a: s.heap[:0]}
	scanned := s.scanned[:0]
	budget := s.budget
	sr := searchRow{ep: s.epoch, endD: math.Inf(1), endCol: -1}

	// Scan row i, at distance base + its dual; the first row is f itself
	// (base 0).
	i, base := int32(f), 0.0
	for {
		lo, hi := rowPtr[i], rowPtr[i+1]
		if budget >= 0 {
			budget -= int(hi - lo)
			if budget < 0 {
				s.budget = budget
				s.heap, s.scanned = h.a[:0], scanned[:0]
				return len(scanned), false
			}
		}
		sr.scan(&h, i, base, cols[lo:hi], c[lo:hi])
		if len(h.a) == 0 {
			break
		}
		j := h.a[0]
		dj := col[j].d
		if !(dj < sr.endD) {
			break // a free column is at least as close: stop
		}
		h.pop()
		scanned = append(scanned, j)
		i = col[j].row
		// The distance to row i minus its dual u[i] = c[i][j] - v[j].
		base = dj - (c[rowEdge[i]] - col[j].v)
	}
	s.budget = budget
	s.heap, s.scanned = h.a[:0], scanned[:0]
	if sr.endCol < 0 {
		return len(scanned), false
	}
	// Price update: scanned columns had d <= endD.
	endD := sr.endD
	for _, j := range scanned {
		col[j].v += col[j].d - endD
	}
	// Augment back to f. The edge of each path step is found in its row.
	rowsol := s.rowsol
	j, i := sr.endCol, sr.endRow
	for {
		col[j].row = i
		next := rowsol[i]
		rowsol[i] = j
		rowEdge[i] = s.edge(i, j)
		if int(i) == f {
			break
		}
		j = next
		i = col[j].pred
	}
	return len(scanned), true
}

// edge returns the index of the candidate (i, j), which must exist.
func (s *sparseLAP) edge(i, j int32) int32 {
	lo, hi := s.rowPtr[i], s.rowPtr[i+1]
	for k, x := range s.cols[lo:hi] {
		if x == j {
			return lo + int32(k)
		}
	}
	panic("relax: internal error: sparse path edge not found")
}

// searchRow is the part of a search's state that the row scans update:
// the epoch that marks labelled columns, and the cheapest free column
// reached so far, with its distance and the row reaching it.
type searchRow struct {
	ep             uint32
	endD           float64
	endCol, endRow int32
}

// scan relaxes the edges (i, cols[k]) at distance base + ce[k] - v: free
// columns may become the search's end, matched ones are labelled or have
// their distance lowered in the heap. It is a separate function with few
// live values so that the loop's variables stay in registers.
func (sr *searchRow) scan(h *colHeap, i int32, base float64, cols []int32, ce []float64) {
	col := h.col
	ep, endD := sr.ep, sr.endD
	ce = ce[:len(cols)]
	for k, j := range cols {
		cj := &col[j]
		r := base + ce[k] - cj.v
		if cj.row < 0 {
			if r < endD {
				endD, sr.endCol, sr.endRow = r, j, i
			}
			continue
		}
		if cj.stamp != ep {
			cj.stamp, cj.d, cj.pred = ep, r, i
			h.push(j)
			continue
		}
		if cj.hpos >= 0 && r < cj.d {
			cj.d, cj.pred = r, i
			h.up(int(cj.hpos))
		}
	}
	sr.endD = endD
}

// colHeap is a 4-ary min-heap of column indices keyed by col[j].d, with
// col[j].hpos the position of column j (-1 once popped). Four children per
// node halve the depth that the frequent decreases of a key climb.
type colHeap struct {
	col []lapCol
	a   []int32
}

func (h *colHeap) push(j int32) {
	h.a = append(h.a, j)
	h.up(len(h.a) - 1)
}

// pop removes the root (the caller has read it).
func (h *colHeap) pop() {
	a := h.a
	h.col[a[0]].hpos = -1
	last := len(a) - 1
	if last == 0 {
		h.a = a[:0]
		return
	}
	a[0] = a[last]
	h.a = a[:last]
	h.down(0)
}

func (h *colHeap) up(p int) {
	a, col := h.a, h.col
	j := a[p]
	kj := col[j].d
	for p > 0 {
		q := (p - 1) / 4
		aq := a[q]
		if !(kj < col[aq].d) {
			break
		}
		a[p] = aq
		col[aq].hpos = int32(p)
		p = q
	}
	a[p] = j
	col[j].hpos = int32(p)
}

func (h *colHeap) down(p int) {
	a, col := h.a, h.col
	n := len(a)
	j := a[p]
	kj := col[j].d
	for {
		l := 4*p + 1
		if l >= n {
			break
		}
		// The least of the (up to four) children.
		best, kb := l, col[a[l]].d
		for c := l + 1; c < min(l+4, n); c++ {
			if kc := col[a[c]].d; kc < kb {
				best, kb = c, kc
			}
		}
		if !(kb < kj) {
			break
		}
		ab := a[best]
		a[p] = ab
		col[ab].hpos = int32(p)
		p = best
	}
	a[p] = j
	col[j].hpos = int32(p)
}
