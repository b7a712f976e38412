package relax

import (
	"fmt"
	"math"
)

// Tuning of the dense solver's sparse first phase (sparseInit).
const (
	// sparseInitMinN is the smallest n for which the dense solver starts
	// with the sparse phase; smaller problems use classicInit (measured
	// crossover between 32 and 48 on uniform random matrices).
	sparseInitMinN = 48
	// sparseInitMaxBlocks bounds the number of blocks a row is cut into
	// (see initBlocks and prepRow): the largest of the blocks' minima is a
	// candidate threshold under which at least that many entries lie
	// (about B·(1 + 1/2 + … + 1/B) on random rows: 15 for B = 6, 22 for
	// B = 8).
	sparseInitMaxBlocks = 8
	// sparseInitCap is the most candidates a row keeps from a threshold;
	// a row with more (ties) keeps its sparseInitK cheapest entries.
	sparseInitCap = 48
	sparseInitK   = 12
	// sparseInitSlot is the room for a row's candidates (a power of two
	// above sparseInitCap).
	sparseInitSlot = 64
)

// sparseInit is the dense solver's initialisation from sparseInitMinN on.
// It solves the assignment problem restricted to a sparse candidate graph
// with the sparse solver (sparseLAP), then checks the resulting prices
// against the whole matrix. Rows whose assigned entry is still the
// cheapest of their row in reduced cost c[i][j] - v[j] keep it; the
// others, and rows the sparse phase could not assign, are left free
// (listed in m.free, their number returned) for the dense augmentation,
// which then starts from feasible prices as after classicInit. The result
// is as exact as the dense algorithm's: the prices are checked on every
// entry, and the candidate graph only decides how much work is left to
// the dense phase.
//
// The candidates of row i are the entries at most a threshold, chosen by
// load in its one pass over the row (see load and prepRow): about 12 per
// row below n = 512 and 16 above, plus the cheapest entry of each column
// that is in no row's list. On random dense problems the optimal
// assignment almost only uses such entries, so the sparse phase finds it
// (or nearly) in time proportional to the number of candidates, and the
// dense phase has few or no rows to assign. The check costs O(candidates)
// per row and reads the whole row only when a bound on its other entries
// (at least thr[i] - max(v)) fails.
//
// It returns noSparseInit when a quarter of the columns or more are in no
// row's list (the rows want the same columns, as in x[i][j] = a[i] + b[j]);
// load has usually declined such problems already (see candSpread). The
// sparse searches share a budget of 16 edge relaxations per candidate, so
// that on problems where the candidates are a poor guess the phase gives
// up at a bounded cost; lapjv then restarts with classicInit when more
// than n/8 rows are left free.
func (m *Matcher) sparseInit(fn string) (int, error) {
	n := m.n
	inf := math.Inf(1)
	v, arg := m.v, m.pred
	const w = sparseInitSlot
	topc, tcnt, nx := m.topc[:n*w], m.tcnt[:n], m.nx[:n]

	// load has found each row's candidates (topc[i*w:i*w+tcnt[i]]). A
	// column in no row's list (rare on random problems) joins the list of
	// the row holding its minimum, so that the candidate graph has no empty
	// column; arg[j] is that row, -1 for the covered columns.
	covered := m.count
	for j := range covered {
		covered[j] = 0
		nx[j] = 0
	}
	nnz := 0
	for i := 0; i < n; i++ {
		l := topc[i*w : i*w+int(tcnt[i])]
		nnz += len(l)
		for _, j := range l {
			covered[j] = 1
		}
	}
	uncovered := 0
	for _, cv := range covered {
		uncovered += int(1 - cv)
	}
	if uncovered > n/4 {
		// The rows want the same few columns (e.g. x[i][j] = a[i] + b[j]):
		// the candidate graph would be a poor guess; classicInit suits
		// such problems.
		return noSparseInit, nil
	}
	if uncovered > 16 {
		// Many: the column minima in one row-major pass rather than a
		// strided one per column.
		m.materialize()
		for j := range v {
			v[j] = inf
		}
		for i := 0; i < n; i++ {
			columnMin(m.cost[i*n:i*n+n], v, arg, i)
		}
	}
	for j := 0; j < n; j++ {
		if covered[j] != 0 {
			arg[j] = -1
			continue
		}
		best, ib := inf, -1
		if uncovered > 16 {
			best, ib = v[j], arg[j]
		} else {
			for i := 0; i < n; i++ {
				if x := m.costAt(i, j); x < best {
					best, ib = x, i
				}
			}
		}
		if best == inf {
			return 0, fmt.Errorf("relax: %s: %w: column %d has no allowed row", fn, ErrInfeasible, j)
		}
		arg[j] = ib
		nx[ib]++
		nnz++
	}

	// Build the candidate graph: each row's cheapest entries, then the
	// columns whose minimum it holds.
	sp := &m.sp
	sp.resize(n, nnz)
	rowPtr, cols, cost := sp.rowPtr, sp.cols, sp.cost
	e := int32(0)
	for i := 0; i < n; i++ {
		rowPtr[i] = e
		for _, j := range topc[i*w : i*w+int(tcnt[i])] {
			cols[e] = j
			e++
		}
		m.gatherCosts(i, cols[rowPtr[i]:e], cost[rowPtr[i]:e])
		e += nx[i] // room for the extra columns
		nx[i] = e  // from now on: where the row's extra columns end
	}
	rowPtr[n] = e
	for j := n - 1; j >= 0; j-- {
		if i := arg[j]; i >= 0 {
			nx[i]--
			cols[nx[i]] = int32(j)
			cost[nx[i]] = m.costAt(i, j)
		}
	}

	// Solve on the candidates, within a budget of edge relaxations.
	if sp.columnReduction() >= 0 {
		// Cannot happen: every column's cheapest entry is a candidate.
		return 0, fmt.Errorf("relax: %s: internal error: the sparse phase lost a column", fn)
	}
	nfree := sp.reductionTransfer()
	for pass := 0; pass < 2 && nfree > 0; pass++ {
		nfree = sp.augmentingRowReduction(nfree)
	}
	sp.budget = 16*nnz + n
	for _, f := range sp.free[:nfree] {
		if sp.budget < 0 {
			break
		}
		sp.augment(int(f))
	}

	// Check the prices on the whole matrix: a row keeps its column j only
	// if c[i][j] - v[j] is still the least reduced cost of its row. On the
	// candidates this is checked directly; the other entries of row i
	// cost at least thr[i], so their reduced costs are at least
	// thr[i] - max(v), and only rows where that bound fails are read in
	// full.
	for j := range v {
		v[j] = sp.col[j].v
	}
	vmax := math.Inf(-1)
	for _, x := range v {
		vmax = max(vmax, x)
	}
	rowsol, colsol, thr := m.rowsol, m.colsol, m.thr[:n]
	for j := range colsol {
		colsol[j] = -1
	}
	free := m.free
	nfree = 0
	for i := 0; i < n; i++ {
		j := int(sp.rowsol[i])
		if j >= 0 {
			ui := sp.cost[sp.rowEdge[i]] - v[j]
			// Rounding: ARR and the price updates make ui exceed the
			// least reduced cost of the row by a few ulps where exact
			// arithmetic gives equality; accepting that much keeps the
			// dense phase from redoing such rows and changes the
			// objective by no more than the dense algorithm's own
			// rounding. With integer costs, prices stay integers, computed
			// exactly while below 2^53, and tol < 1 while |c| + |v| <
			// 2^48, so it cannot hide a violation.
			tol := 0x1p-48 * (math.Abs(sp.cost[sp.rowEdge[i]]) + math.Abs(v[j]))
			lo, hi := rowPtr[i], rowPtr[i+1]
			tight := ui <= minReducedSparse(cost[lo:hi], cols[lo:hi], v)+tol
			if tight && !(thr[i]-vmax >= ui-tol) {
				tight = ui <= m.rowMinReduced(i)+tol
			}
			if tight {
				rowsol[i] = j
				colsol[j] = i
				continue
			}
		}
		rowsol[i] = -1
		free[nfree] = i
		nfree++
	}
	if nfree > 0 {
		m.materialize() // for the dense phase
	}
	return nfree, nil
}

