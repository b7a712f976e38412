package celegans

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/internal/f64"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/perm"
)

// This file holds the exact-state paths of the data form (NewDataStats):
// what MCMC, the polish and the collapsed likelihood need, without the
// N × N moments.
//
// Swap deltas. A state's worm keeps its residual R = Y − A X (N × T',
// observed order, A = P W Pᵀ) for the permutation p it was last brought to.
// Exchanging the identities a = p[i] and b = p[k] of observed rows i and k
// changes A in rows i and k, which are recomputed (O(deg·T')), and in
// columns i and k, which moves every other row r whose identity s = p[r]
// has an edge into a or b by
//
//	ΔZ[r] = (W[s][b] − W[s][a])·(X[i] − X[k]),
//
// so a delta costs O((deg(a) + deg(b) + indeg(a) + indeg(b))·T'),
// independent of N. Bringing the cache to the caller's p costs one O(N)
// comparison, then O(deg·T') per exchanged pair (a full rebuild,
// O(|support|·T'), after larger changes).
//
// Conditionals of W. The rows of the canonical W are Gaussian regressions
// whose statistics are entries of the pooled canonical moments (Sxx over a
// row's support, Syx at the row); dataMoments reads each entry it is asked
// for from the recordings, so a draw of W costs O(Σ_r deg_r²·worms) entries
// and nothing N × N is formed. An entry is a sum over worms of dot products
// of two recorded rows, O(T') each; the recordings never change, so the
// dot products are cached by their pair of recorded rows (pairDots), and a
// chain whose permutations move little reads most entries of later draws
// from the cache, bit for bit what it would compute.

// dataMoments presents the pooled canonical moments of the data form,
//
//	Sxx[a][c] = Σ_j X_j[q_j(a)]·X_j[q_j(c)],   Syx[a][c] = Σ_j Y_j[q_j(a)]·X_j[q_j(c)],
//
// with q_j the inverse of worm j's permutation, as a mat.Symmetric (xx) or
// a mat.Matrix, computing each entry when it is read.
type dataMoments struct {
	m   *Model
	inv [][]int
	yx  bool
}

func (d *dataMoments) Dims() (int, int)  { n := d.m.P.N(); return n, n }
func (d *dataMoments) SymmetricDim() int { return d.m.P.N() }
func (d *dataMoments) T() mat.Matrix {
	if d.yx {
		return mat.Transpose{Matrix: d}
	}
	return d
}

func (d *dataMoments) At(a, c int) float64 {
	n := d.m.P.N()
	if a < 0 || a >= n || c < 0 || c >= n {
		panic(mat.ErrIndexOutOfRange)
	}
	total := 0.0
	for j, s := range d.m.P.Stats {
		total += d.m.dots[j].dot(s, d.yx, d.inv[j][a], d.inv[j][c])
	}
	return total
}

// pairDots caches the dot products of pairs of one worm's recorded rows,
// X[i]·X[k] (symmetric, kept once) and Y[i]·X[k], for dataMoments. It is
// safe for concurrent use by the chains; once it holds maxPairDots
// products it computes the rest without keeping them, so its memory stays
// bounded (about 40 bytes a product) whatever N.
type pairDots struct {
	shards [pairShards]struct {
		mu sync.RWMutex
		m  map[uint64]float64
	}
	size  atomic.Int64
	limit int64 // the most products kept; 0 is maxPairDots
}

const (
	// pairShards is the number of independently locked parts of a
	// pairDots, so that concurrent chains rarely wait for each other.
	pairShards = 64
	// maxPairDots bounds the products a pairDots keeps: 4M, about
	// 160 MiB, a few draws' worth at 20,000 neurons with 25 neighbours.
	maxPairDots = 1 << 22
)

// dot returns X[i]·X[k] (yx false) or Y[i]·X[k] (yx true) of the
// recording s, from the cache when it is there.
func (p *pairDots) dot(s *Stats, yx bool, i, k int) float64 {
	if !yx && i > k {
		i, k = k, i // X[i]·X[k] = X[k]·X[i] bit for bit: the same products summed in the same order
	}
	key := uint64(i)<<32 | uint64(k)
	if yx {
		key |= 1 << 63
	}
	sh := &p.shards[(key*0x9E3779B97F4A7C15)>>58]
	sh.mu.RLock()
	v, ok := sh.m[key]
	sh.mu.RUnlock()
	if ok {
		return v
	}
	tt := s.Count
	x := s.Prev.RawMatrix().Data
	src := x
	if yx {
		src = s.Next.RawMatrix().Data
	}
	v = f64.Dot(src[i*tt:(i+1)*tt], x[k*tt:(k+1)*tt])
	limit := p.limit
	if limit == 0 {
		limit = maxPairDots
	}
	if p.size.Load() < limit {
		sh.mu.Lock()
		if sh.m == nil {
			sh.m = make(map[uint64]float64)
		}
		if _, had := sh.m[key]; !had {
			sh.m[key] = v
			p.size.Add(1)
		}
		sh.mu.Unlock()
	}
	return v
}

