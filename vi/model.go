package vi

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/ad/optim"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/nn/train"
)

// GuideKind selects the variational family FitModel builds for a site.
type GuideKind int

const (
	// GuideAuto is the default for the site's kind: GuideGumbelSinkhorn
	// for a permutation site, GuideNormal for a real site.
	GuideAuto GuideKind = iota
	// GuideGumbelSinkhorn is q(P) = GS(X, τ) (the GumbelSinkhorn guide).
	GuideGumbelSinkhorn
	// GuideRounding is the rounding family of Linderman et al. (2018)
	// (the Rounding guide), with its own two-Gaussian-mixture prior in
	// place of the site's.
	GuideRounding
	// GuideNormal is a mean-field Gaussian over the coordinates of a real
	// site.
	GuideNormal
)

func (k GuideKind) String() string {
	switch k {
	case GuideAuto:
		return "auto"
	case GuideGumbelSinkhorn:
		return "gumbel-sinkhorn"
	case GuideRounding:
		return "rounding"
	case GuideNormal:
		return "normal"
	}
	return fmt.Sprintf("GuideKind(%d)", int(k))
}

// PermLayout is how the guide of a permutation site (Gumbel-Sinkhorn or
// rounding) stores its permutations: dense N×N parameters per permutation,
// or only the entries the masks allow.
type PermLayout int

const (
	// LayoutAuto is sparse for a large, sparsely masked site (see
	// ModelOptions.PermLayout) and dense otherwise.
	LayoutAuto PermLayout = iota
	// LayoutDense is the GumbelSinkhorn (or Rounding) guide.
	LayoutDense
	// LayoutSparse is the SparseGumbelSinkhorn (or SparseRounding) guide.
	LayoutSparse
)

func (l PermLayout) String() string {
	switch l {
	case LayoutAuto:
		return "auto"
	case LayoutDense:
		return "dense"
	case LayoutSparse:
		return "sparse"
	}
	return fmt.Sprintf("PermLayout(%d)", int(l))
}

// SparseDensity and SparseMinN are LayoutAuto's thresholds: a masked
// permutation site is stored sparsely when its masks allow at most
// SparseDensity of the B·N² entries and N >= SparseMinN. Below that size
// the dense operators' vectorised passes cost little either way; above
// it the sparse Sinkhorn's gathers beat them once most entries are
// forbidden, and its memory grows with the allowed entries only.
const (
	SparseDensity = 0.25
	SparseMinN    = 64
)

