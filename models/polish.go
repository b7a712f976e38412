package models

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/internal/masktab"
	"github.com/permlab/permlab/perm"
)

// Scorer evaluates a model's exact log joint at exact states and improves
// states by local search under it (Polish). It is how an engine checks an
// answer against the model itself: variational inference optimises a
// relaxed objective that cannot see how likely its hard answer is, but the
// model's likelihood, evaluated on one-hot permutations, can.
//
// The score of a state s with permutations P is the model's log posterior
// of P up to a constant,
//
//	J(P) = log ∫ p(y | P, θ) p(θ) dθ + log p(P),
//
// up to the constants of uniform priors. The real sites θ are integrated
// out in one of three ways:
//
//   - collapsed: where the model implements CollapsedLikelihood (as every
//     Collapser does), the sites it names are integrated out analytically
//     by CollapsedLogLik;
//   - by quadrature: when the other real sites have at most
//     MaxExactRealDims coordinates in all, by the adaptive Gauss-Hermite
//     quadrature of Exact, so that J is Exact's log weight and differences
//     of J are exact log odds;
//   - by Laplace's approximation: with up to MaxLaplaceDims coordinates,
//     J = f(θ̂) + (d/2) log 2π − ½ log det(−∇²f(θ̂)), with f the log joint
//     and θ̂ its maximum given P (found by Newton steps, the Hessian from
//     differences of the tape's gradient), which is exact when θ enters
//     the likelihood linearly with Gaussian noise;
//   - beyond that, profiled: J = f(θ̂) with θ̂ found by L-BFGS, which
//     favours permutations that many real coordinates can be fitted to;
//     Profiled reports it.
//
// Maximising over θ instead of integrating would be wrong even for a few
// coordinates: a wrong permutation with its own fitted θ can beat the
// right one (the C. elegans model, whose connection weights fit any
// labelling, does so at n = 5).
//
// During a local search (Polish) the real sites are held at θ̂ of the
// current permutations and moves are scored by f; after the moves stop
// helping, θ is integrated afresh and the moves are kept only if J rose.
//
// A Scorer owns a tape and scratch space: it is not safe for concurrent use.
// Create one per goroutine; the model's methods must then be safe for
// concurrent use with different tapes, as mcmc.RunModel requires.
type Scorer struct {
	m        Model
	spec     *Spec
	t        *ad.Tape
	col      CollapsedLikelihood  // nil when nothing is collapsed
	sd       SwapDeltaer          // nil when swaps need full evaluations
	prep     SwapPreparer         // nil when swaps are not prepared
	cm       ConditionalMaximizer // nil when the profiled sites are maximised numerically
	profiled []*RealSite          // real sites integrated numerically or profiled
	dims     int                  // their coordinates in all
	slots    []polishSlot
	evals    int
}

// MaxLaplaceDims bounds the real coordinates that a Scorer integrates by
// Laplace's approximation; with more, it maximises over them (see Scorer).
const MaxLaplaceDims = 200

// polishSlot is one permutation b of one site, with its admitted entries
// and free rows.
type polishSlot struct {
	ps      *PermSpec
	b       int
	n       int
	allowed *masktab.Table // the site's mask
	free    []int
	prior   PermPrior // nil when uniform
}

