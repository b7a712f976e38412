package mcmc

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/permlab/permlab/internal/masktab"
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
	allowed *masktab.Table // a copy of the caller's mask; nil without one

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
		k.allowed = masktab.New(n, mask.Row)
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
			if !k.allowed.Has(r, cols[sigma[a]]) {
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

// PermMove is a Metropolis-Hastings proposal for one permutation that a
// model supplies (see MoveProvider), for moves that the automatic swaps and
// blocks make rarely: a model-specific rearrangement, a move guided by the
// data. The engine evaluates the target, checks the masks and fixed rows,
// accepts or rejects, and undoes a rejected proposal.
type PermMove interface {
	// Propose changes p in place into a proposal p' and returns the log
	// Hastings ratio log q(p' → p) − log q(p → p'), 0 for a symmetric
	// proposal. It must leave p a permutation; a proposal that the site's
	// masks or fixed rows forbid is rejected. It is called from one chain's
	// goroutine.
	Propose(rng *rand.Rand, p perm.Perm) (logHastings float64, err error)
}

// MoveProvider is implemented by a model that supplies moves of its own for
// some permutation sites. RunModel calls Moves once per chain, replica and
// permutation b of every permutation site, and runs the moves returned
// after the automatic swap and block moves of every sweep, each once, as
// Metropolis-Hastings steps under the replica's tempered target.
// ModelResult.Acceptance reports them as "move <site> <k>". Moves keep
// scratch space per chain, so return new ones on every call.
type MoveProvider interface {
	Moves(site string, b int) []PermMove
}

// MoveMH runs a PermMove as a Metropolis-Hastings kernel on target,
// rejecting proposals that mask (if not nil) forbids.
type MoveMH struct {
	move   PermMove
	target PermTarget
	mask   *perm.Mask
	save   perm.Perm
}

// NewMoveMH returns the kernel of move for permutations of size n.
func NewMoveMH(n int, move PermMove, target PermTarget, mask *perm.Mask) (*MoveMH, error) {
	switch {
	case n < 1:
		return nil, fmt.Errorf("mcmc: NewMoveMH: size must be >= 1, got %d", n)
	case move == nil || target == nil:
		return nil, errors.New("mcmc: NewMoveMH: nil move or target")
	case mask != nil && mask.Size() != n:
		return nil, fmt.Errorf("mcmc: NewMoveMH: mask is %d x %d, want %d x %d", mask.Size(), mask.Size(), n, n)
	}
	return &MoveMH{move: move, target: target, mask: mask, save: make(perm.Perm, n)}, nil
}

// Step proposes, and accepts with probability min(1, π(p')q(p'→p) /
// (π(p)q(p→p'))).
func (k *MoveMH) Step(rng *rand.Rand, p perm.Perm) (bool, error) {
	if len(p) != len(k.save) {
		return false, fmt.Errorf("mcmc: MoveMH: permutation has length %d, want %d", len(p), len(k.save))
	}
	copy(k.save, p)
	before := k.target.LogDensity(p)
	logH, err := k.move.Propose(rng, p)
	if err != nil {
		copy(p, k.save)
		return false, fmt.Errorf("mcmc: MoveMH: %w", err)
	}
	if p.Validate() != nil {
		bad := p.Clone()
		copy(p, k.save)
		return false, fmt.Errorf("mcmc: MoveMH: the move proposed %v, which is not a permutation", bad)
	}
	if p.Equal(k.save) || (k.mask != nil && !k.mask.Admits(p)) {
		copy(p, k.save)
		return false, nil
	}
	logA := k.target.LogDensity(p) - before + logH
	if math.IsNaN(logA) {
		copy(p, k.save)
		return false, errors.New("mcmc: MoveMH: log acceptance ratio is NaN (does the current state have zero density?)")
	}
	if logA >= 0 || math.Log(rng.Float64()) < logA {
		return true, nil
	}
	copy(p, k.save)
	return false, nil
}