// ModelOptions configures FitModel. Zero values select the documented
// defaults, which suit small models: vi.ModelOptions{Seed: 1} is a complete
// configuration.
type ModelOptions struct {
	// Steps is the number of optimisation steps of one fit; default 2000.
	Steps int
	// K is the number of joint samples per step; default DefaultK (8), as
	// for Fit.
	K int
	// LR is the Adam learning rate by step; default optim.Geometric from
	// DefaultLRStart (0.1) to DefaultLREnd (0.005) over Steps, so that the
	// final parameters settle, as for Fit.
	LR optim.Schedule
	// Clip, if > 0, clips the gradient norm of every step to Clip.
	Clip float64

	// Tau is the temperature τ of the Gumbel-Sinkhorn guides by step.
	// Default: the prior's Tau for a site with a GumbelSinkhornPrior, and
	// for a site with a uniform prior optim.Geometric from 1 to 0.1 over
	// Steps (see the package documentation on choosing τ).
	Tau optim.Schedule
	// TauPrior is the temperature τ_prior of the surrogate prior
	// GS(0, τ_prior) that replaces a uniform prior in Gumbel space. 0, the
	// default, makes it follow τ at every step; see the package
	// documentation for why that is the right choice in most cases.
	TauPrior float64
	// Iters is the number of Sinkhorn iterations L; default 20.
	Iters int
	// NoKL drops the permutation sites' KL terms ("no regularization").
	NoKL bool
	// PermLayout chooses how the guides of a permutation site store it:
	// LayoutAuto (the default) uses the sparse layout
	// (SparseGumbelSinkhorn or SparseRounding, whose cost grows with the
	// allowed entries) for a site of N >= SparseMinN whose masks allow at
	// most SparseDensity of the entries, and the dense one (GumbelSinkhorn
	// or Rounding) otherwise. Both layouts are the same family and give the
	// same fit up to rounding; the model's LogLik sees the site in either
	// layout (see models.Sample.PermSparse).
	PermLayout PermLayout

	// Rounding configures the rounding guides (GuideRounding).
	Rounding RoundingOptions

	// Guides overrides the guide of the named sites. A name the model
	// does not declare, or a kind that does not fit the site, is an error.
	Guides map[string]GuideKind

	// Seed drives everything random: initial parameters, the noise of
	// every step, the posterior draws.
	Seed uint64
	// InitScale sets the spread of the random initial parameters: the
	// logits of a permutation guide start as InitScale·N(0, 1) and the
	// means of a real guide as prior mean + InitScale·(prior standard
	// deviation)·N(0, 1); default 1. A negative value starts every fit
	// at zero logits and the prior means.
	InitScale float64
	// Init, if not nil, gives initial values by site name for every start,
	// as mcmc.ModelOptions.Init does; the sites it does not name start at
	// random as described above. The logits X_b of permutation b of a
	// named permutation site (Θ_b for a rounding guide) start as the
	// random draws ξ_b = InitScale·N(0, 1) above, except that the entry
	// of the given column p_b(i) in each row i is raised to
	//
	//	X_b[i][p_b(i)] = max_j ξ_b[i][j] + c,   c = 3 + log N,
	//
	// the maximum taken over the columns that the site's masks and fixed
	// rows allow row i; forbidden entries stay forbidden. The given entry
	// leads its row by c, so p_b is the guide's mode M(X_b), and a row's
	// Gumbel-max draw alone picks the given column with probability at
	// least e^c/(e^c + N − 1) > 0.95. A named real site's Normal guide
	// starts with its means at the given values (and its standard
	// deviations as without Init). Init is validated as by
	// mcmc.RunModel: names the model does not declare, values of the wrong
	// kind or size, permutations the masks and fixed rows do not admit,
	// and non-finite values are errors naming the site.
	Init *models.State

	// Starts is the number of fits run from different random
	// initialisations (multi-start); the one whose polished states reach
	// the highest log posterior is kept (with Polish.Off, the one with the
	// highest fresh ELBO estimate). Default 1.
	Starts int
	// Workers is the number of fits run at once when Starts > 1 and there
	// are no restarts, and of the check's local searches; 0 means
	// GOMAXPROCS. The fits and searches are independent and their seeds
	// depend on their index only, so the result does not depend on
	// Workers. Unless Workers is 1, the model's methods (LogLik and its
	// fast paths) must be safe for concurrent use with different tapes, as
	// mcmc.RunModel requires too.
	Workers int
	// Restart, if its Window is > 0, ends a fit early once its ELBO stops
	// improving and spends the steps saved on further fits.
	Restart Restart
	// ELBOSamples is the number of samples of the fresh ELBO estimate that
	// ranks the fits; default 10000. A negative value ranks them instead
	// by the mean of their last per-step estimates (over Restart.Window
	// steps, or 50), which costs nothing: the choice for a large model
	// whose ELBO samples are expensive, fitted with restarts.
	ELBOSamples int
	// PosteriorDraws is the number of hard permutation draws from the
	// fitted guides that estimate the marginals; default 1000.
	PosteriorDraws int

	// Checkpoint, if set, is the file prefix of checkpoints: fit i is
	// checkpointed to Checkpoint + "." + i (every CheckpointEvery steps,
	// default 100, on cancellation and at its end) and resumed from there
	// when the file exists. A resumed run returns exactly what an
	// uninterrupted one would.
	Checkpoint      string
	CheckpointEvery int

	// Budget, if > 0, bounds the wall time of the fits and of the
	// estimates that follow them. FitModel times one posterior draw of the
	// first fit's initial guides and every step, and the running fit
	// stops, and no further start begins, once a step as long as the
	// longest of the latest four would leave less than the reserve for
	// the estimates: budgetSafety (1.25) times PosteriorDraws + 1 such
	// draws and, unless ELBOSamples < 0, ⌈ELBOSamples/K⌉ steps for a fit's
	// fresh ELBO estimate. The fits made so far (each with the steps it
	// took) then make the result, as when they end normally; if the
	// budget cannot hold even the reserve, the first fit takes no step and
	// the result holds its initial guides, with Steps 0. The check of the
	// answer (Polish) takes Polish.Share (10%) of the budget from the fits
	// and its local searches stop at the budget's end with the states
	// they reached (PolishReport.Truncated counts them). A budget makes the result depend on the machine's
	// speed; ModelResult.BudgetExhausted and Steps say what it allowed. A
	// context deadline instead cancels the fit with an error.
	Budget time.Duration

	// Polish configures the check of the answer by the model's exact log
	// joint: every fit's mode and a few of its draws, and a few random
	// restarts, are improved by a local search under it, fits are ranked
	// by the best log joint they reach, and the most probable state found
	// becomes the mode, with warnings where it disagrees with the fits. On
	// by default; Polish.Off restores the paper's plain method. See the
	// package documentation, "Checking the answer".
	Polish Polish

	// Trace, if set, is called after every TraceEvery steps (default 100)
	// of every fit, and after its last step, with the fit's current
	// estimate (see TracePoint), for curves of accuracy against time; never
	// by two fits at once. Each call solves one assignment problem per
	// permutation, which TraceEvery keeps rare.
	Trace      func(TracePoint)
	TraceEvery int

	// Progress, if set, is called after every ProgressEvery steps (default
	// 100) of every fit, and after the last step of each; never by two
	// fits at once.
	Progress      func(ModelProgress)
	ProgressEvery int
}

