package relax

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/perm"
)

// ErrInfeasible is wrapped by the errors of the matching functions when no
// perfect matching uses only allowed entries. Test for it with errors.Is.
var ErrInfeasible = errors.New("no perfect matching on the allowed entries")

// Matching returns the matching operator M(X) of the seed paper: the
// permutation p maximising Σ_i x[i][p[i]] (equivalently <P, X> for its
// permutation matrix P). Entries equal to -Inf are forbidden; if no
// permutation avoids them the error wraps ErrInfeasible. NaN or +Inf entries
// and non-square matrices are errors. A 0×0 matrix gives an empty Perm.
//
// The solver is the Jonker-Volgenant shortest augmenting path algorithm,
// exact and O(n³) in the worst case (see Matcher). Ties between optimal
// permutations are broken deterministically but arbitrarily; use Objective
// to compare solutions.
func Matching(x mat.Matrix) (perm.Perm, error) {
	m := matcherPool.Get().(*Matcher)
	defer matcherPool.Put(m)
	return m.solve("Matching", nil, x, nil)
}

// MatchingMasked is Matching restricted to the allowed entries: row i may be
// matched to column j only if allowed.Allowed(i, j) and x[i][j] != -Inf. A
// nil mask allows everything. It returns an error wrapping ErrInfeasible,
// naming a row that cannot be matched, when no permutation is allowed, and
// an error if the mask size differs from the matrix size.
func MatchingMasked(x mat.Matrix, allowed *perm.Mask) (perm.Perm, error) {
	m := matcherPool.Get().(*Matcher)
	defer matcherPool.Put(m)
	return m.solve("MatchingMasked", nil, x, allowed)
}

// matcherPool recycles workspaces between calls of the one-shot functions.
var matcherPool = sync.Pool{New: func() any { return new(Matcher) }}

// Objective returns Σ_i x[i][p[i]], the value <P, X> that Matching maximises.
func Objective(x mat.Matrix, p perm.Perm) (float64, error) {
	r, c := x.Dims()
	if r != c || r != len(p) {
		return 0, fmt.Errorf("relax: Objective: matrix is %d×%d, permutation has length %d", r, c, len(p))
	}
	if err := p.Validate(); err != nil {
		return 0, fmt.Errorf("relax: Objective: %w", err)
	}
	var s float64
	for i, j := range p {
		s += x.At(i, j)
	}
	return s, nil
}

// MatchingBatch solves Matching for every matrix in xs, in parallel on at
// most GOMAXPROCS goroutines (each with its own Matcher). The output is in
// input order and does not depend on GOMAXPROCS. If any problem fails, it
// returns nil and the error of the lowest failing index.
func MatchingBatch(xs []mat.Matrix) ([]perm.Perm, error) {
	return matchingBatch("MatchingBatch", xs, nil)
}

// MatchingBatchMasked is MatchingBatch with one mask per matrix
// (len(allowed) == len(xs); nil entries allow everything) or a nil slice
// (no masks).
func MatchingBatchMasked(xs []mat.Matrix, allowed []*perm.Mask) ([]perm.Perm, error) {
	if allowed != nil && len(allowed) != len(xs) {
		return nil, fmt.Errorf("relax: MatchingBatchMasked: %d masks for %d matrices", len(allowed), len(xs))
	}
	return matchingBatch("MatchingBatchMasked", xs, allowed)
}

func matchingBatch(fn string, xs []mat.Matrix, allowed []*perm.Mask) ([]perm.Perm, error) {
	out := make([]perm.Perm, len(xs))
	errs := make([]error, len(xs))
	workers := min(runtime.GOMAXPROCS(0), len(xs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := matcherPool.Get().(*Matcher)
			defer matcherPool.Put(m)
			for {
				k := int(next.Add(1) - 1)
				if k >= len(xs) {
					return
				}
				var mask *perm.Mask
				if allowed != nil {
					mask = allowed[k]
				}
				if xs[k] == nil {
					errs[k] = fmt.Errorf("relax: %s: matrix %d is nil", fn, k)
					continue
				}
				out[k], errs[k] = m.solve(fn, nil, xs[k], mask)
			}
		}()
	}
	wg.Wait()
	for k, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("%w (matrix %d)", err, k)
		}
	}
	return out, nil
}

