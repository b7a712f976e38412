package celegans

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/internal/f64"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/relax"
)

// This file holds the likelihood in the data form of the statistics
// (NewDataStats), the form for thousands of neurons.
//
// With X = Prev and Y = Next (N × T', neuron-major, observed order) and
// A = P W Pᵀ,
//
//	log p(Y_j | P_j, W) = −‖Y − A X‖²_F / (2η²) − T'·N·log(2πη²)/2,
//
// and A X is evaluated right to left without forming A:
//
//	U = Pᵀ X   (canonical × T'),   V = W U,   Z = P V,   R = Y − Z,
//
// each a sum of scaled rows of length T' over the entries of the sparse
// P (its candidates, read through models.Sample.PermSparse) or of the
// sparse W (the connectome's support). A worm and sample cost
// O((2·NNZ(P) + |support|)·T') forward and about twice that backward,
// linear in N for a fixed number of candidates and degree, where the
// moments' form costs O(N³). The intermediates U, V and R are dense
// N × T' blocks, kept for the backward pass: 3·N·T' values per worm and
// sample, the same order as the recording itself; nothing N × N is formed.
//
// The backward pass, with Z̄ = R/η² scaled by the output's gradient:
//
//	P̄[i][c] += Z̄[i]·V[c] + X[i]·Ū[c],   V̄ = Pᵀ Z̄,   W̄[r][c] = V̄[r]·U[c],   Ū = Wᵀ V̄.
//
// Every output row is written by one goroutine in a fixed order, and sums
// over rows run in row order afterwards, so the value and the gradient do
// not depend on GOMAXPROCS.

// patternIndex is the column view of a candidate pattern: for column c, the
// rows colRows[colPtr[c]:colPtr[c+1]] holding it, at entries colEntry.
type patternIndex struct {
	pat      *relax.SparsePattern
	rowPtr   []int
	cols     []int
	colPtr   []int
	colRows  []int
	colEntry []int
}

func newPatternIndex(pat *relax.SparsePattern) *patternIndex {
	n := pat.N()
	rowPtr, cols := pat.RowPtr(), pat.Cols()
	x := &patternIndex{pat: pat, rowPtr: rowPtr, cols: cols, colPtr: make([]int, n+1), colRows: make([]int, len(cols)), colEntry: make([]int, len(cols))}
	for _, c := range cols {
		x.colPtr[c+1]++
	}
	for c := range n {
		x.colPtr[c+1] += x.colPtr[c]
	}
	next := append([]int(nil), x.colPtr[:n]...)
	for i := range n {
		for e := rowPtr[i]; e < rowPtr[i+1]; e++ {
			c := cols[e]
			x.colRows[next[c]], x.colEntry[next[c]] = i, e
			next[c]++
		}
	}
	return x
}

// index returns the column view of pat, built once per pattern.
func (m *Model) index(pat *relax.SparsePattern) *patternIndex {
	m.dataMu.Lock()
	defer m.dataMu.Unlock()
	if m.dataIdx == nil {
		m.dataIdx = map[*relax.SparsePattern]*patternIndex{}
	}
	x := m.dataIdx[pat]
	if x == nil {
		x = newPatternIndex(pat)
		m.dataIdx[pat] = x
	}
	return x
}

// errDataForm is the fast paths' error in the data form.
var errDataForm = errors.New("celegans: the statistics are in the data form (NewDataStats); this needs the moments (NewStats)")

// dataTerm holds one (sample, worm) term's blocks, N × T' each.
type dataTerm struct {
	u, v, r []float64
}