// costAt returns the cost c[i][j], from the source when m.lazy.
func (m *Matcher) costAt(i, j int) float64 {
	if m.lazy {
		return -m.src[i*m.stride+j]
	}
	return m.cost[i*m.n+j]
}

// gatherCosts sets ce[k] = c[i][cols[k]].
func (m *Matcher) gatherCosts(i int, cols []int32, ce []float64) {
	ce = ce[:len(cols)]
	if m.lazy {
		src := m.src[i*m.stride : i*m.stride+m.n]
		for k, j := range cols {
			ce[k] = -src[j]
		}
		return
	}
	ci := m.cost[i*m.n : i*m.n+m.n]
	for k, j := range cols {
		ce[k] = ci[j]
	}
}

// rowMinReduced returns min_j c[i][j] - v[j].
func (m *Matcher) rowMinReduced(i int) float64 {
	n := m.n
	if m.lazy {
		return minNegReduced(m.src[i*m.stride:i*m.stride+n], m.v)
	}
	return minReduced(m.cost[i*n:i*n+n], m.v)
}

// minNegReduced returns the minimum of -x[j] - v[j].
func minNegReduced(x, v []float64) float64 {
	mn := math.Inf(1)
	v = v[:len(x)]
	for j, xj := range x {
		if h := -xj - v[j]; h < mn {
			mn = h
		}
	}
	return mn
}