// RoundingOptions configure the rounding guides of Linderman et al. (2018)
// that FitModel builds for the sites Guides names GuideRounding (see
// NewRounding). Zero values select the defaults.
type RoundingOptions struct {
	// Tau is the rounding temperature in (0, 1]: how far a sample is
	// pulled towards its rounded permutation; default 0.3.
	Tau float64
	// Std0 is the initial noise scale of the guide; default 0.3.
	Std0 float64
	// PriorStd is the standard deviation of each component of the
	// two-Gaussian-mixture prior that replaces the site's; default 0.2.
	PriorStd float64
}

// Restart configures restarts on a plateau. A fit ends once the mean ELBO
// estimate over the latest Window steps no longer beats the mean over the
// Window steps before it by Z standard errors (a Plateau); another fit then
// starts from a fresh initialisation, as long as the budget of
// Starts·Steps steps in total lasts and leaves at least 2·Window steps.
// No fit runs longer than Steps.
type Restart struct {
	Window int     // steps per window; 0 disables restarts, otherwise >= 2
	Z      float64 // standard errors of gain that count as improving; default 2
}

// TracePoint is the current estimate of fit Fit of FitModel after Step
// steps, Elapsed after FitModel began.
type TracePoint struct {
	Fit, Step int
	Elapsed   time.Duration
	// ELBO is the step's estimate.
	ELBO float64
	// State holds every permutation site's current point estimate, the
	// exact matching of its guide's location (M(X) of a Gumbel-Sinkhorn
	// guide's logits, the rounding of a rounding guide's mean), and every
	// real site at its guide's mean. It is the caller's to keep.
	State *models.State
}

// ModelProgress reports the progress of fit Fit (from 0) of FitModel.
type ModelProgress struct {
	Fit int
	Progress
}

// ModelResult is what FitModel returns.
type ModelResult struct {
	// Posterior is the fitted posterior in the engines' common form.
	Posterior *models.Posterior
	// ELBO holds the per-step ELBO estimates of the chosen fit.
	ELBO []float64
	// FinalELBO is the fresh estimate (ELBOSamples samples, at the final
	// temperature) of the chosen fit's ELBO, and FinalELBOStdErr its
	// Monte Carlo standard error; with ELBOSamples < 0, the mean of its
	// last per-step estimates and the standard error of that mean.
	FinalELBO, FinalELBOStdErr float64
	// Starts is the number of fits run, restarts included; FitELBO and
	// FitSteps hold the fresh ELBO estimate and the steps of each, and
	// Best the index of the chosen one (by Polish.FitLogJoint when the
	// answer was checked, by FitELBO otherwise).
	Starts   int
	FitELBO  []float64
	FitSteps []int
	Best     int
	// Steps is the number of steps over all fits.
	Steps int
	// Guides are the chosen fit's guides, one per site in declaration
	// order (for a permutation site a *GumbelSinkhorn, *Rounding or their
	// sparse forms, unless a GuideProvider built it).
	Guides []Guide
	// Polish is what the check of the answer found; nil when it was off
	// or could not run (the notes say why).
	Polish *PolishReport
	// BudgetExhausted reports that Budget ran out and stopped the fits;
	// Steps, FitSteps and Starts say how far they came.
	BudgetExhausted bool
	// Elapsed is the wall time of the whole call.
	Elapsed time.Duration
}