// logLikData is LogLik in the data form.
func (m *Model) logLikData(t *ad.Tape, z *models.Sample) *ad.Var {
	if err := t.Err(); err != nil {
		return t.ConstScalar(math.NaN())
	}
	n, nb, ne := m.P.N(), m.P.Worms(), len(m.P.support)
	kk := z.K()
	wv := z.Real(SiteW)
	pvs := make([]*ad.Var, nb)
	idx := make([]*patternIndex, nb)
	for j := range nb {
		pvs[j] = z.PermSparse(SiteP, j)
		pat := z.PermPattern(SiteP, j)
		if t.Err() != nil {
			return t.ConstScalar(math.NaN())
		}
		idx[j] = m.index(pat)
	}
	if ws := wv.Shape(); len(ws) != 2 || ws[0] != kk || ws[1] != ne {
		t.Fail(fmt.Errorf("celegans: Model.LogLik: W has shape %v, want (K, %d) = [%d %d]", ws, ne, kk, ne))
		return t.ConstScalar(math.NaN())
	}
	eta2 := m.P.NoiseVar
	tt := m.P.Stats[0].Count
	out := t.Alloc(kk)
	terms := make([]dataTerm, kk*nb)
	for q := range terms {
		terms[q] = dataTerm{u: t.AllocRaw(n * tt), v: t.AllocRaw(n * tt), r: t.AllocRaw(n * tt)}
	}
	rowSS := make([]float64, n)
	wval := wv.Value()
	for q := range terms {
		k, j := q/nb, q%nb
		x, y := m.P.Stats[j].Prev.RawMatrix().Data, m.P.Stats[j].Next.RawMatrix().Data
		p := pvs[j].Value()[k*idx[j].pat.NNZ() : (k+1)*idx[j].pat.NNZ()]
		w := wval[k*ne : (k+1)*ne]
		d := &terms[q]
		ix := idx[j]
		// U = Pᵀ X, by columns of P; V = W U.
		rowsParallel(n, func(lo, hi int, coef []float64) { ix.transposeTimes(d.u, x, p, tt, lo, hi, coef) })
		rowsParallel(n, func(lo, hi int, coef []float64) { sparseTimes(d.v, d.u, m.wRowCol, m.wRowX, w, tt, lo, hi, coef) })
		// R = Y − P V, and its squares by row.
		rowsParallel(n, func(lo, hi int, _ []float64) {
			for i := lo; i < hi; i++ {
				ri := d.r[i*tt : (i+1)*tt]
				clear(ri)
				a, b := ix.rowPtr[i], ix.rowPtr[i+1]
				f64.AxpyGather(ri, p[a:b], d.v, tt, ix.cols[a:b])
				ss := 0.0
				for s, yv := range y[i*tt : (i+1)*tt] {
					ri[s] = yv - ri[s]
					ss += ri[s] * ri[s]
				}
				rowSS[i] = ss
			}
		})
		ss := 0.0
		for _, v := range rowSS {
			ss += v
		}
		out[k] += -0.5/eta2*ss - 0.5*float64(tt*n)*math.Log(2*math.Pi*eta2)
	}
	inputs := append(append([]*ad.Var(nil), pvs...), wv)
	return t.Custom([]int{kk}, out, inputs, func(g []float64, gIn [][]float64) {
		gw := gIn[nb]
		for q := range terms {
			k, j := q/nb, q%nb
			x := m.P.Stats[j].Prev.RawMatrix().Data
			nnz := idx[j].pat.NNZ()
			p := pvs[j].Value()[k*nnz : (k+1)*nnz]
			var gp []float64
			if gIn[j] != nil {
				gp = gIn[j][k*nnz : (k+1)*nnz]
			}
			w := wval[k*ne : (k+1)*ne]
			d := &terms[q]
			ix := idx[j]
			c := g[k] / eta2
			// Z̄ = (g/η²) R, in place; then P̄ += Z̄ Vᵀ on the candidates.
			rowsParallel(n, func(lo, hi int, tmp []float64) {
				for i := lo; i < hi; i++ {
					zi := d.r[i*tt : (i+1)*tt]
					for s := range zi {
						zi[s] *= c
					}
					if gp != nil {
						a, b := ix.rowPtr[i], ix.rowPtr[i+1]
						f64.DotGather(tmp, zi, d.v, tt, ix.cols[a:b])
						for e := a; e < b; e++ {
							gp[e] += tmp[e-a]
						}
					}
				}
			})
			// V̄ = Pᵀ Z̄, into V's block.
			rowsParallel(n, func(lo, hi int, coef []float64) { ix.transposeTimes(d.v, d.r, p, tt, lo, hi, coef) })
			// W̄[r][c] = V̄[r]·U[c].
			if gw != nil {
				gwk := gw[k*ne : (k+1)*ne]
				rowsParallel(n, func(lo, hi int, tmp []float64) {
					for r := lo; r < hi; r++ {
						xs := m.wRowX[r]
						f64.DotGather(tmp, d.v[r*tt:(r+1)*tt], d.u, tt, m.wRowCol[r])
						for a, e := range xs {
							gwk[e] += tmp[a]
						}
					}
				})
			}
			if gp == nil {
				continue
			}
			// Ū = Wᵀ V̄, into U's block; then P̄ += X Ūᵀ on the candidates.
			rowsParallel(n, func(lo, hi int, coef []float64) { sparseTimes(d.u, d.v, m.wColRow, m.wColX, w, tt, lo, hi, coef) })
			rowsParallel(n, func(lo, hi int, tmp []float64) {
				for i := lo; i < hi; i++ {
					a, b := ix.rowPtr[i], ix.rowPtr[i+1]
					f64.DotGather(tmp, x[i*tt:(i+1)*tt], d.u, tt, ix.cols[a:b])
					for e := a; e < b; e++ {
						gp[e] += tmp[e-a]
					}
				}
			})
		}
	})
}

