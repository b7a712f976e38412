package mcmc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/perm"
)

// SiteKernel chooses how RunModel moves one site.
type SiteKernel int

const (
	// KernelAuto is the default: swap and block moves for a permutation
	// site; the model's Gibbs draw for a real site it declares Conjugate,
	// HMC for the others.
	KernelAuto SiteKernel = iota
	// KernelHMC moves a real site by HMC even if the model can draw it
	// exactly.
	KernelHMC
	// KernelGibbs draws a real site from its full conditional through the
	// model's Conjugate fast path; the model must list the site.
	KernelGibbs
	// KernelSwapOnly moves a permutation site by single swaps only, without
	// block moves.
	KernelSwapOnly
)

func (k SiteKernel) String() string {
	switch k {
	case KernelAuto:
		return "auto"
	case KernelHMC:
		return "HMC"
	case KernelGibbs:
		return "Gibbs"
	case KernelSwapOnly:
		return "swap only"
	}
	return fmt.Sprintf("SiteKernel(%d)", int(k))
}

// Defaults of ModelOptions.
const (
	DefaultChains       = 4
	DefaultBurn         = 1000
	DefaultDraws        = 1000
	DefaultTemperatures = 8
	DefaultBetaMin      = 0.01
	DefaultMaxBlock     = 4
)

// Settings of CalibrationOptions: chains started in the posterior's modes
// need a short burn-in and fewer temperatures than a cold start.
const (
	CalibrationTemperatures = 4
	CalibrationBurn         = 50
	CalibrationDraws        = 600
)

// CalibrationOptions returns the options of chains that calibrate a
// variational fit's marginals: DefaultChains chains started from the given
// states (the fit's polished states, vi.PolishReport.States), with
// CalibrationTemperatures tempered replicas, a burn-in of CalibrationBurn
// sweeps and CalibrationDraws draws each, about a sixth of default MCMC's
// replica sweeps. The budget was chosen on tuning data sets of
// benchmarks/vicheck (seeds 201-203), which measures it on others. With
// fewer than two distinct states every chain starts in the same mode;
// prefer the defaults then (see vi.PolishReport.States).
func CalibrationOptions(states []*models.State, seed uint64) ModelOptions {
	return ModelOptions{Seed: seed, Inits: states, Temperatures: CalibrationTemperatures, Burn: CalibrationBurn, Draws: CalibrationDraws}
}

// ModelOptions are the settings of RunModel. The zero value gives the
// defaults, which suit small models; every field says what 0 means.
type ModelOptions struct {
	Chains  int    // independent chains; 0 means 4
	Burn    int    // sweeps discarded per chain; 0 means 1000, a negative value none
	Draws   int    // draws recorded per chain; 0 means 1000
	Thin    int    // sweeps between draws; 0 means 1
	Seed    uint64 // master seed: results depend on it alone
	Workers int    // chains run at once; 0 means GOMAXPROCS

	// Discard is the share of each chain's recorded draws discarded as
	// burn-in after the run, in [0, 1): the posterior, the log-likelihood
	// traces and the diagnostics use the draws after the first
	// ⌊Discard·n⌋ of each chain's n (after a budget has cut the chains to
	// the same length), at least one. It is the burn-in of a run whose
	// length is not known ahead, one that a Budget ends; Burn still
	// discards a fixed number of sweeps first. 0 discards none.
	Discard float64

	// Record, if not nil, names the sites whose draws are recorded; the
	// Posterior then has entries for those sites only. The sites not named
	// are sampled as usual but cost neither the memory of their draws nor
	// the time of their summaries and diagnostics, which for a site of
	// thousands of coordinates that the caller does not need (a nuisance
	// parameter) can exceed the sampling's. The log-likelihood trace
	// (ModelResult.LogLik) is always recorded. nil records every site.
	Record []string

	// LogLikDiagnostics, if true, computes R̂ and ESS on the
	// log-likelihood trace alone, and every recorded site reports those
	// (RealPosterior.RHat and ESS stay nil), instead of the worst over
	// every real coordinate and every free row of a permutation: one
	// diagnosis instead of one per coordinate and row, each of which costs
	// O(n log n) for n draws.
	LogLikDiagnostics bool

	// Temperatures is the number of tempered replicas per chain; 0 means 8
	// for a model with permutation sites and 1 (no tempering) otherwise.
	// BetaMin is the hottest inverse temperature of the geometric ladder;
	// 0 means 0.01. Ladder, if not nil, gives the inverse temperatures
	// explicitly (starting at 1, strictly decreasing) and overrides both.
	Temperatures int
	BetaMin      float64
	Ladder       []float64

	// BlockMoves is the number of block proposals per permutation per
	// sweep; 0 means ⌈f/2⌉ for f free rows, and a negative value turns
	// block moves off. MaxBlock is the largest block; 0 means 4.
	BlockMoves int
	MaxBlock   int

	// HMC settings for the real sites moved by HMC; the zero value gives
	// HMCOptions' defaults (identity mass matrix; set DiagonalMass for
	// sites on very different scales), and Adapt is set to the burn-in.
	HMC HMCOptions

	// Kernels chooses, by site name, how a site is moved; sites not named
	// get KernelAuto.
	Kernels map[string]SiteKernel

	// Init, if not nil, gives initial values by site name for every chain
	// and replica; sites it does not name start from a random admitted
	// permutation or a prior draw.
	Init *models.State
	// Inits, if not empty, gives every chain initial values of its own:
	// chain c starts from Inits[c mod len(Inits)] (every replica of it),
	// with the same rules as Init; Init and Inits cannot both be set. The
	// polished states of a variational fit (vi.PolishReport.States) are
	// the intended use: chains started in the posterior's modes need a
	// short burn-in only, which calibrates VI's marginals at a fraction of
	// a cold start's cost (see the package documentation).
	Inits []*models.State

	// Progress, if not nil, is called as the chains advance.
	Progress func(Progress)
	// Trace, if not nil, is called every TraceEvery sweeps of each chain
	// (burn-in included), or about a hundred times per chain when
	// TraceEvery is 0, with the chain's current β = 1 state (see
	// TracePoint), for curves of accuracy against time; calls are
	// serialized with each other and with Progress.
	Trace      func(TracePoint)
	TraceEvery int

	// Budget, if > 0, bounds the wall time of the set-up and the sampling
	// (from RunModel's start): the chains
	// then run all at once (whatever Workers says, so that none waits for
	// another's end), each stops before a sweep that would end after the
	// budget if it took as long as the longest of the chain's latest four,
	// and the draws every chain has recorded by then (the shortest chain's
	// number, at least one after the burn-in) make the posterior; Draws
	// bounds them. The summaries and diagnostics of the draws come after
	// the budget (see Record and LogLikDiagnostics for their cost). A
	// budget makes the result depend on the machine's speed;
	// ModelResult.BudgetExhausted, Sweeps, ChainSweeps and Draws say what
	// it allowed, and a budget that ends before every chain has recorded a
	// draw is a *BudgetError. A context deadline instead cancels the run
	// with an error.
	Budget time.Duration
	// Reserve, if not nil, is the time a Budget keeps at its end for what
	// follows the sampling, as a function of the draws a chain has
	// recorded: the summaries of them in RunModel (which grow with the
	// draws) and the caller's own use of the result. Each chain then
	// stops before a sweep that would leave less than Reserve(draws). It
	// is called from the chains' goroutines, concurrently.
	Reserve func(draws int) time.Duration
}

