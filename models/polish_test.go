package models

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/perm"
)

// pairModel is a quadratic-assignment test model, whose log joint has local
// maxima under swaps: n items whose observed pairwise distances are noisy
// copies of reference ones under an unknown permutation,
//
//	log p(D | σ) = −Σ_{i<k} (D_ik − R_{σ(i)σ(k)})² / (2s²),
//
// with candidate masks and fixed rows. Only the fast path (LogLikState) is
// written: the Scorer never needs the tape for a model without real sites.
type pairModel struct {
	d, r  [][]float64
	s     float64
	mask  *perm.Mask
	fixed []int
}

func (m *pairModel) Sites() []Site {
	ps := &PermSite{Name: "P", N: len(m.d), Masks: masksOf(m.mask)}
	if m.fixed != nil {
		ps.Fixed = [][]int{m.fixed}
	}
	return []Site{ps}
}

func (m *pairModel) LogLik(t *ad.Tape, z *Sample) *ad.Var {
	t.Fail(errors.New("pairModel: LogLik is not written; use LogLikState"))
	return nil
}

func (m *pairModel) LogLikState(s *State) (float64, error) {
	p := s.Perms["P"][0]
	ll := 0.0
	for i := range p {
		for k := i + 1; k < len(p); k++ {
			e := m.d[i][k] - m.r[p[i]][p[k]]
			ll -= e * e / (2 * m.s * m.s)
		}
	}
	return ll, nil
}

// newPairModel draws points on a line, their distances, a random σ and
// noisy observed distances; with masked, each row may go only to the 4
// columns nearest its truth, and rows 0 and 1 are fixed.
func newPairModel(n int, seed uint64, masked bool) (*pairModel, perm.Perm) {
	rng := rand.New(rand.NewPCG(seed, 7))
	x := make([]float64, n)
	for i := range x {
		x[i] = rng.Float64()
	}
	truth := perm.Random(n, rng)
	m := &pairModel{s: 0.05}
	m.d, m.r = make([][]float64, n), make([][]float64, n)
	for i := range n {
		m.d[i], m.r[i] = make([]float64, n), make([]float64, n)
		for k := range n {
			m.r[i][k] = math.Abs(x[i] - x[k])
		}
	}
	for i := range n {
		for k := i + 1; k < n; k++ {
			v := m.r[truth[i]][truth[k]] + 0.02*rng.NormFloat64()
			m.d[i][k], m.d[k][i] = v, v
		}
	}
	if masked {
		m.mask, _ = perm.NewMask(n)
		for i := range n {
			for j := range n {
				if math.Abs(x[truth[i]]-x[j]) <= 0.3 {
					_ = m.mask.Set(i, j, true)
				}
			}
		}
		m.fixed = make([]int, n)
		for i := range m.fixed {
			m.fixed[i] = -1
		}
		m.fixed[0], m.fixed[1] = truth[0], truth[1]
	}
	return m, truth
}

func permState(p perm.Perm) *State {
	return &State{Perms: map[string][]perm.Perm{"P": {p}}, Reals: map[string][]float64{}}
}

// requireLocalMax checks by brute force that no swap and no 3-cycle of free
// rows within the mask raises J above res.LogJoint.
func requireLocalMax(t *testing.T, sc *Scorer, res *PolishResult) {
	t.Helper()
	ps := sc.Spec().Perms[0]
	p := res.State.Perms["P"][0]
	n := len(p)
	var free []int
	for i, f := range ps.Free[0] {
		if f {
			free = append(free, i)
		}
	}
	check := func(q perm.Perm) {
		if !ps.Masks[0].Admits(q) {
			return
		}
		s := res.State.Clone()
		s.Perms["P"][0] = q
		j, err := sc.LogJoint(s)
		require.NoError(t, err)
		require.LessOrEqual(t, j, res.LogJoint+1e-9*math.Max(1, math.Abs(j)), "a neighbour %v of %v is better", q, p)
	}
	for _, i := range free {
		for _, k := range free {
			for _, l := range free {
				q := p.Clone()
				switch {
				case i < k && l == k: // a swap, once
					q[i], q[k] = q[k], q[i]
				case i != k && k != l && i != l:
					q[i], q[k], q[l] = p[k], p[l], p[i]
				default:
					continue
				}
				check(q)
			}
		}
	}
	require.Equal(t, n, len(p))
}

