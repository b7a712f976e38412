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
}

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
	if err := m.load(fn, n, allowed, func(i int) []float64 { return data[i*n : i*n+n] }, nil); err != nil {
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
		err = m.load(fn, n, allowed, func(i int) []float64 {
			return raw.Data[i*raw.Stride : i*raw.Stride+n]
		}, nil)
	} else {
		err = m.load(fn, n, allowed, nil, x)
	}
	if err != nil {
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

// load checks the input and fills the cost matrix. Rows come from row(i)
// when non-nil, else from x.At.
func (m *Matcher) load(fn string, n int, allowed *perm.Mask, row func(int) []float64, x mat.Matrix) error {
	if allowed != nil && allowed.Size() != n {
		return fmt.Errorf("relax: %s: mask size %d does not match matrix size %d", fn, allowed.Size(), n)
	}
	m.resize(n)
	inf := math.Inf(1)
	maxAbs := 0.0
	for i := 0; i < n; i++ {
		ci := m.cost[i*n : i*n+n]
		if row != nil {
			negate(ci, row(i))
		} else {
			for j := range ci {
				ci[j] = -x.At(i, j)
			}
		}
		if allowed != nil {
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
		rowMax, finite := absMax(ci)
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
	}
	m.scale(maxAbs)
	return nil
}

// scale multiplies the finite costs by a power of two when their magnitude
// risks overflow or underflow of the prices.
func (m *Matcher) scale(maxAbs float64) {
	if maxAbs == 0 {
		return
	}
	limit := math.MaxFloat64 / float64(16*(m.n+1))
	const tiny = 0x1p-900
	var e int
	switch {
	case maxAbs > limit:
		_, e1 := math.Frexp(maxAbs)
		_, e2 := math.Frexp(limit)
		e = e2 - e1 - 1
	case maxAbs < tiny:
		_, e1 := math.Frexp(maxAbs)
		e = -e1
	default:
		return
	}
	for k, c := range m.cost {
		m.cost[k] = math.Ldexp(c, e)
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
	if err := m.lapjv(fn); err != nil {
		return nil, err
	}
	copy(dst, m.rowsol)
	return dst, nil
}

// lapjv runs the Jonker-Volgenant algorithm on m.cost.
func (m *Matcher) lapjv(fn string) error {
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
			return fmt.Errorf("relax: %s: %w: column %d has no allowed row", fn, ErrInfeasible, j)
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
	if nfree == 0 {
		return nil
	}

	// Augmenting row reduction, two passes.
	for pass := 0; pass < 2 && nfree > 0; pass++ {
		nfree = m.augmentingRowReduction(nfree)
	}

	// Shortest augmenting paths for the rows still free.
	for k := 0; k < nfree; k++ {
		if err := m.augment(fn, m.free[k]); err != nil {
			return err
		}
	}
	return nil
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