// BudgetError is the error of RunModel when its Budget ran out before every
// chain had finished its burn-in and recorded a draw.
type BudgetError struct {
	Budget time.Duration
	Sweeps int // the fewest sweeps a chain completed
	Need   int // the sweeps a chain needs for its first draw: the burn-in and Thin
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("mcmc: RunModel: the budget of %v ran out before every chain had finished its burn-in and recorded a draw (%d of the %d sweeps needed); give more time or a shorter Burn",
		e.Budget, e.Sweeps, e.Need)
}

// TracePoint is chain Chain's state after Sweep sweeps (burn-in included),
// Elapsed after RunModel began.
type TracePoint struct {
	Chain, Sweep int
	Elapsed      time.Duration
	// State is a copy of the β = 1 replica's state, the caller's to keep.
	State *models.State
	// LogLik is its log-likelihood (the collapsed one for a Collapser), NaN
	// when the chain has not evaluated it since its last move.
	LogLik float64
}

// ModelResult is the output of RunModel.
type ModelResult struct {
	// Posterior holds the draws of the β = 1 replica of every chain,
	// pooled, with R̂ and ESS per site, and warnings where they are poor.
	Posterior *models.Posterior
	// Acceptance holds the acceptance counts after burn-in per move kind,
	// summed over chains and permutations: "swap P", "block P", "hmc",
	// "gibbs c", "collapsed" for the β = 1 replica, the same names with
	// " @β=0.52" for the tempered replicas, and "exchange 1↔0.52" for each
	// adjacent pair of the ladder.
	Acceptance []StageStats
	// Ladder is the inverse temperatures used, Ladder[0] = 1.
	Ladder []float64
	// StepSize is the adapted HMC step size at each temperature, averaged
	// over chains; nil when no site moves by HMC.
	StepSize []float64
	// LogLik[c] is the trace of the log-likelihood of chain c's recorded
	// draws that the posterior holds (the collapsed one when the model is
	// a Collapser).
	LogLik [][]float64
	// Sweeps is the number of sweeps per chain, burn-in included, Draws
	// the number of draws per chain that the posterior holds (after
	// Discard), and Wall the elapsed time. With a budget that ran out
	// (BudgetExhausted) Sweeps is the fewest any chain completed, and
	// ChainSweeps[c] is the number chain c completed (every entry Sweeps
	// otherwise).
	Sweeps, Draws   int
	ChainSweeps     []int
	Wall            time.Duration
	BudgetExhausted bool
}

// RunModel samples the posterior of m by MCMC and returns it as a
// models.Posterior, so that it can be compared with vi.FitModel and
// models.Exact. See the package documentation ("Running a model") for the
// moves and the diagnostics.
//
// Permutation priors must be tractable: a site with a
// models.GumbelSinkhornPrior is an error naming it. By-name options
// (Kernels, Init) must name sites of the model. The chains call m's methods
// from several goroutines at once, one per chain, each with its own tape,
// so m must not change shared state when evaluated. The result depends on
// o.Seed alone, not on Workers or GOMAXPROCS.
func RunModel(ctx context.Context, m models.Model, o ModelOptions) (*ModelResult, error) {
	began := time.Now()
	plan, err := newPlan(m, o)
	if err != nil {
		return nil, err
	}
	sm := Sampler[*chainState]{
		Chains: plan.chains, Burn: plan.burn, Samples: plan.draws, Thin: plan.thin,
		Seed: o.Seed, Workers: o.Workers, Progress: o.Progress,
		Init:   plan.initChain,
		Record: plan.record,
	}
	if o.Trace != nil {
		sm.ObserveEvery = o.TraceEvery
		sm.Observe = func(c, sweep int, cs *chainState) {
			r := cs.reps[0]
			ll := math.NaN()
			if r.llOK {
				ll = r.ll
			}
			o.Trace(TracePoint{Chain: c, Sweep: sweep, Elapsed: time.Since(began), State: r.s.Clone(), LogLik: ll})
		}
	}
	if o.Budget > 0 {
		sm.Deadline, sm.Reserve = began.Add(o.Budget), o.Reserve
		sm.Workers = plan.chains
	}
	res, err := sm.Run(ctx)
	if err != nil {
		return nil, fmt.Errorf("mcmc: RunModel: %w", err)
	}
	sweeps := make([]int, len(res.Chains))
	exhausted := false
	for c, ch := range res.Chains {
		sweeps[c] = ch.Sweeps
		exhausted = exhausted || ch.Sweeps < plan.burn+plan.draws*plan.thin
	}
	if exhausted {
		if err := truncateChains(res); err != nil {
			return nil, &BudgetError{Budget: o.Budget, Sweeps: slices.Min(sweeps), Need: plan.burn + plan.thin}
		}
	}
	recorded := len(res.Chains[0].Trace)
	out, err := plan.result(res)
	if err != nil {
		return nil, err
	}
	out.ChainSweeps = sweeps
	if exhausted {
		out.BudgetExhausted = true
		out.Sweeps = slices.Min(sweeps)
		held := fmt.Sprintf("the first %d draws of each chain", out.Draws)
		if out.Draws < recorded {
			held = fmt.Sprintf("draws %d to %d of each chain (Discard)", recorded-out.Draws+1, recorded)
		}
		out.Posterior.Notes = append(out.Posterior.Notes, fmt.Sprintf(
			"the budget of %v stopped the chains after %d sweeps at least; the posterior holds %s", o.Budget, out.Sweeps, held))
	}
	return out, nil
}