// initBlocks returns the number of blocks sparseInit's threshold cuts a
// row of length n into: more candidates for larger problems, whose
// optimal assignments reach further down the rows' orders.
func initBlocks(n int) int {
	if n < 512 {
		return 6
	}
	return sparseInitMaxBlocks
}

// noSparseInit is sparseInit's result when it declines the problem.
const noSparseInit = -1

// useSparseInit reports whether the solve of the loaded size starts with
// sparseInit.
func (m *Matcher) useSparseInit() bool {
	switch m.init {
	case initClassic:
		return false
	case initSparse:
		return m.n > 0
	}
	return m.n >= sparseInitMinN
}

// prepSparse sizes the workspace of the per-row work of sparseInit.
func (m *Matcher) prepSparse() {
	n := m.n
	if cap(m.topc) < n*sparseInitSlot {
		m.topc = make([]int32, n*sparseInitSlot)
	}
	if cap(m.thr) < n {
		m.thr = make([]float64, n)
		m.nx = make([]int32, n)
		m.tcnt = make([]int32, n)
	}
	m.thr, m.nx, m.tcnt = m.thr[:n], m.nx[:n], m.tcnt[:n]
}

// cand returns row i's room for its candidates.
func (m *Matcher) cand(i int) *[sparseInitSlot]int32 {
	return (*[sparseInitSlot]int32)(m.topc[i*sparseInitSlot : (i+1)*sparseInitSlot])
}

// prepRow does the per-row work of sparseInit on the loaded costs ci of
// row i when load's guess of a threshold did not do: it lists the row's
// candidates in m.cand(i) (their number in m.tcnt[i]) and sets m.thr[i]
// to a bound below every other entry of the row. The candidates are the
// entries at most t, the largest of the minima of the blocks of ci
// between bounds (so at least len(bmin) of them), unless there are too
// many (ties) or t is +Inf (a block of forbidden entries); then they are
// the row's sparseInitK cheapest entries. It returns t (+Inf in the second
// case).
func (m *Matcher) prepRow(i int, ci []float64, bounds []int, bmin []float64) float64 {
	cand := m.cand(i)
	t := math.Inf(1)
	if len(ci) >= 4*len(bmin) {
		blockScan(ci, bounds, bmin)
		t = bmin[0]
		for _, b := range bmin[1:] {
			t = max(t, b)
		}
		if t < math.Inf(1) {
			if cnt := collect(ci, t, cand); cnt <= sparseInitCap {
				m.tcnt[i], m.thr[i] = int32(cnt), t
				return t
			}
			t = math.Inf(1)
		}
	}
	var topv [sparseInitK]float64
	k := min(sparseInitK, len(ci))
	cnt := rowCheapest(ci, topv[:k], cand[:k], (i*k)%len(ci))
	m.tcnt[i] = int32(cnt)
	if cnt < k {
		m.thr[i] = math.Inf(1) // every finite entry is a candidate
	} else {
		m.thr[i] = topv[0]
	}
	return t
}

// candMin returns the least cost of the candidates cand of a row: ci[j],
// or -src[j] when src is not nil.
func candMin(ci, src []float64, cand []int32) float64 {
	lo := math.Inf(1)
	if src != nil {
		for _, j := range cand {
			lo = min(lo, -src[j])
		}
		return lo
	}
	for _, j := range cand {
		lo = min(lo, ci[j])
	}
	return lo
}

// scanCollect returns the largest |src[j]| and whether all entries are
// finite (as absMax), and lists in cand the columns with -src[j] <= t,
// returning their number (the list is garbage when there are more than
// len(cand)). It is a lazy load's only pass over a row. (Not inlined: in
// the large load function the loop's variables would be spilled.)
//
//go:noinline
func scanCollect(src []float64, t float64, cand *[sparseInitSlot]int32) (mx float64, finite bool, cnt int) {
	// The magnitudes are compared as bit patterns (which order like
	// them, NaNs above +Inf), with branch-free integer maxima.
	const absMask = 1<<63 - 1
	var amax uint64
	nt := -t
	for j, x := range src {
		amax = max(amax, math.Float64bits(x)&absMask)
		if x >= nt {
			// Rarely taken: a branch is cheaper than a branch-free
			// append when few entries qualify.
			cand[cnt&(sparseInitSlot-1)] = int32(j)
			cnt++
		}
	}
	return math.Float64frombits(amax), amax < 0x7ff0000000000000, cnt
}