// Matcher solves linear assignment problems, reusing its workspace across
// calls so that repeated solves of the same size do not allocate. The zero
// value is ready to use. A Matcher must not be used by several goroutines
// at once; give each goroutine its own.
//
// The algorithm is that of Jonker and Volgenant (1987) for the equivalent
// minimisation of Σ c[i][p[i]] with c = -x: column reduction, reduction
// transfer and two passes of augmenting row reduction build a partial
// assignment with feasible dual prices v (reduced costs c[i][j] - v[j] -
// u[i] >= 0, zero on assigned pairs); each remaining free row is then
// assigned by a Dijkstra shortest augmenting path search over reduced
// costs, after which the prices of the scanned columns are updated to keep
// them feasible. Forbidden entries have cost +Inf and are never relaxed; a
// search that runs out of finite-distance columns proves, by Hall's theorem,
// that no perfect matching exists.
//
// From n = 48 on (sparseInitMinN), the initialisation is instead a sparse
// first phase: the same algorithm with a heap (see SparseMatcher)
// on a candidate graph of about 12 to 16 of the cheapest entries of each
// row (those under a threshold, selected in the one pass that reads the
// matrix), plus the cheapest entry of any column no row selected. Its
// prices are then checked against every entry, and the rows whose
// assignment is no longer the cheapest of their row in reduced cost go to
// the dense augmentation. On random problems the optimum uses almost only
// such entries, so the sparse phase does nearly all the work, in time
// proportional to the number of candidates, and the check costs
// O(candidates) per row (a bound covers the other entries; the row is read
// only when the bound fails). The result is exact whatever the
// candidates, which only decide how much work is left to the dense phase;
// problems on which they are a poor guess (rows that all want the same
// columns) go back to the classic initialisation at a bounded cost. See
// sparseInit.
//
// Matrices whose largest finite |x| could overflow the prices (above
// MaxFloat64/(16(n+1)), about 1e307/n) are scaled down by a power of two
// first, and tiny ones (below 2^-900 ≈ 1e-271) scaled up. Power-of-two
// scaling is exact, so the solution is unaffected apart from entries that
// underflow, which are negligible at the matrix's scale.
//
// Solve and SolveRaw with a dst of sufficient capacity do not allocate
// once the workspace has grown to the problem size.
type Matcher struct {
	n      int
	cost   []float64 // n×n row-major costs, c = -x·scale, +Inf forbidden
	v      []float64 // column prices
	d      []float64 // shortest path distances
	rowsol []int     // column of each row, -1 if free
	colsol []int     // row of each column, -1 if free
	pred   []int     // predecessor row of each column in the search tree
	cols   []int     // column list of augment: scanned | unscanned
	free   []int     // free rows
	vp     []float64 // prices in column-list order (augment)
	pp     []int     // predecessors in column-list order (augment)
	count  []int     // column reduction: columns won by each row
	mrow   []bool    // one mask row
	value  float64

	// Sparse first phase (see sparseInit).
	sp   sparseLAP
	topc []int32   // candidate columns of each row (sparseInitCap slots)
	tcnt []int32   // their number
	nx   []int32   // extra candidates per row: columns whose minimum it holds
	thr  []float64 // a bound below the costs of each row's non-candidates
	// maskCand lists the allowed columns of a masked row.
	maskCand [sparseInitSlot]int32
	// prepped is set by load when the solve uses sparseInit and the
	// per-row work for it is done.
	prepped bool
	// lazy is set when the costs are -src (row i at src[i*stride:]) and
	// cost is not filled: sparseInit reads src, and materialize fills
	// cost when the dense phase needs it. src is dropped after the solve.
	lazy   bool
	src    []float64
	stride int
	// init forces an initialisation for tests: initAuto chooses by size.
	init initMode
}

