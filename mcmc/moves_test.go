package mcmc

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/permlab/permlab/perm"
)

// blockTransitions returns the exact transition matrix of BlockMH on
// states, from its definition: k uniform in {min(3, K), …, K}, a uniform
// k-subset R of the free rows, a uniform non-identity rearrangement σ of R,
// rejection outside the mask, Metropolis acceptance.
func blockTransitions(states []perm.Perm, logp func(perm.Perm) float64, mask *perm.Mask, fixed []bool, maxBlock int) [][]float64 {
	idx := map[string]int{}
	for s, p := range states {
		idx[key(p)] = s
	}
	var free []int
	for i, f := range fixed {
		if !f {
			free = append(free, i)
		}
	}
	kMax := min(maxBlock, len(free))
	kMin := min(3, kMax)
	t := make([][]float64, len(states))
	for s, p := range states {
		t[s] = make([]float64, len(states))
		for k := kMin; k <= kMax; k++ {
			var subsets [][]int
			for bits := range 1 << len(free) {
				var r []int
				for a, row := range free {
					if bits&(1<<a) != 0 {
						r = append(r, row)
					}
				}
				if len(r) == k {
					subsets = append(subsets, r)
				}
			}
			nPerm := 1
			for a := 2; a <= k; a++ {
				nPerm *= a
			}
			w := 1 / float64(kMax-kMin+1) / float64(len(subsets)) / float64(nPerm-1)
			for _, r := range subsets {
				_ = perm.Enumerate(k, nil, func(sigma perm.Perm) error {
					if sigma.Equal(perm.Identity(k)) {
						return nil
					}
					q := p.Clone()
					for a, row := range r {
						q[row] = p[r[sigma[a]]]
					}
					if !mask.Admits(q) {
						t[s][s] += w
						return nil
					}
					acc := math.Min(1, math.Exp(logp(q)-logp(p)))
					t[s][idx[key(q)]] += w * acc
					t[s][s] += w * (1 - acc)
					return nil
				})
			}
		}
	}
	return t
}

func TestBlockMHTransitions(t *testing.T) {
	// Five rows, row 4 fixed, a mask with holes: k is 3 or 4.
	n := 5
	mask := testMask(t, n, [][]int{{0, 1, 2, 3}, {0, 1, 2, 3}, {0, 1, 2}, {1, 2, 3}, {4}})
	fixed := []bool{false, false, false, false, true}
	states := support(n, mask, fixed, perm.Perm{0, 1, 2, 3, 4})
	rng := rand.New(rand.NewPCG(1, 2))
	target := tableTarget{}
	for _, p := range states {
		target[key(p)] = 2 * rng.NormFloat64()
	}
	tr := blockTransitions(states, target.LogDensity, mask, fixed, 4)

	// Detailed balance of the definition, π(p) T(p, q) = π(q) T(q, p).
	for a, p := range states {
		for b, q := range states {
			lhs := math.Exp(target.LogDensity(p)) * tr[a][b]
			rhs := math.Exp(target.LogDensity(q)) * tr[b][a]
			if math.Abs(lhs-rhs) > 1e-12 {
				t.Fatalf("detailed balance fails between %v and %v: %g against %g", p, q, lhs, rhs)
			}
		}
	}

	// The kernel's one-step transition frequencies from every state match
	// the definition within five binomial standard deviations, and it never
	// reaches a state the definition cannot.
	k, err := NewBlockMH(n, target, mask, fixed, 4)
	if err != nil {
		t.Fatal(err)
	}
	idx := map[string]int{}
	for s, p := range states {
		idx[key(p)] = s
	}
	const reps = 20000
	for a, start := range states {
		counts := make([]float64, len(states))
		for range reps {
			p := start.Clone()
			if _, err := k.Step(rng, p); err != nil {
				t.Fatal(err)
			}
			b, ok := idx[key(p)]
			if !ok {
				t.Fatalf("kernel left the support: %v", p)
			}
			counts[b]++
		}
		for b, c := range counts {
			want := tr[a][b]
			if tol := 5 * math.Sqrt(want*(1-want)/reps); math.Abs(c/reps-want) > tol || (want == 0 && c > 0) {
				t.Errorf("from %v to %v: frequency %.4f, want %.4f ± %.4f", start, states[b], c/reps, want, tol)
			}
		}
	}
}

func TestBlockMHErrorsAndNoOps(t *testing.T) {
	tgt := PermTargetFunc(func(perm.Perm) float64 { return 0 })
	mask, _ := perm.FullMask(3)
	for _, c := range []struct {
		name string
		f    func() (*BlockMH, error)
	}{
		{"size", func() (*BlockMH, error) { return NewBlockMH(0, tgt, nil, nil, 3) }},
		{"target", func() (*BlockMH, error) { return NewBlockMH(3, nil, nil, nil, 3) }},
		{"block", func() (*BlockMH, error) { return NewBlockMH(3, tgt, nil, nil, 1) }},
		{"mask", func() (*BlockMH, error) { return NewBlockMH(4, tgt, mask, nil, 3) }},
		{"fixed", func() (*BlockMH, error) { return NewBlockMH(3, tgt, nil, []bool{true}, 3) }},
	} {
		if _, err := c.f(); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	k, err := NewBlockMH(3, tgt, nil, []bool{true, true, false}, 3)
	if err != nil {
		t.Fatal(err)
	}
	p := perm.Perm{0, 1, 2}
	if acc, err := k.Step(rand.New(rand.NewPCG(1, 1)), p); acc || err != nil || !p.Equal(perm.Identity(3)) {
		t.Errorf("one free row: accepted %v, error %v, p %v", acc, err, p)
	}
	if _, err := k.Step(rand.New(rand.NewPCG(1, 1)), perm.Perm{0, 1}); err == nil {
		t.Errorf("wrong length: no error")
	}
}

func TestGeometricLadder(t *testing.T) {
	l, err := GeometricLadder(3, 0.25)
	if err != nil {
		t.Fatal(err)
	}
	if l[0] != 1 || math.Abs(l[1]-0.5) > 1e-15 || math.Abs(l[2]-0.25) > 1e-15 {
		t.Errorf("ladder %v, want [1 0.5 0.25]", l)
	}
	if l, _ := GeometricLadder(1, 0.25); len(l) != 1 || l[0] != 1 {
		t.Errorf("one level: %v", l)
	}
	for _, c := range []struct {
		k int
		b float64
	}{{0, 0.5}, {3, 0}, {3, 1.5}, {3, math.NaN()}} {
		if _, err := GeometricLadder(c.k, c.b); err == nil {
			t.Errorf("GeometricLadder(%d, %v): no error", c.k, c.b)
		}
	}
}

func TestExchangeAccept(t *testing.T) {
	// Exchange between β = 1 and 0.5 with log-likelihoods 0 and -2:
	// acceptance exp(0.5 · -2) = e⁻¹.
	rng := rand.New(rand.NewPCG(4, 4))
	const n = 100000
	acc := 0
	for range n {
		if exchangeAccept(rng, 1, 0.5, 0, -2) {
			acc++
		}
	}
	want := math.Exp(-1)
	if got := float64(acc) / n; math.Abs(got-want) > 5*math.Sqrt(want*(1-want)/n) {
		t.Errorf("acceptance %.4f, want %.4f", got, want)
	}
	if !exchangeAccept(rng, 1, 0.5, -2, 0) {
		t.Errorf("an exchange that raises the product density was rejected")
	}
}
