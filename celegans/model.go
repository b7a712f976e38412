package celegans

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/internal/f64"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/relax"
)

// Problem is what an inference method sees: the connectome (which fixes the
// support of W), each worm's sufficient statistics in observed order, its
// candidate mask and its known neurons. Truth, when set, is used only to
// score results.
type Problem struct {
	Connectome *Connectome
	Stats      []*Stats
	Masks      []*perm.Mask
	Known      [][]int // observed indices with given identity, per worm
	NoiseVar   float64
	Truth      []perm.Perm

	support [][2]int // directed (row, col) pairs of W's support, canonical
}

// NewProblem checks the parts for consistency and returns a Problem. Masks
// are cloned and tightened: a known neuron's identity is removed from every
// other row, which changes no feasible permutation.
func NewProblem(c *Connectome, stats []*Stats, masks []*perm.Mask, known [][]int, noiseVar float64, truth []perm.Perm) (*Problem, error) {
	if c == nil {
		return nil, fmt.Errorf("celegans: NewProblem: nil connectome")
	}
	n := c.N()
	if len(stats) == 0 {
		return nil, fmt.Errorf("celegans: NewProblem: no worms")
	}
	if len(masks) != len(stats) || len(known) != len(stats) {
		return nil, fmt.Errorf("celegans: NewProblem: %d worms but %d masks and %d known lists", len(stats), len(masks), len(known))
	}
	if truth != nil && len(truth) != len(stats) {
		return nil, fmt.Errorf("celegans: NewProblem: %d worms but %d true permutations", len(stats), len(truth))
	}
	if !(noiseVar > 0) || math.IsInf(noiseVar, 0) {
		return nil, fmt.Errorf("celegans: NewProblem: noise variance must be finite and > 0, got %v", noiseVar)
	}
	p := &Problem{Connectome: c, NoiseVar: noiseVar, Stats: stats, Known: known, Truth: truth}
	for j, s := range stats {
		if s == nil || s.N != n {
			return nil, fmt.Errorf("celegans: NewProblem: worm %d has statistics for %v neurons, connectome has %d", j, statsN(s), n)
		}
		if s.DataForm() != stats[0].DataForm() {
			return nil, fmt.Errorf("celegans: NewProblem: worm %d's statistics are in another form than worm 0's (the data form of NewDataStats and the moments of NewStats do not mix)", j)
		}
		m := masks[j]
		if m == nil || m.Size() != n {
			return nil, fmt.Errorf("celegans: NewProblem: worm %d: mask is nil or not %d×%d", j, n, n)
		}
		m = m.Clone()
		for _, k := range known[j] {
			if k < 0 || k >= n {
				return nil, fmt.Errorf("celegans: NewProblem: worm %d: known neuron %d out of range", j, k)
			}
			row := m.Row(k)
			if len(row) != 1 {
				return nil, fmt.Errorf("celegans: NewProblem: worm %d: known neuron %d has %d candidates, want exactly 1", j, k, len(row))
			}
			for i := 0; i < n; i++ {
				if i != k {
					_ = m.Set(i, row[0], false)
				}
			}
		}
		if err := ValidateMask(m); err != nil {
			return nil, fmt.Errorf("celegans: NewProblem: worm %d: %w", j, err)
		}
		if truth != nil {
			if len(truth[j]) != n || truth[j].Validate() != nil {
				return nil, fmt.Errorf("celegans: NewProblem: worm %d: invalid true permutation", j)
			}
			if !m.Admits(truth[j]) {
				return nil, fmt.Errorf("celegans: NewProblem: worm %d: the candidate mask excludes the true identity", j)
			}
		}
		p.Masks = append(p.Masks, m)
	}
	for _, e := range c.EdgeList() {
		p.support = append(p.support, e, [2]int{e[1], e[0]})
	}
	return p, nil
}

func statsN(s *Stats) any {
	if s == nil {
		return "nil"
	}
	return s.N
}

// FromSimulation builds the Problem of a simulation with the given masks,
// its statistics the N × N moments (NewStats).
func FromSimulation(sim *Simulation, masks []*perm.Mask) (*Problem, error) {
	return fromSimulation("FromSimulation", sim, masks, func(w *Worm) (*Stats, error) { return w.Stats() })
}