// FitModel fits a variational posterior to a model written against the
// models contract, builds its guides automatically, and returns the
// posterior in the form every engine shares.
//
// Each permutation site gets a Gumbel-Sinkhorn guide over its effective
// masks (fixed rows pinned), each real site a mean-field Normal guide; the
// ELBO is that of Fit, with the sites' priors: the closed-form Gumbel-space
// KL for permutation sites (against the surrogate GS(0, τ_prior) for a
// uniform prior, which the result's notes state), the closed-form Gaussian
// KL for a real site with a models.Normal prior and a Monte Carlo log-ratio
// for other real priors. With Starts > 1 or restarts several fits run from
// different random initialisations. The permutation marginals are the
// frequencies of hard draws from the chosen fit (see the package
// documentation).
//
// After the fits FitModel checks its answer against the model (Polish, on
// by default; see the package documentation, "Checking the answer"): each
// fit's mode and some of its draws, and a few random permutations, are
// improved by a local search under the model's log posterior of the
// permutations, the fit whose states reach the highest value is kept, and
// the most probable state found becomes the mode. Warnings say when that
// state is far more probable than the fit's own mode, or when searches end
// in different modes. With the check off, the fit with the highest fresh
// ELBO estimate is kept and the mode is the matching of its marginals.
//
// Before the first fit FitModel checks the model's LogLik once on relaxed
// samples of its guides, at a number of samples K that is no site's
// dimension: it must return shape (K), one value per sample, and sample k
// of the result must depend on sample k of the sites alone. A LogLik that
// uses a site's leading (sample) axis as another axis usually breaks one of
// these, and the error names the site and its shape in a Sample instead of
// surfacing after the fit.
//
// Bad options, a model that fails models.Check, a guide or Init name the
// model does not declare, a LogLik that fails the check above, and errors
// recorded on the tape by the model's LogLik (an unknown site name, a
// shape mismatch) are returned as errors. If ctx is cancelled FitModel
// returns its error after checkpointing the running fit.
func FitModel(ctx context.Context, m models.Model, o ModelOptions) (*ModelResult, error) {
	began := time.Now()
	spec, err := models.Check(m)
	if err != nil {
		return nil, fmt.Errorf("vi: FitModel: %w", err)
	}
	if err := o.setDefaults(); err != nil {
		return nil, err
	}
	plan, err := newModelPlan(spec, o)
	if err != nil {
		return nil, err
	}
	plan.began = began
	if gp, ok := m.(GuideProvider); ok {
		plan.provider = gp
		plan.notes = append(plan.notes, "the model supplies guides of its own (GuideProvider) for some sites; the notes on automatic guides do not apply to those")
	}
	if o.Budget > 0 {
		plan.deadline = began.Add(o.Budget)
		if !o.Polish.Off {
			// The check takes its share of the budget from the fits.
			plan.polishDeadline = plan.deadline
			plan.deadline = began.Add(time.Duration((1 - o.Polish.Share) * float64(o.Budget)))
		}
	}
	if err := plan.checkLogLik(m); err != nil {
		return nil, err
	}
	adapter := &modelAdapter{m: m, spec: spec}
	runs, err := plan.run(ctx, adapter)
	if err != nil {
		return nil, err
	}
	best := 0
	for i, r := range runs {
		if r.elbo > runs[best].elbo {
			best = i
		}
	}
	var rep *PolishReport
	var post *models.Posterior
	if why := plan.polishable(); !o.Polish.Off && why == "" {
		// Check every fit against the model and keep the one whose mode
		// and draws polish to the most probable state.
		posts := make([]*models.Posterior, len(runs))
		for i, r := range runs {
			if posts[i], err = plan.posterior(r.guides); err != nil {
				return nil, err
			}
		}
		rep, err = plan.polish(ctx, m, posts)
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, err
		case err != nil:
			// The fit stands; the reader is told it is unchecked.
			plan.warnings = append(plan.warnings, fmt.Sprintf("the answer could not be checked against the model (%v); the mode is the matching of the marginals of the fit with the best ELBO", err))
			rep = nil
		default:
			best = rep.chooseFit()
			post = posts[best]
		}
	} else if !o.Polish.Off {
		plan.notes = append(plan.notes, "the answer was not checked against the model: "+why)
	}
	res := &ModelResult{Starts: len(runs), Best: best, Polish: rep, BudgetExhausted: plan.budgetHit.Load()}
	if res.BudgetExhausted {
		plan.notes = append(plan.notes, fmt.Sprintf("the budget of %v stopped the fits after %d starts", o.Budget, len(runs)))
	}
	for _, r := range runs {
		res.FitELBO = append(res.FitELBO, r.elbo)
		res.FitSteps = append(res.FitSteps, r.steps)
		res.Steps += r.steps
	}
	b := runs[best]
	res.ELBO, res.FinalELBO, res.FinalELBOStdErr, res.Guides = b.trace, b.elbo, b.stderr, b.guides
	if post == nil {
		if post, err = plan.posterior(b.guides); err != nil {
			return nil, err
		}
	}
	res.Posterior = post
	plan.annotate(res)
	if rep != nil {
		plan.applyPolish(res)
	}
	res.Elapsed = time.Since(began)
	return res, nil
}