// NewScorer returns a Scorer for m. Permutation priors must be tractable
// (UniformPerm or another prior with LogMass).
func NewScorer(m Model) (*Scorer, error) {
	spec, err := Check(m)
	if err != nil {
		return nil, err
	}
	sc := &Scorer{m: m, spec: spec, t: ad.NewTape()}
	collapsed := map[string]bool{}
	if col, ok := m.(CollapsedLikelihood); ok && len(spec.Perms) > 0 {
		names := col.CollapsedSites()
		if err := spec.CheckNames("CollapsedSites", names); err != nil {
			return nil, err
		}
		for _, n := range names {
			collapsed[n] = true
		}
		if len(names) > 0 {
			sc.col = col
		}
	}
	for _, rs := range spec.Reals {
		if !collapsed[rs.Name] {
			sc.profiled = append(sc.profiled, rs)
			sc.dims += rs.Size()
		}
	}
	if sd, ok := m.(SwapDeltaer); ok && sc.col == nil {
		sc.sd = sd
	}
	if prep, ok := m.(SwapPreparer); ok && sc.col == nil {
		sc.prep = prep
	}
	if cm, ok := m.(ConditionalMaximizer); ok {
		sc.cm = cm
	}
	for _, ps := range spec.Perms {
		var prior PermPrior
		if ps.Prior != nil {
			if !ps.Prior.Tractable() {
				return nil, fmt.Errorf("models: NewScorer: site %q: prior %v has no tractable mass on permutations", ps.Name, ps.Prior)
			}
			if _, uniform := ps.Prior.(UniformPerm); !uniform {
				prior = ps.Prior
			}
		}
		n := ps.N
		for b := range ps.B() {
			sl := polishSlot{ps: ps, b: b, n: n, allowed: masktab.New(n, ps.Masks[b].Row), prior: prior}
			for i := range n {
				if ps.Free[b][i] {
					sl.free = append(sl.free, i)
				}
			}
			sc.slots = append(sc.slots, sl)
		}
	}
	return sc, nil
}

// Spec returns the model's validated sites.
func (sc *Scorer) Spec() *Spec { return sc.spec }

// Collapsed reports whether the model integrates some real sites out
// analytically (CollapsedLikelihood).
func (sc *Scorer) Collapsed() bool { return sc.col != nil }

// Integration says how J treats the real sites that are not collapsed:
// "none" when there are none, "quadrature", "Laplace" or "profile" (see
// Scorer).
func (sc *Scorer) Integration() string {
	switch {
	case sc.dims == 0:
		return "none"
	case sc.dims <= MaxExactRealDims:
		return "quadrature"
	case sc.dims <= MaxLaplaceDims:
		return "Laplace"
	}
	return "profile"
}

// Evals returns the number of likelihood evaluations made so far (full
// evaluations and swap differences alike).
func (sc *Scorer) Evals() int { return sc.evals }

// checkState validates s: every permutation site given and admitted, real
// sites of the right size if given.
func (sc *Scorer) checkState(s *State) error {
	return sc.spec.CheckState("models: state", s, true)
}

// completed returns a copy of s in which real sites without values start
// at zero.
func (sc *Scorer) completed(s *State) *State {
	c := s.Clone()
	for _, rs := range sc.spec.Reals {
		if _, ok := c.Reals[rs.Name]; !ok {
			c.Reals[rs.Name] = make([]float64, rs.Size())
		}
	}
	return c
}

// logLik returns the likelihood part of J at s with its real sites as they
// are: the collapsed likelihood, or the full one plus the profiled sites'
// prior.
func (sc *Scorer) logLik(s *State) (float64, error) {
	sc.evals++
	var v float64
	var err error
	if sc.col != nil {
		v, err = sc.col.CollapsedLogLik(s)
	} else {
		v, err = LogLikState(sc.m, sc.spec, sc.t, s)
	}
	if err != nil {
		return 0, err
	}
	for _, rs := range sc.profiled {
		v += rs.Prior.LogProb(s.Reals[rs.Name])
	}
	if math.IsNaN(v) {
		return 0, errors.New("models: the log joint is NaN")
	}
	return v, nil
}

// permPrior returns log p(P) of the non-uniform permutation priors.
func (sc *Scorer) permPrior(s *State) float64 {
	lp := 0.0
	for _, sl := range sc.slots {
		if sl.prior != nil {
			lp += sl.prior.LogMass(s.Perms[sl.ps.Name][sl.b])
		}
	}
	return lp
}

// LogJoint returns J at the permutations of s (see Scorer), starting the
// search for the real sites' maximum from their values in s (from zero for
// a site s has no values for). s is not modified.
func (sc *Scorer) LogJoint(s *State) (float64, error) {
	if err := sc.checkState(s); err != nil {
		return 0, err
	}
	return sc.profile(sc.completed(s))
}

