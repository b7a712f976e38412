package mcmc

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/permlab/permlab/internal/masktab"
	"github.com/permlab/permlab/perm"
)

// PermTarget is an unnormalized log density over permutations. LogDensity
// may return -Inf for permutations outside the support; it must not return
// NaN.
type PermTarget interface {
	LogDensity(p perm.Perm) float64
}

// SwapDeltaTarget is a PermTarget that can compute the change of log density
// caused by exchanging p[i] and p[j],
//
//	SwapDelta(p, i, j) = log π(p with p[i], p[j] exchanged) - log π(p),
//
// usually much faster than two calls to LogDensity. SwapDelta must not
// modify p. SwapMH uses SwapDelta, and never LogDensity, when the target has
// it.
type SwapDeltaTarget interface {
	PermTarget
	SwapDelta(p perm.Perm, i, j int) float64
}

// PermTargetFunc adapts a function to the PermTarget interface.
type PermTargetFunc func(p perm.Perm) float64

// LogDensity returns f(p).
func (f PermTargetFunc) LogDensity(p perm.Perm) float64 { return f(p) }

// SwapMH is a Metropolis-Hastings kernel on permutations that proposes to
// exchange the columns of two rows, p[i] <-> p[j], never leaving a candidate
// mask and never moving fixed rows. The proposal ratio for masks is derived
// in the package documentation.
//
// The current state must be admitted by the mask (every row on an allowed
// column); Step returns an error when it meets a row that is not. A SwapMH
// keeps scratch space and is not safe for concurrent use: create one per
// chain.
type SwapMH struct {
	target PermTarget
	delta  SwapDeltaTarget // nil when target has no SwapDelta
	n      int
	free   []int // rows that may move

	// With a mask: allowed (a copy of the caller's) says whether row i may
	// take column c, and colRows[c] lists the free rows that may take column
	// c. Both are nil without a mask.
	allowed *masktab.Table
	colRows [][]int

	partners []int // scratch: partners of the chosen row

	// ignoreProposalRatio turns the kernel into the incorrect sampler that
	// treats the proposal as symmetric. Tests use it to show that they can
	// detect the bias.
	ignoreProposalRatio bool
}

// NewSwapMH returns a swap kernel for permutations of size n with the given
// target. mask, if not nil, must be n x n and restricts row i to the columns
// c with mask.Allowed(i, c); the mask is copied. fixed, if not nil, must have
// length n; rows with fixed[i] true are never moved.
func NewSwapMH(n int, target PermTarget, mask *perm.Mask, fixed []bool) (*SwapMH, error) {
	if n < 1 {
		return nil, fmt.Errorf("mcmc: NewSwapMH: size must be >= 1, got %d", n)
	}
	if target == nil {
		return nil, errors.New("mcmc: NewSwapMH: nil target")
	}
	if mask != nil && mask.Size() != n {
		return nil, fmt.Errorf("mcmc: NewSwapMH: mask is %d x %d, want %d x %d", mask.Size(), mask.Size(), n, n)
	}
	if fixed != nil && len(fixed) != n {
		return nil, fmt.Errorf("mcmc: NewSwapMH: len(fixed) = %d, want %d", len(fixed), n)
	}
	k := &SwapMH{target: target, n: n}
	k.delta, _ = target.(SwapDeltaTarget)
	for i := range n {
		if fixed == nil || !fixed[i] {
			k.free = append(k.free, i)
		}
	}
	if mask != nil {
		k.allowed = masktab.New(n, mask.Row)
		k.colRows = make([][]int, n)
		for _, i := range k.free {
			for _, c := range mask.Row(i) {
				k.colRows[c] = append(k.colRows[c], i)
			}
		}
		k.partners = make([]int, 0, n)
	}
	return k, nil
}

// Step proposes one swap and accepts or rejects it. It reports whether the
// swap was accepted; a move is a no-op (reported as not accepted) when fewer
// than two rows are free or the chosen row has no partner.
func (k *SwapMH) Step(rng *rand.Rand, p perm.Perm) (bool, error) {
	if len(p) != k.n {
		return false, fmt.Errorf("mcmc: SwapMH: permutation has length %d, want %d", len(p), k.n)
	}
	nf := len(k.free)
	if nf < 2 {
		return false, nil
	}
	i := k.free[rng.IntN(nf)]

	var j int
	var ni, nj int // partner counts of i and j before the swap
	if k.allowed == nil {
		// Every other free row is a partner: uniform on free \ {i}.
		j = k.free[rng.IntN(nf-1)]
		if j == i {
			j = k.free[nf-1]
		}
	} else {
		if err := k.checkRow(i, p); err != nil {
			return false, err
		}
		ni = k.collectPartners(i, p)
		if ni == 0 {
			return false, nil
		}
		j = k.partners[rng.IntN(ni)]
		if err := k.checkRow(j, p); err != nil {
			return false, err
		}
		nj = k.collectPartners(j, p) // k.partners is not needed after j
	}

	var d float64
	if k.delta != nil {
		d = k.delta.SwapDelta(p, i, j)
		p[i], p[j] = p[j], p[i]
	} else {
		before := k.target.LogDensity(p)
		p[i], p[j] = p[j], p[i]
		d = k.target.LogDensity(p) - before
	}
	// p now holds the proposal.

	logA := d
	if k.allowed != nil && !k.ignoreProposalRatio {
		ni2 := k.collectPartners(i, p)
		nj2 := k.collectPartners(j, p)
		// log q(p' -> p) - log q(p -> p'); the 1/|F| factors cancel.
		logA += math.Log(1/float64(ni2)+1/float64(nj2)) - math.Log(1/float64(ni)+1/float64(nj))
	}
	if math.IsNaN(logA) {
		p[i], p[j] = p[j], p[i]
		return false, fmt.Errorf("mcmc: SwapMH: log density change is NaN for swap of rows %d and %d (does the current state have zero density?)", i, j)
	}
	if logA >= 0 || math.Log(rng.Float64()) < logA {
		return true, nil
	}
	p[i], p[j] = p[j], p[i]
	return false, nil
}

func (k *SwapMH) checkRow(i int, p perm.Perm) error {
	c := p[i]
	if !k.allowed.Has(i, c) {
		return fmt.Errorf("mcmc: SwapMH: row %d is on column %d, which the mask does not allow", i, c)
	}
	return nil
}

// collectPartners stores J(i, p) in k.partners and returns its size:
// the free rows r != i with (r, p[i]) and (i, p[r]) allowed.
// colRows[p[i]] already holds exactly the free rows that may take p[i].
func (k *SwapMH) collectPartners(i int, p perm.Perm) int {
	k.partners = k.partners[:0]
	if d := k.allowed.Bytes; d != nil {
		// The byte table, read directly: this loop is the kernel's hot
		// path.
		base := i * k.n
		for _, r := range k.colRows[p[i]] {
			if c := p[r]; r != i && uint(c) < uint(k.n) && d[base+c] {
				k.partners = append(k.partners, r)
			}
		}
		return len(k.partners)
	}
	for _, r := range k.colRows[p[i]] {
		if r != i && k.allowed.Has(i, p[r]) {
			k.partners = append(k.partners, r)
		}
	}
	return len(k.partners)
}