func (o *ModelOptions) setDefaults() error {
	if o.Steps == 0 {
		o.Steps = 2000
	}
	if o.K == 0 {
		o.K = DefaultK
	}
	if o.Iters == 0 {
		o.Iters = 20
	}
	if o.Starts == 0 {
		o.Starts = 1
	}
	if o.InitScale == 0 {
		o.InitScale = 1
	}
	if o.ELBOSamples == 0 {
		o.ELBOSamples = 10000
	}
	if o.PosteriorDraws == 0 {
		o.PosteriorDraws = 1000
	}
	if o.Rounding.Tau == 0 {
		o.Rounding.Tau = 0.3
	}
	if o.Rounding.Std0 == 0 {
		o.Rounding.Std0 = 0.3
	}
	if o.Rounding.PriorStd == 0 {
		o.Rounding.PriorStd = 0.2
	}
	if o.Restart.Window > 0 && o.Restart.Z == 0 {
		o.Restart.Z = 2
	}
	if o.CheckpointEvery <= 0 {
		o.CheckpointEvery = 100
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = DefaultProgressEvery
	}
	if o.TraceEvery <= 0 {
		o.TraceEvery = 100
	}
	if !o.Polish.Off {
		if err := o.Polish.setDefaults(); err != nil {
			return err
		}
	}
	switch {
	case o.Steps < 1:
		return fmt.Errorf("vi: FitModel: Steps must be >= 1, got %d", o.Steps)
	case o.K < 1:
		return fmt.Errorf("vi: FitModel: K must be >= 1, got %d", o.K)
	case o.Iters < 1:
		return fmt.Errorf("vi: FitModel: Iters must be >= 1, got %d", o.Iters)
	case o.Starts < 1:
		return fmt.Errorf("vi: FitModel: Starts must be >= 1, got %d", o.Starts)
	case o.Workers < 0:
		return fmt.Errorf("vi: FitModel: Workers must be >= 0, got %d", o.Workers)
	case o.Budget < 0:
		return fmt.Errorf("vi: FitModel: Budget must be >= 0, got %v", o.Budget)
	case o.ELBOSamples == 1:
		return fmt.Errorf("vi: FitModel: ELBOSamples must be >= 2 (or negative), got %d", o.ELBOSamples)
	case o.PosteriorDraws < 1:
		return fmt.Errorf("vi: FitModel: PosteriorDraws must be >= 1, got %d", o.PosteriorDraws)
	case !(o.TauPrior >= 0) || math.IsInf(o.TauPrior, 0):
		return fmt.Errorf("vi: FitModel: TauPrior must be finite and >= 0, got %v", o.TauPrior)
	case math.IsNaN(o.InitScale) || math.IsInf(o.InitScale, 0):
		return fmt.Errorf("vi: FitModel: InitScale must be finite, got %v", o.InitScale)
	case !(o.Clip >= 0):
		return fmt.Errorf("vi: FitModel: Clip must be >= 0, got %v", o.Clip)
	case o.Restart.Window < 0 || o.Restart.Window == 1:
		return fmt.Errorf("vi: FitModel: Restart.Window must be 0 (no restarts) or >= 2, got %d", o.Restart.Window)
	case !(o.Restart.Z >= 0) || math.IsInf(o.Restart.Z, 0):
		return fmt.Errorf("vi: FitModel: Restart.Z must be finite and >= 0, got %v", o.Restart.Z)
	}
	if o.LR == nil {
		o.LR = optim.Geometric{Start: DefaultLRStart, End: DefaultLREnd, Steps: o.Steps}
	}
	if err := optim.Validate(o.LR, o.Steps); err != nil {
		return fmt.Errorf("vi: FitModel: learning rate: %w", err)
	}
	if o.Tau != nil {
		if err := optim.Validate(o.Tau, o.Steps); err != nil {
			return fmt.Errorf("vi: FitModel: temperature: %w", err)
		}
	}
	return nil
}

