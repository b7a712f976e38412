package mcmc

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/perm"
)

// scoredPerm is a model with one permutation site "P" of size n and the
// log-likelihood score(σ). LogLik reads the one-hot values MCMC passes; it
// has no gradient, which MCMC does not need for a permutation site.
type scoredPerm struct {
	n     int
	score func(perm.Perm) float64
}

func (m scoredPerm) Sites() []models.Site { return []models.Site{&models.PermSite{Name: "P", N: m.n}} }

func (m scoredPerm) LogLik(t *ad.Tape, z *models.Sample) *ad.Var {
	k, n := z.K(), m.n
	v := z.Perm("P").Value() // (K, 1, n, n), one-hot
	out := make([]float64, k)
	p := make(perm.Perm, n)
	for s := range k {
		for i := range n {
			row := v[(s*n+i)*n : (s*n+i+1)*n]
			p[i] = slices.Index(row, slices.Max(row))
		}
		out[s] = m.score(p)
	}
	return t.Const(&ad.Tensor{Shape: []int{k}, Data: out})
}

// parity returns 1 for an odd permutation and 0 for an even one.
func parity(p perm.Perm) int {
	seen := make([]bool, len(p))
	odd := 0
	for i := range p {
		if seen[i] {
			continue
		}
		size := 0
		for j := i; !seen[j]; j = p[j] {
			seen[j] = true
			size++
		}
		odd += size - 1
	}
	return odd % 2
}

func TestRunModelStuckChainsWarn(t *testing.T) {
	// Even permutations score 40 nats above odd ones. A swap changes the
	// parity, so once a chain reaches an even permutation no swap is ever
	// accepted (e^−40): without block moves or tempering every chain is
	// stuck on the even permutation it reached first. Two chains stuck on
	// different ones have an undefined R̂ (NaN): the log-likelihood is the
	// same constant in both, and every indicator "row i is on the mode's
	// column" is 1 in one chain and 0 in the other (or equal in both),
	// whose folded ranks are all equal. That must warn as R̂ > 1.1 does.
	m := scoredPerm{n: 5, score: func(p perm.Perm) float64 { return 40 * float64(1-parity(p)) }}
	res, err := RunModel(context.Background(), m, ModelOptions{
		Seed: 1, Chains: 2, Burn: 30, Draws: 50, Temperatures: 1,
		Kernels: map[string]SiteKernel{"P": KernelSwapOnly},
	})
	if err != nil {
		t.Fatal(err)
	}
	post := res.Posterior.Perms["P"]
	draws := post.Draws
	nd := len(draws) / 2
	// The premise: each chain constant, on different permutations, and
	// R̂ NaN rather than large.
	for c := range 2 {
		for _, d := range draws[c*nd : (c+1)*nd] {
			if !slices.Equal(d[0], draws[c*nd][0]) {
				t.Fatalf("chain %d moves: %v then %v", c, draws[c*nd][0], d[0])
			}
		}
	}
	if slices.Equal(draws[0][0], draws[nd][0]) {
		t.Fatalf("both chains sit on %v; the test needs them apart", draws[0][0])
	}
	if !math.IsNaN(post.RHat) {
		t.Fatalf("R̂ = %v, want NaN", post.RHat)
	}
	t.Logf("chains on %v and %v; warnings %q", draws[0][0], draws[nd][0], res.Posterior.Warnings)
	found := false
	for _, w := range res.Posterior.Warnings {
		found = found || strings.Contains(w, "chains disagree on site P: they are stuck in different states")
	}
	if !found {
		t.Errorf("no warning for chains stuck apart: %q", res.Posterior.Warnings)
	}
}

func TestRunModelConcentratedNoWarning(t *testing.T) {
	// A posterior with all its mass on the identity (every misplaced row
	// costs 40 nats): all chains reach it during burn-in and stay, R̂ is
	// NaN because every draw is the same, and that is no reason to warn.
	m := scoredPerm{n: 5, score: func(p perm.Perm) float64 {
		miss := 0
		for i, j := range p {
			if i != j {
				miss++
			}
		}
		return -40 * float64(miss)
	}}
	res, err := RunModel(context.Background(), m, ModelOptions{Seed: 1, Chains: 4, Burn: 30, Draws: 50, Temperatures: 1})
	if err != nil {
		t.Fatal(err)
	}
	post := res.Posterior.Perms["P"]
	for _, d := range post.Draws {
		if !slices.Equal(d[0], perm.Identity(5)) {
			t.Fatalf("draw %v is not the identity", d[0])
		}
	}
	if !math.IsNaN(post.RHat) {
		t.Fatalf("R̂ = %v, want NaN", post.RHat)
	}
	if len(res.Posterior.Warnings) > 0 {
		t.Errorf("warnings for chains that agree: %q", res.Posterior.Warnings)
	}
}

func TestStuckApart(t *testing.T) {
	for _, c := range []struct {
		draws [][]float64
		want  bool
	}{
		{[][]float64{{1, 1, 1}, {2, 2, 2}}, true},
		{[][]float64{{1, 1, 1}, {1, 1, 1}, {2, 2, 2}, {2, 2, 2}}, true},
		{[][]float64{{1, 1, 1}, {1, 1, 1}}, false}, // same constant
		{[][]float64{{1, 2, 1}, {2, 2, 2}}, false}, // chain 0 moves
		{[][]float64{{0, 1, 0, 1}, {1, 0, 1, 0}}, false},
		{[][]float64{{1, 1}, {}}, false},
	} {
		if got := stuckApart(c.draws); got != c.want {
			t.Errorf("stuckApart(%v) = %v, want %v", c.draws, got, c.want)
		}
	}
	// The chains of the second case have a NaN rank-normalized R̂, the
	// case the warning is for.
	if r, err := RankRHat([][]float64{{1, 1, 1, 1}, {1, 1, 1, 1}, {2, 2, 2, 2}, {2, 2, 2, 2}}); err != nil || !math.IsNaN(r) {
		t.Errorf("RankRHat = %v, %v; want NaN", r, err)
	}
}