// dataStats returns the pooled canonical moments of the data form for the
// permutations ps, computed entry by entry.
func (m *Model) dataStats(ps []perm.Perm) (sxx mat.Symmetric, syx mat.Matrix) {
	inv := make([][]int, len(ps))
	for j, p := range ps {
		inv[j] = make([]int, len(p))
		for i, a := range p {
			inv[j][a] = i
		}
	}
	return &dataMoments{m: m, inv: inv}, &dataMoments{m: m, inv: inv, yx: true}
}

// pooled returns the pooled canonical moments for the permutations ps: the
// dense ones of the moments' form (with release, which returns their
// scratch), or the data form's lazy ones.
func (m *Model) pooled(ps []perm.Perm) (sxx mat.Symmetric, syx mat.Matrix, release func()) {
	if m.data {
		sxx, syx := m.dataStats(ps)
		return sxx, syx, func() {}
	}
	sc := getCondScratch(m.P.N())
	m.P.pooledCanonical(ps, sc.sxx, sc.syx)
	return sc.sxx, sc.syx, func() { condScratchPool.Put(sc) }
}

// dataWorm is the residual of one worm at one state: R = Y − A X for the
// permutation p (and its inverse q) and the W it was built with.
type dataWorm struct {
	m    *Model
	j    int
	w    []float64 // W's support values (shared by the state's worms)
	p, q []int
	r    []float64 // N × T', observed order
	// scratch
	d, z  []float64 // T'
	coef  []float64 // N, zero between calls
	mark  []bool    // N, false between calls
	touch []int
	built bool
}

// dataFast is the cached form of one models.State in the data form.
type dataFast struct {
	w     []float64
	worms []*dataWorm
}

// maxDataCached bounds the states whose residuals are cached (each holds
// worms·N·T' values).
const maxDataCached = 8

// dataState returns the cache of s, with W brought to s's W (the residuals
// are rebuilt lazily when it changed).
func (m *Model) dataState(s *models.State) (*dataFast, error) {
	ps, w := s.Perms[SiteP], s.Reals[SiteW]
	if len(ps) != m.P.Worms() || len(w) != len(m.P.support) {
		return nil, fmt.Errorf("celegans: Model: state has %d permutations and %d W entries, want %d and %d", len(ps), len(w), m.P.Worms(), len(m.P.support))
	}
	m.cacheMu.Lock()
	defer m.cacheMu.Unlock()
	df := m.dataCache[s]
	if df == nil {
		if len(m.dataCache) >= maxDataCached || m.dataCache == nil {
			m.dataCache = make(map[*models.State]*dataFast)
		}
		df = &dataFast{}
		for j, st := range m.P.Stats {
			n, tt := m.P.N(), st.Count
			df.worms = append(df.worms, &dataWorm{m: m, j: j, p: make([]int, n), q: make([]int, n),
				r: make([]float64, n*tt), d: make([]float64, tt), z: make([]float64, tt), coef: make([]float64, n), mark: make([]bool, n)})
		}
		m.dataCache[s] = df
	}
	if !slices.Equal(df.w, w) {
		df.w = append(df.w[:0], w...)
		for _, dw := range df.worms {
			dw.w, dw.built = df.w, false
		}
	}
	return df, nil
}

// rebuild computes R for the permutation p from scratch.
func (dw *dataWorm) rebuild(p perm.Perm) {
	copy(dw.p, p)
	for i, a := range p {
		dw.q[a] = i
	}
	for i := range dw.p {
		dw.row(i, dw.p[i], dw.q, dw.r[i*len(dw.d):(i+1)*len(dw.d)])
	}
	dw.built = true
}

// row sets dst = Y[i] − Σ_c W[a][c] X[q[c]], observed row i's residual when
// its identity is a and the identities' rows are q.
func (dw *dataWorm) row(i, a int, q []int, dst []float64) {
	st := dw.m.P.Stats[dw.j]
	tt := st.Count
	y, x := st.Next.RawMatrix().Data, st.Prev.RawMatrix().Data
	copy(dst, y[i*tt:(i+1)*tt])
	for e, c := range dw.m.wRowCol[a] {
		wv := dw.w[dw.m.wRowX[a][e]]
		if wv == 0 {
			continue
		}
		f64.Axpy(-wv, x[q[c]*tt:(q[c]+1)*tt], dst)
	}
}

// sync brings the residual to p: nothing when p is the cached permutation,
// one update per exchanged pair after a few exchanges, a rebuild otherwise.
func (dw *dataWorm) sync(p perm.Perm) {
	if !dw.built {
		dw.rebuild(p)
		return
	}
	if slices.Equal(dw.p, p) {
		return
	}
	var diff []int
	for i := range p {
		if p[i] != dw.p[i] {
			diff = append(diff, i)
			if len(diff) > 16 {
				dw.rebuild(p)
				return
			}
		}
	}
	// Transpositions that put each differing row's identity in place.
	for _, i := range diff {
		if dw.p[i] != p[i] {
			dw.exchange(i, dw.q[p[i]])
		}
	}
}

