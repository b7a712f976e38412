package models

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/perm"
)

// pointMatch is the test model: y_i = r_{σ(i)} + ε_i in one dimension,
// ε ~ N(0, s²), with an optional shift c ~ N(0, 1) added to every y_i.
type pointMatch struct {
	ref, obs []float64
	s        float64
	mask     *perm.Mask
	shift    bool
	// wrongSwap makes the swap fast path off by one nat, to test the checker.
	wrongSwap bool
}

func (m *pointMatch) Sites() []Site {
	sites := []Site{&PermSite{Name: "P", N: len(m.ref), Masks: masksOf(m.mask)}}
	if m.shift {
		sites = append(sites, &RealSite{Name: "c", Prior: Normal{Sigma: 1}})
	}
	return sites
}

func masksOf(m *perm.Mask) []*perm.Mask {
	if m == nil {
		return nil
	}
	return []*perm.Mask{m}
}

func (m *pointMatch) LogLik(t *ad.Tape, z *Sample) *ad.Var {
	n, k := len(m.ref), z.K()
	p := ad.Reshape(z.Perm("P"), k, n, n)
	pred := ad.Reshape(ad.MatMul(p, t.Const(&ad.Tensor{Shape: []int{n, 1}, Data: m.ref})), k, n)
	if m.shift {
		pred = ad.Add(pred, ad.Reshape(z.Real("c"), k, 1))
	}
	r := ad.Sub(pred, t.Const(&ad.Tensor{Shape: []int{n}, Data: m.obs}))
	return ad.Scale(ad.SumAxis(ad.Square(r), 1), -0.5/(m.s*m.s))
}

// fastMatch adds the fast paths to pointMatch (without shift).
type fastMatch struct{ pointMatch }

func (m *fastMatch) LogLikState(s *State) (float64, error) {
	p := s.Perms["P"][0]
	ll := 0.0
	for i, j := range p {
		d := m.ref[j] - m.obs[i]
		ll += -0.5 * d * d / (m.s * m.s)
	}
	return ll, nil
}

func (m *fastMatch) SwapDelta(s *State, site string, b, i, j int) (float64, error) {
	if site != "P" || b != 0 {
		return 0, errors.New("bad site")
	}
	p := s.Perms["P"][0]
	sq := func(r, c int) float64 { d := m.ref[c] - m.obs[r]; return -0.5 * d * d / (m.s * m.s) }
	d := sq(i, p[j]) + sq(j, p[i]) - sq(i, p[i]) - sq(j, p[j])
	if m.wrongSwap {
		d++
	}
	return d, nil
}

func newPointMatch(n int, seed uint64) *pointMatch {
	rng := rand.New(rand.NewPCG(seed, 1))
	ref := make([]float64, n)
	for i := range ref {
		ref[i] = float64(i) / float64(n)
	}
	truth := perm.Random(n, rng)
	obs := make([]float64, n)
	for i := range obs {
		obs[i] = ref[truth[i]] + 0.1*rng.NormFloat64()
	}
	return &pointMatch{ref: ref, obs: obs, s: 0.15}
}