// profile sets the real sites of s that are not collapsed to their
// maximum given its permutations and returns J(s), integrating them as
// Integration says.
func (sc *Scorer) profile(s *State) (float64, error) {
	switch sc.Integration() {
	case "quadrature", "Laplace":
		return sc.integrate(s)
	}
	return sc.maximise(s)
}

// integrate integrates the real sites out by quadrature or Laplace's
// approximation, leaving them at their maximum in s.
func (sc *Scorer) integrate(s *State) (float64, error) {
	q := newRealQuad(sc.m, sc.spec, sc.profiled, sc.col, sc.t, s)
	off := 0
	for _, rs := range sc.profiled {
		copy(q.start[off:], s.Reals[rs.Name])
		off += rs.Size()
	}
	var logI float64
	if sc.dims <= MaxExactRealDims {
		v, _, err := q.integrate()
		if err != nil {
			return 0, err
		}
		logI = v
		// integrate leaves the state at its last grid point: go back to
		// the maximum.
	} else {
		var chol mat.Cholesky
		if err := q.mode(&chol); err != nil {
			return 0, err
		}
		f, err := q.value(q.theta)
		if err != nil {
			return 0, err
		}
		logI = f + float64(sc.dims)/2*math.Log(2*math.Pi) - chol.LogDet()/2
	}
	q.set(q.theta)
	sc.evals += q.calls
	if math.IsNaN(logI) {
		return 0, errors.New("models: the integrated log joint is NaN")
	}
	return logI + sc.permPrior(s), nil
}

// maximise sets the real sites that are not collapsed to their maximum
// given the permutations of s and returns the profiled J(s).
func (sc *Scorer) maximise(s *State) (float64, error) {
	j0, err := sc.logLik(s)
	if err != nil {
		return 0, err
	}
	j0 += sc.permPrior(s)
	if len(sc.profiled) == 0 {
		return j0, nil
	}
	if sc.cm != nil {
		return sc.maximiseConditional(s, j0)
	}
	// The integrand of Exact's quadrature is the log joint to maximise:
	// its value (through the fast paths) and its gradient on the tape.
	q := newRealQuad(sc.m, sc.spec, sc.profiled, sc.col, sc.t, s)
	defer func() { sc.evals += q.calls }()
	x0 := make([]float64, 0, q.d)
	for _, rs := range sc.profiled {
		x0 = append(x0, s.Reals[rs.Name]...)
	}
	var evalErr error
	p := optimize.Problem{Func: func(x []float64) float64 {
		v, err := q.value(x)
		if err != nil {
			evalErr = err
			return math.Inf(1)
		}
		return -v
	}}
	var method optimize.Method = &optimize.NelderMead{}
	if sc.col == nil {
		var f [1]float64
		p.Grad = func(grad, x []float64) {
			if err := q.tapeEval(x, f[:], grad); err != nil {
				evalErr = err
			}
			for i := range grad {
				grad[i] = -grad[i]
			}
		}
		method = &optimize.LBFGS{}
	}
	res, _ := optimize.Minimize(p, x0, &optimize.Settings{
		GradientThreshold: 1e-9,
		MajorIterations:   500,
		Converger:         &optimize.FunctionConverge{Absolute: 1e-10, Relative: 1e-12, Iterations: 20},
	}, method)
	if evalErr != nil {
		return 0, evalErr
	}
	// A line search that cannot improve further ends with an error while
	// holding the best point found: keep whichever point is better.
	if res == nil || len(res.X) != q.d {
		q.set(x0)
		return j0, nil
	}
	q.set(res.X)
	v, err := sc.logLik(s)
	if err != nil || !(v+sc.permPrior(s) >= j0) {
		q.set(x0)
		return j0, nil
	}
	return v + sc.permPrior(s), nil
}

