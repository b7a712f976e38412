package celegans

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/mcmc"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/vi"
)

// Model is a models.Model: the sites below, and LogLik once, on the tape.
// Everything else in this file is a fast path of that one likelihood (found
// by the engines by type assertion and tested equal to LogLik by
// models.CheckFastPaths) or the exact conditional of W it implies.

// Site names of the model.
const (
	SiteP = "P" // the worms' permutations: B = worms, N = neurons, each with its candidate mask and known rows
	SiteW = "W" // the non-zero entries of W, in the order of Problem.Support
)

// Sites implements models.Model: the permutation site "P" (one N×N
// permutation per worm, restricted by its candidate mask, with the known
// neurons fixed, uniform prior over what the mask admits) and the real site
// "W" (one coordinate per entry of W's support, independent N(0, σ_W²)
// priors with σ_W = m.SigmaW). This is the one place the priors are
// declared: the variational methods build their W guide and the MCMC
// baseline its Gibbs kernel from it.
func (m *Model) Sites() []models.Site {
	p := m.P
	fixed := make([][]int, p.Worms())
	for j := range fixed {
		f := make([]int, p.N())
		for i := range f {
			f[i] = -1
		}
		for _, k := range p.Known[j] {
			f[k] = p.Masks[j].Row(k)[0]
		}
		fixed[j] = f
	}
	return []models.Site{
		&models.PermSite{Name: SiteP, N: p.N(), Batch: p.Worms(), Masks: p.Masks, Fixed: fixed},
		&models.RealSite{Name: SiteW, Shape: []int{len(p.support)}, Prior: m.wPrior()},
	}
}

// wPrior is the prior of each entry of W's support.
func (m *Model) wPrior() models.Normal { return models.Normal{Mu: 0, Sigma: m.SigmaW} }

// LogLik implements models.Model: log p(Y | P, W) summed over the worms, for
// each of the K samples, by the fused sufficient-statistics op (see Model).
func (m *Model) LogLik(t *ad.Tape, z *models.Sample) *ad.Var {
	if m.data {
		return m.logLikData(t, z)
	}
	return m.logLik(t, z.Perm(SiteP), z.Real(SiteW))
}

func (m *Model) logLik(t *ad.Tape, pv, wv *ad.Var) *ad.Var {
	if err := t.Err(); err != nil {
		return t.ConstScalar(math.NaN())
	}
	if pv == nil || wv == nil {
		t.Fail(fmt.Errorf("celegans: Model.LogLik: need values for sites %s and %s", SiteP, SiteW))
		return t.ConstScalar(math.NaN())
	}
	n, b, e := m.P.N(), m.P.Worms(), len(m.P.support)
	ps, ws := pv.Shape(), wv.Shape()
	if len(ps) != 4 || ps[1] != b || ps[2] != n || ps[3] != n || len(ws) != 2 || ws[1] != e || ws[0] != ps[0] {
		t.Fail(fmt.Errorf("celegans: Model.LogLik: P has shape %v and W %v; want (K, %d, %d, %d) and (K, %d)", ps, ws, b, n, n, e))
		return t.ConstScalar(math.NaN())
	}
	return m.logLikOp(t, pv, wv, ps[0])
}

// VI returns the model as package vi's Model, for vi.Fit with guides built
// by hand (vi.FitModel, which the methods of this package run, takes m
// itself).
func (m *Model) VI() (vi.Model, error) { return vi.ModelOf(m) }

// mcState is the W-dependent part of an exact state in the form the fast
// paths use: the shared W (canonical, dense N×N with zeros off the
// support), with G = WᵀW kept current for fast swap deltas.
type mcState struct {
	w *mat.Dense
	g *mat.Dense
}

// wormTarget is the part of log p(Y_j | P_j, W) that depends on P_j, as a
// function of P_j alone. In observed coordinates, with a = p[i], b = p[k]
// the identities of two observed neurons,
//
//	log p = −(1/2η²)[tr Syy − 2 Σ_{m,m'} Syx[m][m'] W[p m][p m'] + Σ_{m,m'} Sxx[m][m'] G[p m][p m']] + c
//
// and exchanging p[i] and p[k] changes only the terms with m or m' in {i, k},
// so SwapDelta costs O(N). LogDensity + constant(j) is LogLik's value for
// worm j (Model.LogLikState, tested against LogLik).
type wormTarget struct {
	st       *mcState
	sxx, syx []float64 // row-major N×N, observed order
	n        int
	eta2     float64
	trYY     float64
}

// wormTargets returns one target per worm, reading W and G from st.
func (m *Model) wormTargets(st *mcState) []*wormTarget {
	p := m.P
	n := p.N()
	targets := make([]*wormTarget, p.Worms())
	for j, s := range p.Stats {
		full := mat.NewDense(n, n, nil)
		full.Copy(s.Sxx)
		targets[j] = &wormTarget{st: st, sxx: full.RawMatrix().Data, syx: s.Syx.RawMatrix().Data, n: n, eta2: p.NoiseVar, trYY: m.trYY[j]}
	}
	return targets
}

