package models

import "github.com/permlab/permlab/perm"

// SwapPreparer is the fast path of SwapDeltaer for engines that propose many
// swaps of one permutation in a row (swap Metropolis-Hastings): the model
// does the work that depends on the rest of the state once per preparation
// rather than once per proposal.
//
// PrepareSwap returns a function delta for permutation b of the permutation
// site named site of s. delta(p, i, k) is the change of log p(y | s) when
// rows i and k of p exchange their columns,
//
//	delta(p, i, k) = LogLik(s with P_b = p, rows i and k swapped) − LogLik(s with P_b = p),
//
// where P_b is permutation b of site and every other site and permutation of
// s holds the value it had when PrepareSwap was called. The engine passes
// the current value of P_b as p, which changes between calls by the swaps
// the engine accepts; delta must not modify p. delta stays valid while the
// rest of s (all other sites and permutations) keeps its value: it may read
// them from s when called or from what PrepareSwap computed, so an engine
// that changes any of them (a draw of a real site, a move of another
// permutation, an exchange of states between tempered replicas) prepares
// again before its next swap.
//
// PrepareSwap may be called from several goroutines at once for different
// states (one per chain); each returned function is called by one
// goroutine at a time. An engine that finds no SwapPreparer falls back to
// SwapDeltaer, then to evaluating LogLik. CheckFastPaths tests delta against
// LogLik, over several swaps of one preparation.
type SwapPreparer interface {
	PrepareSwap(s *State, site string, b int) (func(p perm.Perm, i, k int) float64, error)
}

// ConditionalMaximizer is implemented by a model that can set a real site
// to the maximum of its full conditional p(θ | rest of s, y), the site's
// value that maximises the log joint with everything else held fixed: for a
// conjugate Gaussian site, its conditional mean. A Scorer that profiles the
// real sites (see Scorer) then maximises over them by these exact steps,
// one site after another until the log joint stops rising, instead of by
// numerical optimisation, which at thousands of coordinates is what a
// local search would spend its time on.
//
// MaximizeConditional overwrites the named site's values in s. It may be
// called from several goroutines at once for different states.
type ConditionalMaximizer interface {
	MaximizeConditional(s *State, site string) error
}