// transposeTimes sets rows [lo, hi) of dst = Pᵀ src for the P with entries
// p on the pattern: dst[c] = Σ_{(i, c) allowed} P[i][c]·src[i], rows of
// length tt.
func (ix *patternIndex) transposeTimes(dst, src, p []float64, tt, lo, hi int, coef []float64) {
	for c := lo; c < hi; c++ {
		es := ix.colEntry[ix.colPtr[c]:ix.colPtr[c+1]]
		k := coef[:len(es)]
		for a, e := range es {
			k[a] = p[e]
		}
		dc := dst[c*tt : (c+1)*tt]
		clear(dc)
		f64.AxpyGather(dc, k, src, tt, ix.colRows[ix.colPtr[c]:ix.colPtr[c+1]])
	}
}

// sparseTimes sets rows [lo, hi) of dst = M src for the sparse M whose row
// r holds w[xs[r][a]] in column cols[r][a] (W or Wᵀ by the grouping), rows
// of length tt.
func sparseTimes(dst, src []float64, cols, xs [][]int, w []float64, tt, lo, hi int, coef []float64) {
	for r := lo; r < hi; r++ {
		k := coef[:len(xs[r])]
		for a, e := range xs[r] {
			k[a] = w[e]
		}
		dr := dst[r*tt : (r+1)*tt]
		clear(dr)
		f64.AxpyGather(dr, k, src, tt, cols[r])
	}
}

// rowsParallel runs f over [0, n) in contiguous chunks on up to GOMAXPROCS
// goroutines, each with a scratch slice of length n. Each row's output is
// written by one chunk, so results do not depend on the chunking.
func rowsParallel(n int, f func(lo, hi int, scratch []float64)) {
	workers := min(runtime.GOMAXPROCS(0), max(n/64, 1))
	if workers <= 1 {
		f(0, n, make([]float64, n))
		return
	}
	// More chunks than workers, so that uneven rows balance.
	chunks := 4 * workers
	size := (n + chunks - 1) / chunks
	var wg sync.WaitGroup
	next := make(chan int, chunks)
	for c := 0; c*size < n; c++ {
		next <- c
	}
	close(next)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			scratch := make([]float64, n)
			for c := range next {
				f(c*size, min((c+1)*size, n), scratch)
			}
		}()
	}
	wg.Wait()
}