// modelAdapter presents a models.Model as a Model of this package: it
// moves the guides' samples into a models.Sample.
type modelAdapter struct {
	m    models.Model
	spec *models.Spec
}

// LogLik implements Model. It records an error on t when the model's
// LogLik returns anything but one value per sample (see checkLogLikShape).
func (a *modelAdapter) LogLik(t *ad.Tape, z Sample) *ad.Var {
	names := a.spec.Names()
	first, ok := z[names[0]]
	if !ok || len(first.Shape()) == 0 {
		t.Fail(fmt.Errorf("vi: no sample for site %q", names[0]))
		return nil
	}
	k := first.Shape()[0]
	s := models.NewSample(t, a.spec, k, false)
	for _, name := range names {
		setSite(s, a.spec, name, z[name])
	}
	if err := t.Err(); err != nil {
		return nil
	}
	ll := a.m.LogLik(t, s)
	if t.Err() == nil {
		if err := checkLogLikShape(ll, k); err != nil {
			t.Fail(fmt.Errorf("vi: %w", err))
		}
	}
	return ll
}

// setSite stores v as site name's value in s: a permutation site's value
// of rank 2, (K, NNZ), in the sparse layout (SparseGumbelSinkhorn), any
// other value as it is.
func setSite(s *models.Sample, spec *models.Spec, name string, v *ad.Var) {
	if site, ok := spec.Lookup(name); ok && v != nil && len(v.Shape()) == 2 {
		if _, perm := site.(*models.PermSite); perm {
			s.SetSparse(name, v)
			return
		}
	}
	s.Set(name, v)
}

// fitRun is one finished fit.
type fitRun struct {
	guides []Guide
	trace  []float64 // per-step ELBO estimates
	steps  int
	elbo   float64 // fresh estimate (or the mean of the last window)
	stderr float64
	clock  stepClock // its steps' timing
}

// run runs the fits: Starts of them, or with restarts as many as the
// budget Starts·Steps allows.
func (p *modelPlan) run(ctx context.Context, m Model) ([]*fitRun, error) {
	o := p.o
	if o.Restart.Window == 0 && o.Starts > 1 {
		return p.runParallel(ctx, m)
	}
	budget := o.Starts * o.Steps
	var runs []*fitRun
	used := 0
	for i := 0; ; i++ {
		steps := o.Steps
		if o.Restart.Window > 0 {
			steps = min(steps, budget-used)
			if i > 0 && steps < 2*o.Restart.Window {
				break
			}
		} else if i == o.Starts {
			break
		}
		if i > 0 && p.timeUp(runs[i-1].clock.longest(), runs[i-1].clock.mean()) {
			break
		}
		r, err := p.fit(ctx, m, i, steps)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
		used += r.steps
		if o.Restart.Window == 0 && len(runs) == o.Starts || used >= budget {
			break
		}
	}
	return runs, nil
}

// runParallel runs the Starts independent fits on up to Workers
// goroutines, each with its own guides, tape and random streams, and
// returns them in index order; the first error by index wins.
func (p *modelPlan) runParallel(ctx context.Context, m Model) ([]*fitRun, error) {
	o := p.o
	workers := o.Workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, o.Starts)
	if workers > 1 { // the hooks are serialized, as documented
		p.o.Progress = serialized(o.Progress)
		p.o.Trace = serialized(o.Trace)
	}
	runs := make([]*fitRun, o.Starts)
	errs := make([]error, o.Starts)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if i > 0 && p.timeUp(0, 0) {
					continue // the budget ran out before this start began
				}
				runs[i], errs[i] = p.fit(ctx, m, i, o.Steps)
				if errs[i] != nil {
					cancel()
				}
			}
		}()
	}
	for i := range o.Starts {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return nil, err
		}
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	// Starts skipped by the budget are the last ones (starts begin in
	// index order), so the fits left keep their indices.
	return slices.DeleteFunc(runs, func(r *fitRun) bool { return r == nil }), nil
}

// serialized returns f behind a mutex of its own, or nil for a nil f.
func serialized[T any](f func(T)) func(T) {
	if f == nil {
		return nil
	}
	var mu sync.Mutex
	return func(v T) {
		mu.Lock()
		defer mu.Unlock()
		f(v)
	}
}

