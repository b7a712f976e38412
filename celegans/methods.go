package celegans

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad/optim"
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
// values used for the reported tables; the package documentation
// (Hyperparameters) says how they were chosen.
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
	WStd0    float64 // initial posterior standard deviation of W
	Mean     int     // samples averaged for the posterior mean of P

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
	Sweeps int // sweeps at most per chain (a sweep: Gibbs on W, then swap proposals on every worm)
	// Chains is the number of chains, run in parallel (one per core) and
	// pooled for the estimate; 0 means 1.
	Chains int
	// Thin is the number of sweeps between recorded draws; 0 means 10.
	Thin int
	// Estimator says which recorded draws give the estimate: EstimateHalf
	// ("" means it), EstimateTail or EstimateBest.
	Estimator string
	// BlockMoves is the number of block proposals (up to 4 rows
	// rearranged at once, mcmc.BlockMH) per worm and sweep, after the
	// swaps; 0 means none.
	BlockMoves int

	// TraceEvery, if > 0, records the accuracy every TraceEvery steps or
	// sweeps (needs ground truth), for accuracy-against-time figures.
	TraceEvery int
}

// DefaultSettings returns the settings used for the reported tables.
func DefaultSettings() Settings {
	return Settings{
		Steps: 5000, K: 1, LR: 0.1, Tau: 1, TauPrior: 1, Iters: 20,
		SigmaW: 0.2, WStd0: 0.05, Mean: 30, PlateauWindow: 50,
		RoundTau: 0.3, RoundNoise: 0.3, PriorStd: 0.2,
		Sweeps: 100000,
	}
}