// initMode selects the initialisation of the dense solver.
type initMode uint8

const (
	initAuto    initMode = iota // sparseInit from sparseInitMinN on
	initClassic                 // always classicInit
	initSparse                  // always sparseInit
)

// Solve returns the permutation maximising Σ_i x[i][p[i]] over the allowed
// entries (nil allowed: all entries; -Inf entries are always forbidden). The
// result is written to dst if it has capacity n, else to a new Perm. Errors
// are as for MatchingMasked.
func (m *Matcher) Solve(dst perm.Perm, x mat.Matrix, allowed *perm.Mask) (perm.Perm, error) {
	return m.solve("Matcher.Solve", dst, x, allowed)
}

// SolveRaw is Solve for the n×n matrix stored row-major in data
// (len(data) == n*n), avoiding any matrix wrapper.
func (m *Matcher) SolveRaw(dst perm.Perm, n int, data []float64, allowed *perm.Mask) (perm.Perm, error) {
	const fn = "Matcher.SolveRaw"
	if n < 0 || len(data) != n*n {
		return nil, fmt.Errorf("relax: %s: len(data) = %d, want n*n with n = %d", fn, len(data), n)
	}
	if err := m.load(fn, n, allowed, data, n, nil); err != nil {
		m.src, m.lazy = nil, false
		return nil, err
	}
	p, err := m.run(fn, dst)
	if err != nil {
		return nil, err
	}
	var s float64
	for i, j := range p {
		s += data[i*n+j]
	}
	m.value = s
	return p, nil
}

// Value returns the objective Σ_i x[i][p[i]] of the last successful solve,
// computed from the original entries.
func (m *Matcher) Value() float64 { return m.value }

func (m *Matcher) solve(fn string, dst perm.Perm, x mat.Matrix, allowed *perm.Mask) (perm.Perm, error) {
	if x == nil {
		return nil, fmt.Errorf("relax: %s: nil matrix", fn)
	}
	r, c := x.Dims()
	if r != c {
		return nil, fmt.Errorf("relax: %s: matrix is %d×%d, not square", fn, r, c)
	}
	n := r
	var err error
	if rm, ok := x.(mat.RawMatrixer); ok && n > 0 {
		raw := rm.RawMatrix()
		err = m.load(fn, n, allowed, raw.Data, raw.Stride, nil)
	} else {
		err = m.load(fn, n, allowed, nil, 0, x)
	}
	if err != nil {
		m.src, m.lazy = nil, false
		return nil, err
	}
	p, err := m.run(fn, dst)
	if err != nil {
		return nil, err
	}
	var s float64
	for i, j := range p {
		s += x.At(i, j)
	}
	m.value = s
	return p, nil
}