// truncateChains cuts every chain's trace to the shortest one's length, so
// that the chains a budget stopped at different sweeps can be pooled and
// diagnosed, or reports that some chain recorded no draw.
func truncateChains[S any](res *Result[S]) error {
	nd := len(res.Chains[0].Trace)
	for _, ch := range res.Chains {
		nd = min(nd, len(ch.Trace))
	}
	if nd == 0 {
		return errors.New("a chain recorded no draw")
	}
	for c := range res.Chains {
		res.Chains[c].Trace = res.Chains[c].Trace[:nd]
	}
	return nil
}

// plan is RunModel's validated configuration, shared read-only by the
// chains.
type plan struct {
	m        models.Model
	spec     *models.Spec
	o        ModelOptions
	chains   int
	burn     int
	draws    int
	thin     int
	ladder   []float64
	maxBlock int

	perms []*models.PermSpec // recorded permutation sites, in declaration order
	reals []*models.RealSite // recorded real sites, in declaration order

	col       models.Collapser    // nil unless the permutation moves are collapsed
	collapsed []string            // sites integrated out
	conj      models.Conjugate    // nil when no site is drawn by Gibbs
	sd        models.SwapDeltaer  // nil when swaps must evaluate the model
	prep      models.SwapPreparer // nil when swaps do not prepare their deltas
	gibbs     []*models.RealSite  // drawn by Gibbs at β = 1
	hmcCold   []*models.RealSite  // moved by HMC at β = 1
	hmcHot    []*models.RealSite  // moved by HMC at β < 1
	notes     []string
}

func newPlan(m models.Model, o ModelOptions) (*plan, error) {
	spec, err := models.Check(m)
	if err != nil {
		return nil, fmt.Errorf("mcmc: RunModel: %w", err)
	}
	pl := &plan{m: m, spec: spec, o: o}
	switch {
	case o.Budget < 0:
		return nil, fmt.Errorf("mcmc: RunModel: Budget must be >= 0, got %v", o.Budget)
	case o.Chains < 0, o.Draws < 0, o.Thin < 0, o.Temperatures < 0, o.MaxBlock < 0, o.TraceEvery < 0:
		return nil, fmt.Errorf("mcmc: RunModel: Chains, Draws, Thin, Temperatures, MaxBlock and TraceEvery must be >= 0, got %d, %d, %d, %d, %d, %d",
			o.Chains, o.Draws, o.Thin, o.Temperatures, o.MaxBlock, o.TraceEvery)
	case !(o.Discard >= 0 && o.Discard < 1):
		return nil, fmt.Errorf("mcmc: RunModel: Discard must be in [0, 1), got %v", o.Discard)
	case o.MaxBlock == 1:
		return nil, errors.New("mcmc: RunModel: MaxBlock must be >= 2 (or 0 for the default)")
	case o.BetaMin < 0 || o.BetaMin > 1 || math.IsNaN(o.BetaMin):
		return nil, fmt.Errorf("mcmc: RunModel: BetaMin must be in (0, 1], got %v", o.BetaMin)
	}
	pl.chains = orDefault(o.Chains, DefaultChains)
	pl.burn = max(orDefault(o.Burn, DefaultBurn), 0)
	pl.draws = orDefault(o.Draws, DefaultDraws)
	pl.thin = orDefault(o.Thin, 1)
	pl.maxBlock = orDefault(o.MaxBlock, DefaultMaxBlock)

	for _, ps := range spec.Perms {
		if ps.Prior != nil && !ps.Prior.Tractable() {
			return nil, fmt.Errorf("mcmc: RunModel: site %q: prior %v has no tractable mass on permutations; MCMC needs UniformPerm or another tractable prior (use package vi for this model)", ps.Name, ps.Prior)
		}
	}
	if err := pl.checkKernels(); err != nil {
		return nil, err
	}
	if err := pl.checkRecord(); err != nil {
		return nil, err
	}
	if err := pl.checkInit(); err != nil {
		return nil, err
	}
	if err := pl.assignRealKernels(); err != nil {
		return nil, err
	}
	if err := pl.setLadder(); err != nil {
		return nil, err
	}
	if pl.col == nil {
		pl.sd, _ = m.(models.SwapDeltaer)
		pl.prep, _ = m.(models.SwapPreparer)
	}
	return pl, nil
}

// checkRecord validates Record and sets the sites recorded.
func (pl *plan) checkRecord() error {
	if pl.o.Record == nil {
		pl.perms, pl.reals = pl.spec.Perms, pl.spec.Reals
		return nil
	}
	if err := pl.spec.CheckNames("mcmc: RunModel: Record", pl.o.Record); err != nil {
		return err
	}
	for _, ps := range pl.spec.Perms {
		if slices.Contains(pl.o.Record, ps.Name) {
			pl.perms = append(pl.perms, ps)
		}
	}
	for _, rs := range pl.spec.Reals {
		if slices.Contains(pl.o.Record, rs.Name) {
			pl.reals = append(pl.reals, rs)
		}
	}
	return nil
}