func TestPolishEndsAtALocalMaximumWithinTheConstraints(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		m, truth := newPairModel(8, seed, seed%2 == 0)
		sc, err := NewScorer(m)
		require.NoError(t, err)
		spec := sc.Spec()
		rng := rand.New(rand.NewPCG(seed, 3))
		start, err := RandomAdmitted(spec.Perms[0].Masks[0], rng)
		require.NoError(t, err)
		res, err := sc.Polish(context.Background(), permState(start), PolishOptions{Seed: seed})
		require.NoError(t, err)
		q := res.State.Perms["P"][0]
		require.NoError(t, q.Validate())
		require.True(t, spec.Perms[0].Masks[0].Admits(q), "seed %d: %v leaves the mask", seed, q)
		if m.fixed != nil {
			require.Equal(t, truth[0], q[0])
			require.Equal(t, truth[1], q[1])
		}
		require.GreaterOrEqual(t, res.LogJoint, res.Start)
		j, err := sc.LogJoint(res.State)
		require.NoError(t, err)
		require.InDelta(t, j, res.LogJoint, 1e-9)
		j0, err := sc.LogJoint(permState(start))
		require.NoError(t, err)
		require.InDelta(t, j0, res.Start, 1e-9)
		require.Equal(t, start, perm.Perm(permState(start).Perms["P"][0]), "the start is not modified")
		requireLocalMax(t, sc, res)
	}
}

// TestPolishFindsTheMAP checks that polishing from a few random starts
// reaches the exact MAP on small models, the job it does for VI; it never
// enumerates, so this is evidence, not a tautology.
func TestPolishFindsTheMAP(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		m, _ := newPairModel(7, seed, seed%2 == 1)
		ex, err := Exact(m)
		require.NoError(t, err)
		sc, err := NewScorer(m)
		require.NoError(t, err)
		rng := rand.New(rand.NewPCG(seed, 5))
		var best *PolishResult
		for r := range 4 {
			start, err := RandomAdmitted(sc.Spec().Perms[0].Masks[0], rng)
			require.NoError(t, err)
			res, err := sc.Polish(context.Background(), permState(start), PolishOptions{Seed: uint64(r)})
			require.NoError(t, err)
			if best == nil || res.LogJoint > best.LogJoint {
				best = res
			}
		}
		require.Equal(t, ex.MAP.Perms["P"][0], best.State.Perms["P"][0], "seed %d", seed)
	}
}

// TestPolishFastPathsAgree polishes the same starts with and without the
// model's fast paths (StateLogLiker, SwapDeltaer): the tape and the fast
// path reach the same permutation with the same log joint.
func TestPolishFastPathsAgree(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		slow := newPointMatch(9, seed)
		fast := &fastMatch{*slow}
		scS, err := NewScorer(slow)
		require.NoError(t, err)
		scF, err := NewScorer(fast)
		require.NoError(t, err)
		start := perm.Random(9, rand.New(rand.NewPCG(seed, 9)))
		a, err := scS.Polish(context.Background(), permState(start), PolishOptions{Seed: 1})
		require.NoError(t, err)
		b, err := scF.Polish(context.Background(), permState(start), PolishOptions{Seed: 1})
		require.NoError(t, err)
		require.Equal(t, a.State.Perms["P"][0], b.State.Perms["P"][0])
		require.InDelta(t, a.LogJoint, b.LogJoint, 1e-9)
		require.InDelta(t, a.Start, b.Start, 1e-9)
		require.Positive(t, b.Evals)
	}
}