// FromSimulationData is FromSimulation with the statistics in the data
// form (NewDataStats): the recordings themselves, nothing N × N, for
// simulations of thousands of neurons (see the package doc's Scale).
func FromSimulationData(sim *Simulation, masks []*perm.Mask) (*Problem, error) {
	return fromSimulation("FromSimulationData", sim, masks, func(w *Worm) (*Stats, error) { return NewDataStats(w.Y) })
}

func fromSimulation(fn string, sim *Simulation, masks []*perm.Mask, stats func(*Worm) (*Stats, error)) (*Problem, error) {
	if sim == nil {
		return nil, fmt.Errorf("celegans: %s: nil simulation", fn)
	}
	st := make([]*Stats, len(sim.Worms))
	known := make([][]int, len(sim.Worms))
	truth := make([]perm.Perm, len(sim.Worms))
	for j, w := range sim.Worms {
		s, err := stats(w)
		if err != nil {
			return nil, err
		}
		st[j], known[j], truth[j] = s, w.Known, w.Perm
	}
	return NewProblem(sim.Connectome, st, masks, known, sim.NoiseVar, truth)
}

// N returns the number of neurons; Worms the number of worms.
func (p *Problem) N() int     { return p.Connectome.N() }
func (p *Problem) Worms() int { return len(p.Stats) }

// Support returns the directed (row, column) pairs of W's non-zero entries
// in canonical order: both directions of every connectome edge.
func (p *Problem) Support() [][2]int { return p.support }

// DenseW scatters a vector of support values into an N×N matrix.
func (p *Problem) DenseW(w []float64) *mat.Dense {
	n := p.N()
	out := mat.NewDense(n, n, nil)
	for e, rc := range p.support {
		out.Set(rc[0], rc[1], w[e])
	}
	return out
}

// LogLikGap returns log p(Y | est) − log p(Y | Truth), with W integrated out
// against its prior N(0, sigmaW²) on the connectome's support
// (Collapsed.CollapsedLogLik). Under a uniform prior over the permutations
// the masks admit it is the log posterior odds of the estimate against the
// true identities. A positive gap means the data favour the estimate: the
// truth is not the posterior mode, and no inference method can be expected
// to recover it from these recordings. A negative gap means the truth
// explains the data better than the estimate: a better search, or a mode
// instead of the matching of a posterior mean, could come closer to it.
func (p *Problem) LogLikGap(est []perm.Perm, sigmaW float64) (float64, error) {
	if p.Truth == nil {
		return 0, fmt.Errorf("celegans: LogLikGap: problem has no ground truth")
	}
	if len(est) != len(p.Truth) {
		return 0, fmt.Errorf("celegans: LogLikGap: %d permutations for %d worms", len(est), len(p.Truth))
	}
	if !(sigmaW > 0) {
		return 0, fmt.Errorf("celegans: LogLikGap: sigmaW = %v, must be > 0", sigmaW)
	}
	for j, q := range est {
		if q.Validate() != nil || len(q) != p.N() || !p.Masks[j].Admits(q) {
			return 0, fmt.Errorf("celegans: LogLikGap: worm %d: not a permutation of size %d its mask admits", j, p.N())
		}
	}
	m := NewModel(p)
	m.SigmaW = sigmaW
	c := Collapsed{m}
	le, err := c.CollapsedLogLik(&models.State{Perms: map[string][]perm.Perm{SiteP: est}})
	if err != nil {
		return 0, fmt.Errorf("celegans: LogLikGap: estimate: %w", err)
	}
	lt, err := c.CollapsedLogLik(&models.State{Perms: map[string][]perm.Perm{SiteP: p.Truth}})
	if err != nil {
		return 0, fmt.Errorf("celegans: LogLikGap: truth: %w", err)
	}
	return le - lt, nil
}