// fit runs fit i for at most steps steps and estimates its ELBO afresh.
func (p *modelPlan) fit(ctx context.Context, m Model, i, steps int) (*fitRun, error) {
	o := p.o
	guides, err := p.newGuides(deriveSeed(o.Seed, seedInit, uint64(i)))
	if err != nil {
		return nil, err
	}
	// Every step reports, for the plateau, the budget and the hooks.
	fo := Options{Steps: steps, K: o.K, LR: o.LR, Seed: deriveSeed(o.Seed, seedSteps, uint64(i)), Clip: o.Clip, ProgressEvery: 1}
	if o.Checkpoint != "" {
		fo.Checkpoint = fmt.Sprintf("%s.%d", o.Checkpoint, i)
		fo.CheckpointEvery = o.CheckpointEvery
	}
	fitCtx, stop := context.WithCancel(ctx)
	defer stop()
	var clock stepClock
	if !p.deadline.IsZero() {
		p.timeDraws(guides)
	}
	var plateau *Plateau
	if o.Restart.Window > 0 {
		plateau, err = NewPlateau(o.Restart.Window, o.Restart.Z)
		if err != nil {
			return nil, fmt.Errorf("vi: FitModel: %w", err)
		}
		if fo.Steps, err = replayPlateau(fo.Checkpoint, plateau, steps); err != nil {
			return nil, err
		}
	}
	fo.Progress = func(pr Progress) {
		if plateau != nil && plateau.Add(pr.ELBO) {
			stop()
		}
		clock.tick()
		if !p.deadline.IsZero() && pr.Step%retimeEvery == 0 {
			p.retimeDraws(guides, 2)
			clock.start() // the timing is not a step's
		}
		if p.timeUp(clock.longest(), clock.mean()) {
			stop()
		}
		if o.Progress != nil && (pr.Step%o.ProgressEvery == 0 || pr.Step == pr.Steps) {
			o.Progress(ModelProgress{Fit: i, Progress: pr})
		}
		if o.Trace != nil && (pr.Step%o.TraceEvery == 0 || pr.Step == pr.Steps) {
			if st, err := p.current(guides); err == nil {
				o.Trace(TracePoint{Fit: i, Step: pr.Step, Elapsed: time.Since(p.began), ELBO: pr.ELBO, State: st})
			}
		}
	}
	clock.start()
	var res *Result
	if p.timeUp(0, 0) {
		// The budget cannot even hold the estimates: no step is taken,
		// and the result says so (Steps 0, BudgetExhausted).
		res = &Result{}
	} else {
		res, err = Fit(fitCtx, m, guides, fo)
	}
	if err != nil {
		if ctx.Err() != nil || !errors.Is(err, context.Canceled) {
			return nil, fmt.Errorf("vi: FitModel: fit %d: %w", i, err)
		}
		// Our own stop: the fit reached a plateau or the budget.
	}
	var elbo, se float64
	if o.ELBOSamples > 0 {
		if elbo, se, err = p.freshELBO(m, guides); err != nil {
			return nil, fmt.Errorf("vi: FitModel: fit %d: %w", i, err)
		}
	} else {
		elbo, se = windowELBO(res.ELBO, p.rankWindow())
	}
	return &fitRun{guides: guides, trace: res.ELBO, steps: res.Steps, elbo: elbo, stderr: se, clock: clock}, nil
}

// rankWindow is the number of final steps whose per-step ELBO estimates
// rank the fits when ELBOSamples < 0: the restart window, or 50.
func (p *modelPlan) rankWindow() int {
	if p.o.Restart.Window > 0 {
		return p.o.Restart.Window
	}
	return 50
}

// windowELBO returns the mean of the last w per-step ELBO estimates (all
// of them if fewer) and its standard error, NaN with fewer than two; a fit
// that took no step has an ELBO of −∞.
func windowELBO(trace []float64, w int) (mean, stderr float64) {
	if len(trace) == 0 {
		return math.Inf(-1), math.NaN()
	}
	m, v := meanVariance(trace[max(len(trace)-w, 0):])
	if len(trace) < 2 {
		return m, math.NaN()
	}
	return m, math.Sqrt(v / float64(min(w, len(trace))))
}

// replayPlateau feeds the ELBO trace of an existing checkpoint at path to
// plateau, so that a resumed fit ends where the uninterrupted one did. It
// returns the steps the fit is to run: steps, or the checkpoint's step when
// the trace already ends on a plateau.
func replayPlateau(path string, plateau *Plateau, steps int) (int, error) {
	if path == "" {
		return steps, nil
	}
	losses, found, err := train.ReadLosses(path)
	if err != nil {
		return 0, fmt.Errorf("vi: FitModel: %w", err)
	}
	if !found {
		return steps, nil
	}
	for k, v := range losses {
		if plateau.Add(-v) { // the loss is −ELBO
			if k != len(losses)-1 {
				return 0, fmt.Errorf("vi: FitModel: checkpoint %s continues past the plateau at step %d: written with other restart settings?", path, k+1)
			}
			return len(losses), nil
		}
	}
	return steps, nil
}

