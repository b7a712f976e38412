package celegans

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad/optim"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/relax"
	"github.com/permlab/permlab/vi"
)

// Method names an inference method for the neural identification problem.
type Method string

// The methods of the seed paper's Tables 3 and 7.
const (
	GumbelSinkhorn      Method = "gumbel-sinkhorn"       // GS VI with the Gumbel-space KL
	GumbelSinkhornNoReg Method = "gumbel-sinkhorn-noreg" // the same without the KL term
	Rounding            Method = "rounding"              // rounding VI of Linderman et al. (2018)
	MCMC                Method = "mcmc"                  // Gibbs on W, swap Metropolis-Hastings on each P
)

// Methods lists every method in the order the paper's tables use.
var Methods = []Method{MCMC, Rounding, GumbelSinkhorn, GumbelSinkhornNoReg}

// ParseMethod returns the method with the given name.
func ParseMethod(s string) (Method, error) {
	for _, m := range Methods {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("celegans: unknown method %q (want one of %v)", s, Methods)
}

// Settings are the hyperparameters of the methods. DefaultSettings gives the
// package's defaults; the package documentation (Hyperparameters) says where
// they come from and how the settings of the reported tables were tuned.
type Settings struct {
	// Budget is the wall-clock time each method may use; 0 means no limit
	// (then Steps and Sweeps end the run).
	Budget time.Duration

	// Variational methods.
	Steps    int     // optimisation steps at most
	K        int     // samples per step
	LR       float64 // Adam learning rate
	Tau      float64 // Gumbel-Sinkhorn temperature
	TauPrior float64 // prior temperature of the Gumbel-space KL
	Iters    int     // Sinkhorn iterations L
	SigmaW   float64 // prior standard deviation of each non-zero entry of W
	// Draws is the number of hard draws of the fitted q(P_j) whose
	// assignment frequencies give the estimate (their masked matching).
	Draws int
	// DenseLayout stores the variational guides (Gumbel-Sinkhorn and
	// rounding) densely (vi.LayoutDense). By default vi.FitModel chooses,
	// and stores the guide of a worm whose candidate mask allows few
	// entries sparsely: the same method, with a cost that grows with the
	// candidates.
	DenseLayout bool

	// PlateauWindow, if > 0, restarts the Gumbel-Sinkhorn methods: once the
	// mean ELBO over a window of this many steps no longer beats the window
	// before by two standard errors, the fit is set aside and a fresh one
	// starts, while budget and Steps last; the fit with the best final
	// window gives the estimate. 0 runs a single fit.
	PlateauWindow int

	// Rounding VI (Linderman et al. 2018).
	RoundTau   float64 // interpolation towards the rounded permutation, in (0, 1]
	RoundNoise float64 // initial noise scale of Ψ
	PriorStd   float64 // standard deviation of each component of the entry prior

	// Rounding VI's learning rate; 0 means LR.
	RoundLR float64

	// MCMC.
	Sweeps int // sweeps at most per chain (a sweep: swap proposals on every worm, then a Gibbs draw of W)
	// Chains is the number of chains, run in parallel (one per core) and
	// pooled for the estimate; 0 means 1.
	Chains int
	// Thin is the number of sweeps between recorded draws; 0 means 10.
	Thin int
	// Estimator says which recorded draws give the estimate: EstimateHalf
	// ("" means it), EstimateTail or EstimateBest.
	Estimator string
	// BlockMoves is the number of block proposals (up to 4 rows
	// rearranged at once, mcmc.BlockMH) per worm and sweep, after that
	// worm's swaps; 0 means none.
	BlockMoves int

	// TraceEvery, if > 0, records the accuracy every TraceEvery steps or
	// sweeps (needs ground truth), for accuracy-against-time figures.
	TraceEvery int

	// NoPolish turns off the check of every method's estimate against the
	// model (see Solve), for the paper's plain methods.
	NoPolish bool
}

// DefaultSettings returns the default settings (see the package
// documentation, Hyperparameters). The reported tables pass tuned values
// for some of them as flags.
func DefaultSettings() Settings {
	return Settings{
		Steps: 5000, K: 1, LR: 0.1, Tau: 1, TauPrior: 1, Iters: 20,
		SigmaW: 0.2, Draws: 30, PlateauWindow: 50,
		RoundTau: 0.3, RoundNoise: 0.3, PriorStd: 0.2,
		Sweeps: 100000,
	}
}

func (s Settings) validate() error {
	switch {
	case s.Budget < 0:
		return fmt.Errorf("celegans: negative budget %v", s.Budget)
	case s.Steps < 1 || s.K < 1 || s.Iters < 1 || s.Draws < 1 || s.Sweeps < 1:
		return fmt.Errorf("celegans: Steps, K, Iters, Draws and Sweeps must be >= 1")
	case !(s.LR > 0), !(s.Tau > 0), !(s.TauPrior > 0), !(s.SigmaW > 0):
		return fmt.Errorf("celegans: LR, Tau, TauPrior and SigmaW must be > 0")
	case s.PlateauWindow < 0 || s.PlateauWindow == 1:
		return fmt.Errorf("celegans: PlateauWindow must be 0 (no restarts) or >= 2, got %d", s.PlateauWindow)
	case !(s.RoundTau > 0 && s.RoundTau <= 1), !(s.RoundNoise > 0), !(s.PriorStd > 0), !(s.RoundLR >= 0):
		return fmt.Errorf("celegans: need 0 < RoundTau <= 1, RoundNoise > 0, PriorStd > 0, RoundLR >= 0")
	case s.Chains < 0 || s.Thin < 0 || s.BlockMoves < 0:
		return fmt.Errorf("celegans: Chains, Thin and BlockMoves must be >= 0, got %d, %d, %d", s.Chains, s.Thin, s.BlockMoves)
	case s.Estimator != "" && !slices.Contains(estimators, s.Estimator):
		return fmt.Errorf("celegans: unknown MCMC estimator %q (want one of %v)", s.Estimator, estimators)
	}
	return nil
}

// TracePoint is the accuracy reached after Elapsed, at Step (VI steps of
// the running fit, or MCMC sweeps of the first chain; the final estimate
// repeats the last step).
type TracePoint struct {
	Elapsed         time.Duration
	Step            int
	Accuracy        float64
	AccuracyUnknown float64
}

// Outcome is the result of one method on one problem.
type Outcome struct {
	Method          Method
	Perms           []perm.Perm // identity estimate per worm
	Accuracy        float64     // over all neurons (NaN without truth)
	AccuracyUnknown float64     // over the neurons not known beforehand
	Elapsed         time.Duration
	Iterations      int // steps (VI, over all fits) or sweeps (MCMC, of the first chain) completed
	Fits            int // variational fits run: more than 1 after restarts (0 for MCMC)
	Trace           []TracePoint

	// MCMC only: sweeps over all chains, and the rank-normalised split R̂
	// and effective sample size of the log-likelihood trace over the draws
	// the estimate used (NaN for the variational methods, or with too few
	// draws).
	Sweeps    int
	RHat, ESS float64

	// PolishGain is how much polishing raised the collapsed likelihood
	// log p(Y | P) of the estimate, in nats (0 when it kept the method's
	// estimate; NaN when polishing was off).
	PolishGain float64
}

// Solve runs method m on p with settings s and seed, and estimates each
// worm's permutation. It stops at s.Budget (if set) or after s.Steps /
// s.Sweeps, whichever comes first, and returns ctx.Err() if ctx is
// cancelled.
//
// Every method runs through the general engines on the model of p (see
// NewModel): the variational methods through vi.FitModel, whose estimate
// is the masked matching of the assignment frequencies of s.Draws hard
// draws of the fitted q(P_j), and MCMC through mcmc.RunModel, whose
// estimate is the matching of the frequencies of its recorded draws (see
// Settings.Estimator). The engines' budgets keep the time their estimates
// need, measured on the problem: FitModel times one posterior draw before
// the first step and every step after, and stops when one more step would
// leave less than the draws need (see vi.ModelOptions.Budget); the MCMC
// run keeps the measured cost of its final matching.
//
// So Outcome.Elapsed exceeds s.Budget only when the last step or draw
// takes longer than those timed before it (under load, when other
// processes take the cores), or when the first step alone takes longer
// than the budget. If the budget ends before any step finished, Solve
// returns an error that says so ("budget 10ms too short: no step
// finished", matching ErrBudgetTooShort) rather than an estimate from the
// initial parameters.
func Solve(ctx context.Context, p *Problem, m Method, s Settings, seed uint64) (*Outcome, error) {
	if p == nil {
		return nil, errors.New("celegans: Solve: nil problem")
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	c := clock{start: time.Now(), budget: s.Budget}
	if s.Budget > 0 {
		c.deadline = c.start.Add(s.Budget)
	}
	// The method's own clock: without the share of the budget that the
	// polish takes.
	mc := c
	if !s.NoPolish && c.limited() {
		mc.budget = max(time.Duration((1-polishShare)*float64(s.Budget)), 1)
		mc.deadline = c.start.Add(mc.budget)
	}
	var out *Outcome
	var err error
	switch m {
	case GumbelSinkhorn, GumbelSinkhornNoReg, Rounding:
		out, err = solveVI(ctx, p, m, s, seed, mc)
	case MCMC:
		out, err = solveMCMC(ctx, p, s, seed, mc)
	default:
		return nil, fmt.Errorf("celegans: Solve: unknown method %q", m)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var short *tooShortError
		if errors.As(err, &short) {
			short.budget = s.Budget // the run's, not the method's share
			return nil, fmt.Errorf("celegans: Solve %s: %w", m, err)
		}
		return nil, err
	}
	out.Method = m
	out.PolishGain = math.NaN()
	if !s.NoPolish {
		if err := polish(ctx, p, s, out, c); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("celegans: Solve %s: polishing the estimate: %w", m, err)
		}
	}
	out.Elapsed = time.Since(c.start)
	out.Accuracy, out.AccuracyUnknown = math.NaN(), math.NaN()
	if p.Truth != nil {
		out.Accuracy, out.AccuracyUnknown, err = p.Accuracy(out.Perms)
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// polishShare is the share of a run's budget that polishing the estimate
// takes from the method.
const polishShare = 0.1

// polish improves out.Perms by the local search of models.Scorer on the
// model (swaps and 3-cycles within the masks, scored by the swap deltas
// with W at its conditional mean, which the model sets exactly) until it
// finds a local maximum or the run's budget ends, and keeps the result
// only if the collapsed likelihood log p(Y | P), W integrated out, rose:
// the search's own score, with W maximised rather than integrated, can
// favour labellings that W is fitted to, so the exact likelihood decides.
// out.PolishGain is the rise, 0 when the estimate was kept as it was.
func polish(ctx context.Context, p *Problem, s Settings, out *Outcome, c clock) error {
	model := NewModel(p)
	model.SigmaW = s.SigmaW
	col := Collapsed{model}
	t0 := time.Now()
	before, err := col.CollapsedLogLik(&models.State{Perms: map[string][]perm.Perm{SiteP: out.Perms}})
	if err != nil {
		return err
	}
	o := models.PolishOptions{Blocks: -1}
	if c.limited() {
		// Keep what the check by the collapsed likelihood costs: one more
		// evaluation like the one just timed.
		o.Deadline = c.deadline.Add(-time.Duration(reserveSafety * float64(time.Since(t0))))
	}
	sc, err := models.NewScorer(model)
	if err != nil {
		return err
	}
	res, err := sc.Polish(ctx, &models.State{Perms: map[string][]perm.Perm{SiteP: out.Perms}}, o)
	if err != nil {
		return err
	}
	cand := res.State.Perms[SiteP]
	after, err := col.CollapsedLogLik(&models.State{Perms: map[string][]perm.Perm{SiteP: cand}})
	if err != nil {
		return err
	}
	out.PolishGain = 0
	if after > before {
		out.Perms, out.PolishGain = cand, after-before
	}
	return nil
}

// clock is the wall-clock budget of one run.
type clock struct {
	start    time.Time
	deadline time.Time     // zero without a budget
	budget   time.Duration // 0 without a budget
}

// reserveSafety scales the measured cost of a final estimate into the time
// kept for it, against the cost growing under load after it was timed.
const reserveSafety = 1.25

// limited reports whether the run has a budget.
func (c clock) limited() bool { return !c.deadline.IsZero() }

// left returns the time left before the deadline (negative once past it).
func (c clock) left() time.Duration { return time.Until(c.deadline) }

// tooShort returns the error of a run whose budget ended before the first
// unit of work (a "step" or a "sweep") finished.
func (c clock) tooShort(unit string) error { return &tooShortError{c.budget, unit} }

// ErrBudgetTooShort is what Solve's error wraps (errors.Is) when the
// budget ended before the first step, sweep or draw finished, so that no
// estimate exists: a run of a grid that may record it as such rather than
// as a failure of the code.
var ErrBudgetTooShort = errors.New("celegans: budget too short for a first estimate")

// tooShortError says that a budget ended before any step finished.
type tooShortError struct {
	budget time.Duration
	unit   string
}

func (e *tooShortError) Error() string {
	return fmt.Sprintf("budget %v too short: no %s finished", e.budget, e.unit)
}

// Is makes the error match ErrBudgetTooShort.
func (e *tooShortError) Is(target error) bool { return target == ErrBudgetTooShort }

// matchAll returns the masked matching of each worm's score matrix.
func (p *Problem) matchAll(scores []*mat.Dense) ([]perm.Perm, error) {
	out := make([]perm.Perm, len(scores))
	for j, sc := range scores {
		q, err := relax.MatchingMasked(sc, p.Masks[j])
		if err != nil {
			return nil, fmt.Errorf("celegans: worm %d: %w", j, err)
		}
		out[j] = q
	}
	return out, nil
}

// tracer records accuracy against time when the problem has ground truth.
type tracer struct {
	p     *Problem
	every int
	start time.Time
	pts   []TracePoint
}

func (tr *tracer) add(perms []perm.Perm, step int) {
	all, unk, err := tr.p.Accuracy(perms)
	if err == nil {
		tr.pts = append(tr.pts, TracePoint{Elapsed: time.Since(tr.start), Step: step, Accuracy: all, AccuracyUnknown: unk})
	}
}

// solveVI runs a variational method through vi.FitModel on the model of p:
// a Gumbel-Sinkhorn guide (with or without its KL term, restarted on a
// plateau when s.PlateauWindow > 0) or a rounding guide for the
// permutations, a mean-field Normal guide for W, and the mode of the fitted
// posterior (the masked matching of the marginals of s.Draws hard draws) as
// the estimate. The fits are ranked by the mean ELBO of their last window
// of steps, and FitModel's Budget keeps the time the draws need.
func solveVI(ctx context.Context, p *Problem, m Method, s Settings, seed uint64, c clock) (*Outcome, error) {
	model := NewModel(p)
	model.SigmaW = s.SigmaW
	o := viOptions(m, s, seed)
	o.Budget = c.budget
	var tr *tracer
	if s.TraceEvery > 0 && p.Truth != nil {
		tr = &tracer{p: p, every: s.TraceEvery, start: c.start}
		o.TraceEvery = s.TraceEvery
		o.Trace = func(tp vi.TracePoint) { tr.add(tp.State.Perms[SiteP], tp.Step) }
	}
	res, err := vi.FitModel(ctx, model, o)
	if err != nil {
		return nil, err
	}
	if res.Steps == 0 {
		return nil, c.tooShort("step")
	}
	perms := res.Posterior.Perms[SiteP].Mode
	out := &Outcome{Perms: perms, Iterations: res.Steps, Fits: res.Starts, RHat: math.NaN(), ESS: math.NaN()}
	if tr != nil {
		last := 0
		if len(tr.pts) > 0 {
			last = tr.pts[len(tr.pts)-1].Step
		}
		tr.add(perms, last)
		out.Trace = tr.pts
	}
	return out, nil
}

// viOptions returns the options of vi.FitModel that variational method m
// runs with under settings s.
func viOptions(m Method, s Settings, seed uint64) vi.ModelOptions {
	o := vi.ModelOptions{
		Steps: s.Steps, K: s.K, LR: optim.Constant(s.LR), Iters: s.Iters,
		Seed: seed, InitScale: -1, // zero logits and W at its prior mean, as the paper's fits start
		ELBOSamples: -1, PosteriorDraws: s.Draws,
		Polish:        vi.Polish{Off: true},
		ProgressEvery: 1,
	}
	if s.DenseLayout {
		o.PermLayout = vi.LayoutDense
	}
	switch m {
	case Rounding:
		o.Guides = map[string]vi.GuideKind{SiteP: vi.GuideRounding}
		o.Rounding = vi.RoundingOptions{Tau: s.RoundTau, Std0: s.RoundNoise, PriorStd: s.PriorStd}
		if s.RoundLR > 0 {
			o.LR = optim.Constant(s.RoundLR)
		}
	default:
		o.Tau, o.TauPrior = optim.Constant(s.Tau), s.TauPrior
		o.NoKL = m == GumbelSinkhornNoReg
		if s.PlateauWindow > 0 {
			o.Restart = vi.Restart{Window: s.PlateauWindow, Z: plateauZ}
		}
	}
	return o
}

// plateauZ is the gain, in standard errors, that the mean ELBO of a window
// must show over the window before for a fit to count as still improving.
const plateauZ = 2
