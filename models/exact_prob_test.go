package models

import (
	"math"
	"strings"
	"testing"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/perm"
)

// scoreModel has two permutation sites, P (two permutations of size 3) and
// Q (one of size 2, with a mask that allows only the identity and the swap
// through a fixed cost), and log-likelihood Σ_b Σ_i cost[b][i][P_b(i)] +
// qcost[Q(0)], given by its fast path only.
type scoreModel struct {
	cost  [2][3][3]float64
	qcost [2]float64
	mask  *perm.Mask
}

func (m *scoreModel) Sites() []Site {
	return []Site{
		&PermSite{Name: "P", N: 3, Batch: 2, Masks: masksOf(m.mask)},
		&PermSite{Name: "Q", N: 2},
	}
}

func (m *scoreModel) LogLik(t *ad.Tape, z *Sample) *ad.Var { return t.ConstScalar(0) }

func (m *scoreModel) LogLikState(s *State) (float64, error) {
	ll := m.qcost[s.Perms["Q"][0][0]]
	for b, p := range s.Perms["P"] {
		for i, j := range p {
			ll += m.cost[b][i][j]
		}
	}
	return ll, nil
}

func newScoreModel() *scoreModel {
	m := &scoreModel{qcost: [2]float64{0.3, -0.4}}
	for b := range 2 {
		for i := range 3 {
			for j := range 3 {
				m.cost[b][i][j] = math.Sin(float64(1+b*9+i*3+j)) * 1.5
			}
		}
	}
	mask, _ := perm.FullMask(3)
	_ = mask.Set(0, 2, false) // row 0 never goes to column 2
	m.mask = mask
	return m
}

func TestExactProb(t *testing.T) {
	m := newScoreModel()
	ex, err := Exact(m)
	if err != nil {
		t.Fatal(err)
	}
	// Brute force over every (P_0, P_1, Q), forbidden ones included.
	var states []*State
	var logw []float64
	_ = perm.Enumerate(3, nil, func(p0 perm.Perm) error {
		return perm.Enumerate(3, nil, func(p1 perm.Perm) error {
			return perm.Enumerate(2, nil, func(q perm.Perm) error {
				s := &State{Perms: map[string][]perm.Perm{"P": {p0.Clone(), p1.Clone()}, "Q": {q.Clone()}}}
				w, _ := m.LogLikState(s)
				if !m.mask.Admits(p0) || !m.mask.Admits(p1) {
					w = math.Inf(-1)
				}
				states, logw = append(states, s), append(logw, w)
				return nil
			})
		})
	})
	z := 0.0
	for _, w := range logw {
		z += math.Exp(w)
	}
	sum, best := 0.0, 0.0
	marg := make([]float64, 9) // P_1's marginals, from Prob
	for k, s := range states {
		p, err := ex.Prob(s)
		if err != nil {
			t.Fatalf("state %v: %v", s.Perms, err)
		}
		want := math.Exp(logw[k]) / z
		if math.Abs(p-want) > 1e-14 {
			t.Errorf("Prob(%v) = %v, want %v", s.Perms, p, want)
		}
		if math.IsInf(logw[k], -1) && p != 0 {
			t.Errorf("forbidden state %v has probability %v", s.Perms, p)
		}
		lp, err := ex.LogProb(s)
		if err != nil || math.Abs(math.Exp(lp)-p) > 1e-15 {
			t.Errorf("LogProb(%v) = %v, %v; Prob %v", s.Perms, lp, err, p)
		}
		sum += p
		best = math.Max(best, p)
		for i, j := range s.Perms["P"][1] {
			marg[i*3+j] += p
		}
	}
	if math.Abs(sum-1) > 1e-12 {
		t.Errorf("Prob sums to %v over every state", sum)
	}
	pMAP, err := ex.Prob(ex.MAP)
	if err != nil || pMAP != best {
		t.Errorf("Prob(MAP) = %v, %v; the largest probability is %v", pMAP, err, best)
	}
	for k, v := range marg {
		if got := ex.Perms["P"].Marginals[1].At(k/3, k%3); math.Abs(got-v) > 1e-12 {
			t.Errorf("marginal (%d, %d) = %v, sum of Prob %v", k/3, k%3, got, v)
		}
	}
	// Real sites are ignored.
	s := states[0].Clone()
	s.Reals = map[string][]float64{"whatever": {1}}
	if _, err := ex.Prob(s); err != nil {
		t.Errorf("a state with real values: %v", err)
	}
}

func TestExactProbErrors(t *testing.T) {
	m := newScoreModel()
	ex, err := Exact(m)
	if err != nil {
		t.Fatal(err)
	}
	good := func() *State {
		return &State{Perms: map[string][]perm.Perm{"P": {{0, 1, 2}, {2, 1, 0}}, "Q": {{1, 0}}}}
	}
	if _, err := ex.Prob(good()); err != nil {
		t.Fatalf("good state: %v", err)
	}
	cases := []struct {
		name string
		edit func(s *State) *State
		want string
	}{
		{"nil", func(*State) *State { return nil }, "nil state"},
		{"missing", func(s *State) *State { delete(s.Perms, "Q"); return s }, `no value for permutation site "Q"`},
		{"unknown", func(s *State) *State { s.Perms["R"] = []perm.Perm{{0}}; return s }, `unknown permutation site "R"`},
		{"batch", func(s *State) *State { s.Perms["P"] = s.Perms["P"][:1]; return s }, "1 permutations for site \"P\", want 2"},
		{"size", func(s *State) *State { s.Perms["Q"][0] = perm.Perm{0, 1, 2}; return s }, "size 3, want 2"},
		{"notPerm", func(s *State) *State { s.Perms["P"][1] = perm.Perm{0, 0, 1}; return s }, "repeated"},
	}
	for _, tc := range cases {
		_, err := ex.Prob(tc.edit(good()))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := new(ExactResult).Prob(good()); err == nil {
		t.Error("an ExactResult not made by Exact answered")
	}
}