// TestLogJointIntegratesRealSites checks the integrated real site against
// its closed form: with y_i = r_σ(i) + c + ε_i, ε ~ N(0, s²) and c ~ N(0, 1),
// log p(y | σ) = f(c*) + ½ log(2π/a), with f the log joint of (y, c), its
// maximum c* = Σ_i (y_i − r_σ(i)) / (n + s²) and curvature a = n/s² + 1.
func TestLogJointIntegratesRealSites(t *testing.T) {
	m := newPointMatch(6, 3)
	m.shift = true
	sc, err := NewScorer(m)
	require.NoError(t, err)
	require.Equal(t, "quadrature", sc.Integration())
	p := perm.Random(6, rand.New(rand.NewPCG(1, 1)))
	s := permState(p)
	s.Reals["c"] = []float64{2} // far from the maximum
	j, err := sc.LogJoint(s)
	require.NoError(t, err)
	require.Equal(t, 2.0, s.Reals["c"][0], "LogJoint does not modify its argument")
	want := func(p perm.Perm) (float64, float64) {
		sum := 0.0
		for i, c := range p {
			sum += m.obs[i] - m.ref[c]
		}
		cStar := sum / (6 + m.s*m.s)
		f := Normal{Sigma: 1}.LogProb([]float64{cStar})
		for i, c := range p {
			e := m.obs[i] - m.ref[c] - cStar
			f -= e * e / (2 * m.s * m.s)
		}
		return f + 0.5*math.Log(2*math.Pi/(6/(m.s*m.s)+1)), cStar
	}
	w, _ := want(p)
	require.InDelta(t, w, j, 1e-6)

	res, err := sc.Polish(context.Background(), s, PolishOptions{})
	require.NoError(t, err)
	require.GreaterOrEqual(t, res.LogJoint, j)
	w, cStar := want(res.State.Perms["P"][0])
	require.InDelta(t, w, res.LogJoint, 1e-6)
	require.InDelta(t, cStar, res.State.Reals["c"][0], 1e-6, "the polished state's real site is at its maximum")
}

func TestPolishIsDeterministic(t *testing.T) {
	m, _ := newPairModel(9, 4, false)
	run := func() *PolishResult {
		sc, err := NewScorer(m)
		require.NoError(t, err)
		res, err := sc.Polish(context.Background(), permState(perm.Identity(9)), PolishOptions{Seed: 7})
		require.NoError(t, err)
		return res
	}
	a, b := run(), run()
	require.Equal(t, a.State.Perms, b.State.Perms)
	require.Equal(t, a.LogJoint, b.LogJoint)
	require.Equal(t, a.Evals, b.Evals)
}

func TestPolishErrors(t *testing.T) {
	m, _ := newPairModel(5, 1, true)
	sc, err := NewScorer(m)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(2, 2))
	forbidden := perm.Random(5, rng)
	for sc.Spec().Perms[0].Masks[0].Admits(forbidden) {
		forbidden = perm.Random(5, rng)
	}
	for name, s := range map[string]*State{
		"nil":       nil,
		"size":      permState(perm.Identity(4)),
		"not perm":  permState(perm.Perm{0, 0, 1, 2, 3}),
		"forbidden": permState(forbidden),
		"missing":   {Perms: map[string][]perm.Perm{}},
	} {
		_, err := sc.Polish(context.Background(), s, PolishOptions{})
		require.Error(t, err, name)
		_, err = sc.LogJoint(s)
		require.Error(t, err, name)
	}
	start, err := RandomAdmitted(sc.Spec().Perms[0].Masks[0], rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, err)
	_, err = sc.Polish(context.Background(), permState(start), PolishOptions{MaxBlock: 1})
	require.ErrorContains(t, err, "MaxBlock")
	_, err = sc.Polish(context.Background(), permState(start), PolishOptions{MaxPasses: -1})
	require.ErrorContains(t, err, "MaxPasses")

	gs := siteList{&PermSite{Name: "P", N: 3, Prior: GumbelSinkhornPrior{Tau: 1}}}
	_, err = NewScorer(gs)
	require.ErrorContains(t, err, "tractable")
}

func TestPolishHonoursCancellation(t *testing.T) {
	m, _ := newPairModel(8, 1, false)
	sc, err := NewScorer(m)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = sc.Polish(ctx, permState(perm.Identity(8)), PolishOptions{})
	require.ErrorIs(t, err, context.Canceled)
}

// wideSite is a model with a real site too large to integrate: J is then
// the profile, max over w of −½‖w − a‖² + log N(w; 0, 1) plus the
// permutation's score, whose maximum w = a/2 is known.
type wideSite struct {
	pointMatch
	a []float64
}

func (m *wideSite) Sites() []Site {
	return append(m.pointMatch.Sites(), &RealSite{Name: "w", Shape: []int{len(m.a)}, Prior: Normal{Sigma: 1}})
}

