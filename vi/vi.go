package vi

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/ad/optim"
	"github.com/permlab/permlab/nn/train"
)

// Model is a probabilistic model p(y, z) with its data held inside.
type Model interface {
	// LogLik returns log p(y | z) for each of the K samples in z, as a Var
	// of shape (K) (or a scalar when K = 1); ELBO reports any other shape
	// as an error. z holds one Var per guide, keyed by the guide's Name,
	// each with the K samples on its leading axis.
	LogLik(t *ad.Tape, z Sample) *ad.Var
}

// Sample maps guide names to their reparameterized samples.
type Sample map[string]*ad.Var

// Step describes the current optimisation step to guides.
type Step struct {
	Index int        // step number, from 0
	K     int        // number of samples to draw
	Rng   *rand.Rand // randomness for this step only
}

// Divergence is a guide's contribution to the ELBO's penalty. Exactly one
// field is set: KL, a scalar closed-form KL(q ‖ p), or LogRatio, the K values
// log q(z⁽ᵏ⁾) − log p(z⁽ᵏ⁾) of a Monte Carlo estimate. Both nil means no
// penalty (an unregularised guide).
type Divergence struct {
	KL       *ad.Var
	LogRatio *ad.Var
}

// Guide is a variational family for one latent site, together with that
// site's prior.
type Guide interface {
	// Name identifies the site in Sample.
	Name() string
	// Params returns the variational parameters.
	Params() []*ad.Param
	// Rsample draws s.K reparameterized samples on t and returns them with
	// the divergence term.
	Rsample(t *ad.Tape, s Step) (*ad.Var, Divergence, error)
}

// ELBO records the ELBO estimate of one step on t and returns it with its
// parts: the mean log-likelihood and the total divergence. Its gradient with
// respect to the guides' parameters is an unbiased estimate of the ELBO's.
func ELBO(t *ad.Tape, m Model, guides []Guide, s Step) (elbo, loglik, div *ad.Var, err error) {
	if m == nil || len(guides) == 0 {
		return nil, nil, nil, errors.New("vi: ELBO: need a model and at least one guide")
	}
	if s.K < 1 {
		return nil, nil, nil, fmt.Errorf("vi: ELBO: K must be >= 1, got %d", s.K)
	}
	z := make(Sample, len(guides))
	var terms []*ad.Var
	for _, g := range guides {
		v, d, err := g.Rsample(t, s)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("vi: guide %q: %w", g.Name(), err)
		}
		if _, dup := z[g.Name()]; dup {
			return nil, nil, nil, fmt.Errorf("vi: two guides named %q", g.Name())
		}
		z[g.Name()] = v
		switch {
		case d.KL != nil:
			terms = append(terms, d.KL)
		case d.LogRatio != nil:
			terms = append(terms, ad.Mean(d.LogRatio))
		}
	}
	ll := m.LogLik(t, z)
	if err := t.Err(); err != nil {
		return nil, nil, nil, err
	}
	if err := checkLogLikShape(ll, s.K); err != nil {
		return nil, nil, nil, fmt.Errorf("vi: %w", err)
	}
	loglik = ad.Mean(ll)
	div = t.ConstScalar(0)
	for _, d := range terms {
		div = ad.Add(div, d)
	}
	elbo = ad.Sub(loglik, div)
	return elbo, loglik, div, t.Err()
}

// checkLogLikShape returns an error unless ll, what a LogLik returned for k
// samples, has shape (k): one log-likelihood per sample. Only for k = 1 is a
// single value of another shape (a scalar) accepted. Any other shape is an
// error rather than a silent mistake: a scalar, broadcast to the k samples,
// would count the data k times over and fit a k-times sharper posterior.
func checkLogLikShape(ll *ad.Var, k int) error {
	if ll == nil {
		return fmt.Errorf("LogLik returned nil for K = %d samples; it must return shape (K) = (%d), one value per sample", k, k)
	}
	shape := ll.Shape()
	if len(shape) == 1 && shape[0] == k || k == 1 && ll.Size() == 1 {
		return nil
	}
	if len(shape) == 0 {
		return fmt.Errorf("LogLik returned a scalar for K = %d samples; it must return shape (K) = (%d), one value per sample (only K = 1 may return a scalar): sum over the data axes, not over the sample axis 0", k, k)
	}
	return fmt.Errorf("LogLik returned shape %s for K = %d samples; it must return shape (K) = (%d), one value per sample", formatShape(shape), k, k)
}

// formatShape writes a shape as (d0, d1, ...), and a scalar's as ().
func formatShape(shape []int) string {
	var b strings.Builder
	b.WriteByte('(')
	for i, d := range shape {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(d))
	}
	b.WriteByte(')')
	return b.String()
}

// The defaults that Fit and FitModel share.
const (
	// DefaultK is the number of joint samples per step.
	DefaultK = 8
	// DefaultLRStart and DefaultLREnd are the ends of the default learning
	// rate schedule, optim.Geometric from DefaultLRStart to DefaultLREnd
	// over the fit's steps, so that the final parameters settle.
	DefaultLRStart, DefaultLREnd = 0.1, 0.005
	// DefaultProgressEvery is the number of steps between progress calls.
	DefaultProgressEvery = 100
)