// constant returns the term of worm j's log likelihood that depends on
// neither P_j nor W.
func (m *Model) constant(j int) float64 {
	return -0.5 * float64(m.P.Stats[j].Count*m.P.N()) * math.Log(2*math.Pi*m.P.NoiseVar)
}

func (wt *wormTarget) LogDensity(p perm.Perm) float64 {
	n := wt.n
	w, g := wt.st.w.RawMatrix().Data, wt.st.g.RawMatrix().Data
	var cross, quad float64
	for m := 0; m < n; m++ {
		pm := p[m] * n
		for mm := 0; mm < n; mm++ {
			cross += wt.syx[m*n+mm] * w[pm+p[mm]]
			quad += wt.sxx[m*n+mm] * g[pm+p[mm]]
		}
	}
	return -0.5 / wt.eta2 * (wt.trYY - 2*cross + quad)
}

func (wt *wormTarget) SwapDelta(p perm.Perm, i, k int) float64 {
	n := wt.n
	w, g := wt.st.w.RawMatrix().Data, wt.st.g.RawMatrix().Data
	sxx, syx := wt.sxx, wt.syx
	a, b := p[i], p[k]
	var dq, dc float64
	for m := 0; m < n; m++ {
		if m == i || m == k {
			continue
		}
		pm := p[m]
		// Sxx and G are symmetric: the row and column parts are equal.
		dq += 2 * (sxx[i*n+m] - sxx[k*n+m]) * (g[b*n+pm] - g[a*n+pm])
		dc += (syx[i*n+m] - syx[k*n+m]) * (w[b*n+pm] - w[a*n+pm])
		dc += (syx[m*n+i] - syx[m*n+k]) * (w[pm*n+b] - w[pm*n+a])
	}
	dq += (sxx[i*n+i] - sxx[k*n+k]) * (g[b*n+b] - g[a*n+a])
	dc += (syx[i*n+i] - syx[k*n+k]) * (w[b*n+b] - w[a*n+a])
	dc += (syx[i*n+k] - syx[k*n+i]) * (w[b*n+a] - w[a*n+b])
	return -0.5 / wt.eta2 * (dq - 2*dc)
}

// supportRows returns W's support grouped by row: the columns of row r.
func (p *Problem) supportRows() [][]int {
	rows := make([][]int, p.N())
	for _, rc := range p.support {
		rows[rc[0]] = append(rows[rc[0]], rc[1])
	}
	return rows
}

// gibbsW returns the exact conditional of W given the permutations, with
// the prior of the W site.
func (m *Model) gibbsW() *mcmc.RegressionRows {
	s := m.wPrior().Sigma
	return &mcmc.RegressionRows{Support: m.wRowCol, NoiseVar: m.P.NoiseVar, PriorVar: s * s}
}

// The fast paths below read an exact models.State. Their W-dependent parts
// (the dense W and G = WᵀW) are cached per state and recomputed when the
// state's W differs from the cached copy.

// fastState is the cached form of one models.State.
type fastState struct {
	wvec []float64 // the W the cache was built from
	st   mcState
	tgts []*wormTarget
}

// maxCached bounds the number of states whose dense W is cached.
const maxCached = 64

func (m *Model) fast(s *models.State) (*fastState, error) {
	if m.data {
		return nil, errDataForm
	}
	ps, w := s.Perms[SiteP], s.Reals[SiteW]
	if len(ps) != m.P.Worms() || len(w) != len(m.P.support) {
		return nil, fmt.Errorf("celegans: Model: state has %d permutations and %d W entries, want %d and %d", len(ps), len(w), m.P.Worms(), len(m.P.support))
	}
	m.cacheMu.Lock()
	defer m.cacheMu.Unlock()
	fs := m.cache[s]
	if fs == nil {
		if len(m.cache) >= maxCached || m.cache == nil {
			m.cache = make(map[*models.State]*fastState)
		}
		n := m.P.N()
		fs = &fastState{st: mcState{w: mat.NewDense(n, n, nil), g: mat.NewDense(n, n, nil)}}
		fs.tgts = m.wormTargets(&fs.st)
		m.cache[s] = fs
	}
	if !slices.Equal(fs.wvec, w) {
		fs.wvec = append(fs.wvec[:0], w...)
		raw := fs.st.w.RawMatrix().Data
		clear(raw)
		n := m.P.N()
		for e, rc := range m.P.support {
			raw[rc[0]*n+rc[1]] = w[e]
		}
		gram(fs.st.w, m.wRowCol, fs.st.g)
	}
	return fs, nil
}