// maximiseConditional maximises the log joint over the profiled sites of s
// by the model's exact conditional maximisation, site by site, until it
// stops rising (one round when there is one site), and returns it; j0 is
// its value at s as given. A round that does not raise it is undone.
func (sc *Scorer) maximiseConditional(s *State, j0 float64) (float64, error) {
	j := j0
	for range 100 {
		before := make(map[string][]float64, len(sc.profiled))
		for _, rs := range sc.profiled {
			before[rs.Name] = slices.Clone(s.Reals[rs.Name])
			if err := sc.cm.MaximizeConditional(s, rs.Name); err != nil {
				return 0, fmt.Errorf("models: MaximizeConditional %q: %w", rs.Name, err)
			}
		}
		v, err := sc.logLik(s)
		if err != nil {
			return 0, err
		}
		v += sc.permPrior(s)
		if !(v > j+polishTol(j)) {
			if !(v >= j) {
				for name, x := range before {
					copy(s.Reals[name], x)
				}
				return j, nil
			}
			return v, nil
		}
		j = v
		if len(sc.profiled) == 1 {
			return j, nil
		}
	}
	return j, nil
}

// PolishOptions configures Scorer.Polish. The zero value gives the
// defaults.
type PolishOptions struct {
	// MaxBlock is the largest block of rows whose columns a block move
	// rearranges in every admitted way; 0 means 4, and 2 or 3 leaves block
	// moves to the swaps and 3-cycles, which are always tried.
	MaxBlock int
	// Blocks is the number of random blocks tried per pass and
	// permutation; 0 means the number of free rows, a negative value
	// turns block moves off.
	Blocks int
	// MaxPasses bounds the passes over the neighbourhoods (each pass
	// applies every improving move it meets), and separately the rounds of
	// moves and integration of the real sites; 0 means 100·(n+1) for the
	// largest permutation size n, far more than a search ever uses.
	MaxPasses int
	// Seed chooses the random blocks.
	Seed uint64
	// Deadline, if not zero, ends the search at the first move or
	// integration that finds it passed: the state reached, a valid state
	// at least as probable as the start, is returned with
	// PolishResult.Truncated set. An anytime search for callers with a
	// wall-clock budget.
	Deadline time.Time
}

// PolishResult is the outcome of a local search.
type PolishResult struct {
	// State is the polished state: a local maximum of J under swaps,
	// 3-cycles and the blocks tried, with the profiled real sites at their
	// optimum given its permutations (collapsed sites are left as given).
	State *State
	// LogJoint is J(State); Start is J of the starting permutations (with
	// the profiled sites optimised for them too), so LogJoint − Start is
	// what polishing gained, in nats.
	LogJoint, Start float64
	// Moves is the number of improving moves applied and Evals the number
	// of likelihood evaluations made.
	Moves, Evals int
	// Truncated reports that PolishOptions.Deadline ended the search
	// before it reached a local maximum.
	Truncated bool
}

// Gain returns LogJoint − Start, the nats polishing gained.
func (r *PolishResult) Gain() float64 { return r.LogJoint - r.Start }