// load checks the input and fills the cost matrix. Rows come from data
// (row i at data[i*stride:]) when non-nil, else from x.At. With the sparse
// phase, an unmasked matrix from data is not copied (m.lazy; see
// materialize).
func (m *Matcher) load(fn string, n int, allowed *perm.Mask, data []float64, stride int, x mat.Matrix) error {
	if allowed != nil && allowed.Size() != n {
		return fmt.Errorf("relax: %s: mask size %d does not match matrix size %d", fn, allowed.Size(), n)
	}
	m.resize(n)
	// The sparse first phase's per-row work is done here, while the row
	// is in cache.
	m.prepped = m.useSparseInit()
	if m.prepped {
		m.prepSparse()
	}
	m.lazy = m.prepped && data != nil && allowed == nil
	m.src, m.stride = data, stride
	inf := math.Inf(1)
	maxAbs := 0.0
	// Blocks of the rows for the sparse phase's thresholds.
	var bminArr [sparseInitMaxBlocks]float64
	var boundsArr [sparseInitMaxBlocks + 1]int
	nb := initBlocks(n)
	bmin, bounds := bminArr[:nb], boundsArr[:nb+1]
	for b := range bounds {
		bounds[b] = b * n / nb
	}
	// tguess is the candidate threshold for the next row: the threshold
	// of the last row, adjusted towards 2·nb candidates. On the rows of
	// most matrices it selects a reasonable number of candidates (nb to
	// 4·nb are accepted) in the one pass over the row; other rows compute
	// their own (prepRow).
	tguess := math.Inf(-1)
	spread := candSpread{rows: min(64, n/2)}
	if m.prepped {
		spread.seen = m.nx[:n]
		clear(spread.seen)
	}
	for i := 0; i < n; i++ {
		ci := m.cost[i*n : i*n+n]
		var rowMax float64
		var finite bool
		fused, cnt := false, 0
		masked := false // whether the candidates are the row's allowed entries
		switch {
		case data != nil && allowed != nil:
			// One pass: negate, apply the mask, the largest |c| over the
			// allowed entries, and their columns.
			m.mrow = allowed.CopyRow(m.mrow, i)
			amax, na := maskNegate(ci, data[i*stride:i*stride+n], m.mrow, &m.maskCand)
			// The slow path below handles rows with a NaN or infinite
			// allowed entry, or none allowed.
			finite = amax < 0x7ff0000000000000 && na > 0
			rowMax = math.Float64frombits(amax)
			masked, cnt = finite && na <= sparseInitCap, na
		case m.lazy:
			// One pass, no copy: the largest |x|, and the entries under
			// the last threshold.
			src := data[i*stride : i*stride+n]
			rowMax, finite, cnt = scanCollect(src, tguess, m.cand(i))
			fused = true
			if !finite {
				negate(ci, src) // for the slow path below
			}
		case data != nil:
			negate(ci, data[i*stride:i*stride+n])
		default:
			for j := range ci {
				ci[j] = -x.At(i, j)
			}
		}
		if allowed != nil && data == nil {
			m.mrow = allowed.CopyRow(m.mrow, i)
			mr := m.mrow[:len(ci)]
			for j, ok := range mr {
				if !ok {
					ci[j] = inf
				}
			}
		}
		// Fast path: track the largest |c|; a NaN or ±Inf entry fails the
		// finiteness test at the moment it would become the maximum.
		if !fused && allowed == nil {
			rowMax, finite = absMax(ci)
		}
		rowOK := true
		if !finite {
			// Slow path: forbidden entries (+Inf costs) or bad input.
			rowMax, rowOK = 0, false
			for j, cij := range ci {
				a := math.Abs(cij)
				if a < inf {
					if a > rowMax {
						rowMax = a
					}
					rowOK = true
					continue
				}
				if cij != cij {
					return fmt.Errorf("relax: %s: NaN at (%d, %d)", fn, i, j)
				}
				if cij < 0 { // x = +Inf on an allowed entry
					return fmt.Errorf("relax: %s: +Inf at (%d, %d)", fn, i, j)
				}
			}
		}
		if rowMax > maxAbs {
			maxAbs = rowMax
		}
		if !rowOK {
			return fmt.Errorf("relax: %s: %w: row %d has no allowed column", fn, ErrInfeasible, i)
		}
		if m.prepped {
			t := tguess
			inCost := !m.lazy || !finite // whether ci holds the row
			switch {
			case masked:
				// Few allowed entries: they are the candidates, and all
				// others are forbidden.
				copy(m.cand(i)[:], m.maskCand[:cnt])
				m.tcnt[i], m.thr[i], t = int32(cnt), inf, inf
			case fused && cnt >= nb && cnt <= 4*nb:
				m.tcnt[i], m.thr[i] = int32(cnt), t
			default:
				if !inCost {
					negate(ci, data[i*stride:i*stride+n])
					inCost = true
				}
				t = m.prepRow(i, ci, bounds, bmin)
			}
			if t < inf {
				// Aim the next row's guess at 2·nb candidates, as if the
				// entries just above the row's minimum were evenly spread.
				var src []float64
				if !inCost {
					src = data[i*stride : i*stride+n]
				}
				lo := candMin(ci, src, m.cand(i)[:m.tcnt[i]])
				tguess = lo + (t-lo)*float64(2*nb)/float64(m.tcnt[i])
			}
			if i < spread.rows && spread.add(m.cand(i)[:m.tcnt[i]], n) && m.init == initAuto {
				// The rows want the same few columns (as when x[i][j] =
				// a[i] + b[j]): the sparse phase would not pay.
				m.dropSparse(i + 1)
			}
		}
	}
	if m.lazy && priceScale(maxAbs, n) != 0 {
		m.materialize()
	}
	m.scale(maxAbs)
	return nil
}

