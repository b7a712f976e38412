package celegans

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
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

	// MCMC.
	Sweeps int // sweeps at most (a sweep: Gibbs on W, then swap proposals on every worm)

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
	case !(s.RoundTau > 0 && s.RoundTau <= 1), !(s.RoundNoise > 0), !(s.PriorStd > 0):
		return fmt.Errorf("celegans: need 0 < RoundTau <= 1, RoundNoise > 0, PriorStd > 0")
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
	Iterations      int // steps (VI) or sweeps (MCMC) completed, over all fits
	Fits            int // variational fits run: more than 1 after restarts (0 for MCMC)
	Trace           []TracePoint
}

// Solve runs method m on p with settings s and seed, and estimates each
// worm's permutation as the matching, under the candidate mask, of the
// posterior mean of P_j. It stops at s.Budget (if set) or after s.Steps /
// s.Sweeps, whichever comes first, and returns ctx.Err() if ctx is
// cancelled.
func Solve(ctx context.Context, p *Problem, m Method, s Settings, seed uint64) (*Outcome, error) {
	if p == nil {
		return nil, errors.New("celegans: Solve: nil problem")
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	runCtx := ctx
	if s.Budget > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, s.Budget)
		defer cancel()
	}
	start := time.Now()
	var out *Outcome
	var err error
	switch m {
	case GumbelSinkhorn, GumbelSinkhornNoReg:
		out, err = solveGS(runCtx, p, s, seed, m == GumbelSinkhornNoReg, start)
	case Rounding:
		out, err = solveRounding(runCtx, p, s, seed, start)
	case MCMC:
		out, err = solveMCMC(runCtx, p, s, seed, start)
	default:
		return nil, fmt.Errorf("celegans: Solve: unknown method %q", m)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	out.Method = m
	out.Elapsed = time.Since(start)
	out.Accuracy, out.AccuracyUnknown = math.NaN(), math.NaN()
	if p.Truth != nil {
		out.Accuracy, out.AccuracyUnknown, err = p.Accuracy(out.Perms)
		if err != nil {
			return nil, err
		}
	}
	return out, nil
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

func solveGS(ctx context.Context, p *Problem, s Settings, seed uint64, noReg bool, start time.Time) (*Outcome, error) {
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
			final: func(steps int) ([]*mat.Dense, error) {
				return pg.Mean(s.Mean, steps, rand.New(rand.NewPCG(seed, 0x6d65616e)))
			},
		}, nil
	}
	return fitVI(ctx, p, s, seed, newFit, s.PlateauWindow, start)
}

func solveRounding(ctx context.Context, p *Problem, s Settings, seed uint64, start time.Time) (*Outcome, error) {
	newFit := func() (*viFit, error) {
		pg, err := vi.NewRounding("P", p.Worms(), p.N(), p.Masks, s.RoundNoise, s.RoundTau, s.PriorStd, s.Iters)
		if err != nil {
			return nil, err
		}
		return &viFit{guide: pg, scores: pg.Mean, final: func(int) ([]*mat.Dense, error) { return pg.Mean() }}, nil
	}
	return fitVI(ctx, p, s, seed, newFit, 0, start)
}

// viFit is one variational fit of the permutations: the guide, the score
// matrices whose matching is traced while it runs, and the score matrices
// of the final estimate after a given number of steps.
type viFit struct {
	guide  vi.Guide
	scores func() ([]*mat.Dense, error)
	final  func(steps int) ([]*mat.Dense, error)

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
func fitVI(ctx context.Context, p *Problem, s Settings, seed uint64, newFit func() (*viFit, error), window int, start time.Time) (*Outcome, error) {
	tr := &tracer{p: p, every: s.TraceEvery, start: start}
	tracing := tr.every > 0 && p.Truth != nil
	// Keep part of the budget for the posterior mean, so that the whole
	// run, and not only the fit, stays within the budget MCMC gets.
	fitCtx := ctx
	if s.Budget > 0 {
		var cancel context.CancelFunc
		fitCtx, cancel = context.WithDeadline(ctx, start.Add(s.Budget-min(time.Second, s.Budget/10)))
		defer cancel()
	}
	var best *viFit
	fits := 0
	var bestPerms []perm.Perm // matching of best's scores, for the trace
	used := 0
	for attempt := 0; used < s.Steps; attempt++ {
		f, err := newFit()
		if err != nil {
			return nil, err
		}
		wg, err := vi.NewNormal("W", len(p.support), nil, s.WStd0, s.SigmaW)
		if err != nil {
			return nil, err
		}
		var plateau *vi.Plateau
		if window > 0 {
			if plateau, err = vi.NewPlateau(window, plateauZ); err != nil {
				return nil, err
			}
		}
		attemptCtx, stop := context.WithCancel(fitCtx)
		opts := vi.Options{Steps: s.Steps - used, K: s.K, LR: optim.Constant(s.LR), Seed: attemptSeed(seed, attempt)}
		if tracing || plateau != nil {
			opts.Progress = func(pr vi.Progress) {
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
		}
		res, err := vi.Fit(attemptCtx, NewModel(p), []vi.Guide{f.guide, wg}, opts)
		stop()
		fits++
		if err != nil && !budgetOver(err) && !errors.Is(err, context.Canceled) {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
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
		if window == 0 || fitCtx.Err() != nil || res.Steps == 0 {
			break
		}
	}
	means, err := best.final(best.steps)
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
	return &Outcome{Perms: perms, Iterations: used, Fits: fits, Trace: tr.pts}, nil
}

// attemptSeed returns the seed of the given fit of a run with restarts:
// seed itself for the first, a splitmix64 step of both after that.
func attemptSeed(seed uint64, attempt int) uint64 {
	if attempt == 0 {
		return seed
	}
	return mix64(seed + uint64(attempt)*0x9e3779b97f4a7c15)
}