// Options configures Fit. Zero values select the documented defaults, the
// same as FitModel's.
type Options struct {
	Steps int                                        // optimisation steps; required
	K     int                                        // samples per step; default DefaultK
	LR    optim.Schedule                             // learning rate; default geometric from DefaultLRStart to DefaultLREnd over Steps
	Seed  uint64                                     // master seed
	Clip  float64                                    // if > 0, clip the gradient norm to Clip
	Optim func([]*ad.Param) (optim.Optimizer, error) // default Adam

	// Checkpoint is a file path; if set, Fit resumes from it when it exists
	// and writes it every CheckpointEvery steps (default 100) and at the end.
	Checkpoint      string
	CheckpointEvery int

	// Progress, if set, is called after every ProgressEvery steps (default
	// DefaultProgressEvery) and after the last.
	Progress      func(Progress)
	ProgressEvery int
}

// Progress reports the state of a fit.
type Progress struct {
	Step, Steps int
	ELBO        float64 // this step's estimate
	LogLik, Div float64
	Elapsed     time.Duration
}

// Result is what Fit returns.
type Result struct {
	ELBO    []float64 // per-step estimates, from step 0 (resumed runs included)
	Steps   int       // steps completed
	Resumed int       // the step a checkpoint resumed from, 0 if none
	Elapsed time.Duration
}

// StepRand returns the random source Fit uses for step i of a run with the
// given seed: every step has its own stream, so resumed runs see the same
// numbers.
func StepRand(seed uint64, step int) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15^uint64(step)))
}

// Fit maximises the ELBO of m over the guides' parameters.
//
// It returns early with ctx.Err() when ctx is cancelled, after writing a
// checkpoint if one is configured. Parameters are updated in place.
func Fit(ctx context.Context, m Model, guides []Guide, o Options) (*Result, error) {
	if o.Steps < 1 {
		return nil, fmt.Errorf("vi: Fit: Steps must be >= 1, got %d", o.Steps)
	}
	if o.K == 0 {
		o.K = DefaultK
	}
	if o.K < 0 {
		return nil, fmt.Errorf("vi: Fit: K must be >= 1, got %d", o.K)
	}
	if o.LR == nil {
		o.LR = optim.Geometric{Start: DefaultLRStart, End: DefaultLREnd, Steps: o.Steps}
	}
	if err := optim.Validate(o.LR, o.Steps); err != nil {
		return nil, fmt.Errorf("vi: Fit: learning rate: %w", err)
	}
	if o.Optim == nil {
		o.Optim = func(ps []*ad.Param) (optim.Optimizer, error) { return optim.NewAdam(ps) }
	}
	if o.CheckpointEvery <= 0 {
		o.CheckpointEvery = 100
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = DefaultProgressEvery
	}
	if len(guides) == 0 {
		return nil, errors.New("vi: Fit: no guides")
	}
	var params []*ad.Param
	for _, g := range guides {
		params = append(params, g.Params()...)
	}
	opt, err := o.Optim(params)
	if err != nil {
		return nil, fmt.Errorf("vi: Fit: %w", err)
	}
	// The step loop is package train's, which every trainer shares: the
	// loss is −ELBO, and the ELBO trace its negation (exact).
	var ll, div float64 // the last step's parts, for Progress
	began := time.Now()
	loop := &train.Loop{
		Name: "vi", Params: params, Optim: opt, Steps: o.Steps, LR: o.LR, Clip: o.Clip,
		Checkpoint: o.Checkpoint, CheckpointEvery: o.CheckpointEvery,
		Settings: []train.Setting{{Name: "Seed", Value: fmt.Sprint(o.Seed)}, {Name: "K", Value: fmt.Sprint(o.K)}},
		Loss: func(t *ad.Tape, i int) (*ad.Var, error) {
			elbo, l, d, err := ELBO(t, m, guides, Step{Index: i, K: o.K, Rng: StepRand(o.Seed, i)})
			if err != nil {
				return nil, err
			}
			if val := elbo.Item(); math.IsNaN(val) || math.IsInf(val, 0) {
				return nil, fmt.Errorf("ELBO is %v (log-likelihood %v, divergence %v)", val, l.Item(), d.Item())
			}
			ll, div = l.Item(), d.Item()
			return ad.Neg(elbo), nil
		},
		After: func(i int, loss float64) (bool, bool, error) {
			if done := i + 1; o.Progress != nil && (done%o.ProgressEvery == 0 || done == o.Steps) {
				o.Progress(Progress{Step: done, Steps: o.Steps, ELBO: -loss, LogLik: ll, Div: div, Elapsed: time.Since(began)})
			}
			return false, false, nil
		},
	}
	lr, err := loop.Run(ctx)
	if lr == nil {
		return nil, err
	}
	res := &Result{Steps: lr.Steps, Resumed: lr.Resumed, Elapsed: lr.Elapsed, ELBO: make([]float64, len(lr.Losses))}
	for i, v := range lr.Losses {
		res.ELBO[i] = -v
	}
	return res, err
}