func TestCheckRejectsBadSites(t *testing.T) {
	full3, _ := perm.FullMask(3)
	diag, _ := perm.NewMask(3)
	for i := range 3 {
		_ = diag.Set(i, i, true)
	}
	bad := []struct {
		name  string
		sites []Site
		want  string
	}{
		{"none", nil, "no latent sites"},
		{"nil", []Site{nil}, "nil"},
		{"unnamed", []Site{&PermSite{N: 3}}, "no name"},
		{"dup", []Site{&PermSite{Name: "P", N: 3}, &RealSite{Name: "P", Prior: Normal{Sigma: 1}}}, `"P" declared twice`},
		{"n0", []Site{&PermSite{Name: "P"}}, "N must be >= 1"},
		{"maskSize", []Site{&PermSite{Name: "P", N: 4, Masks: []*perm.Mask{full3}}}, "mask 0 is 3 x 3"},
		{"maskCount", []Site{&PermSite{Name: "P", N: 3, Batch: 3, Masks: []*perm.Mask{full3, full3}}}, "2 masks for 3"},
		{"fixedOutside", []Site{&PermSite{Name: "P", N: 3, Masks: []*perm.Mask{diag}, Fixed: [][]int{{1, -1, -1}}}}, "forbids"},
		{"fixedTwice", []Site{&PermSite{Name: "P", N: 3, Fixed: [][]int{{2, 2, -1}}}}, "both fixed to column 2"},
		{"fixedLen", []Site{&PermSite{Name: "P", N: 3, Fixed: [][]int{{2}}}}, "length 1"},
		{"infeasible", []Site{&PermSite{Name: "P", N: 3, Masks: []*perm.Mask{diag}, Fixed: [][]int{{0, -1, -1}}}, &PermSite{Name: "Q", N: 2, Masks: []*perm.Mask{emptyRowMask()}}}, "admit no permutation"},
		{"noPrior", []Site{&RealSite{Name: "b", Shape: []int{2}}}, "no prior"},
		{"badPrior", []Site{&RealSite{Name: "b", Prior: Normal{Sigma: -1}}}, "Sigma"},
		{"badShape", []Site{&RealSite{Name: "b", Shape: []int{2, 0}, Prior: Normal{Sigma: 1}}}, "dimension < 1"},
		{"badGS", []Site{&PermSite{Name: "P", N: 3, Prior: GumbelSinkhornPrior{Tau: 0}}}, "Tau"},
	}
	for _, tc := range bad {
		_, err := Check(siteList(tc.sites))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

func emptyRowMask() *perm.Mask {
	m, _ := perm.NewMask(2)
	_ = m.Set(0, 0, true)
	_ = m.Set(1, 0, true)
	return m
}

type siteList []Site

func (s siteList) Sites() []Site                        { return s }
func (s siteList) LogLik(t *ad.Tape, z *Sample) *ad.Var { return t.ConstScalar(0) }

func TestCheckResolvesFixedRows(t *testing.T) {
	spec, err := Check(siteList{&PermSite{Name: "P", N: 3, Batch: 2, Fixed: [][]int{{-1, 2, -1}, {-1, -1, -1}}}})
	if err != nil {
		t.Fatal(err)
	}
	ps := spec.Perms[0]
	if ps.Full {
		t.Error("a fixed row must make the spec not Full")
	}
	m := ps.Masks[0]
	for i := range 3 {
		for j := range 3 {
			want := (i == 1) == (j == 2)
			if m.Allowed(i, j) != want {
				t.Errorf("effective mask (%d, %d) = %v, want %v", i, j, m.Allowed(i, j), want)
			}
		}
	}
	if ps.Free[0][1] || !ps.Free[0][0] || !ps.Free[1][1] {
		t.Errorf("free rows %v", ps.Free)
	}
	if ps.Masks[1].Count() != 9 {
		t.Error("second permutation has no fixed rows and should be unconstrained")
	}
}

func TestSampleErrorsGoToTheTape(t *testing.T) {
	m := newPointMatch(4, 1)
	m.shift = true
	spec, err := Check(m)
	if err != nil {
		t.Fatal(err)
	}
	tp := ad.NewTape()
	z := NewSample(tp, spec, 1, true)
	v := z.Perm("Q")
	if tp.Err() == nil || !strings.Contains(tp.Err().Error(), `unknown site "Q"`) {
		t.Fatalf("unknown site: tape error %v", tp.Err())
	}
	if v == nil {
		t.Fatal("Perm returned nil for an unknown site")
	}
	tp.Reset()
	z = NewSample(tp, spec, 1, true)
	z.Real("P")
	if tp.Err() == nil || !strings.Contains(tp.Err().Error(), "is a permutation site") {
		t.Errorf("kind mismatch: tape error %v", tp.Err())
	}
	tp.Reset()
	z = NewSample(tp, spec, 2, false)
	z.Set("P", tp.Const(ad.Zeros(2, 1, 4, 3)))
	if tp.Err() == nil || !strings.Contains(tp.Err().Error(), "shape") {
		t.Errorf("shape mismatch: tape error %v", tp.Err())
	}
	tp.Reset()
	z = NewSample(tp, spec, 1, true)
	z.Real("c")
	if tp.Err() == nil || !strings.Contains(tp.Err().Error(), "no value") {
		t.Errorf("missing value: tape error %v", tp.Err())
	}
	// A whole LogLik with a typo in the model: an error, no panic.
	tp.Reset()
	s, _ := NewState(spec, rand.New(rand.NewPCG(1, 2)))
	delete(s.Reals, "c")
	if _, err := LogLikState(m, spec, tp, s); err == nil {
		t.Error("a state without the real site was accepted")
	}
}

// bruteMarginals computes the posterior marginals of pointMatch without the
// models package: weights exp(loglik) over every admitted permutation.
func bruteMarginals(m *pointMatch) [][]float64 {
	n := len(m.ref)
	var ws []float64
	var ps []perm.Perm
	_ = perm.Enumerate(n, m.mask, func(p perm.Perm) error {
		ll := 0.0
		for i, j := range p {
			d := m.ref[j] - m.obs[i]
			ll -= 0.5 * d * d / (m.s * m.s)
		}
		ws = append(ws, ll)
		ps = append(ps, p.Clone())
		return nil
	})
	mx := math.Inf(-1)
	for _, w := range ws {
		mx = math.Max(mx, w)
	}
	z := 0.0
	for i := range ws {
		ws[i] = math.Exp(ws[i] - mx)
		z += ws[i]
	}
	out := make([][]float64, n)
	for i := range out {
		out[i] = make([]float64, n)
	}
	for k, p := range ps {
		for i, j := range p {
			out[i][j] += ws[k] / z
		}
	}
	return out
}

func TestExactMatchesBruteForce(t *testing.T) {
	for _, n := range []int{1, 3, 6} {
		m := newPointMatch(n, uint64(n))
		if n == 6 {
			mask, _ := perm.NewMask(n)
			for i := range n {
				for j := range n {
					_ = mask.Set(i, j, (i+j)%3 != 1 || i == j)
				}
			}
			m.mask = mask
		}
		want := bruteMarginals(m)
		for _, model := range []Model{m, &fastMatch{*m}} {
			ex, err := Exact(model)
			if err != nil {
				t.Fatalf("n = %d: %v", n, err)
			}
			got := ex.Perms["P"].Marginals[0]
			for i := range n {
				for j := range n {
					if d := math.Abs(got.At(i, j) - want[i][j]); d > 1e-12 {
						t.Errorf("n = %d, %T: marginal (%d, %d) = %v, want %v", n, model, i, j, got.At(i, j), want[i][j])
					}
				}
			}
			if m.mask != nil && !m.mask.Admits(ex.MAP.Perms["P"][0]) {
				t.Errorf("n = %d: MAP %v outside the mask", n, ex.MAP.Perms["P"][0])
			}
		}
	}
}

func TestExactRefusesWhatItCannotEnumerate(t *testing.T) {
	four := siteList{&PermSite{Name: "P", N: 3}, &RealSite{Name: "b", Shape: []int{MaxExactRealDims + 1}, Prior: Normal{Sigma: 1}}}
	if _, err := Exact(four); err == nil || !strings.Contains(err.Error(), "Collapser") {
		t.Errorf("%d real coordinates without Collapser: %v", MaxExactRealDims+1, err)
	}
	gs := siteList{&PermSite{Name: "P", N: 3, Prior: GumbelSinkhornPrior{Tau: 1}}}
	if _, err := Exact(gs); err == nil || !strings.Contains(err.Error(), "tractable") {
		t.Errorf("GS prior: %v", err)
	}
	big := siteList{&PermSite{Name: "P", N: 11}}
	if _, err := Exact(big); err == nil {
		t.Error("11! states accepted")
	}
}

func TestCheckFastPaths(t *testing.T) {
	m := &fastMatch{*newPointMatch(5, 3)}
	if err := CheckFastPaths(m, 20, 1, 1e-12); err != nil {
		t.Errorf("correct fast paths rejected: %v", err)
	}
	m.wrongSwap = true
	if err := CheckFastPaths(m, 20, 1, 1e-9); err == nil || !strings.Contains(err.Error(), "SwapDelta") {
		t.Errorf("a swap delta off by one nat passed: %v", err)
	}
}

func TestRelaxedAndHardSamplesShareTheLikelihood(t *testing.T) {
	// LogLik on a relaxed matrix that happens to be one-hot equals
	// LogLikState: the same code serves VI and MCMC.
	m := &fastMatch{*newPointMatch(5, 4)}
	spec, _ := Check(m)
	rng := rand.New(rand.NewPCG(5, 6))
	for range 10 {
		s, err := NewState(spec, rng)
		if err != nil {
			t.Fatal(err)
		}
		tp := ad.NewTape()
		a, err := logLikTape(m, spec, tp, s)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := m.LogLikState(s)
		if math.Abs(a-b) > 1e-12*math.Max(1, math.Abs(b)) {
			t.Errorf("tape %v, fast path %v", a, b)
		}
	}
}

func TestPosteriorFromDrawsAndTV(t *testing.T) {
	draws := [][]perm.Perm{{{0, 1, 2}}, {{0, 1, 2}}, {{1, 0, 2}}, {{0, 1, 2}}}
	pp, err := PermPosteriorFromDraws(draws, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := pp.Marginals[0].At(0, 0); got != 0.75 {
		t.Errorf("marginal (0,0) = %v, want 0.75", got)
	}
	if !pp.Mode[0].Equal(perm.Perm{0, 1, 2}) {
		t.Errorf("mode %v", pp.Mode[0])
	}
	other, _ := PermPosteriorFromDraws([][]perm.Perm{{{1, 0, 2}}}, nil)
	tv, err := pp.MaxRowTV(other)
	if err != nil || math.Abs(tv-0.75) > 1e-15 {
		t.Errorf("TV = %v, %v; want 0.75", tv, err)
	}
	if _, err := PermPosteriorFromDraws([][]perm.Perm{{{0, 1}}, {{0, 1, 2}}}, nil); err == nil {
		t.Error("ragged draws accepted")
	}
	post := &Posterior{Method: "test", Perms: map[string]*PermPosterior{"P": pp}, Warnings: []string{"chains disagree"}}
	if s := post.Summary(); !strings.Contains(s, "P[0]: mode [0 1 2]") || !strings.Contains(s, "WARNING: chains disagree") {
		t.Errorf("summary:\n%s", s)
	}
}

func TestNormalPriorOnTapeMatchesPlain(t *testing.T) {
	pr := Normal{Mu: 0.3, Sigma: 1.7}
	x := []float64{0.1, -2, 3.5, 0.3, 1, 1.2}
	tp := ad.NewTape()
	v := pr.LogProbVar(tp.Const(&ad.Tensor{Shape: []int{2, 3}, Data: x}))
	for k := range 2 {
		want := pr.LogProb(x[3*k : 3*k+3])
		d, _ := pr.Dist(3).LogProb(x[3*k : 3*k+3])
		if math.Abs(v.Value()[k]-want) > 1e-12 || math.Abs(d-want) > 1e-12 {
			t.Errorf("row %d: tape %v, plain %v, dist %v", k, v.Value()[k], want, d)
		}
	}
}