// Polish improves s by a local search under J: it applies every move that
// raises J among the swaps of two free rows, the 3-cycles of three free
// rows and the rearrangements of random blocks of up to MaxBlock free rows,
// always within the masks and fixed rows, until no such move improves J;
// with profiled real sites it then optimises them afresh (exactly, when
// the model is a ConditionalMaximizer) and searches again, until neither
// step gains. Swaps and 3-cycles use the model's swap deltas
// (SwapPreparer, then SwapDeltaer) when there is no collapsing, and full
// evaluations otherwise.
//
// A pass over the swaps and 3-cycles of a permutation of size n with c
// admitted columns per row costs O(n·c²) evaluations (O(n³) without
// masks); the search never enumerates the permutations, so its cost grows
// polynomially in n, and it finds a local, not necessarily the global,
// maximum. PolishOptions.Deadline makes it an anytime search. s is not modified; real sites it has no values for
// start at zero. A cancelled ctx ends the search after the current pass
// with its error.
func (sc *Scorer) Polish(ctx context.Context, s *State, o PolishOptions) (*PolishResult, error) {
	if err := sc.checkState(s); err != nil {
		return nil, err
	}
	switch {
	case o.MaxBlock < 0 || o.MaxBlock == 1:
		return nil, fmt.Errorf("models: Polish: MaxBlock must be 0 (default) or >= 2, got %d", o.MaxBlock)
	case o.MaxPasses < 0:
		return nil, fmt.Errorf("models: Polish: MaxPasses must be >= 0, got %d", o.MaxPasses)
	}
	if o.MaxBlock == 0 {
		o.MaxBlock = 4
	}
	if o.MaxPasses == 0 {
		nmax := 0
		for _, sl := range sc.slots {
			nmax = max(nmax, sl.n)
		}
		o.MaxPasses = 100 * (nmax + 1)
	}
	evals0 := sc.evals
	cur := sc.completed(s)
	j, err := sc.profile(cur)
	if err != nil {
		return nil, err
	}
	res := &PolishResult{Start: j}
	rng := rand.New(rand.NewPCG(o.Seed, 0x706f6c697368))
	ls := &localSearch{sc: sc, o: o, rng: rng}
	for round := 0; round < o.MaxPasses && !ls.late; round++ {
		// Moves under f with the real sites held at their maximum, until
		// none helps.
		before := cur.Clone()
		ls.s = cur
		if ls.j, err = ls.eval(); err != nil {
			return nil, err
		}
		moves := ls.moves
		for pass := 0; pass < o.MaxPasses; pass++ {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			improved, err := ls.pass()
			if err != nil {
				return nil, err
			}
			if !improved || ls.late {
				break
			}
		}
		if ls.moves == moves {
			break
		}
		if len(sc.profiled) == 0 {
			j = ls.j // f is J
			break
		}
		// Integrate the real sites afresh; keep the moves only if J rose.
		jn, err := sc.profile(cur)
		if err != nil {
			return nil, err
		}
		if !(jn > j+polishTol(j)) {
			cur, ls.moves = before, moves
			break
		}
		j = jn
	}
	if len(sc.profiled) == 0 {
		// Evaluate the final state afresh, so that no rounding of the
		// deltas accumulates into the reported value.
		v, err := sc.logLik(cur)
		if err != nil {
			return nil, err
		}
		j = v + sc.permPrior(cur)
	}
	res.State, res.LogJoint, res.Truncated = cur, j, ls.late
	res.Moves, res.Evals = ls.moves, sc.evals-evals0
	return res, nil
}

// polishTol is the smallest gain a move must make to count, so that
// rounding in the deltas cannot make the search cycle.
func polishTol(j float64) float64 { return 1e-9 * math.Max(1, math.Abs(j)) }

// localSearch is the state of one Polish call.
type localSearch struct {
	sc    *Scorer
	s     *State
	j     float64 // J at s, with the real sites as they are
	o     PolishOptions
	rng   *rand.Rand
	moves int

	rows, cols, best []int // block scratch

	late  bool // the deadline has passed: no further moves
	ticks int  // candidates since the deadline was last checked
}

// expired reports whether the deadline has passed, reading the clock on
// the first call and every 64 calls after (candidates are cheap next to a
// clock read).
func (ls *localSearch) expired() bool {
	if ls.late || ls.o.Deadline.IsZero() {
		return ls.late
	}
	ls.ticks++
	if ls.ticks&63 == 1 && !time.Now().Before(ls.o.Deadline) {
		ls.late = true
	}
	return ls.late
}

// pass runs the swaps, then (if none improved) the 3-cycles, then (if none
// improved) the blocks of every permutation, and reports whether any move
// was applied.
func (ls *localSearch) pass() (bool, error) {
	for _, move := range [...]func(*polishSlot) (bool, error){ls.swaps, ls.cycles, ls.blocks} {
		any := false
		for k := range ls.sc.slots {
			if ls.late {
				return any, nil
			}
			ok, err := move(&ls.sc.slots[k])
			if err != nil {
				return false, err
			}
			any = any || ok
		}
		if any {
			return true, nil
		}
	}
	return false, nil
}