// dropSparse gives up the sparse phase while loading, after the first rows
// rows: the solve will use classicInit.
func (m *Matcher) dropSparse(rows int) {
	if m.lazy {
		n := m.n
		for i := 0; i < rows; i++ {
			negate(m.cost[i*n:i*n+n], m.src[i*m.stride:i*m.stride+n])
		}
	}
	m.lazy, m.prepped = false, false
}

// candSpread watches how many distinct columns the candidates of the
// first rows rows cover.
type candSpread struct {
	rows, done, total, distinct int
	seen                        []int32 // columns seen, by 1
}

// add records the candidates of the next row and, after the last watched
// row, reports whether they cover less than a quarter of the distinct
// columns that as many random candidates would.
func (c *candSpread) add(cand []int32, n int) bool {
	for _, j := range cand {
		c.distinct += int(1 - c.seen[j])
		c.seen[j] = 1
	}
	c.total += len(cand)
	c.done++
	if c.done < c.rows {
		return false
	}
	expected := float64(n) * -math.Expm1(-float64(c.total)/float64(n))
	return 4*float64(c.distinct) < expected
}

// materialize fills m.cost from m.src after a lazy load.
func (m *Matcher) materialize() {
	if !m.lazy {
		return
	}
	n := m.n
	for i := 0; i < n; i++ {
		negate(m.cost[i*n:i*n+n], m.src[i*m.stride:i*m.stride+n])
	}
	m.lazy = false
}

// scale multiplies the finite costs by a power of two when their magnitude
// risks overflow or underflow of the prices.
func (m *Matcher) scale(maxAbs float64) {
	e := priceScale(maxAbs, m.n)
	if e == 0 {
		return
	}
	for k, c := range m.cost {
		m.cost[k] = math.Ldexp(c, e)
	}
	if m.prepped {
		for i, t := range m.thr {
			m.thr[i] = math.Ldexp(t, e)
		}
	}
}

func (m *Matcher) resize(n int) {
	m.n = n
	if cap(m.cost) < n*n {
		m.cost = make([]float64, n*n)
	}
	m.cost = m.cost[:n*n]
	if cap(m.v) < n {
		m.v = make([]float64, n)
		m.d = make([]float64, n)
		m.rowsol = make([]int, n)
		m.colsol = make([]int, n)
		m.pred = make([]int, n)
		m.cols = make([]int, n)
		m.free = make([]int, n)
		m.count = make([]int, n)
		m.vp = make([]float64, n)
		m.pp = make([]int, n)
	}
	m.v = m.v[:n]
	m.d = m.d[:n]
	m.rowsol = m.rowsol[:n]
	m.colsol = m.colsol[:n]
	m.pred = m.pred[:n]
	m.cols = m.cols[:n]
	m.free = m.free[:n]
	m.count = m.count[:n]
	m.vp = m.vp[:n]
	m.pp = m.pp[:n]
}