func (m *wideSite) LogLik(t *ad.Tape, z *Sample) *ad.Var {
	k := z.K()
	r := ad.Sub(z.Real("w"), t.Const(&ad.Tensor{Shape: []int{len(m.a)}, Data: m.a}))
	return ad.Add(m.pointMatch.LogLik(t, z), ad.Scale(ad.SumAxis(ad.Reshape(ad.Square(r), k, -1), 1), -0.5))
}

func TestLogJointProfilesBeyondLaplace(t *testing.T) {
	d := MaxLaplaceDims + 1
	m := &wideSite{pointMatch: *newPointMatch(5, 2), a: make([]float64, d)}
	for k := range m.a {
		m.a[k] = math.Sin(float64(k))
	}
	sc, err := NewScorer(m)
	require.NoError(t, err)
	require.Equal(t, "profile", sc.Integration())
	p := perm.Random(5, rand.New(rand.NewPCG(3, 3)))
	j, err := sc.LogJoint(permState(p))
	require.NoError(t, err)
	pm, err := NewScorer(&m.pointMatch)
	require.NoError(t, err)
	want, err := pm.LogJoint(permState(p))
	require.NoError(t, err)
	w := make([]float64, d)
	for k := range w {
		w[k] = m.a[k] / 2
		want -= 0.5 * (w[k] - m.a[k]) * (w[k] - m.a[k])
	}
	want += Normal{Sigma: 1}.LogProb(w)
	require.InDelta(t, want, j, 1e-6)
}

// rankPrior is a tractable non-uniform prior on permutations: log p(σ) =
// −λ Σ_i |σ(i) − i|, favouring permutations near the identity.
type rankPrior struct{ lambda float64 }

func (rankPrior) Validate(int) error { return nil }
func (rankPrior) Tractable() bool    { return true }
func (r rankPrior) LogMass(p []int) float64 {
	s := 0.0
	for i, j := range p {
		s += math.Abs(float64(j - i))
	}
	return -r.lambda * s
}
func (rankPrior) String() string { return "rank prior" }

type priorMatch struct{ pointMatch }

func (m *priorMatch) Sites() []Site {
	s := m.pointMatch.Sites()
	s[0].(*PermSite).Prior = rankPrior{0.8}
	return s
}

type priorFastMatch struct{ fastMatch }

func (m *priorFastMatch) Sites() []Site {
	s := m.fastMatch.Sites()
	s[0].(*PermSite).Prior = rankPrior{0.8}
	return s
}

// TestPolishCountsThePrior: with a non-uniform permutation prior the swap
// fast path adds the prior's change, and reaches what full evaluations
// reach; the prior moves the answer towards the identity.
func TestPolishCountsThePrior(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		slow := &priorMatch{*newPointMatch(8, seed)}
		fast := &priorFastMatch{fastMatch{*newPointMatch(8, seed)}}
		scS, err := NewScorer(slow)
		require.NoError(t, err)
		scF, err := NewScorer(fast)
		require.NoError(t, err)
		start := permState(perm.Random(8, rand.New(rand.NewPCG(seed, 4))))
		a, err := scS.Polish(context.Background(), start, PolishOptions{Seed: 1})
		require.NoError(t, err)
		b, err := scF.Polish(context.Background(), start, PolishOptions{Seed: 1})
		require.NoError(t, err)
		require.Equal(t, a.State.Perms, b.State.Perms)
		require.InDelta(t, a.LogJoint, b.LogJoint, 1e-9)
		ex, err := Exact(slow)
		require.NoError(t, err)
		lp, err := ex.LogProb(a.State)
		require.NoError(t, err)
		lpMAP, err := ex.LogProb(ex.MAP)
		require.NoError(t, err)
		jMAP, err := scS.LogJoint(ex.MAP)
		require.NoError(t, err)
		require.InDelta(t, lpMAP-lp, jMAP-a.LogJoint, 1e-9, "J differences are exact log odds, prior included")
	}
}

// polishPrepMatch adds the SwapPreparer fast path to fastMatch.
type polishPrepMatch struct{ fastMatch }

func (m *polishPrepMatch) PrepareSwap(s *State, site string, b int) (func(p perm.Perm, i, k int) float64, error) {
	return func(p perm.Perm, i, k int) float64 {
		d, _ := m.fastMatch.SwapDelta(s, site, b, i, k)
		return d
	}, nil
}