// collect lists in cand the columns j with ci[j] <= t and returns their
// number; when there are more than len(cand), the list is garbage. The
// loop is branch-free: whether an entry qualifies is unpredictable.
//
//go:noinline
func collect(ci []float64, t float64, cand *[sparseInitSlot]int32) int {
	cnt := 0
	for j, x := range ci {
		cand[cnt&(sparseInitSlot-1)] = int32(j)
		if x <= t {
			cnt++
		}
	}
	return cnt
}

// blockScan computes, in one branch-free pass over c, the minimum of each
// block c[bounds[b]:bounds[b+1]] (into bmin, len(bounds)-1 of them) and the
// bit pattern of the largest |c[j]|, which is at least that of +Inf
// (0x7ff0000000000000) if some entry is infinite or NaN. It works on the
// bits as integers: their absolute values order like the magnitudes, and
// sortKey orders like the floats, with integer minima and maxima that
// compile to conditional moves.
func blockScan(c []float64, bounds []int, bmin []float64) (amax uint64) {
	const absMask = 1<<63 - 1
	bmin = bmin[:len(bounds)-1]
	for b := range bmin {
		blk := c[bounds[b]:bounds[b+1]]
		k0, k1 := int64(math.MaxInt64), int64(math.MaxInt64)
		var a0, a1 uint64
		for len(blk) >= 2 {
			u0, u1 := math.Float64bits(blk[0]), math.Float64bits(blk[1])
			a0, a1 = max(a0, u0&absMask), max(a1, u1&absMask)
			k0, k1 = min(k0, sortKey(u0)), min(k1, sortKey(u1))
			blk = blk[2:]
		}
		if len(blk) == 1 {
			u := math.Float64bits(blk[0])
			a0, k0 = max(a0, u&absMask), min(k0, sortKey(u))
		}
		bmin[b] = math.Float64frombits(uint64(sortKey(uint64(min(k0, k1)))))
		amax = max(amax, a0, a1)
	}
	return amax
}

// sortKey maps the bits of a float64 to an int64 that orders like the
// float (-0 before +0; NaNs beyond the infinities). It is its own inverse.
func sortKey(u uint64) int64 {
	k := int64(u)
	return k ^ int64(uint64(k>>63)>>1)
}

// minReducedSparse returns the minimum of ce[k] - v[cols[k]] (+Inf if
// empty).
func minReducedSparse(ce []float64, cols []int32, v []float64) float64 {
	mn := math.Inf(1)
	ce = ce[:len(cols)]
	for k, j := range cols {
		mn = min(mn, ce[k]-v[j])
	}
	return mn
}

// rowCheapest finds the len(topv) smallest finite entries of ci (fewer if ci
// has fewer), writes their columns to topc, in no particular order, and
// returns their number. The scan starts at column off and wraps around,
// so that among tied entries rows with different offsets keep different
// columns (the earliest seen). topv is a max-heap of the values kept.
func rowCheapest(ci, topv []float64, topc []int32, off int) int {
	h := cheapHeap{v: topv, c: topc[:len(topv)]}
	h.add(ci[off:], off)
	h.add(ci[:off], 0)
	return h.cnt
}

// cheapHeap is rowCheapest's bounded max-heap.
type cheapHeap struct {
	v   []float64
	c   []int32
	cnt int
}

// add offers the entries of seg, columns base, base+1, ….
func (h *cheapHeap) add(seg []float64, base int) {
	k := len(h.v)
	topv, topc := h.v, h.c
	j := 0
	for ; j < len(seg) && h.cnt < k; j++ {
		x := seg[j]
		if !(x < math.Inf(1)) {
			continue
		}
		// Sift up into the heap.
		p := h.cnt
		h.cnt++
		for p > 0 {
			q := (p - 1) / 2
			if !(topv[q] < x) {
				break
			}
			topv[p], topc[p] = topv[q], topc[q]
			p = q
		}
		topv[p], topc[p] = x, int32(base+j)
	}
	if h.cnt < k {
		return
	}
	thr := topv[0]
	for ; j < len(seg); j++ {
		x := seg[j]
		if !(x < thr) {
			continue
		}
		// Replace the root and sift down.
		p := 0
		for {
			l := 2*p + 1
			if l >= k {
				break
			}
			if r := l + 1; r < k && topv[r] > topv[l] {
				l = r
			}
			if !(topv[l] > x) {
				break
			}
			topv[p], topc[p] = topv[l], topc[l]
			p = l
		}
		topv[p], topc[p] = x, int32(base+j)
		thr = topv[0]
	}
}