// eval returns J at the current permutations with the real sites as they
// are.
func (ls *localSearch) eval() (float64, error) {
	v, err := ls.sc.logLik(ls.s)
	if err != nil {
		return 0, err
	}
	return v + ls.sc.permPrior(ls.s), nil
}

// improves evaluates the state after a move already applied and reports
// whether J rose, in which case it keeps the new J; the caller undoes the
// move otherwise. (An undo callback would allocate a closure for each of
// the O(n³) candidates of a pass.)
func (ls *localSearch) improves() (bool, error) {
	v, err := ls.eval()
	if err != nil {
		return false, err
	}
	if v > ls.j+polishTol(ls.j) {
		ls.j = v
		ls.moves++
		return true, nil
	}
	return false, nil
}

// swapDelta returns the function that gives the change of the log
// likelihood when rows i and k of the slot's permutation swap, with the
// rest of the state fixed (as during one pass over a slot's moves), or nil
// when swaps need full evaluations.
func (ls *localSearch) swapDelta(sl *polishSlot) (func(p perm.Perm, i, k int) float64, *error, error) {
	var failed error
	switch {
	case ls.sc.prep != nil:
		f, err := ls.sc.prep.PrepareSwap(ls.s, sl.ps.Name, sl.b)
		if err != nil {
			return nil, nil, err
		}
		return f, &failed, nil
	case ls.sc.sd != nil:
		return func(_ perm.Perm, i, k int) float64 {
			d, err := ls.sc.sd.SwapDelta(ls.s, sl.ps.Name, sl.b, i, k)
			if err != nil && failed == nil {
				failed = err
			}
			return d
		}, &failed, nil
	}
	return nil, nil, nil
}

// priorDelta returns the change of the slot's permutation prior when rows
// i and k of p swap (0 for a uniform prior).
func priorDelta(sl *polishSlot, p perm.Perm, i, k int) float64 {
	if sl.prior == nil {
		return 0
	}
	before := sl.prior.LogMass(p)
	p[i], p[k] = p[k], p[i]
	d := sl.prior.LogMass(p) - before
	p[i], p[k] = p[k], p[i]
	return d
}

// swaps applies every improving swap of two free rows of one permutation.
func (ls *localSearch) swaps(sl *polishSlot) (bool, error) {
	p := ls.s.Perms[sl.ps.Name][sl.b]
	any := false
	delta, failed, err := ls.swapDelta(sl)
	if err != nil {
		return false, err
	}
	for a, i := range sl.free {
		for _, k := range sl.free[a+1:] {
			if !sl.allowed.Has(i, p[k]) || !sl.allowed.Has(k, p[i]) {
				continue
			}
			if ls.expired() {
				break
			}
			if delta != nil {
				d := delta(p, i, k)
				ls.sc.evals++
				if *failed != nil {
					return false, *failed
				}
				d += priorDelta(sl, p, i, k)
				if d > polishTol(ls.j) {
					p[i], p[k] = p[k], p[i]
					ls.j += d
					ls.moves++
					any = true
				}
				continue
			}
			p[i], p[k] = p[k], p[i]
			ok, err := ls.improves()
			if err != nil {
				return false, err
			}
			if !ok {
				p[i], p[k] = p[k], p[i]
			}
			any = any || ok
		}
	}
	if any && delta != nil {
		// Re-anchor J on a full evaluation.
		v, err := ls.eval()
		if err != nil {
			return false, err
		}
		ls.j = v
	}
	return any, nil
}