func (s Settings) validate() error {
	switch {
	case s.Budget < 0:
		return fmt.Errorf("celegans: negative budget %v", s.Budget)
	case s.Steps < 1 || s.K < 1 || s.Iters < 1 || s.Mean < 1 || s.Sweeps < 1:
		return fmt.Errorf("celegans: Steps, K, Iters, Mean and Sweeps must be >= 1")
	case !(s.LR > 0), !(s.Tau > 0), !(s.TauPrior > 0), !(s.SigmaW > 0), !(s.WStd0 > 0):
		return fmt.Errorf("celegans: LR, Tau, TauPrior, SigmaW and WStd0 must be > 0")
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

// TracePoint is the accuracy reached after Elapsed.
type TracePoint struct {
	Elapsed         time.Duration
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
}

// Solve runs method m on p with settings s and seed, and estimates each
// worm's permutation as the matching, under the candidate mask, of the
// posterior mean of P_j. It stops at s.Budget (if set) or after s.Steps /
// s.Sweeps, whichever comes first, and returns ctx.Err() if ctx is
// cancelled.
//
// A budget ends the iterations early enough for the final estimate to
// fit. Before the first step each method times its final estimate (one
// posterior sample and the matching; for MCMC the matching), then times
// every step (sweep), and stops when the time left is less than the longest
// of the latest four steps plus a reserve of 1.25 times the estimate's
// measured cost; the variational methods keep at least a tenth of the
// budget, up to a second, as the reported tables were run with. The
// Gumbel-Sinkhorn posterior mean averages s.Mean samples when they fit in
// the time left, as they do unless the budget is short (the reserve is
// planned for as many as a quarter of the budget holds), and otherwise
// draws them one at a time while another fits, one at least.
//
// So Outcome.Elapsed exceeds s.Budget only when the last step or sample
// takes longer than those timed before it (under load, when other
// processes take the cores), or when the first step alone takes longer
// than the budget. On a small problem on a loaded machine the package's
// tests hold runs to 20 ms plus a tenth of the budget past it. If the
// budget ends before any step finished, Solve returns an error that says
// so ("budget 10ms too short: no step finished") rather than an estimate
// from the initial parameters.
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
	var out *Outcome
	var err error
	switch m {
	case GumbelSinkhorn, GumbelSinkhornNoReg:
		out, err = solveGS(ctx, p, s, seed, m == GumbelSinkhornNoReg, c)
	case Rounding:
		out, err = solveRounding(ctx, p, s, seed, c)
	case MCMC:
		out, err = solveMCMC(ctx, p, s, seed, c)
	default:
		return nil, fmt.Errorf("celegans: Solve: unknown method %q", m)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var short *tooShortError
		if errors.As(err, &short) {
			return nil, fmt.Errorf("celegans: Solve %s: %w", m, err)
		}
		return nil, err
	}
	out.Method = m
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

// until returns a context that ends reserve before the deadline, if any,
// or when cancelled.
func (c clock) until(ctx context.Context, reserve time.Duration) (context.Context, context.CancelFunc) {
	if !c.limited() {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, c.deadline.Add(-reserve))
}

// left returns the time left before the deadline (negative once past it).
func (c clock) left() time.Duration { return time.Until(c.deadline) }

// tooShort returns the error of a run whose budget ended before the first
// unit of work (a "step" or a "sweep") finished.
func (c clock) tooShort(unit string) error { return &tooShortError{c.budget, unit} }

// tooShortError says that a budget ended before any step finished.
type tooShortError struct {
	budget time.Duration
	unit   string
}

func (e *tooShortError) Error() string {
	return fmt.Sprintf("budget %v too short: no %s finished", e.budget, e.unit)
}

// stepper times the steps of a run with a budget and decides whether one
// more still fits.
type stepper struct {
	c       clock
	reserve time.Duration    // kept for the final estimate
	recent  [4]time.Duration // durations of the latest steps, newest at n%4
	n       int              // steps timed
	last    time.Time        // end of the latest step, or the start of the first
}

// begin marks the start of a step.
func (st *stepper) begin() { st.last = time.Now() }

// done times the step that just ended.
func (st *stepper) done() {
	now := time.Now()
	st.n++
	st.recent[st.n%len(st.recent)] = now.Sub(st.last)
	st.last = now
}

// another reports whether a step starting now would end at least reserve
// before the deadline if it took as long as the longest of the latest few,
// which allows for the jitter of step times on a busy machine.
func (st *stepper) another() bool {
	return st.c.left() >= slices.Max(st.recent[:])+st.reserve
}

// budgetOver reports whether err only says that the budget ran out.
func budgetOver(err error) bool { return errors.Is(err, context.DeadlineExceeded) }

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

func (tr *tracer) add(perms []perm.Perm) {
	all, unk, err := tr.p.Accuracy(perms)
	if err == nil {
		tr.pts = append(tr.pts, TracePoint{Elapsed: time.Since(tr.start), Accuracy: all, AccuracyUnknown: unk})
	}
}

func solveGS(ctx context.Context, p *Problem, s Settings, seed uint64, noReg bool, c clock) (*Outcome, error) {
	newFit := func() (*viFit, error) {
		pg, err := vi.NewGumbelSinkhorn("P", p.Worms(), p.N(), p.Masks, optim.Constant(s.Tau), s.TauPrior, s.Iters)
		if err != nil {
			return nil, err
		}
		pg.NoKL = noReg
		return &viFit{
			guide: pg,
			// While fitting, score the matching of the logits (cheap); at
			// the end, the matching of the estimated posterior mean.
			scores: func() ([]*mat.Dense, error) {
				out := make([]*mat.Dense, p.Worms())
				for j := range out {
					out[j] = pg.Logits(j)
				}
				return out, nil
			},
			final: func(steps int, more func(samples int) bool) ([]*mat.Dense, error) {
				rng := rand.New(rand.NewPCG(seed, 0x6d65616e))
				if more(s.Mean) {
					return pg.Mean(s.Mean, steps, rng)
				}
				// Short of time: one sample at a time, while another fits.
				sum, err := pg.Mean(1, steps, rng)
				if err != nil {
					return nil, err
				}
				k := 1
				for ; k < s.Mean && more(1); k++ {
					m, err := pg.Mean(1, steps, rng)
					if err != nil {
						return nil, err
					}
					for j := range sum {
						sum[j].Add(sum[j], m[j])
					}
				}
				for j := range sum {
					sum[j].Scale(1/float64(k), sum[j])
				}
				return sum, nil
			},
			maxSamples: s.Mean,
			lr:         s.LR,
		}, nil
	}
	return fitVI(ctx, p, s, seed, newFit, s.PlateauWindow, c)
}

func solveRounding(ctx context.Context, p *Problem, s Settings, seed uint64, c clock) (*Outcome, error) {
	newFit := func() (*viFit, error) {
		pg, err := vi.NewRounding("P", p.Worms(), p.N(), p.Masks, s.RoundNoise, s.RoundTau, s.PriorStd, s.Iters)
		if err != nil {
			return nil, err
		}
		final := func(int, func(int) bool) ([]*mat.Dense, error) { return pg.Mean() }
		lr := s.LR
		if s.RoundLR > 0 {
			lr = s.RoundLR
		}
		return &viFit{guide: pg, scores: pg.Mean, final: final, maxSamples: 1, lr: lr}, nil
	}
	return fitVI(ctx, p, s, seed, newFit, 0, c)
}

// viFit is one variational fit of the permutations: the guide, the score
// matrices whose matching is traced while it runs, and the score matrices
// of the final estimate after a given number of steps. An estimate that
// averages posterior samples draws maxSamples of them if more reports that
// they fit, and otherwise one, then more while more reports that another
// fits; one that draws none has maxSamples 1.
type viFit struct {
	guide      vi.Guide
	scores     func() ([]*mat.Dense, error)
	final      func(steps int, more func(samples int) bool) ([]*mat.Dense, error)
	maxSamples int
	lr         float64 // Adam's learning rate

	steps int     // steps done
	elbo  float64 // mean ELBO estimate over the last window of steps
}

// plateauZ is the gain, in standard errors, that the mean ELBO of a window
// must show over the window before for a fit to count as still improving.
const plateauZ = 2

// fitVI fits permutation guides from newFit together with a mean-field
// Normal guide on W and returns the matching of the final estimate.
//
// With window = 0 it runs one fit. With window > 0 a fit that reaches a
// plateau (vi.Plateau with that window) is set aside and a fresh one starts
// from new parameters and its own seed, for as long as the budget and
// s.Steps (counted over all fits) allow; the estimate comes from the fit
// with the highest mean ELBO over its last window. The first fit uses seed
// itself, so a run whose first fit never reaches a plateau is the same as a
// run without restarts.
//
// With a budget, the fitting stops when one more step would leave less
// than plan.reserve (see planFinal) for the final estimate.
func fitVI(ctx context.Context, p *Problem, s Settings, seed uint64, newFit func() (*viFit, error), window int, c clock) (*Outcome, error) {
	tr := &tracer{p: p, every: s.TraceEvery, start: c.start}
	tracing := tr.every > 0 && p.Truth != nil
	var plan finalPlan
	st := &stepper{c: c}
	var best *viFit
	fits := 0
	var bestPerms []perm.Perm // matching of best's scores, for the trace
	used := 0
	model := NewModel(p)
	model.SigmaW = s.SigmaW
	vm, err := model.VI()
	if err != nil {
		return nil, err
	}
	for attempt := 0; used < s.Steps; attempt++ {
		f, err := newFit()
		if err != nil {
			return nil, err
		}
		wg, err := vi.NewNormal(SiteW, len(p.support), nil, s.WStd0, model.wPrior().Sigma)
		if err != nil {
			return nil, err
		}
		var plateau *vi.Plateau
		if window > 0 {
			if plateau, err = vi.NewPlateau(window, plateauZ); err != nil {
				return nil, err
			}
		}
		if c.limited() {
			if attempt == 0 {
				if plan, err = planFinal(p, f, c); err != nil {
					return nil, err
				}
				st.reserve = plan.reserve
			} else if !st.another() {
				break
			}
		}
		// Until the first step is timed, only the reserve is known.
		attemptCtx, stop := c.until(ctx, plan.reserve)
		timeUp := false
		opts := vi.Options{Steps: s.Steps - used, K: s.K, LR: optim.Constant(f.lr), Seed: attemptSeed(seed, attempt), ProgressEvery: 1}
		if tracing || plateau != nil || c.limited() {
			onStep := func(pr vi.Progress) {
				if plateau != nil && plateau.Add(pr.ELBO) {
					stop()
				}
				if !tracing || pr.Step%tr.every != 0 {
					return
				}
				if best != nil && (plateau == nil || plateau.Mean() < best.elbo) {
					tr.add(bestPerms)
					return
				}
				if sc, err := f.scores(); err == nil {
					if perms, err := p.matchAll(sc); err == nil {
						tr.add(perms)
					}
				}
			}
			opts.Progress = func(pr vi.Progress) {
				onStep(pr)
				if c.limited() {
					st.done()
					if !st.another() {
						timeUp = true
						stop()
					}
				}
			}
		}
		st.begin()
		res, err := vi.Fit(attemptCtx, vm, []vi.Guide{f.guide, wg}, opts)
		stop()
		fits++
		if err != nil && !budgetOver(err) && !errors.Is(err, context.Canceled) {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		timeUp = timeUp || budgetOver(err)
		f.steps = res.Steps
		used += res.Steps
		if plateau != nil {
			f.elbo = plateau.Mean()
		}
		if best == nil || f.elbo > best.elbo {
			best = f
			if tracing && window > 0 {
				if sc, err := f.scores(); err == nil {
					bestPerms, _ = p.matchAll(sc)
				}
			}
		}
		if window == 0 || timeUp || res.Steps == 0 {
			break
		}
	}
	if best.steps == 0 {
		return nil, c.tooShort("step")
	}
	means, err := best.final(best.steps, plan.more(c))
	if err != nil {
		return nil, err
	}
	perms, err := p.matchAll(means)
	if err != nil {
		return nil, err
	}
	if tr.every > 0 {
		tr.add(perms)
	}
	return &Outcome{Perms: perms, Iterations: used, Fits: fits, Trace: tr.pts, RHat: math.NaN(), ESS: math.NaN()}, nil
}

// finalPlan is how a variational run with a budget ends: the measured
// costs of one posterior sample and of the matching of the estimate, and
// the time kept for the estimate.
type finalPlan struct {
	sample, match time.Duration
	reserve       time.Duration
}

// planFinal times the final estimate of f with one sample and plans the end
// of a run with the budget of c. The reserve is reserveSafety times the
// measured cost of an estimate from as many samples as f.maxSamples allows
// and a quarter of the budget holds (at least one), or a tenth of the
// budget up to a second if that is more (the reserve the reported tables
// were run with).
func planFinal(p *Problem, f *viFit, c clock) (finalPlan, error) {
	t0 := time.Now()
	sc, err := f.final(0, func(int) bool { return false })
	if err != nil {
		return finalPlan{}, err
	}
	t1 := time.Now()
	if _, err := p.matchAll(sc); err != nil {
		return finalPlan{}, err
	}
	pl := finalPlan{sample: t1.Sub(t0), match: time.Since(t1)}
	n := int64(c.budget/4-pl.match) / max(int64(pl.sample), 1)
	n = max(min(n, int64(f.maxSamples)), 1)
	need := time.Duration(reserveSafety * float64(time.Duration(n)*pl.sample+pl.match))
	pl.reserve = max(min(time.Second, c.budget/10), need)
	return pl, nil
}

// more returns the test of whether the final estimate may draw n more
// posterior samples: whether n samples, each taking as long as the longest
// timed (the one planFinal timed, then those drawn since the previous
// test), would end before the deadline less the matching's measured cost
// (times reserveSafety). Without a budget it always may.
func (pl finalPlan) more(c clock) func(n int) bool {
	if !c.limited() {
		return func(int) bool { return true }
	}
	longest, last := pl.sample, time.Now()
	keep := time.Duration(reserveSafety * float64(pl.match))
	return func(n int) bool {
		now := time.Now()
		longest, last = max(longest, now.Sub(last)), now
		return c.deadline.Sub(now) >= time.Duration(n)*longest+keep
	}
}

// attemptSeed returns the seed of the given fit of a run with restarts:
// seed itself for the first, a splitmix64 step of both after that.
func attemptSeed(seed uint64, attempt int) uint64 {
	if attempt == 0 {
		return seed
	}
	return mix64(seed + uint64(attempt)*0x9e3779b97f4a7c15)
}