// freshELBO estimates the ELBO of the guides with ELBOSamples samples at the
// temperature of the last step, in batches of at most 250, with the same
// random numbers for every fit (common random numbers sharpen the
// comparison). The standard error is that of the batch means.
func (p *modelPlan) freshELBO(m Model, guides []Guide) (mean, stderr float64, err error) {
	const batch = 250
	n := p.o.ELBOSamples
	nb := (n + batch - 1) / batch
	rng := StepRand(deriveSeed(p.o.Seed, seedELBO, 0), 0)
	t := ad.NewTape()
	var vals []float64
	var sum, wsum float64
	for b := range nb {
		k := min(batch, n-b*batch)
		t.Reset()
		elbo, _, _, err := ELBO(t, m, guides, Step{Index: p.o.Steps - 1, K: k, Rng: rng})
		if err != nil {
			return 0, 0, err
		}
		v := elbo.Item()
		vals = append(vals, v)
		sum += float64(k) * v
		wsum += float64(k)
	}
	mean = sum / wsum
	if len(vals) < 2 {
		return mean, math.NaN(), nil
	}
	_, variance := meanVariance(vals)
	return mean, math.Sqrt(variance / float64(len(vals))), nil
}

// annotate adds the notes and warnings about the fits themselves.
func (p *modelPlan) annotate(res *ModelResult) {
	post := res.Posterior
	post.Notes = append(post.Notes, p.notes...)
	post.Warnings = append(post.Warnings, p.warnings...)
	if res.Starts > 1 && res.Polish != nil {
		post.Notes = append(post.Notes, fmt.Sprintf(
			"kept fit %d of %d by the log joint its polished mode and draws reached: %.4g (all fits: %s; ELBO estimates, %s: %s)",
			res.Best, res.Starts, res.Polish.FitLogJoint[res.Best], formatFloats(res.Polish.FitLogJoint), p.elboKind(), formatFloats(res.FitELBO)))
	} else if res.Starts > 1 {
		post.Notes = append(post.Notes, fmt.Sprintf(
			"kept fit %d of %d by %s: %.4g ± %.2g (all fits: %s)",
			res.Best, res.Starts, p.elboKind(), res.FinalELBO, res.FinalELBOStdErr, formatFloats(res.FitELBO)))
		second := math.Inf(-1)
		near := 0
		for i, e := range res.FitELBO {
			if i != res.Best {
				second = math.Max(second, e)
			}
			if res.FinalELBO-e <= 3*res.FinalELBOStdErr+0.5 {
				near++
			}
		}
		if near == 1 {
			post.Warnings = append(post.Warnings, fmt.Sprintf(
				"only fit %d of %d reached the best ELBO (the next is %.3g nats lower): the objective has local optima and more starts may find a better one",
				res.Best, res.Starts, res.FinalELBO-second))
		}
	}
}

// elboKind says how the fits' ELBO was estimated, for the notes.
func (p *modelPlan) elboKind() string {
	if p.o.ELBOSamples > 0 {
		return fmt.Sprintf("a fresh %d-sample ELBO estimate", p.o.ELBOSamples)
	}
	return fmt.Sprintf("the mean ELBO estimate of its last %d steps", p.rankWindow())
}

func formatFloats(x []float64) string {
	s := make([]string, len(x))
	for i, v := range x {
		s[i] = fmt.Sprintf("%.4g", v)
	}
	return fmt.Sprint(s)
}

// Streams of deriveSeed.
const (
	seedInit = iota + 1
	seedSteps
	seedELBO
	seedDraws
	seedCheck  // FitModel's preflight check of LogLik
	seedPolish // the random restarts and blocks of the check of the answer
)

// deriveSeed returns the seed of stream (kind, i) of a run with the given
// master seed, by splitmix64 finalisation, so that the streams of
// different fits and purposes are unrelated.
func deriveSeed(seed uint64, kind, i uint64) uint64 {
	return splitmix64(seed ^ splitmix64(kind<<32^i))
}

// splitmix64 is the finaliser of Steele, Lea and Flood's SplitMix64.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// sortedNames returns the keys of a guide map in order, for deterministic
// error messages.
func sortedNames(m map[string]GuideKind) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