// run solves the loaded problem and writes the result.
func (m *Matcher) run(fn string, dst perm.Perm) (perm.Perm, error) {
	n := m.n
	if dst == nil || cap(dst) < n {
		dst = make(perm.Perm, n)
	}
	dst = dst[:n]
	m.value = 0
	if n == 0 {
		return dst, nil
	}
	err := m.lapjv(fn)
	m.src, m.lazy = nil, false
	if err != nil {
		return nil, err
	}
	copy(dst, m.rowsol)
	return dst, nil
}

// lapjv runs the Jonker-Volgenant algorithm on m.cost: an initialisation
// that leaves some rows free with feasible prices, then one shortest
// augmenting path search per free row.
func (m *Matcher) lapjv(fn string) error {
	var nfree int
	var err error
	if m.prepped {
		nfree, err = m.sparseInit(fn)
		if err == nil && (nfree == noSparseInit || nfree > m.n/8) {
			// The candidates were a poor guess: start again with the
			// classic initialisation, which suits such problems better
			// than augmenting this many rows one by one.
			m.materialize()
			nfree, err = m.classicInit(fn)
		}
	} else {
		nfree, err = m.classicInit(fn)
	}
	if err != nil {
		return err
	}
	for k := 0; k < nfree; k++ {
		if err := m.augment(fn, m.free[k]); err != nil {
			return err
		}
	}
	return nil
}

// classicInit is Jonker and Volgenant's initialisation: column reduction,
// reduction transfer and two passes of augmenting row reduction. It
// returns the number of rows left free (listed in m.free).
func (m *Matcher) classicInit(fn string) (int, error) {
	n := m.n
	inf := math.Inf(1)
	c, v := m.cost, m.v
	rowsol, colsol, count := m.rowsol, m.colsol, m.count

	// Column reduction: v[j] = min_i c[i][j], done row by row for locality.
	// The first row attaining a column's minimum is its candidate.
	for j := range v {
		v[j] = inf
		colsol[j] = -1
	}
	arg := m.pred // scratch: arg[j] = argmin row of column j
	for i := 0; i < n; i++ {
		columnMin(c[i*n:i*n+n], v, arg, i)
		rowsol[i] = -1
		count[i] = 0
	}
	for j := n - 1; j >= 0; j-- {
		if v[j] == inf {
			return 0, fmt.Errorf("relax: %s: %w: column %d has no allowed row", fn, ErrInfeasible, j)
		}
		i := arg[j]
		count[i]++
		if count[i] == 1 {
			rowsol[i] = j
			colsol[j] = i
		}
	}

	// Reduction transfer: a row that won exactly one column j1 passes the
	// slack of its second best column to v[j1]. Rows that won nothing are
	// free.
	free := m.free
	nfree := 0
	for i := 0; i < n; i++ {
		switch count[i] {
		case 0:
			free[nfree] = i
			nfree++
		case 1:
			j1 := rowsol[i]
			ci := c[i*n : i*n+n]
			mn := min(minReduced(ci[:j1], v[:j1]), minReduced(ci[j1+1:], v[j1+1:]))
			if mn < inf {
				v[j1] -= mn
			}
		}
	}
	// Augmenting row reduction, two passes.
	for pass := 0; pass < 2 && nfree > 0; pass++ {
		nfree = m.augmentingRowReduction(nfree)
	}
	return nfree, nil
}