// Accuracy scores permutations against the truth: the fraction of all
// neurons identified correctly, and of the neurons that were not known.
func (p *Problem) Accuracy(perms []perm.Perm) (all, unknown float64, err error) {
	if p.Truth == nil {
		return 0, 0, fmt.Errorf("celegans: Accuracy: problem has no ground truth")
	}
	if len(perms) != len(p.Truth) {
		return 0, 0, fmt.Errorf("celegans: Accuracy: %d permutations for %d worms", len(perms), len(p.Truth))
	}
	var right, total, uRight, uTotal int
	for j, q := range perms {
		if len(q) != len(p.Truth[j]) {
			return 0, 0, fmt.Errorf("celegans: Accuracy: worm %d: permutation of size %d, want %d", j, len(q), len(p.Truth[j]))
		}
		known := make(map[int]bool, len(p.Known[j]))
		for _, k := range p.Known[j] {
			known[k] = true
		}
		for m, c := range q {
			ok := c == p.Truth[j][m]
			total++
			if ok {
				right++
			}
			if !known[m] {
				uTotal++
				if ok {
					uRight++
				}
			}
		}
	}
	all = float64(right) / float64(total)
	if uTotal > 0 {
		unknown = float64(uRight) / float64(uTotal)
	}
	return all, unknown, nil
}

// Model is the likelihood of the C. elegans problem for variational
// inference: for worm j with relaxed permutation P_j (observed × canonical)
// and shared weights W on the connectome's support,
//
//	log p(Y_j | P_j, W) = −(1/2η²) [tr Syy − 2 tr(A Syxᵀ) + tr(A Sxx Aᵀ)] − (T−1)(N/2) log 2πη²
//
// with A = P_j W P_jᵀ. Its cost does not depend on T: per worm and sample,
// one dense N×N×N product (A·Sxx, against Sxx packed once), products with
// P_j that cost O(nnz(P_j)·N) (below), and products with the sparse W that
// cost O(|support|·N); the backward pass costs about as much again.
//
// It implements models.Model with the sites "P" (shape (K, worms, N, N))
// and "W" (shape (K, |support|)), and the fast paths StateLogLiker,
// SwapDeltaer and Conjugate (see Sites; Collapsed adds the Collapser).
// Entries of P off worm j's candidate mask are ignored (taken as zero, as
// they are in every Gumbel-Sinkhorn sample), so the products with P cost
// O(nnz·N).
type Model struct {
	P *Problem

	// SigmaW is the prior standard deviation σ_W of each non-zero entry of
	// W; NewModel sets DefaultSettings().SigmaW.
	SigmaW float64

	sxx  []*f64.Packed // full (both triangles) Sxx per worm, packed for f64.Gemm
	trYY []float64     // tr Syy per worm
	cols [][][]int     // allowed columns of each row, per worm: P's sparsity
	rows [][][]int     // allowed rows of each column, per worm

	// W's support grouped by row and by column: for row r the columns
	// wRowCol[r] at support indices wRowX[r]; for column c the rows
	// wColRow[c] at support indices wColX[c].
	wRowCol, wRowX, wColRow, wColX [][]int

	cacheMu sync.Mutex
	cache   map[*models.State]*fastState // the fast paths' dense W per state
	// dataCache holds the data form's residuals per state (model_data_mcmc.go).
	dataCache map[*models.State]*dataFast

	gemm []bool // per worm: the products with P are dense (gemmDensity)
	// For the dense products, per worm: P's rows in the order the products
	// take them (rowOrder[r] is the observed neuron in place r, rowPlace
	// its inverse), and where the rows in that order may be nonzero; nil
	// for a worm whose products are sums of rows.
	rowOrder, rowPlace [][]int
	pBlocks            []*f64.Blocks
	data               bool       // the statistics are in the data form (see logLikData)
	dataMu             sync.Mutex // guards dataIdx
	dataIdx            map[*relax.SparsePattern]*patternIndex
	dots               []*pairDots // per worm, the data form's dot products of recorded rows
}