// cycles applies every improving 3-cycle of free rows of one permutation:
// row i takes row k's column, k takes l's and l takes i's. Only the cycles
// the masks admit are visited: k among the rows whose column i admits, l
// among those whose column k admits, with l admitting i's column, which
// costs O(n·c²) for c admitted columns per row instead of O(n³); each
// directed cycle once, from its smallest row. With a swap delta a cycle is
// scored as the swap (i k) then (k l), each at the state the one before
// left, when the state between them is admitted too; otherwise by a full
// evaluation.
func (ls *localSearch) cycles(sl *polishSlot) (bool, error) {
	p := ls.s.Perms[sl.ps.Name][sl.b]
	n := sl.n
	free := make([]bool, n)
	for _, i := range sl.free {
		free[i] = true
	}
	// inv[c] is the row on column c.
	inv := make([]int, n)
	for r, c := range p {
		inv[c] = r
	}
	mask := sl.ps.Masks[sl.b]
	any := false
	delta, failed, err := ls.swapDelta(sl)
	if err != nil {
		return false, err
	}
	for _, i := range sl.free {
		if ls.late {
			break
		}
	next:
		for _, ck := range mask.Row(i) {
			k := inv[ck]
			if k <= i || !free[k] {
				continue
			}
			for _, cl := range mask.Row(k) {
				l := inv[cl]
				if l <= i || l == k || !free[l] || !sl.allowed.Has(l, p[i]) {
					continue
				}
				if ls.expired() {
					break next
				}
				ci := p[i]
				var ok bool
				if delta != nil && sl.allowed.Has(k, ci) {
					d := delta(p, i, k) + priorDelta(sl, p, i, k)
					p[i], p[k] = p[k], p[i]
					d += delta(p, k, l) + priorDelta(sl, p, k, l)
					p[k], p[l] = p[l], p[k]
					ls.sc.evals += 2
					if *failed != nil {
						return false, *failed
					}
					if ok = d > polishTol(ls.j); ok {
						ls.j += d
						ls.moves++
					}
				} else {
					p[i], p[k], p[l] = ck, cl, ci
					if ok, err = ls.improves(); err != nil {
						return false, err
					}
				}
				if !ok {
					p[i], p[k], p[l] = ci, ck, cl
					continue
				}
				any = true
				inv[p[i]], inv[p[k]], inv[p[l]] = i, k, l
				// Row i holds another column now: go on with its new
				// candidates from the next row.
				break next
			}
		}
	}
	if any && delta != nil {
		v, err := ls.eval()
		if err != nil {
			return false, err
		}
		ls.j = v
	}
	return any, nil
}

// blocks tries random blocks of up to MaxBlock free rows of one
// permutation, each rearranged in every admitted way, and applies the best
// rearrangement of a block when it raises J.
func (ls *localSearch) blocks(sl *polishSlot) (bool, error) {
	kmax := min(ls.o.MaxBlock, len(sl.free))
	if ls.o.Blocks < 0 || kmax < 4 {
		return false, nil // swaps and 3-cycles already cover blocks of 2 and 3
	}
	trials := ls.o.Blocks
	if trials == 0 {
		trials = len(sl.free)
	}
	p := ls.s.Perms[sl.ps.Name][sl.b]
	any := false
	for range trials {
		if ls.expired() {
			break
		}
		idx := ls.rng.Perm(len(sl.free))[:kmax]
		ls.rows = ls.rows[:0]
		for _, x := range idx {
			ls.rows = append(ls.rows, sl.free[x])
		}
		slices.Sort(ls.rows)
		ls.cols = ls.cols[:0]
		for _, r := range ls.rows {
			ls.cols = append(ls.cols, p[r])
		}
		ls.best = append(ls.best[:0], ls.cols...)
		bestJ := ls.j
		err := perm.Enumerate(kmax, nil, func(sigma perm.Perm) error {
			for x, r := range ls.rows {
				if !sl.allowed.Has(r, ls.cols[sigma[x]]) {
					return nil
				}
			}
			for x, r := range ls.rows {
				p[r] = ls.cols[sigma[x]]
			}
			v, err := ls.eval()
			if err != nil {
				return err
			}
			if v > bestJ+polishTol(bestJ) {
				bestJ = v
				for x, r := range ls.rows {
					ls.best[x] = p[r]
				}
			}
			return nil
		})
		if err != nil {
			return false, err
		}
		for x, r := range ls.rows {
			p[r] = ls.best[x]
		}
		if bestJ > ls.j {
			ls.j = bestJ
			ls.moves++
			any = true
		}
	}
	return any, nil
}
