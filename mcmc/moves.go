package mcmc

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/permlab/permlab/perm"
)

// BlockMH is a Metropolis-Hastings kernel on permutations that rearranges
// the columns of k rows at once: it picks k distinct free rows uniformly at
// random (k itself uniform in {min(3, K), …, K} with K = min(MaxBlock,
// number of free rows)), proposes a uniformly random non-identity
// rearrangement of their current columns, and accepts with probability
// min(1, π(p')/π(p)). A proposal the mask forbids is rejected without
// evaluating the target.
//
// Where single swaps are stuck in a local maximum (every transposition
// loses probability), a 3-cycle or a 4-row shuffle can reach the next mode
// in one step.
//
// The proposal is symmetric, so no Hastings correction is needed. The row
// set R and the rearrangement σ are drawn independently of the state, with
// probabilities w(R) and 1/(|R|! - 1). The move p → p' changes p exactly on
// the rows D where they differ, and for a given R ⊇ D there is exactly one
// σ taking p to p' (columns are distinct) and exactly one, σ⁻¹, taking p'
// back to p; for R not containing D there is none. Hence
//
//	q(p → p') = Σ_{R ⊇ D} w(R) / (|R|! - 1) = q(p' → p).
//
// Rejecting forbidden proposals is the same as giving them zero target
// mass, so detailed balance holds for π restricted to the mask.
//
// BlockMH evaluates the target twice per step, first at the current
// permutation and then at the proposal (p is changed in place in between),
// and keeps scratch space: create one per chain.
type BlockMH struct {
	target  PermTarget
	n       int
	free    []int
	maxK    int
	allowed []bool // n*n, nil without a mask

	rows, cols, sigma []int // scratch
}

// NewBlockMH returns a block kernel for permutations of size n with the
// given target, rearranging at most maxBlock (>= 2) rows per step. mask and
// fixed are as for NewSwapMH.
func NewBlockMH(n int, target PermTarget, mask *perm.Mask, fixed []bool, maxBlock int) (*BlockMH, error) {
	switch {
	case n < 1:
		return nil, fmt.Errorf("mcmc: NewBlockMH: size must be >= 1, got %d", n)
	case target == nil:
		return nil, errors.New("mcmc: NewBlockMH: nil target")
	case maxBlock < 2:
		return nil, fmt.Errorf("mcmc: NewBlockMH: maxBlock must be >= 2, got %d", maxBlock)
	case mask != nil && mask.Size() != n:
		return nil, fmt.Errorf("mcmc: NewBlockMH: mask is %d x %d, want %d x %d", mask.Size(), mask.Size(), n, n)
	case fixed != nil && len(fixed) != n:
		return nil, fmt.Errorf("mcmc: NewBlockMH: len(fixed) = %d, want %d", len(fixed), n)
	}
	k := &BlockMH{target: target, n: n}
	for i := range n {
		if fixed == nil || !fixed[i] {
			k.free = append(k.free, i)
		}
	}
	k.maxK = min(maxBlock, len(k.free))
	if mask != nil {
		k.allowed = make([]bool, n*n)
		for i := range n {
			for c := range n {
				k.allowed[i*n+c] = mask.Allowed(i, c)
			}
		}
	}
	k.rows = make([]int, len(k.free))
	k.cols = make([]int, k.maxK)
	k.sigma = make([]int, k.maxK)
	return k, nil
}

// Step proposes one block rearrangement and accepts or rejects it. It is a
// no-op, reported as not accepted, when fewer than two rows are free.
func (k *BlockMH) Step(rng *rand.Rand, p perm.Perm) (bool, error) {
	if len(p) != k.n {
		return false, fmt.Errorf("mcmc: BlockMH: permutation has length %d, want %d", len(p), k.n)
	}
	if k.maxK < 2 {
		return false, nil
	}
	lo := min(3, k.maxK)
	size := lo + rng.IntN(k.maxK-lo+1)

	// The first size entries of a partial Fisher-Yates shuffle of the free
	// rows are a uniform random subset.
	copy(k.rows, k.free)
	for a := range size {
		b := a + rng.IntN(len(k.rows)-a)
		k.rows[a], k.rows[b] = k.rows[b], k.rows[a]
	}
	rows := k.rows[:size]
	// A uniform non-identity rearrangement, by rejection.
	sigma := k.sigma[:size]
	for {
		for a := range sigma {
			sigma[a] = a
		}
		rng.Shuffle(size, func(a, b int) { sigma[a], sigma[b] = sigma[b], sigma[a] })
		if !isIdentity(sigma) {
			break
		}
	}
	cols := k.cols[:size]
	for a, r := range rows {
		cols[a] = p[r]
	}
	if k.allowed != nil {
		for a, r := range rows {
			if !k.allowed[r*k.n+cols[sigma[a]]] {
				return false, nil
			}
		}
	}
	before := k.target.LogDensity(p)
	for a, r := range rows {
		p[r] = cols[sigma[a]]
	}
	logA := k.target.LogDensity(p) - before
	if math.IsNaN(logA) {
		for a, r := range rows {
			p[r] = cols[a]
		}
		return false, fmt.Errorf("mcmc: BlockMH: log density change is NaN for a move of rows %v (does the current state have zero density?)", rows)
	}
	if logA >= 0 || math.Log(rng.Float64()) < logA {
		return true, nil
	}
	for a, r := range rows {
		p[r] = cols[a]
	}
	return false, nil
}

func isIdentity(s []int) bool {
	for i, v := range s {
		if i != v {
			return false
		}
	}
	return true
}