// NewModel returns the model of p.
func NewModel(p *Problem) *Model {
	m := &Model{P: p, SigmaW: DefaultSettings().SigmaW, data: p.Stats[0].DataForm()}
	n := p.N()
	if m.data {
		m.dots = make([]*pairDots, len(p.Stats))
		for j := range m.dots {
			m.dots[j] = new(pairDots)
		}
	}
	for _, s := range p.Stats {
		if m.data {
			break
		}
		full := mat.NewDense(n, n, nil)
		full.Copy(s.Sxx)
		m.sxx = append(m.sxx, f64.Pack(full.RawMatrix().Data, n, n))
		tr := 0.0
		for i := 0; i < n; i++ {
			tr += s.Syy.At(i, i)
		}
		m.trYY = append(m.trYY, tr)
	}
	for _, mk := range p.Masks {
		m.gemm = append(m.gemm, float64(mk.Count()) > gemmDensity*float64(n)*float64(n))
		cols := make([][]int, n)
		rows := make([][]int, n)
		for i := range cols {
			cols[i] = mk.Row(i)
			for _, c := range cols[i] {
				rows[c] = append(rows[c], i)
			}
		}
		m.cols = append(m.cols, cols)
		m.rows = append(m.rows, rows)
		var order, place []int
		var blocks *f64.Blocks
		if m.gemm[len(m.gemm)-1] {
			order, place, blocks = rowBlocks(n, cols)
		}
		m.rowOrder, m.rowPlace, m.pBlocks = append(m.rowOrder, order), append(m.rowPlace, place), append(m.pBlocks, blocks)
	}
	m.wRowCol, m.wRowX = make([][]int, n), make([][]int, n)
	m.wColRow, m.wColX = make([][]int, n), make([][]int, n)
	for x, rc := range p.support {
		r, c := rc[0], rc[1]
		m.wRowCol[r], m.wRowX[r] = append(m.wRowCol[r], c), append(m.wRowX[r], x)
		m.wColRow[c], m.wColX[c] = append(m.wColRow[c], r), append(m.wColX[c], x)
	}
	return m
}

// The relaxed P_j is zero off its candidate mask (forbidden logits are −∞),
// so the products with P run over the allowed entries only: P·B, Pᵀ·Ā and
// the entries of Ā·Bᵀ cost O(nnz(P)·N) instead of O(N³). The products with
// the sparse W cost O(|support|·N). Each is a sum of scaled rows
// (f64.AxpyGather) or a set of dot products with selected rows
// (f64.DotGather).

// rowSums sets dst[i,:] = Σ_t k_t·src[idx[i][t],:] for every row i of the
// n×n dst, with the coefficients k (scratch of length ≥ n) filled by
// coef(i, k) for row i.
func rowSums(dst, src []float64, n int, idx [][]int, scratch []float64, coef func(i int, k []float64)) {
	for i, cs := range idx {
		di := dst[i*n : (i+1)*n]
		clear(di)
		k := scratch[:len(cs)]
		coef(i, k)
		f64.AxpyGather(di, k, src, n, cs)
	}
}

// matRowSums is rowSums with coefficients vals[i·n + idx[i][t]]: the
// product M·src for the n×n M that is zero off idx and equals vals on it.
func matRowSums(dst, src []float64, n int, idx [][]int, vals, scratch []float64) {
	rowSums(dst, src, n, idx, scratch, func(i int, k []float64) {
		row := vals[i*n : (i+1)*n]
		for t, c := range idx[i] {
			k[t] = row[c]
		}
	})
}

// weightRowSums is rowSums with coefficients w[xs[i][t]]: the product of
// the sparse W (or Wᵀ, by the grouping of idx and xs) with src.
func weightRowSums(dst, src []float64, n int, idx, xs [][]int, w, scratch []float64) {
	rowSums(dst, src, n, idx, scratch, func(i int, k []float64) {
		for t, x := range xs[i] {
			k[t] = w[x]
		}
	})
}

// rowBlocks orders the rows of an n×n P with allowed columns cols by
// their first and last allowed column, and describes where P's rows in
// that order may be nonzero. Canonical neurons are sorted by position, so
// a position mask allows an interval of columns in each row, and rows
// with nearby intervals become neighbours: the blocks of rows that the
// dense products take together then span about one interval each, and
// f64.GemmSkip and f64.GemmOn skip the rest (about two thirds of the work
// on the hard masks). The order changes which rows are computed together,
// not any sum, so every entry keeps its bits.
func rowBlocks(n int, cols [][]int) (order, place []int, blocks *f64.Blocks) {
	order = make([]int, n)
	for i := range order {
		order[i] = i
	}
	span := func(i int) (int, int) {
		if cs := cols[i]; len(cs) > 0 {
			return cs[0], cs[len(cs)-1]
		}
		return n, n
	}
	sort.SliceStable(order, func(a, b int) bool {
		a0, a1 := span(order[a])
		b0, b1 := span(order[b])
		return a0 < b0 || (a0 == b0 && a1 < b1)
	})
	place = make([]int, n)
	sorted := make([][]int, n)
	for r, i := range order {
		place[i] = r
		sorted[r] = cols[i]
	}
	blocks, err := f64.NewBlocks(n, n, sorted)
	if err != nil {
		panic("celegans: mask rows are not increasing: " + err.Error()) // perm.Mask.Row returns increasing columns
	}
	return order, place, blocks
}