// augmentingRowReduction runs one pass of augmenting row reduction over
// the first nfree rows of m.free and returns the new number of free rows.
// Each free row takes its cheapest column j1, lowering v[j1] to the level
// of its second cheapest so that the displaced owner (if any) is retried
// at once. This auction-like step is cheap while many columns are free
// but can cycle through small price decreases, so each pass is capped at
// 4·nfree row scans; rows left over go to the exact augmentation phase,
// so the cap affects speed, never the result.
func (m *Matcher) augmentingRowReduction(nfree int) int {
	n := m.n
	inf := math.Inf(1)
	c, v := m.cost, m.v
	rowsol, colsol, free := m.rowsol, m.colsol, m.free
	budget := 4 * nfree
	k, prev := 0, nfree
	nfree = 0
	for k < prev {
		if budget == 0 {
			// Keep the unprocessed rows free for augmentation.
			nfree += copy(free[nfree:], free[k:prev])
			break
		}
		budget--
		i := free[k]
		k++
		u1, j1, u2, j2 := twoSmallest(c[i*n:i*n+n], v)
		// u1 is finite: every row has an allowed column and prices are
		// finite.
		i0 := colsol[j1]
		strict := u1 < u2 && u2 < inf
		if strict {
			v[j1] -= u2 - u1
		} else if u2 == u1 && i0 >= 0 {
			j1, i0 = j2, colsol[j2]
		}
		rowsol[i] = j1
		colsol[j1] = i
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

// augment assigns the free row f by a shortest augmenting path search
// (Dijkstra on reduced costs) and updates the prices. Each step scans the
// row matched to the closest unscanned column, relaxing the distances of
// the other unscanned columns and finding the next closest in the same
// sweep; ties prefer a free column, which ends the search. The prices,
// distances and predecessors are kept in the order of the column list
// cols so that the sweep reads them contiguously; only the cost row is
// gathered.
func (m *Matcher) augment(fn string, f int) error {
	n := m.n
	inf := math.Inf(1)
	c, v := m.cost, m.v[:n]
	rowsol, colsol, pred := m.rowsol, m.colsol[:n], m.pred[:n]
	cols, vp, dp, pp := m.cols[:n], m.vp[:n], m.d[:n], m.pp[:n]

	best, kbest := inf, 0
	cf := c[f*n : f*n+n]
	for j, cfj := range cf {
		cols[j] = j
		vj := v[j]
		vp[j] = vj
		pp[j] = f
		r := cfj - vj
		dp[j] = r
		if r < best || (r == best && colsol[j] < 0) {
			best, kbest = r, j
		}
	}
	// Positions [0, low) hold the scanned columns (final distances),
	// [low, n) the others.
	low := 0
	var mn float64
	for {
		if best == inf {
			return fmt.Errorf("relax: %s: %w: row %d cannot be matched: the %d rows reachable from it allow only %d columns",
				fn, ErrInfeasible, f, low+1, low)
		}
		j := cols[kbest]
		cols[kbest], cols[low] = cols[low], j
		vp[kbest], vp[low] = vp[low], vp[kbest]
		dp[kbest], dp[low] = dp[low], dp[kbest]
		pp[kbest], pp[low] = pp[low], pp[kbest]
		low++
		mn = best
		i := colsol[j]
		if i < 0 {
			break
		}
		ci := c[i*n : i*n+n]
		h := mn - (ci[j] - vp[low-1]) // distance to row i minus its dual
		best, kbest = relaxRow(ci, h, i, cols[low:], vp[low:], dp[low:], pp[low:], colsol)
		kbest += low
	}
	// Update the prices of the scanned columns (the last one, the free
	// column ending the path, has d = mn and keeps its price) and record
	// their predecessors in column order.
	for k, j := range cols[:low] {
		v[j] = vp[k] + (dp[k] - mn)
		pred[j] = pp[k]
	}
	// Augment along the path back to f.
	end := cols[low-1]
	for {
		i := pred[end]
		colsol[end] = i
		j := rowsol[i]
		rowsol[i] = end
		end = j
		if i == f {
			break
		}
	}
	return nil
}

// relaxRow is the inner loop of augment: for each unscanned column
// cr[k], it relaxes the distance dr[k] through row i (reduced cost
// h + ci[cr[k]] - vr[k]) and returns the smallest distance and its
// position, preferring a free column on ties. It is a separate function to
// keep the loop's variables in registers.
func relaxRow(ci []float64, h float64, i int, cr []int, vr, dr []float64, pr []int, colsol []int) (best float64, kbest int) {
	best = math.Inf(1)
	vr = vr[:len(cr)]
	dr = dr[:len(cr)]
	pr = pr[:len(cr)]
	for k, jj := range cr {
		// Branch-free relaxation (conditional moves): whether a distance
		// improves is unpredictable.
		r := h + ci[jj] - vr[k]
		dk := dr[k]
		pk := pr[k]
		if r < dk {
			pk = i
		}
		pr[k] = pk
		dk = min(dk, r)
		dr[k] = dk
		if dk <= best && (dk < best || colsol[jj] < 0) {
			best, kbest = dk, k
		}
	}
	return best, kbest
}

// The small loops below are separate functions so that the compiler keeps
// their variables in registers (inside the large functions it spills the
// loop counters).

// negate sets dst[j] = -src[j] for j < len(dst).
func negate(dst, src []float64) {
	src = src[:len(dst)]
	for j, x := range src {
		dst[j] = -x
	}
}

// maskNegate sets dst[j] = -src[j] where allowed[j] and +Inf elsewhere,
// lists the allowed columns in cand (the list is garbage when there are
// more than len(cand)), and returns their number and the bit pattern of
// the largest |dst[j]| over them (at least that of +Inf if one is NaN or
// infinite). It works on the bits, branch-free: the mask is random.
func maskNegate(dst, src []float64, allowed []bool, cand *[sparseInitSlot]int32) (amax uint64, cnt int) {
	const sign = 1 << 63
	const inf = 0x7ff0000000000000
	src = src[:len(dst)]
	allowed = allowed[:len(dst)]
	for j, x := range src {
		var a uint64
		if allowed[j] {
			a = 1
		}
		keep := -a // all ones where allowed
		u := math.Float64bits(x) ^ sign
		dst[j] = math.Float64frombits(u&keep | inf&^keep)
		amax = max(amax, u&^sign&keep)
		cand[cnt&(sparseInitSlot-1)] = int32(j)
		cnt += int(a)
	}
	return amax, cnt
}

// absMax returns the largest |c[j]| and whether all entries are finite.
// A NaN or ±Inf entry is caught when it would become the maximum, so the
// maximum is only meaningful when finite is true.
func absMax(c []float64) (mx float64, finite bool) {
	finite = true
	for _, x := range c {
		if a := math.Abs(x); !(a <= mx) {
			mx = a
			finite = finite && a <= math.MaxFloat64
		}
	}
	return mx, finite
}

// columnMin lowers v[j] to ci[j] where that is smaller, recording row i in
// arg[j].
func columnMin(ci, v []float64, arg []int, i int) {
	v = v[:len(ci)]
	arg = arg[:len(ci)]
	for j, x := range ci {
		if x < v[j] {
			v[j] = x
			arg[j] = i
		}
	}
}

// minReduced returns the minimum of ci[j] - v[j] (+Inf if ci is empty).
func minReduced(ci, v []float64) float64 {
	mn := math.Inf(1)
	v = v[:len(ci)]
	for j, x := range ci {
		if h := x - v[j]; h < mn {
			mn = h
		}
	}
	return mn
}

// twoSmallest returns the smallest and second smallest values of
// ci[j] - v[j] and their indices (-1 and +Inf when missing).
func twoSmallest(ci, v []float64) (u1 float64, j1 int, u2 float64, j2 int) {
	u1, u2 = math.Inf(1), math.Inf(1)
	j1, j2 = -1, -1
	v = v[:len(ci)]
	for j, x := range ci {
		h := x - v[j]
		if h < u2 {
			if h >= u1 {
				u2, j2 = h, j
			} else {
				u2, j2 = u1, j1
				u1, j1 = h, j
			}
		}
	}
	return u1, j1, u2, j2
}