// TestPolishPreparedSwapsAgree: prepared swap deltas (also the two swaps
// that score a 3-cycle) reach what full evaluations reach.
func TestPolishPreparedSwapsAgree(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		slow := newPointMatch(9, seed)
		prep := &polishPrepMatch{fastMatch{*slow}}
		scS, err := NewScorer(slow)
		require.NoError(t, err)
		scP, err := NewScorer(prep)
		require.NoError(t, err)
		start := perm.Random(9, rand.New(rand.NewPCG(seed, 9)))
		a, err := scS.Polish(context.Background(), permState(start), PolishOptions{Seed: 1})
		require.NoError(t, err)
		b, err := scP.Polish(context.Background(), permState(start), PolishOptions{Seed: 1})
		require.NoError(t, err)
		require.Equal(t, a.State.Perms["P"][0], b.State.Perms["P"][0])
		require.InDelta(t, a.LogJoint, b.LogJoint, 1e-9)
	}
}

// TestPolishDeadline: a deadline already passed ends the search at once
// with the start (or better) and says so; one far away changes nothing.
func TestPolishDeadline(t *testing.T) {
	m, _ := newPairModel(8, 2, false)
	sc, err := NewScorer(m)
	require.NoError(t, err)
	start, err := RandomAdmitted(sc.Spec().Perms[0].Masks[0], rand.New(rand.NewPCG(2, 3)))
	require.NoError(t, err)
	free, err := sc.Polish(context.Background(), permState(start), PolishOptions{Seed: 1})
	require.NoError(t, err)
	require.False(t, free.Truncated)
	far, err := sc.Polish(context.Background(), permState(start), PolishOptions{Seed: 1, Deadline: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	require.False(t, far.Truncated)
	require.Equal(t, free.State.Perms["P"][0], far.State.Perms["P"][0])
	late, err := sc.Polish(context.Background(), permState(start), PolishOptions{Seed: 1, Deadline: time.Now().Add(-time.Second)})
	require.NoError(t, err)
	require.True(t, late.Truncated)
	require.NoError(t, late.State.Perms["P"][0].Validate())
	require.True(t, sc.Spec().Perms[0].Masks[0].Admits(late.State.Perms["P"][0]))
	require.GreaterOrEqual(t, late.LogJoint, late.Start)
	j, err := sc.LogJoint(late.State)
	require.NoError(t, err)
	require.InDelta(t, j, late.LogJoint, 1e-9)
}

// wideExact is wideSite with its real site maximised exactly
// (ConditionalMaximizer): w = a/2 whatever the permutation.
type wideExact struct{ wideSite }

func (m *wideExact) MaximizeConditional(s *State, site string) error {
	if site != "w" {
		return fmt.Errorf("no site %q", site)
	}
	for k := range m.a {
		s.Reals["w"][k] = m.a[k] / 2
	}
	return nil
}

// TestLogJointConditionalMaximizer: a model that maximises its real site
// exactly gets the same profile J as numerical optimisation finds, in one
// step.
func TestLogJointConditionalMaximizer(t *testing.T) {
	d := MaxLaplaceDims + 1
	m := &wideExact{wideSite{pointMatch: *newPointMatch(5, 2), a: make([]float64, d)}}
	for k := range m.a {
		m.a[k] = math.Cos(float64(k))
	}
	numeric, err := NewScorer(&m.wideSite)
	require.NoError(t, err)
	exact, err := NewScorer(m)
	require.NoError(t, err)
	p := perm.Random(5, rand.New(rand.NewPCG(4, 4)))
	want, err := numeric.LogJoint(permState(p))
	require.NoError(t, err)
	before := exact.Evals()
	got, err := exact.LogJoint(permState(p))
	require.NoError(t, err)
	require.InDelta(t, want, got, 1e-6)
	require.LessOrEqual(t, exact.Evals()-before, 2, "one evaluation at the start, one after the exact step")
	res, err := exact.Polish(context.Background(), permState(p), PolishOptions{Seed: 1})
	require.NoError(t, err)
	res2, err := numeric.Polish(context.Background(), permState(p), PolishOptions{Seed: 1})
	require.NoError(t, err)
	require.Equal(t, res2.State.Perms["P"][0], res.State.Perms["P"][0])
	require.InDelta(t, res2.LogJoint, res.LogJoint, 1e-6)
}