// gemmDensity is the share of allowed entries of a worm's mask above which
// the products with its P run as blocked matrix products on the masked P
// rather than as sums of the allowed entries' rows: a blocked product does
// N³ multiply-adds at about six times the rate of the row sums' nnz·N
// (measured on the hard setting of benchmarks/celegans, 35% of the entries
// allowed), so it wins above about a sixth. Since 2026-11-29 two of the
// three blocked products skip the blocks the mask leaves empty (rowBlocks),
// so the blocked path would win at lower densities too; the threshold is
// kept, because moving it changes which sums some masks take and with
// them the last bits of the committed results.
const gemmDensity = 1.0 / 6

// pairState holds the buffers of one (sample, worm) term of the likelihood.
type pairState struct {
	pt, bm, as, a []float64 // Pᵀ, W Pᵀ, A·Sxx, A
	pm            []float64 // P on its mask, zero elsewhere (dense products only)
	pk            *f64.Packed
	coef          []float64 // scratch, N
	gw            []float64 // this term's W̄, |support|
}

func (m *Model) logLikOp(t *ad.Tape, pv, wv *ad.Var, kk int) *ad.Var {
	n, b, e := m.P.N(), m.P.Worms(), len(m.P.support)
	nn := n * n
	eta2 := m.P.NoiseVar
	out := t.Alloc(kk)
	// The tape is not safe for concurrent use: take every buffer from it
	// before the terms are computed in parallel.
	states := make([]pairState, kk*b)
	for q := range states {
		// Every buffer is written in full before it is read.
		states[q] = pairState{pt: t.AllocRaw(nn), bm: t.AllocRaw(nn), as: t.AllocRaw(nn), a: t.AllocRaw(nn), coef: t.AllocRaw(n), gw: t.AllocRaw(e)}
		if m.gemm[q%b] {
			states[q].pm = t.AllocRaw(nn)
			states[q].pk, _ = packedPool.Get().(*f64.Packed) // nil when empty: PackTo allocates
		}
	}
	terms := make([]float64, kk*b)
	pval, wval := pv.Value(), wv.Value()
	parallel(kk*b, func(q int) {
		k, j := q/b, q%b
		st := &states[q]
		a := st.a
		p := pval[q*nn : (q+1)*nn]
		w := wval[k*e : (k+1)*e]
		s := m.P.Stats[j]
		// Pᵀ from the allowed entries only, so that the op is a function of
		// P restricted to its mask (entries off the mask are ignored).
		clear(st.pt)
		for i, cs := range m.cols[j] {
			for _, c := range cs {
				st.pt[c*n+i] = p[i*n+c]
			}
		}
		// B = W Pᵀ, then A = P B.
		weightRowSums(st.bm, st.pt, n, m.wRowCol, m.wRowX, w, st.coef)
		// With the dense products, P's rows and so those of A and A·Sxx
		// are in the order rowOrder[j] (see rowBlocks): row r of each is
		// observed neuron rowOrder[j][r].
		place := m.rowPlace[j]
		if st.pm != nil {
			clear(st.pm)
			for i, cs := range m.cols[j] {
				r := place[i]
				for _, c := range cs {
					st.pm[r*n+c] = p[i*n+c]
				}
			}
			st.pk = f64.PackTo(st.pk, st.bm, n, n)
			f64.GemmSkip(st.pm, m.pBlocks[j], st.pk, a)
		} else {
			place = nil
			matRowSums(a, st.bm, n, m.cols[j], p, st.coef)
		}
		f64.Gemm(n, a, m.sxx[j], st.as)
		syx := s.Syx.RawMatrix().Data
		var cross, quad float64
		for i := range n {
			r := i
			if place != nil {
				r = place[i]
			}
			ar, sr, qr := a[r*n:(r+1)*n], syx[i*n:(i+1)*n], st.as[r*n:(r+1)*n]
			for c, v := range ar {
				cross += v * sr[c]
				quad += v * qr[c]
			}
		}
		terms[q] = -0.5/eta2*(m.trYY[j]-2*cross+quad) - 0.5*float64(s.Count*n)*math.Log(2*math.Pi*eta2)
	})
	for q, v := range terms {
		out[q/b] += v
	}
	return t.Custom([]int{kk}, out, []*ad.Var{pv, wv}, func(g []float64, gIn [][]float64) {
		gp, gw := gIn[0], gIn[1]
		parallel(kk*b, func(q int) {
			k, j := q/b, q%b
			st := &states[q]
			s := m.P.Stats[j]
			syx := s.Syx.RawMatrix().Data
			c := g[k] / eta2
			// Ā = (g/η²)(Syx − A·Sxx), reusing the A·Sxx buffer; with the
			// dense products its rows are in the order rowOrder[j].
			ga := st.as
			order := m.rowOrder[j]
			for r := range n {
				i := r
				if st.pm != nil {
					i = order[r]
				}
				gr, sr := ga[r*n:(r+1)*n], syx[i*n:(i+1)*n]
				for x := range gr {
					gr[x] = c * (sr[x] - gr[x])
				}
			}
			tmp := st.coef
			if gp != nil {
				// P̄ += Ā Bᵀ (from A = P B), on P's support.
				dst := gp[q*nn : (q+1)*nn]
				if st.pm != nil {
					// Into A's buffer, which is no longer needed.
					st.pk = f64.PackTransTo(st.pk, st.bm, n, n)
					f64.GemmOn(ga, st.pk, st.a, m.pBlocks[j])
					for i, cs := range m.cols[j] {
						r := m.rowPlace[j][i]
						for _, c := range cs {
							dst[i*n+c] += st.a[r*n+c]
						}
					}
				} else {
					for i, cs := range m.cols[j] {
						f64.DotGather(tmp, ga[i*n:(i+1)*n], st.bm, n, cs)
						for t, c := range cs {
							dst[i*n+c] += tmp[t]
						}
					}
				}
			}
			// B̄ = Pᵀ Ā, stored in bm (B is no longer needed); the
			// entries of Pᵀ are those of pt, zero off the mask.
			gb := st.bm
			if st.pm != nil {
				// Ā's rows back in the observed order, into A's buffer, so
				// that the sum over observed neurons runs in that order.
				for r, i := range order {
					copy(st.a[i*n:(i+1)*n], ga[r*n:(r+1)*n])
				}
				st.pk = f64.PackTo(st.pk, st.a, n, n)
				f64.Gemm(n, st.pt, st.pk, gb)
			} else {
				matRowSums(gb, ga, n, m.rows[j], st.pt, st.coef)
			}
			w := wval[k*e : (k+1)*e]
			if gw != nil {
				// W̄[r][c] = B̄[r] · (Pᵀ)[c].
				for r, cs := range m.wRowCol {
					f64.DotGather(tmp, gb[r*n:(r+1)*n], st.pt, n, cs)
					for t, x := range m.wRowX[r] {
						st.gw[x] = tmp[t]
					}
				}
			}
			if gp != nil {
				// (Pᵀ)̄[c] = Σ_r W[r][c] B̄[r], then P̄ += its transpose.
				gpt := st.pt
				weightRowSums(gpt, gb, n, m.wColRow, m.wColX, w, st.coef)
				dst := gp[q*nn : (q+1)*nn]
				for r, cs := range m.cols[j] {
					for _, cc := range cs {
						dst[r*n+cc] += gpt[cc*n+r]
					}
				}
			}
		})
		if gw != nil {
			// Summed in a fixed order after the parallel section, so the
			// result does not depend on scheduling.
			for q := range states {
				k := q / b
				floats.Add(gw[k*e:(k+1)*e], states[q].gw)
			}
		}
		for q := range states {
			if states[q].pk != nil {
				packedPool.Put(states[q].pk)
			}
		}
	})
}

// packedPool keeps the packed N × N factors of the dense products with P
// from one evaluation to the next (an evaluation that is never
// differentiated leaves its own to the collector).
var packedPool sync.Pool

// parallel runs f(0..n-1) on up to GOMAXPROCS goroutines. Each index writes
// only its own outputs, so results do not depend on scheduling.
func parallel(n int, f func(int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := 0; i < n; i++ {
			f(i)
		}
		return
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}