// LogLikState implements models.StateLogLiker: LogLik's value at an exact
// state, in O(worms·N²) without a tape.
func (m *Model) LogLikState(s *models.State) (float64, error) {
	if m.data {
		return m.logLikStateData(s)
	}
	fs, err := m.fast(s)
	if err != nil {
		return 0, err
	}
	ps := s.Perms[SiteP]
	total := 0.0
	for j, wt := range fs.tgts {
		total += wt.LogDensity(ps[j]) + m.constant(j)
	}
	return total, nil
}

// SwapDelta implements models.SwapDeltaer: the change of LogLik when rows i
// and k of worm b's permutation exchange their identities, in O(N).
func (m *Model) SwapDelta(s *models.State, site string, b, i, k int) (float64, error) {
	if site != SiteP {
		return 0, fmt.Errorf("celegans: Model.SwapDelta: %q is not a permutation site", site)
	}
	if m.data {
		f, err := m.swapDeltaData(s, b)
		if err != nil {
			return 0, fmt.Errorf("celegans: Model.SwapDelta: %w", err)
		}
		return f(s.Perms[SiteP][b], i, k), nil
	}
	fs, err := m.fast(s)
	if err != nil {
		return 0, err
	}
	if b < 0 || b >= len(fs.tgts) {
		return 0, fmt.Errorf("celegans: Model.SwapDelta: worm %d out of range", b)
	}
	return fs.tgts[b].SwapDelta(s.Perms[SiteP][b], i, k), nil
}

// PrepareSwap implements models.SwapPreparer: worm b's swap delta, the O(N)
// SwapDelta of its target, reading the dense W and G = WᵀW of s's W, which
// it builds (or finds in the cache) once, here, rather than on every
// proposal. Worm b's delta depends on W alone (the worms are independent
// given W), and stays valid while s's W keeps its value.
func (m *Model) PrepareSwap(s *models.State, site string, b int) (func(p perm.Perm, i, k int) float64, error) {
	if site != SiteP {
		return nil, fmt.Errorf("celegans: Model.PrepareSwap: %q is not a permutation site", site)
	}
	if m.data {
		f, err := m.swapDeltaData(s, b)
		if err != nil {
			return nil, fmt.Errorf("celegans: Model.PrepareSwap: %w", err)
		}
		return f, nil
	}
	fs, err := m.fast(s)
	if err != nil {
		return nil, err
	}
	if b < 0 || b >= len(fs.tgts) {
		return nil, fmt.Errorf("celegans: Model.PrepareSwap: worm %d out of range", b)
	}
	return fs.tgts[b].SwapDelta, nil
}

// ConjugateSites implements models.Conjugate: W has a Gaussian conditional.
func (m *Model) ConjugateSites() []string { return []string{SiteW} }

// SampleConditional implements models.Conjugate: it overwrites W in s with
// an exact draw from p(W | P, Y), row by row of the canonical W from the
// worms' statistics pooled in canonical order (mcmc.RegressionRows.Sample's
// draw, without its N × N output).
func (m *Model) SampleConditional(rng *rand.Rand, s *models.State, site string) error {
	w := s.Reals[SiteW]
	var buf []float64 // one row's draw, reused across rows
	return m.eachRowPosterior("SampleConditional", s, site, func(xs []int, rp *mcmc.RowPosterior) error {
		buf = slices.Grow(buf[:0], len(xs))[:len(xs)]
		vals := buf
		if err := rp.Rand(rng, vals); err != nil {
			return err
		}
		for a, x := range xs {
			w[x] = vals[a]
		}
		return nil
	})
}

// eachRowPosterior calls f, rows in increasing order, with every row of the
// canonical W (the row's support entries as coordinates of W's vector,
// wRowX[r], in the order of wRowCol[r]) and its Gaussian conditional given
// the permutations of s, from the pooled moments in either form of the
// statistics. fn names the caller in errors.
func (m *Model) eachRowPosterior(fn string, s *models.State, site string, f func(xs []int, rp *mcmc.RowPosterior) error) error {
	if site != SiteW {
		return fmt.Errorf("celegans: Model.%s: no conditional for site %q", fn, site)
	}
	if len(s.Perms[SiteP]) != m.P.Worms() || len(s.Reals[SiteW]) != len(m.P.support) {
		return fmt.Errorf("celegans: Model.%s: state does not match the model", fn)
	}
	sxx, syx, release := m.pooled(s.Perms[SiteP])
	defer release()
	g := m.gibbsW()
	for r, xs := range m.wRowX {
		rp, err := g.Posterior(r, sxx, syx)
		if err == nil {
			err = f(xs, rp)
		}
		if err != nil {
			return fmt.Errorf("celegans: Model.%s: %w", fn, err)
		}
	}
	return nil
}