// exchange applies the exchange of the identities of observed rows i and k
// to the cached permutation and residual.
func (dw *dataWorm) exchange(i, k int) {
	tt := len(dw.d)
	a, b := dw.p[i], dw.p[k]
	dw.diff(i, k)
	dw.inEdges(a, b)
	for _, s := range dw.touch {
		row := dw.q[s]
		if c := dw.coef[s]; c != 0 && row != i && row != k {
			f64.Axpy(-c, dw.d, dw.r[row*tt:(row+1)*tt])
		}
		dw.coef[s], dw.mark[s] = 0, false
	}
	dw.p[i], dw.p[k] = b, a
	dw.q[a], dw.q[b] = k, i
	dw.row(i, b, dw.q, dw.r[i*tt:(i+1)*tt])
	dw.row(k, a, dw.q, dw.r[k*tt:(k+1)*tt])
}

// diff sets d = X[i] − X[k], the change of the rows' inputs to the others
// when observed rows i and k exchange their identities.
func (dw *dataWorm) diff(i, k int) {
	tt := len(dw.d)
	x := dw.m.P.Stats[dw.j].Prev.RawMatrix().Data
	xi, xk := x[i*tt:(i+1)*tt], x[k*tt:(k+1)*tt]
	for t := range dw.d {
		dw.d[t] = xi[t] - xk[t]
	}
}

// inEdges sets coef[s] = W[s][b] − W[s][a] for every identity s with an
// edge into a or b, listing them in touch; the caller clears coef and mark
// for them (see clearTouched).
func (dw *dataWorm) inEdges(a, b int) {
	dw.touch = dw.touch[:0]
	m := dw.m
	for _, side := range [2]struct {
		id   int
		sign float64
	}{{b, 1}, {a, -1}} {
		for e, s := range m.wColRow[side.id] {
			if !dw.mark[s] {
				dw.mark[s] = true
				dw.touch = append(dw.touch, s)
			}
			dw.coef[s] += side.sign * dw.w[m.wColX[side.id][e]]
		}
	}
}

// delta is the change of the worm's log likelihood when observed rows i and
// k of p exchange their identities (p is the cached permutation).
func (dw *dataWorm) delta(i, k int) float64 {
	if i == k {
		return 0
	}
	tt := len(dw.d)
	a, b := dw.p[i], dw.p[k]
	dw.diff(i, k)
	dd := f64.Dot(dw.d, dw.d)
	// Σ over the other rows of ‖R − ΔZ‖² − ‖R‖².
	acc := 0.0
	dw.inEdges(a, b)
	for _, s := range dw.touch {
		row := dw.q[s]
		if c := dw.coef[s]; c != 0 && row != i && row != k {
			acc += c * (c*dd - 2*f64.Dot(dw.r[row*tt:(row+1)*tt], dw.d))
		}
		dw.coef[s], dw.mark[s] = 0, false
	}
	// Rows i and k, recomputed with the exchanged identities.
	dw.q[a], dw.q[b] = k, i
	for _, rc := range [2][2]int{{i, b}, {k, a}} {
		row, id := rc[0], rc[1]
		dw.row(row, id, dw.q, dw.z)
		r := dw.r[row*tt : (row+1)*tt]
		acc += f64.Dot(dw.z, dw.z) - f64.Dot(r, r)
	}
	dw.q[a], dw.q[b] = i, k
	return -acc / (2 * dw.m.P.NoiseVar)
}

// logDensity is the worm's log likelihood at the cached permutation, without
// the constant.
func (dw *dataWorm) logDensity() float64 {
	return -f64.Dot(dw.r, dw.r) / (2 * dw.m.P.NoiseVar)
}

// trYYData returns Σ_t ‖y_t‖² of worm j's recording (the data form's tr Syy).
func (m *Model) trYYData(j int) float64 {
	y := m.P.Stats[j].Next.RawMatrix().Data
	return f64.Dot(y, y)
}

// logLikStateData is LogLikState in the data form.
func (m *Model) logLikStateData(s *models.State) (float64, error) {
	df, err := m.dataState(s)
	if err != nil {
		return 0, err
	}
	total := 0.0
	for j, dw := range df.worms {
		dw.sync(s.Perms[SiteP][j])
		total += dw.logDensity() + m.constant(j)
	}
	if math.IsNaN(total) {
		return 0, fmt.Errorf("celegans: Model.LogLikState: the log likelihood is NaN")
	}
	return total, nil
}

// swapDeltaData is SwapDelta, and the function PrepareSwap returns, in the
// data form.
func (m *Model) swapDeltaData(s *models.State, b int) (func(p perm.Perm, i, k int) float64, error) {
	df, err := m.dataState(s)
	if err != nil {
		return nil, err
	}
	if b < 0 || b >= len(df.worms) {
		return nil, fmt.Errorf("worm %d out of range", b)
	}
	dw := df.worms[b]
	return func(p perm.Perm, i, k int) float64 {
		dw.sync(p)
		return dw.delta(i, k)
	}, nil
}