func orDefault(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

func (pl *plan) checkKernels() error {
	names := make([]string, 0, len(pl.o.Kernels))
	for n := range pl.o.Kernels {
		names = append(names, n)
	}
	slices.Sort(names)
	if err := pl.spec.CheckNames("mcmc: RunModel: Kernels", names); err != nil {
		return err
	}
	for _, n := range names {
		k := pl.o.Kernels[n]
		site, _ := pl.spec.Lookup(n)
		_, isPerm := site.(*models.PermSite)
		switch {
		case k < KernelAuto || k > KernelSwapOnly:
			return fmt.Errorf("mcmc: RunModel: Kernels[%q] = %v is not a kernel", n, k)
		case isPerm && (k == KernelHMC || k == KernelGibbs):
			return fmt.Errorf("mcmc: RunModel: Kernels[%q] = %v, but %q is a permutation site", n, k, n)
		case !isPerm && k == KernelSwapOnly:
			return fmt.Errorf("mcmc: RunModel: Kernels[%q] = %v, but %q is a real site", n, k, n)
		}
	}
	return nil
}

func (pl *plan) checkInit() error {
	if pl.o.Init != nil && len(pl.o.Inits) > 0 {
		return errors.New("mcmc: RunModel: set Init or Inits, not both")
	}
	if err := pl.checkState("Init", pl.o.Init); err != nil {
		return err
	}
	for c, in := range pl.o.Inits {
		if in == nil {
			return fmt.Errorf("mcmc: RunModel: Inits[%d] is nil", c)
		}
		if err := pl.checkState(fmt.Sprintf("Inits[%d]", c), in); err != nil {
			return err
		}
	}
	return nil
}

// checkState validates the initial state in, named what in errors.
func (pl *plan) checkState(what string, in *models.State) error {
	if in == nil {
		return nil
	}
	return pl.spec.CheckState("mcmc: RunModel: "+what, in, false)
}

// assignRealKernels decides for every real site whether it is collapsed,
// drawn by Gibbs or moved by HMC, at β = 1 and at β < 1.
func (pl *plan) assignRealKernels() error {
	isCollapsed := map[string]bool{}
	if col, ok := pl.m.(models.Collapser); ok && len(pl.spec.Perms) > 0 {
		names := col.CollapsedSites()
		if err := pl.spec.CheckNames("mcmc: RunModel: Collapser.CollapsedSites", names); err != nil {
			return err
		}
		for _, n := range names {
			site, _ := pl.spec.Lookup(n)
			if _, ok := site.(*models.RealSite); !ok {
				return fmt.Errorf("mcmc: RunModel: Collapser.CollapsedSites names %q, which is a permutation site", n)
			}
			if pl.o.Kernels[n] != KernelAuto {
				return fmt.Errorf("mcmc: RunModel: Kernels[%q] = %v, but the model integrates %q out (Collapser)", n, pl.o.Kernels[n], n)
			}
			isCollapsed[n] = true
		}
		if len(names) > 0 {
			pl.col, pl.collapsed = col, slices.Clone(names)
		}
	}
	isConj := map[string]bool{}
	if cj, ok := pl.m.(models.Conjugate); ok {
		names := cj.ConjugateSites()
		if err := pl.spec.CheckNames("mcmc: RunModel: Conjugate.ConjugateSites", names); err != nil {
			return err
		}
		for _, n := range names {
			isConj[n] = true
		}
		pl.conj = cj
	}
	for _, rs := range pl.spec.Reals {
		k := pl.o.Kernels[rs.Name]
		switch {
		case isCollapsed[rs.Name]:
		case k == KernelGibbs && !isConj[rs.Name]:
			return fmt.Errorf("mcmc: RunModel: Kernels[%q] = Gibbs, but the model does not list %q in Conjugate.ConjugateSites", rs.Name, rs.Name)
		case isConj[rs.Name] && k != KernelHMC:
			pl.gibbs = append(pl.gibbs, rs)
			pl.hmcHot = append(pl.hmcHot, rs)
		default:
			pl.hmcCold = append(pl.hmcCold, rs)
			pl.hmcHot = append(pl.hmcHot, rs)
		}
	}
	if len(pl.gibbs) == 0 {
		pl.conj = nil
	}
	return nil
}

func (pl *plan) setLadder() error {
	o := pl.o
	if o.Ladder != nil {
		if err := checkLadder(o.Ladder); err != nil {
			return fmt.Errorf("mcmc: RunModel: Ladder: %w", err)
		}
		pl.ladder = slices.Clone(o.Ladder)
	} else {
		k := o.Temperatures
		if k == 0 {
			k = 1
			if len(pl.spec.Perms) > 0 {
				k = DefaultTemperatures
			}
		}
		betaMin := o.BetaMin
		if betaMin == 0 {
			betaMin = DefaultBetaMin
		}
		var err error
		if pl.ladder, err = GeometricLadder(k, betaMin); err != nil {
			return fmt.Errorf("mcmc: RunModel: %w", err)
		}
	}
	// A collapsed model with real sites left over cannot be tempered: the
	// hot replicas would need their tempered conditionals, which a
	// Collapser does not provide.
	if len(pl.ladder) > 1 && pl.col != nil && len(pl.hmcHot) > 0 {
		if o.Ladder != nil || o.Temperatures > 1 {
			return fmt.Errorf("mcmc: RunModel: cannot temper a Collapser model with real sites that are not collapsed (%s)", pl.hmcHot[0].Name)
		}
		pl.ladder = pl.ladder[:1]
		pl.notes = append(pl.notes, "tempering is off: the model integrates some real sites out (Collapser) but not "+pl.hmcHot[0].Name+", and the hot replicas would need its tempered conditional")
	}
	return nil
}

// chainState is the state of one chain: one replica per temperature.
type chainState struct {
	reps []*replica // reps[k] runs at ladder[k]; reps[0] is the target
	ev   *evaluator
	hmc  []*HMC // per temperature, nil where no site moves by HMC
}

// replica is one tempered copy of the model state. Exchanges swap s, ll and
// llOK between replicas; beta stays with the position in the ladder.
type replica struct {
	beta float64
	s    *models.State
	ll   float64 // log-likelihood of s (collapsed when the plan is), valid if llOK
	llOK bool
	// gen counts the changes of s: every stage that may have changed it
	// (and an accepted exchange, which replaces it) increments gen, so a
	// swap delta prepared at generation g (models.SwapPreparer) is valid
	// while gen is still g, or after changes of its own permutation only.
	gen uint64
}

// evaluator computes log-likelihoods for one chain; it owns the chain's
// tape.
type evaluator struct {
	pl *plan
	t  *ad.Tape
}

// logLik returns the log-likelihood the permutation moves target: the
// collapsed one when the model integrates sites out, the full one
// otherwise.
func (ev *evaluator) logLik(s *models.State) (float64, error) {
	var v float64
	var err error
	if ev.pl.col != nil {
		v, err = ev.pl.col.CollapsedLogLik(s)
	} else {
		v, err = models.LogLikState(ev.pl.m, ev.pl.spec, ev.t, s)
	}
	if err == nil && math.IsNaN(v) {
		err = errors.New("log-likelihood is NaN")
	}
	return v, err
}

func (ev *evaluator) ensure(r *replica) error {
	if r.llOK {
		return nil
	}
	v, err := ev.logLik(r.s)
	if err != nil {
		return err
	}
	r.ll, r.llOK = v, true
	return nil
}

// permTarget adapts one permutation b of a site in one replica to
// PermTarget. The permutation the kernels move is r.s.Perms[site][b]
// itself, so LogDensity evaluates the replica's state. The kernels
// (SwapMH, BlockMH) call LogDensity first at the current state and then at
// the proposal; the first value is the replica's cached log-likelihood when
// valid, and the second is kept so that an accepted move updates the cache
// without another evaluation.
type permTarget struct {
	ev    *evaluator
	r     *replica
	site  string
	b     int
	prior models.PermPrior // nil for uniform

	prep *preparedSwap // with a models.SwapPreparer: the delta of the swaps

	calls   int
	pending float64
	err     error
}

// preparedSwap is a swap delta of the model's SwapPreparer and the
// generation of the replica it was prepared at.
type preparedSwap struct {
	delta func(p perm.Perm, i, k int) float64
	gen   uint64
}

func (pt *permTarget) reset() { pt.calls, pt.err = 0, nil }

func (pt *permTarget) LogDensity(p perm.Perm) float64 {
	pt.calls++
	var v float64
	if pt.calls == 1 && pt.r.llOK {
		v = pt.r.ll
	} else {
		var err error
		if v, err = pt.ev.logLik(pt.r.s); err != nil {
			pt.err = err
			return math.NaN()
		}
	}
	if pt.calls == 1 {
		pt.r.ll, pt.r.llOK = v, true
	} else {
		pt.pending = v
	}
	lp := pt.r.beta * v
	if pt.prior != nil {
		lp += pt.prior.LogMass(p)
	}
	return lp
}

// deltaTarget adds the model's swap fast path to permTarget: the delta of
// its SwapPreparer, prepared again whenever the replica's state has changed
// other than by this permutation's swaps, or else its SwapDelta.
type deltaTarget struct{ *permTarget }

func (dt deltaTarget) SwapDelta(p perm.Perm, i, j int) float64 {
	pt := dt.permTarget
	var d float64
	if ps := pt.prep; ps != nil {
		if ps.delta == nil || ps.gen != pt.r.gen {
			delta, err := pt.ev.pl.prep.PrepareSwap(pt.r.s, pt.site, pt.b)
			if err == nil && delta == nil {
				err = errors.New("PrepareSwap returned a nil function")
			}
			if err != nil {
				pt.err = fmt.Errorf("PrepareSwap: %w", err)
				return math.NaN()
			}
			ps.delta, ps.gen = delta, pt.r.gen
		}
		d = ps.delta(p, i, j)
	} else {
		var err error
		if d, err = pt.ev.pl.sd.SwapDelta(pt.r.s, pt.site, pt.b, i, j); err != nil {
			pt.err = err
			return math.NaN()
		}
	}
	d *= pt.r.beta
	if pt.prior != nil {
		before := pt.prior.LogMass(p)
		p[i], p[j] = p[j], p[i]
		d += pt.prior.LogMass(p) - before
		p[i], p[j] = p[j], p[i]
	}
	return d
}

// permKernel is SwapMH or BlockMH.
type permKernel interface {
	Step(rng *rand.Rand, p perm.Perm) (bool, error)
}

// permStage wraps a permutation kernel of one replica as a stage of the
// chain, keeping the replica's cached log-likelihood in step.
func permStage(name string, k permKernel, pt *permTarget, repeat int) Stage[*chainState] {
	return Stage[*chainState]{Name: name, Repeat: repeat, Kernel: KernelFunc[*chainState](func(rng *rand.Rand, _ *chainState) (bool, error) {
		pt.reset()
		acc, err := k.Step(rng, pt.r.s.Perms[pt.site][pt.b])
		if pt.err != nil {
			return false, fmt.Errorf("site %q permutation %d: %w", pt.site, pt.b, pt.err)
		}
		if err != nil {
			return false, err
		}
		if acc {
			if pt.calls == 2 {
				pt.r.ll = pt.pending
			} else {
				pt.r.llOK = false
			}
			// The permutation moved: every other prepared delta of the
			// replica is stale, and this stage's own stays valid (a swap
			// kernel prepared it, if at all, in this step).
			pt.r.gen++
			if pt.prep != nil && pt.prep.delta != nil {
				pt.prep.gen = pt.r.gen
			}
		}
		return acc, nil
	})}
}

func (pl *plan) initChain(c int, rng *rand.Rand) (*chainState, []Stage[*chainState], error) {
	cs := &chainState{ev: &evaluator{pl: pl, t: ad.NewTape()}, hmc: make([]*HMC, len(pl.ladder))}
	for k, beta := range pl.ladder {
		s, err := models.NewState(pl.spec, rng)
		if err != nil {
			return nil, nil, err
		}
		in := pl.o.Init
		if len(pl.o.Inits) > 0 {
			in = pl.o.Inits[c%len(pl.o.Inits)]
		}
		if in != nil {
			for n, ps := range in.Perms {
				for b, p := range ps {
					s.Perms[n][b] = p.Clone()
				}
			}
			for n, x := range in.Reals {
				s.Reals[n] = slices.Clone(x)
			}
		}
		if k == 0 && pl.col != nil {
			// Start the collapsed sites from their conditional, so that
			// the first recorded draws are consistent.
			if err := pl.col.SampleCollapsed(rng, s); err != nil {
				return nil, nil, fmt.Errorf("SampleCollapsed: %w", err)
			}
		}
		cs.reps = append(cs.reps, &replica{beta: beta, s: s})
	}

	var stages []Stage[*chainState]
	// Exchanges first, so that the β = 1 replica's last moves of the sweep
	// (in particular the draw of collapsed sites) are made on the state it
	// ends the sweep with.
	for k := 0; k+1 < len(cs.reps); k++ {
		lo, hi := cs.reps[k], cs.reps[k+1]
		stages = append(stages, Stage[*chainState]{
			Name: fmt.Sprintf("exchange %.3g↔%.3g", lo.beta, hi.beta),
			Kernel: KernelFunc[*chainState](func(rng *rand.Rand, cs *chainState) (bool, error) {
				if err := cs.ev.ensure(lo); err != nil {
					return false, err
				}
				if err := cs.ev.ensure(hi); err != nil {
					return false, err
				}
				if !exchangeAccept(rng, lo.beta, hi.beta, lo.ll, hi.ll) {
					return false, nil
				}
				lo.s, hi.s = hi.s, lo.s
				lo.ll, hi.ll = hi.ll, lo.ll
				lo.llOK, hi.llOK = hi.llOK, lo.llOK
				lo.gen++
				hi.gen++
				return true, nil
			}),
		})
	}
	for k, r := range cs.reps {
		suffix := ""
		if k > 0 {
			suffix = fmt.Sprintf(" @β=%.3g", r.beta)
		}
		ps, err := pl.permStages(cs.ev, r, suffix)
		if err != nil {
			return nil, nil, err
		}
		stages = append(stages, ps...)
		if k == 0 {
			stages = append(stages, pl.coldRealStages(r)...)
		}
		sites := pl.hmcHot
		if k == 0 {
			sites = pl.hmcCold
		}
		if len(sites) > 0 {
			st, h, err := pl.hmcStage(cs.ev, r, sites, "hmc"+suffix)
			if err != nil {
				return nil, nil, err
			}
			cs.hmc[k] = h
			stages = append(stages, st)
		}
	}
	if len(stages) == 0 {
		return nil, nil, errors.New("nothing to sample: no permutation has two free rows and there are no real sites")
	}
	return cs, stages, nil
}

// permStages returns the swap and block stages of every permutation of
// every site for replica r.
func (pl *plan) permStages(ev *evaluator, r *replica, suffix string) ([]Stage[*chainState], error) {
	var stages []Stage[*chainState]
	for _, ps := range pl.spec.Perms {
		var prior models.PermPrior
		if ps.Prior != nil {
			if _, uniform := ps.Prior.(models.UniformPerm); !uniform {
				prior = ps.Prior
			}
		}
		for b := range ps.B() {
			fixed := make([]bool, ps.N)
			nfree := 0
			for i, f := range ps.Free[b] {
				fixed[i] = !f
				if f {
					nfree++
				}
			}
			if nfree < 2 {
				continue
			}
			var mask *perm.Mask
			if !ps.Full {
				mask = ps.Masks[b]
			}
			pt := &permTarget{ev: ev, r: r, site: ps.Name, b: b, prior: prior}
			var target PermTarget = pt
			switch {
			case pl.prep != nil:
				pt.prep = &preparedSwap{}
				target = deltaTarget{pt}
			case pl.sd != nil:
				target = deltaTarget{pt}
			}
			swap, err := NewSwapMH(ps.N, target, mask, fixed)
			if err != nil {
				return nil, err
			}
			stages = append(stages, permStage("swap "+ps.Name+suffix, swap, pt, nfree))
			nBlock := pl.o.BlockMoves
			if nBlock == 0 {
				nBlock = (nfree + 1) / 2
			}
			if nBlock > 0 && nfree >= 3 && pl.o.Kernels[ps.Name] != KernelSwapOnly {
				// The block kernel evaluates the target itself (a block
				// move is not a swap), so it gets the plain adapter.
				pt2 := &permTarget{ev: ev, r: r, site: ps.Name, b: b, prior: prior}
				block, err := NewBlockMH(ps.N, pt2, mask, fixed, pl.maxBlock)
				if err != nil {
					return nil, err
				}
				stages = append(stages, permStage("block "+ps.Name+suffix, block, pt2, nBlock))
			}
			if mp, ok := pl.m.(MoveProvider); ok {
				// The effective mask: fixed rows are pinned in it.
				for k, move := range mp.Moves(ps.Name, b) {
					pt3 := &permTarget{ev: ev, r: r, site: ps.Name, b: b, prior: prior}
					mk, err := NewMoveMH(ps.N, move, pt3, ps.Masks[b])
					if err != nil {
						return nil, fmt.Errorf("MoveProvider: site %q move %d: %w", ps.Name, k, err)
					}
					stages = append(stages, permStage(fmt.Sprintf("move %s %d%s", ps.Name, k, suffix), mk, pt3, 1))
				}
			}
		}
	}
	return stages, nil
}

// coldRealStages returns the draw of the collapsed sites and the Gibbs draws
// of the conjugate sites, for the β = 1 replica only.
func (pl *plan) coldRealStages(r *replica) []Stage[*chainState] {
	var stages []Stage[*chainState]
	if pl.col != nil {
		stages = append(stages, Stage[*chainState]{Name: "collapsed", Kernel: KernelFunc[*chainState](func(rng *rand.Rand, _ *chainState) (bool, error) {
			// The collapsed log-likelihood does not depend on the collapsed
			// sites, so the cache stays valid.
			if err := pl.col.SampleCollapsed(rng, r.s); err != nil {
				return false, fmt.Errorf("SampleCollapsed: %w", err)
			}
			r.gen++
			return true, nil
		})})
	}
	for _, rs := range pl.gibbs {
		name := rs.Name
		stages = append(stages, Stage[*chainState]{Name: "gibbs " + name, Kernel: KernelFunc[*chainState](func(rng *rand.Rand, _ *chainState) (bool, error) {
			if err := pl.conj.SampleConditional(rng, r.s, name); err != nil {
				return false, fmt.Errorf("SampleConditional(%q): %w", name, err)
			}
			r.llOK = false
			r.gen++
			return true, nil
		})})
	}
	return stages
}

// hmcStage returns an HMC stage moving the given real sites of replica r
// jointly under β·log p(y | s) + log p(sites), the gradient from the tape.
func (pl *plan) hmcStage(ev *evaluator, r *replica, sites []*models.RealSite, name string) (Stage[*chainState], *HMC, error) {
	names := make([]string, len(sites))
	dim := 0
	for i, rs := range sites {
		names[i] = rs.Name
		dim += rs.Size()
	}
	logDensity := func(x, grad []float64) (float64, error) {
		off := 0
		for _, rs := range sites {
			copy(r.s.Reals[rs.Name], x[off:off+rs.Size()])
			off += rs.Size()
		}
		t := ev.t
		t.Reset()
		z, leaves, err := models.HardSample(t, pl.spec, r.s, names...)
		if err != nil {
			return 0, err
		}
		obj := ad.Scale(ad.Sum(pl.m.LogLik(t, z)), r.beta)
		for _, rs := range sites {
			obj = ad.Add(obj, ad.Sum(rs.Prior.LogProbVar(leaves[rs.Name])))
		}
		if err := t.Backward(obj); err != nil {
			return 0, err
		}
		off = 0
		for _, rs := range sites {
			copy(grad[off:off+rs.Size()], leaves[rs.Name].Grad())
			off += rs.Size()
		}
		return obj.Item(), nil
	}
	ho := pl.o.HMC
	ho.Adapt = pl.burn
	h, err := NewHMC(dim, logDensity, ho)
	if err != nil {
		return Stage[*chainState]{}, nil, err
	}
	x := make([]float64, dim)
	// Unless HMC is the only move, the other moves change its density
	// (β·L depends on the permutations) between its steps.
	alone := len(pl.spec.Perms) == 0 && len(pl.gibbs) == 0 && len(pl.ladder) == 1
	st := Stage[*chainState]{Name: name, Kernel: KernelFunc[*chainState](func(rng *rand.Rand, _ *chainState) (bool, error) {
		off := 0
		for _, rs := range sites {
			copy(x[off:], r.s.Reals[rs.Name])
			off += rs.Size()
		}
		if !alone {
			h.forget()
		}
		acc, err := h.Step(rng, x)
		off = 0
		for _, rs := range sites {
			copy(r.s.Reals[rs.Name], x[off:off+rs.Size()])
			off += rs.Size()
		}
		// Even a rejected trajectory wrote its positions into the state on
		// the way.
		r.llOK = false
		r.gen++
		return acc, err
	})}
	return st, h, nil
}

// record appends the β = 1 replica's recorded permutations (site by site, b
// by b, row by row), its recorded real sites in declaration order, and its
// log-likelihood.
func (pl *plan) record(dst []float64, cs *chainState) []float64 {
	r := cs.reps[0]
	for _, ps := range pl.perms {
		for _, p := range r.s.Perms[ps.Name] {
			for _, c := range p {
				dst = append(dst, float64(c))
			}
		}
	}
	for _, rs := range pl.reals {
		dst = append(dst, r.s.Reals[rs.Name]...)
	}
	if err := cs.ev.ensure(r); err != nil {
		return append(dst, math.NaN())
	}
	return append(dst, r.ll)
}

// result turns the traces, which have the same length, into a ModelResult,
// after discarding the share Discard of each.
func (pl *plan) result(res *Result[*chainState]) (*ModelResult, error) {
	if drop := int(math.Floor(pl.o.Discard * float64(len(res.Chains[0].Trace)))); drop > 0 {
		for c := range res.Chains {
			res.Chains[c].Trace = res.Chains[c].Trace[drop:]
		}
	}
	out := &ModelResult{
		Ladder: slices.Clone(pl.ladder),
		Sweeps: pl.burn + pl.draws*pl.thin,
		Draws:  len(res.Chains[0].Trace),
		Wall:   res.Wall,
	}
	post := &models.Posterior{
		Method: "MCMC",
		Perms:  map[string]*models.PermPosterior{},
		Reals:  map[string]*models.RealPosterior{},
	}
	out.Posterior = post
	nc := len(res.Chains)
	nd := len(res.Chains[0].Trace)

	// Column layout of the trace, as written by record.
	col := 0
	llCol := 0
	for _, ps := range pl.perms {
		llCol += ps.B() * ps.N
	}
	for _, rs := range pl.reals {
		llCol += rs.Size()
	}
	llDraws, err := res.Draws(llCol)
	if err != nil {
		return nil, fmt.Errorf("mcmc: RunModel: %w", err)
	}
	for c, ch := range llDraws {
		for t, v := range ch {
			if math.IsNaN(v) {
				return nil, fmt.Errorf("mcmc: RunModel: chain %d draw %d: the log-likelihood could not be evaluated", c, t)
			}
		}
	}
	out.LogLik = llDraws
	llRHat, llESS := diagnose(llDraws)
	llStuck := math.IsNaN(llRHat) && stuckApart(llDraws)

	for _, ps := range pl.perms {
		b, n := ps.B(), ps.N
		draws := make([][]perm.Perm, 0, nc*nd)
		for _, ch := range res.Chains {
			for _, row := range ch.Trace {
				d := make([]perm.Perm, b)
				flat := make([]int, b*n)
				for k := range flat {
					flat[k] = int(row[col+k])
				}
				for k := range d {
					d[k] = flat[k*n : (k+1)*n : (k+1)*n]
				}
				draws = append(draws, d)
			}
		}
		// A large, sparsely masked site keeps its marginals on the
		// candidates (the same frequencies and mode), so that nothing
		// N × N is formed at scale.
		pats, err := ps.Patterns()
		if err != nil {
			return nil, fmt.Errorf("mcmc: RunModel: site %q: %w", ps.Name, err)
		}
		pp, err := models.PermPosteriorFromDrawsSparse(draws, pats, ps.Masks)
		if err != nil {
			return nil, fmt.Errorf("mcmc: RunModel: site %q: %w", ps.Name, err)
		}
		// Diagnostics on the indicators "row i of permutation k is on the
		// pooled mode's column", and on the log-likelihood trace.
		pp.RHat, pp.ESS = llRHat, llESS
		stuck := llStuck
		ind := make([][]float64, nc)
		for c := range ind {
			ind[c] = make([]float64, nd)
		}
		for k := range b {
			for i := range n {
				if pl.o.LogLikDiagnostics {
					break
				}
				if !ps.Free[k][i] {
					continue
				}
				for c := range nc {
					for t := range nd {
						ind[c][t] = 0
						if draws[c*nd+t][k][i] == pp.Mode[k][i] {
							ind[c][t] = 1
						}
					}
				}
				rh, es := diagnose(ind)
				stuck = stuck || math.IsNaN(rh) && stuckApart(ind)
				pp.RHat, pp.ESS = worse(pp.RHat, rh, pp.ESS, es)
			}
		}
		post.Perms[ps.Name] = pp
		col += b * n
		pl.warn(post, ps.Name, pp.RHat, pp.ESS, stuck)
	}
	for _, rs := range pl.reals {
		d := rs.Size()
		rp := &models.RealPosterior{
			Shape: slices.Clone(rs.Shape),
			Mean:  make([]float64, d), Std: make([]float64, d),
		}
		if !pl.o.LogLikDiagnostics {
			rp.RHat, rp.ESS = make([]float64, d), make([]float64, d)
		}
		for _, ch := range res.Chains {
			for _, row := range ch.Trace {
				rp.Draws = append(rp.Draws, slices.Clone(row[col:col+d]))
			}
		}
		worstR, worstE := math.NaN(), math.NaN()
		stuck := false
		if pl.o.LogLikDiagnostics {
			worstR, worstE, stuck = llRHat, llESS, llStuck
		}
		for j := range d {
			x, err := res.Draws(col + j)
			if err != nil {
				return nil, fmt.Errorf("mcmc: RunModel: %w", err)
			}
			mean, sd := meanStd(x)
			rp.Mean[j], rp.Std[j] = mean, sd
			if pl.o.LogLikDiagnostics {
				continue
			}
			rp.RHat[j], rp.ESS[j] = diagnose(x)
			stuck = stuck || math.IsNaN(rp.RHat[j]) && stuckApart(x)
			worstR, worstE = worse(worstR, rp.RHat[j], worstE, rp.ESS[j])
		}
		post.Reals[rs.Name] = rp
		col += d
		pl.warn(post, rs.Name, worstR, worstE, stuck)
	}

	// Acceptance by stage name, summed over permutations and chains.
	for _, st := range res.Acceptance() {
		if k := slices.IndexFunc(out.Acceptance, func(s StageStats) bool { return s.Name == st.Name }); k >= 0 {
			out.Acceptance[k].Steps += st.Steps
			out.Acceptance[k].Accepted += st.Accepted
		} else {
			out.Acceptance = append(out.Acceptance, st)
		}
	}
	if len(pl.hmcCold) > 0 || (len(pl.ladder) > 1 && len(pl.hmcHot) > 0) {
		out.StepSize = make([]float64, len(pl.ladder))
		for k := range pl.ladder {
			cnt := 0
			for _, ch := range res.Chains {
				if h := ch.Final.hmc[k]; h != nil {
					out.StepSize[k] += h.StepSize()
					cnt++
				}
			}
			out.StepSize[k] = out.StepSize[k] / float64(max(cnt, 1))
			if cnt == 0 {
				out.StepSize[k] = math.NaN()
			}
		}
	}
	post.Notes = append(post.Notes, pl.describe()...)
	return out, nil
}

// describe returns the notes that say what the sampler did.
func (pl *plan) describe() []string {
	var notes []string
	start := "random admitted permutations and prior draws"
	if pl.o.Init != nil {
		start = "Init for the sites it names, " + start + " for the others"
	} else if len(pl.o.Inits) > 0 {
		start = fmt.Sprintf("%d given states (Inits, chain c from Inits[c mod %d]) for the sites they name, %s for the others", len(pl.o.Inits), len(pl.o.Inits), start)
	}
	notes = append(notes, fmt.Sprintf("%d chains × %d draws (burn-in %d sweeps, thin %d), started from %s", pl.chains, pl.draws, pl.burn, pl.thin, start))
	if pl.o.Discard > 0 {
		notes = append(notes, fmt.Sprintf("the first %.3g of each chain's recorded draws discarded as burn-in (Discard)", pl.o.Discard))
	}
	if pl.o.Record != nil {
		var names []string
		for _, ps := range pl.perms {
			names = append(names, ps.Name)
		}
		for _, rs := range pl.reals {
			names = append(names, rs.Name)
		}
		notes = append(notes, fmt.Sprintf("draws recorded for sites %v only (Record)", names))
	}
	if pl.o.LogLikDiagnostics {
		notes = append(notes, "R̂ and ESS of the log-likelihood trace only (LogLikDiagnostics)")
	}
	if len(pl.ladder) > 1 {
		b := make([]string, len(pl.ladder))
		for k, v := range pl.ladder {
			b[k] = fmt.Sprintf("%.3g", v)
		}
		notes = append(notes, fmt.Sprintf("replica exchange over %d inverse temperatures β = [%s]; only β = 1 is recorded", len(pl.ladder), strings.Join(b, " ")))
	}
	if pl.col != nil {
		notes = append(notes, fmt.Sprintf("permutation moves target the collapsed likelihood (sites %v integrated out), which are then drawn from their conditional", pl.collapsed))
	}
	if len(pl.gibbs) > 0 {
		names := make([]string, len(pl.gibbs))
		for i, rs := range pl.gibbs {
			names[i] = rs.Name
		}
		notes = append(notes, fmt.Sprintf("Gibbs draws (the model's Conjugate) for %v", names))
	}
	return append(notes, pl.notes...)
}

// Thresholds for the warnings of RunModel.
const (
	warnRHat = 1.1
	warnESS  = 100
)

// warn adds the warnings about a site's worst R̂ and ESS. stuck reports
// that some summary of the site had an undefined (NaN) R̂ because each chain
// kept one value of it for all its draws while the chains did not all keep
// the same one (see stuckApart): chains stuck in different states, which
// is as bad as a large R̂. Chains that all sit on the same value (a
// posterior concentrated on one state) get no warning.
func (pl *plan) warn(post *models.Posterior, site string, rhat, ess float64, stuck bool) {
	const advice = "run longer (Burn, Draws), add temperatures (Temperatures, BetaMin) or block moves, or start from a better Init"
	switch {
	case rhat > warnRHat:
		post.Warnings = append(post.Warnings, fmt.Sprintf("chains disagree on site %s: R̂ %.3g > %.1f; %s", site, rhat, warnRHat, advice))
	case stuck:
		post.Warnings = append(post.Warnings, fmt.Sprintf("chains disagree on site %s: they are stuck in different states (each chain kept one value of a summary for all its draws, not the same in every chain, so R̂ is undefined); %s", site, advice))
	}
	if ess < warnESS {
		post.Warnings = append(post.Warnings, fmt.Sprintf("few effective draws on site %s: ESS %.0f < %d; run longer or thin less", site, ess, warnESS))
	}
}

// diagnose returns the rank-normalized split R̂ and the bulk ESS of
// draws[chain][draw], or NaN for both when they are undefined (constant
// draws, too few draws).
func diagnose(draws [][]float64) (rhat, ess float64) {
	r, err := RankRHat(draws)
	if err != nil {
		return math.NaN(), math.NaN()
	}
	e, err := BulkESS(draws)
	if err != nil {
		return r, math.NaN()
	}
	return r, e
}

// stuckApart reports whether every chain of draws[chain][draw] keeps one
// value for all its draws while the chains do not all keep the same one.
// The rank-normalized R̂ of such draws is +Inf or, when the folded draws
// are all equal (two values taken by equally many chains), NaN.
func stuckApart(draws [][]float64) bool {
	apart := false
	for _, ch := range draws {
		if len(ch) == 0 {
			return false
		}
		for _, v := range ch[1:] {
			if v != ch[0] {
				return false
			}
		}
		apart = apart || ch[0] != draws[0][0]
	}
	return apart
}

// worse combines diagnostics, keeping the largest R̂ and the smallest ESS
// and ignoring NaN.
func worse(r1, r2, e1, e2 float64) (float64, float64) {
	if math.IsNaN(r1) || r2 > r1 {
		r1 = r2
	}
	if math.IsNaN(e1) || e2 < e1 {
		e1 = e2
	}
	return r1, e1
}

func meanStd(x [][]float64) (mean, sd float64) {
	n := 0
	for _, c := range x {
		for _, v := range c {
			mean += v
			n++
		}
	}
	mean /= float64(n)
	for _, c := range x {
		for _, v := range c {
			sd += (v - mean) * (v - mean)
		}
	}
	if n > 1 {
		sd = math.Sqrt(sd / float64(n-1))
	}
	return mean, sd
}