// condScratch is the scratch space of one draw of W: the pooled canonical
// statistics, N×N each.
type condScratch struct {
	sxx *mat.SymDense
	syx *mat.Dense
}

// condScratchPool holds scratch of SampleConditional between draws, so that
// a chain's every sweep does not allocate (and clear) two N×N matrices;
// concurrent chains each take their own.
var condScratchPool sync.Pool

// getCondScratch returns scratch for N = n from the pool, or new scratch.
// Both matrices are overwritten before they are read: pooledCanonical
// zeroes them.
func getCondScratch(n int) *condScratch {
	if sc, ok := condScratchPool.Get().(*condScratch); ok && sc.sxx.SymmetricDim() == n {
		return sc
	}
	return &condScratch{sxx: mat.NewSymDense(n, nil), syx: mat.NewDense(n, n, nil)}
}

// MaximizeConditional implements models.ConditionalMaximizer: it overwrites
// W in s with its conditional mean given P and Y, the W that maximises the
// log joint for the permutations of s (its conditional is Gaussian), row by
// row as SampleConditional draws it. models.Scorer so profiles W exactly,
// in O(N·d³) for rows of d support entries.
func (m *Model) MaximizeConditional(s *models.State, site string) error {
	w := s.Reals[SiteW]
	return m.eachRowPosterior("MaximizeConditional", s, site, func(xs []int, rp *mcmc.RowPosterior) error {
		for a, x := range xs {
			w[x] = rp.Mean[a]
		}
		return nil
	})
}

// Collapsed is the model with W integrated out analytically (a
// models.Collapser): permutation moves of mcmc.RunModel then target
// p(P | Y) directly, and models.Exact can enumerate small problems. Each
// evaluation costs a Cholesky factorisation per row of W, so it suits small
// problems; the Model itself, with its O(N) swap deltas and Gibbs draws of
// W, is the one to sample at full size.
type Collapsed struct{ *Model }

// CollapsedSites implements models.Collapser: W can be integrated out.
func (m Collapsed) CollapsedSites() []string { return []string{SiteW} }

// CollapsedLogLik implements models.Collapser: log p(Y | P) with W
// integrated out against its prior. Given the permutations, the rows of the
// canonical W are independent Gaussian regressions on the pooled canonical
// statistics: for row r with support S (d entries), Λ = Sxx[S,S]/η² + I/σ²
// and h = Syx[r,S]/η², and
//
//	log ∫ p(Y | P, W) p(W) dW = Σ_j c_j − Σ_j tr Syy_j/(2η²) + Σ_r [½ hᵀΛ⁻¹h − ½ log|Λ| − (d/2) log σ²]
//
// with c_j the constant of worm j. It costs one d×d Cholesky per row.
func (m Collapsed) CollapsedLogLik(s *models.State) (float64, error) {
	ps := s.Perms[SiteP]
	if len(ps) != m.P.Worms() {
		return 0, errors.New("celegans: Model.CollapsedLogLik: state does not match the model")
	}
	eta2 := m.P.NoiseVar
	sigma2 := m.SigmaW * m.SigmaW
	sxx, syx, release := m.pooled(ps)
	defer release()
	total := 0.0
	for j := range m.P.Stats {
		tr := 0.0
		if m.data {
			tr = m.trYYData(j)
		} else {
			tr = m.trYY[j]
		}
		total += m.constant(j) - tr/(2*eta2)
	}
	for r, cols := range m.wRowCol {
		d := len(cols)
		if d == 0 {
			continue
		}
		lam := mat.NewSymDense(d, nil)
		h := mat.NewVecDense(d, nil)
		for a, ca := range cols {
			h.SetVec(a, syx.At(r, ca)/eta2)
			for b := a; b < d; b++ {
				v := sxx.At(ca, cols[b]) / eta2
				if a == b {
					v += 1 / sigma2
				}
				lam.SetSym(a, b, v)
			}
		}
		var chol mat.Cholesky
		if !chol.Factorize(lam) {
			return 0, fmt.Errorf("celegans: Model.CollapsedLogLik: row %d: posterior precision not positive definite", r)
		}
		var mu mat.VecDense
		if err := chol.SolveVecTo(&mu, h); err != nil {
			return 0, fmt.Errorf("celegans: Model.CollapsedLogLik: row %d: %w", r, err)
		}
		total += 0.5*mat.Dot(h, &mu) - 0.5*chol.LogDet() - 0.5*float64(d)*math.Log(sigma2)
	}
	return total, nil
}

// SampleCollapsed implements models.Collapser: W from p(W | P, Y), the same
// draw as SampleConditional.
func (m Collapsed) SampleCollapsed(rng *rand.Rand, s *models.State) error {
	return m.SampleConditional(rng, s, SiteW)
}
