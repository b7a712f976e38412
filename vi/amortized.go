package vi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/ad/optim"
	"github.com/permlab/permlab/dist"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/nn/train"
)

// CatEstimator names the stochastic node, and with it the divergence term,
// that an amortized fit uses for categorical sites (see the package
// documentation, "Amortized models").
type CatEstimator int

const (
	// GumbelSoftmax feeds the relaxed sample softmax((l + g)/τ) to the
	// likelihood and uses the analytic KL of the categorical q(z | x) to
	// the categorical prior (Jang et al. 2016).
	GumbelSoftmax CatEstimator = iota
	// Concrete uses the relaxed variables themselves, with a Concrete
	// prior of temperature τ_prior and the single-sample log-ratio of the
	// Concrete densities (Maddison et al. 2016).
	Concrete
	// GumbelSpace takes the node to be the Gumbel-space variable
	// (l + g)/τ, with prior (l₀ + g')/τ_prior and the closed-form KL
	// between Gumbels (Mena et al. 2018, appendix).
	GumbelSpace
)

var catEstimatorNames = [...]string{"gumbel-softmax", "concrete", "gumbel-space"}

// String returns "gumbel-softmax", "concrete" or "gumbel-space".
func (e CatEstimator) String() string {
	if e < 0 || int(e) >= len(catEstimatorNames) {
		return fmt.Sprintf("CatEstimator(%d)", int(e))
	}
	return catEstimatorNames[e]
}

// ParseCatEstimator returns the estimator named s (see CatEstimator.String).
func ParseCatEstimator(s string) (CatEstimator, error) {
	for i, n := range catEstimatorNames {
		if s == n {
			return CatEstimator(i), nil
		}
	}
	return 0, fmt.Errorf("vi: unknown categorical estimator %q (want one of %s)", s, strings.Join(catEstimatorNames[:], ", "))
}

// LocalParams are the variational parameters of one local site for the B
// data points of a minibatch, as an Encoder computes them.
type LocalParams struct {
	// Logits of q(z_nd = c | x_n) for a *models.CatSite: shape (B, D, C)
	// or (B, D·C).
	Logits *ad.Var
	// Loc and LogScale, for a local *models.RealSite, are the mean and the
	// log standard deviation of the mean-field Gaussian q(z_n | x_n):
	// shape (B, Shape...) or (B, Size).
	Loc, LogScale *ad.Var
}

// Encoder is an amortized guide: a network that maps the observations of a
// minibatch to the variational parameters of every local site.
type Encoder interface {
	// Params returns the network's parameters.
	Params() []*ad.Param
	// Encode records on t the parameters of each local site, by site
	// name, for the observations x (shape (B, …), as the model's Observe
	// returns them).
	Encode(t *ad.Tape, x *ad.Var) (map[string]LocalParams, error)
}

// AmortizedOptions configures an amortized fit. Zero values select the
// documented defaults.
type AmortizedOptions struct {
	BatchSize int    // data points per step; required
	Epochs    int    // passes over the data; required
	Seed      uint64 // fixes the order of the data, every step's noise and the global guides' initial values

	// K is the number of samples of the local (and global) latents per
	// data point and step; default 1.
	K int
	// LR is the learning rate by step; default optim.Constant(1e-3).
	LR optim.Schedule
	// Clip, if > 0, clips the gradient norm of every step to Clip.
	Clip float64

	// Estimator is the stochastic node of the categorical sites.
	Estimator CatEstimator
	// Tau is the temperature τ of the relaxed categorical samples (and of
	// the Gumbel-Sinkhorn guides of global permutation sites) by step;
	// default optim.Geometric from 1 to 0.5 over the fit.
	Tau optim.Schedule
	// TauPrior is the prior's temperature τ_prior for the Concrete and
	// GumbelSpace estimators (and the surrogate prior of global
	// permutation sites); 0, the default, makes it follow τ.
	TauPrior float64

	// Iters is the number of Sinkhorn iterations of global permutation
	// guides; default 20. InitScale sets the spread of the global guides'
	// random initial values, as in ModelOptions; default 1.
	Iters     int
	InitScale float64

	// Checkpoint is a file path: the fit resumes from it when it exists
	// and writes it every CheckpointEvery steps (default 500), at the end
	// of every epoch and when ctx is cancelled. A resumed fit ends with
	// the parameters of an uninterrupted one, bit for bit.
	Checkpoint      string
	CheckpointEvery int
	// Progress, if set, receives a progress bar (or a line per epoch).
	Progress io.Writer

	// Validation, if set, is the same model on held-out data: after every
	// epoch the fit evaluates the discrete model's negative ELBO per data
	// point on it (EvalAmortized with EvalK samples, default 1, and a
	// fixed seed, so that epochs are compared on the same noise). It must
	// declare the same sites and share the model's own parameters
	// (models.Parametric), for a VAE the same decoder.
	Validation models.Amortized
	EvalK      int
	// OnEpoch, if set, is called after every epoch (and its evaluation).
	// Returning train.ErrStop ends the fit; any other error aborts it.
	OnEpoch func(AmortizedEpoch) error
}

// AmortizedEpoch summarises one finished epoch of an amortized fit.
type AmortizedEpoch struct {
	train.EpochStats // Loss is the epoch's mean of −ELBO/N over its steps
	// Tau is the temperature of the epoch's last step.
	Tau float64
	// HeldOut is the negative ELBO per data point of the Validation
	// model, with its standard error over data points; NaN without
	// Validation, and for epochs finished before a resume.
	HeldOut, HeldOutStdErr float64
}

// AmortizedResult is what FitAmortized returns.
type AmortizedResult struct {
	// Loss holds −ELBO_B/N of every step from step 0, resumed runs
	// included (see the package documentation).
	Loss   []float64
	Epochs []AmortizedEpoch
	Steps  int
	// Resumed is the step the fit resumed from; 0 if it started afresh.
	Resumed int
	Stopped bool
	// Globals are the guides of the global sites, in declaration order
	// (nil if the model has none).
	Globals []Guide
	Elapsed time.Duration
}

// AmortizedTask is the objective of an amortized fit as a train.Task: its
// Loss is −ELBO_B/N for a minibatch B (see the package documentation).
// FitAmortized runs it with train.Run; it is exported for those who drive
// train.Run themselves or need the loss of one step.
type AmortizedTask struct {
	m       models.Amortized
	spec    *models.AmortizedSpec
	enc     Encoder
	o       AmortizedOptions
	globals []Guide
	params  []*ad.Param
	total   int
	step    int
}

// NewAmortizedTask validates the model (models.CheckAmortized), the encoder
// and the options, fills in the options' defaults and builds the guides of
// the global sites.
func NewAmortizedTask(m models.Amortized, enc Encoder, o AmortizedOptions) (*AmortizedTask, error) {
	spec, err := models.CheckAmortized(m)
	if err != nil {
		return nil, fmt.Errorf("vi: %w", err)
	}
	if enc == nil {
		return nil, errors.New("vi: amortized fit: nil Encoder")
	}
	if err := o.setDefaults(spec.N); err != nil {
		return nil, err
	}
	k := &AmortizedTask{m: m, spec: spec, enc: enc, o: o,
		total: o.Epochs * train.StepsPerEpoch(spec.N, o.BatchSize)}
	if err := optim.Validate(o.Tau, k.total); err != nil {
		return nil, fmt.Errorf("vi: amortized fit: temperature: %w", err)
	}
	if spec.Global != nil {
		plan, err := newModelPlan(spec.Global, ModelOptions{Steps: k.total, Tau: o.Tau, TauPrior: o.TauPrior,
			Iters: o.Iters, InitScale: o.InitScale, PosteriorDraws: 1})
		if err != nil {
			return nil, err
		}
		if k.globals, err = plan.newGuides(deriveSeed(o.Seed, seedInit, 0)); err != nil {
			return nil, err
		}
	}
	seen := map[*ad.Param]bool{}
	add := func(ps []*ad.Param) {
		for _, p := range ps {
			if !seen[p] {
				seen[p] = true
				k.params = append(k.params, p)
			}
		}
	}
	add(enc.Params())
	if pm, ok := m.(models.Parametric); ok {
		add(pm.Params())
	}
	for _, g := range k.globals {
		add(g.Params())
	}
	if o.Validation != nil {
		if err := sameSites(spec, m, o.Validation); err != nil {
			return nil, err
		}
	}
	return k, nil
}

func (o *AmortizedOptions) setDefaults(n int) error {
	switch {
	case o.BatchSize < 1:
		return fmt.Errorf("vi: amortized fit: BatchSize must be >= 1, got %d", o.BatchSize)
	case o.Epochs < 1:
		return fmt.Errorf("vi: amortized fit: Epochs must be >= 1, got %d", o.Epochs)
	case o.K < 0:
		return fmt.Errorf("vi: amortized fit: K must be >= 0, got %d", o.K)
	case o.EvalK < 0:
		return fmt.Errorf("vi: amortized fit: EvalK must be >= 0, got %d", o.EvalK)
	case o.Estimator < 0 || int(o.Estimator) >= len(catEstimatorNames):
		return fmt.Errorf("vi: amortized fit: unknown %v", o.Estimator)
	case !(o.TauPrior >= 0) || math.IsInf(o.TauPrior, 0):
		return fmt.Errorf("vi: amortized fit: TauPrior must be finite and >= 0, got %v", o.TauPrior)
	case o.Iters < 0:
		return fmt.Errorf("vi: amortized fit: Iters must be >= 0, got %d", o.Iters)
	}
	if o.K == 0 {
		o.K = 1
	}
	if o.EvalK == 0 {
		o.EvalK = 1
	}
	if o.LR == nil {
		o.LR = optim.Constant(1e-3)
	}
	if o.Tau == nil {
		o.Tau = optim.Geometric{Start: 1, End: 0.5, Steps: o.Epochs * train.StepsPerEpoch(n, o.BatchSize)}
	}
	if o.Iters == 0 {
		o.Iters = 20
	}
	if o.InitScale == 0 {
		o.InitScale = 1
	}
	return nil
}

// sameSites checks that a validation model declares the sites of the
// training model and shares its parameters.
func sameSites(spec *models.AmortizedSpec, m, v models.Amortized) error {
	vs, err := models.CheckAmortized(v)
	if err != nil {
		return fmt.Errorf("vi: amortized fit: Validation: %w", err)
	}
	var g, vg []models.Site
	if spec.Global != nil {
		g = spec.Global.Sites
	}
	if vs.Global != nil {
		vg = vs.Global.Sites
	}
	if !reflect.DeepEqual(g, vg) || !reflect.DeepEqual(spec.Local, vs.Local) {
		return fmt.Errorf("vi: amortized fit: Validation declares sites %v, unlike the model's %v (or with other shapes or priors)", vs.Names(), spec.Names())
	}
	var mp, vp []*ad.Param
	if p, ok := m.(models.Parametric); ok {
		mp = p.Params()
	}
	if p, ok := v.(models.Parametric); ok {
		vp = p.Params()
	}
	if !slices.Equal(mp, vp) {
		return errors.New("vi: amortized fit: Validation must share the model's own parameters (models.Parametric), the same *ad.Param values in the same order")
	}
	return nil
}

// Params returns the parameters the task trains: the encoder's, then the
// model's own (models.Parametric), then the global guides', each once.
func (k *AmortizedTask) Params() []*ad.Param { return k.params }

// Globals returns the guides of the global sites.
func (k *AmortizedTask) Globals() []Guide { return k.globals }

// Options returns the options with their defaults filled in.
func (k *AmortizedTask) Options() AmortizedOptions { return k.o }

// SetStep implements train.StepSetter: it fixes the temperature of the next
// Loss.
func (k *AmortizedTask) SetStep(step int) { k.step = step }

// Temp returns the temperature τ of the current step.
func (k *AmortizedTask) Temp() float64 { return k.o.Tau.At(k.step) }

// tauPrior returns τ_prior at temperature tau.
func (k *AmortizedTask) tauPrior(tau float64) float64 {
	if k.o.TauPrior > 0 {
		return k.o.TauPrior
	}
	return tau
}

// Loss implements train.Task: it records −ELBO_B/N for the data points
// batch, with K samples drawn from rng after the model's Observe has used
// it.
func (k *AmortizedTask) Loss(t *ad.Tape, batch []int, rng *rand.Rand) (*ad.Var, error) {
	r, err := k.record(t, batch, rng, k.step, false)
	if err != nil {
		return nil, err
	}
	// −ELBO_B/N = −(1/B) Σ_n ELBO_n + div_global/N.
	loss := ad.Scale(r.local, -1/float64(len(batch)))
	if r.global != nil {
		loss = ad.Add(loss, ad.Scale(r.global, 1/float64(k.spec.N)))
	}
	if err := t.Err(); err != nil {
		return nil, fmt.Errorf("vi: amortized loss: %w", err)
	}
	return loss, nil
}

// recorded is the ELBO of one minibatch in parts.
type recorded struct {
	local  *ad.Var // Σ_n [mean_k log p(x_n | z) − KL_n], a scalar (training)
	perPt  *ad.Var // the same per data point, shape (B) (evaluation)
	global *ad.Var // the global sites' divergence, or nil
}

// record draws the sample of one minibatch and records its ELBO. hard
// selects evaluation: exact one-hot categorical draws with the analytic
// KL, per data point.
func (k *AmortizedTask) record(t *ad.Tape, batch []int, rng *rand.Rand, step int, hard bool) (*recorded, error) {
	nb := len(batch)
	if nb == 0 {
		return nil, errors.New("vi: amortized loss: empty batch")
	}
	for _, i := range batch {
		if i < 0 || i >= k.spec.N {
			return nil, fmt.Errorf("vi: amortized loss: data point %d outside [0, %d)", i, k.spec.N)
		}
	}
	obs, err := k.m.Observe(batch, rng)
	if err != nil {
		return nil, fmt.Errorf("vi: Observe: %w", err)
	}
	if err := checkObs(obs, batch); err != nil {
		return nil, err
	}
	x := t.Const(obs)
	kk := k.o.K
	if hard {
		kk = k.o.EvalK
	}
	z := models.NewBatchSample(t, k.spec, kk, hard, batch, x)
	s := Step{Index: step, K: kk, Rng: rng}
	r := &recorded{}
	for _, g := range k.globals {
		v, d, err := g.Rsample(t, s)
		if err != nil {
			return nil, fmt.Errorf("vi: guide %q: %w", g.Name(), err)
		}
		z.Set(g.Name(), v)
		var term *ad.Var
		switch {
		case d.KL != nil:
			term = d.KL
		case d.LogRatio != nil:
			term = ad.Mean(d.LogRatio)
		}
		if term != nil {
			if r.global == nil {
				r.global = term
			} else {
				r.global = ad.Add(r.global, term)
			}
		}
	}
	lp, err := k.enc.Encode(t, x)
	if err != nil {
		return nil, fmt.Errorf("vi: Encoder: %w", err)
	}
	if err := k.checkEncoded(lp, nb); err != nil {
		return nil, err
	}
	tau := k.o.Tau.At(step)
	var div *ad.Var // per data point (B) when hard, a scalar otherwise
	for _, site := range k.spec.Local {
		var v, d *ad.Var
		switch s := site.(type) {
		case *models.CatSite:
			v, d = k.catSite(t, s, lp[s.Name].Logits, kk, tau, rng, hard)
		case *models.RealSite:
			v, d = realLocal(t, s, lp[s.Name], kk, rng)
			if !hard {
				d = ad.Sum(d)
			}
		}
		z.Set(site.SiteName(), v)
		if div == nil {
			div = d
		} else {
			div = ad.Add(div, d)
		}
	}
	ll := k.m.LogLik(t, z)
	if err := t.Err(); err != nil {
		return nil, fmt.Errorf("vi: LogLik: %w", err)
	}
	if ll == nil || !(ll.Size() == kk*nb && (len(ll.Shape()) == 2 || kk == 1)) {
		var shape []int
		if ll != nil {
			shape = ll.Shape()
		}
		return nil, fmt.Errorf("vi: LogLik returned shape %v, want (K, B) = (%d, %d)", shape, kk, nb)
	}
	ll = ad.Reshape(ll, kk, nb)
	if hard {
		r.perPt = ad.Sub(ad.MeanAxis(ll, 0), div)
	} else {
		r.local = ad.Sub(ad.Scale(ad.Sum(ll), 1/float64(kk)), div)
	}
	return r, t.Err()
}

// checkObs returns an error naming the first observation that is not
// finite, or a row count that does not match the batch.
func checkObs(x *ad.Tensor, batch []int) error {
	if x == nil || len(x.Shape) == 0 || x.Shape[0] != len(batch) {
		var shape []int
		if x != nil {
			shape = x.Shape
		}
		return fmt.Errorf("vi: Observe returned shape %v for a batch of %d data points, want (%d, …)", shape, len(batch), len(batch))
	}
	if len(x.Data) == 0 || len(x.Data)%len(batch) != 0 {
		return fmt.Errorf("vi: Observe returned %d values for %d data points", len(x.Data), len(batch))
	}
	row := len(x.Data) / len(batch)
	for i, v := range x.Data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("vi: observation of data point %d, entry %d, is %v", batch[i/row], i%row, v)
		}
	}
	return nil
}

// checkEncoded checks that the encoder gave parameters of the right shapes
// for every local site and for no other.
func (k *AmortizedTask) checkEncoded(lp map[string]LocalParams, b int) error {
	for name := range lp {
		if !k.spec.IsLocal(name) {
			return fmt.Errorf("vi: Encoder gave parameters for %q, which is not a local site (local sites: %v)", name, localNames(k.spec))
		}
	}
	for _, site := range k.spec.Local {
		name := site.SiteName()
		p, ok := lp[name]
		if !ok {
			return fmt.Errorf("vi: Encoder gave no parameters for local site %q", name)
		}
		switch s := site.(type) {
		case *models.CatSite:
			if err := checkParamShape(name, "Logits", p.Logits, b, s.D*s.C); err != nil {
				return err
			}
		case *models.RealSite:
			if err := checkParamShape(name, "Loc", p.Loc, b, s.Size()); err != nil {
				return err
			}
			if err := checkParamShape(name, "LogScale", p.LogScale, b, s.Size()); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkParamShape(site, field string, v *ad.Var, b, size int) error {
	if v == nil {
		return fmt.Errorf("vi: Encoder gave no %s for local site %q", field, site)
	}
	if s := v.Shape(); len(s) < 2 || s[0] != b || v.Size() != b*size {
		return fmt.Errorf("vi: Encoder's %s for local site %q have shape %v, want (%d, …) with %d values per data point", field, site, s, b, size)
	}
	return nil
}

func localNames(spec *models.AmortizedSpec) []string {
	out := make([]string, len(spec.Local))
	for i, s := range spec.Local {
		out[i] = s.SiteName()
	}
	return out
}

// catSite draws the value of categorical site s, shape (K, B, D, C), and
// returns it with its divergence: when hard, an exact one-hot draw by the
// Gumbel-max trick and the analytic KL per data point (B); otherwise the
// relaxed sample and the estimator's divergence summed over the batch.
func (k *AmortizedTask) catSite(t *ad.Tape, s *models.CatSite, logits *ad.Var, kk int, tau float64, rng *rand.Rand, hard bool) (*ad.Var, *ad.Var) {
	b := logits.Shape()[0]
	l := ad.Reshape(logits, b, s.D, s.C)
	g, _ := dist.GumbelNoise(rng, kk, b, s.D, s.C) // dimensions are >= 1
	logPrior := t.Const(&ad.Tensor{Shape: []int{s.D, s.C}, Data: s.LogPrior()})
	if hard {
		lv := l.Value()
		oneHot := ad.Zeros(kk, b, s.D, s.C)
		for r := range kk * b * s.D {
			row := r % (b * s.D)
			best, arg := math.Inf(-1), 0
			for c := range s.C {
				if v := lv[row*s.C+c] + g.Data[r*s.C+c]; v > best {
					best, arg = v, c
				}
			}
			oneHot.Data[r*s.C+arg] = 1
		}
		return t.Const(oneHot), ad.SumAxis(ad.Reshape(categoricalKL(l, logPrior), b, -1), 1)
	}
	tp := k.tauPrior(tau)
	y, u := dist.ConcreteVar{Logits: l, Temp: tau}.RsampleNoise(g)
	return y, catDivergence(t, k.o.Estimator, s, l, u, kk, tau, tp)
}

// categoricalKL returns q log(q/p) elementwise for q = softmax(l) and the
// prior log-probabilities logPrior; summed, it is KL(q ‖ p).
func categoricalKL(l, logPrior *ad.Var) *ad.Var {
	logq := ad.LogSoftmax(l, -1)
	return ad.Mul(ad.Exp(logq), ad.Sub(logq, logPrior))
}

// CatDivergence records on t the divergence term D of estimator e for the
// categorical site s, summed over the B data points of a minibatch and
// averaged over the K samples: l are the logits of q(z | x), of shape
// (B, D, C) or (B, D·C), and u = (l + g)/τ the Gumbel-space samples drawn
// from them with standard Gumbel noise g, of shape (K, B, D, C) or any
// shape of K·B·D·C values. tau is the temperature τ of the samples and
// tauPrior the prior's τ_prior (for Concrete and GumbelSpace). It is the
// term FitAmortized subtracts from the likelihood; by estimator,
//
//	GumbelSoftmax  Σ_{n,d} Σ_c q_ndc (log q_ndc − log p_dc)          (u unused)
//	Concrete       (1/K) Σ_k Σ_{n,d} [log q_τ(x) − log p_τprior(x)],  x = log softmax(u_k)
//	GumbelSpace    Σ_{n,d,c} KL(Gumbel(l/τ, 1/τ) ‖ Gumbel(l₀/τ_prior, 1/τ_prior))  (u unused)
//
// with q = softmax(l), p the prior, q_τ and p_τprior the ExpConcrete
// densities of temperatures τ and τ_prior and locations l and the prior
// logits l₀ (see the package documentation, "Amortized models"). Shapes
// that do not fit s, a temperature that is not positive and finite and an
// invalid site or estimator are errors. Gradients flow to l and u.
func CatDivergence(t *ad.Tape, e CatEstimator, s *models.CatSite, l, u *ad.Var, tau, tauPrior float64) (*ad.Var, error) {
	switch {
	case t == nil || l == nil || u == nil || s == nil:
		return nil, errors.New("vi: CatDivergence: nil tape, site, logits or samples")
	case e < 0 || int(e) >= len(catEstimatorNames):
		return nil, fmt.Errorf("vi: CatDivergence: unknown %v", e)
	case s.D < 1 || s.C < 2:
		return nil, fmt.Errorf("vi: CatDivergence: site %q has D = %d, C = %d; want D >= 1, C >= 2", s.Name, s.D, s.C)
	case len(s.PriorLogits) != 0 && len(s.PriorLogits) != s.C && len(s.PriorLogits) != s.D*s.C:
		return nil, fmt.Errorf("vi: CatDivergence: site %q has %d prior logits, want 0, C = %d or D·C = %d", s.Name, len(s.PriorLogits), s.C, s.D*s.C)
	case !(tau > 0) || math.IsInf(tau, 0) || !(tauPrior > 0) || math.IsInf(tauPrior, 0):
		return nil, fmt.Errorf("vi: CatDivergence: temperatures τ = %v, τ_prior = %v must be positive and finite", tau, tauPrior)
	}
	for i, v := range s.PriorLogits {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("vi: CatDivergence: site %q: prior logit %d is %v", s.Name, i, v)
		}
	}
	dc := s.D * s.C
	if sh := l.Shape(); len(sh) < 2 || sh[0] < 1 || l.Size() != sh[0]*dc {
		return nil, fmt.Errorf("vi: CatDivergence: logits of shape %v for site %q, want (B, %d, %d)", sh, s.Name, s.D, s.C)
	}
	b := l.Shape()[0]
	if u.Size() == 0 || u.Size()%(b*dc) != 0 {
		return nil, fmt.Errorf("vi: CatDivergence: samples of shape %v for logits of shape %v, want (K, %d, %d, %d)", u.Shape(), l.Shape(), b, s.D, s.C)
	}
	kk := u.Size() / (b * dc)
	d := catDivergence(t, e, s, ad.Reshape(l, b, s.D, s.C), ad.Reshape(u, kk, b, s.D, s.C), kk, tau, tauPrior)
	if err := t.Err(); err != nil {
		return nil, fmt.Errorf("vi: CatDivergence: %w", err)
	}
	return d, nil
}

// catDivergence is CatDivergence for checked arguments: logits l (B, D, C)
// and samples u (K, B, D, C).
func catDivergence(t *ad.Tape, e CatEstimator, s *models.CatSite, l, u *ad.Var, kk int, tau, tauPrior float64) *ad.Var {
	raw := ad.Zeros(s.D, s.C) // prior logits as given, 0 for uniform
	for d := range s.D {
		for c := range s.C {
			switch len(s.PriorLogits) {
			case s.C:
				raw.Data[d*s.C+c] = s.PriorLogits[c]
			case s.D * s.C:
				raw.Data[d*s.C+c] = s.PriorLogits[d*s.C+c]
			}
		}
	}
	switch e {
	case GumbelSoftmax:
		return ad.Sum(categoricalKL(l, t.Const(&ad.Tensor{Shape: []int{s.D, s.C}, Data: s.LogPrior()})))
	case Concrete:
		lx := ad.LogSoftmax(u, -1)
		lq := dist.ConcreteVar{Logits: l, Temp: tau}.LogProbLog(lx)
		lp := dist.ConcreteVar{Logits: t.Const(raw), Temp: tauPrior}.LogProbLog(lx)
		return ad.Scale(ad.Sum(ad.Sub(lq, lp)), 1/float64(kk))
	case GumbelSpace:
		// KL(Gumbel(l/τ, 1/τ) ‖ Gumbel(l₀/τ_p, 1/τ_p)) is the KL to the
		// zero-location prior of the logits shifted by −l₀ τ/τ_p.
		if len(s.PriorLogits) == 0 {
			return dist.GumbelKLVar(l, tau, tauPrior)
		}
		return dist.GumbelKLVar(ad.Sub(l, t.Const(scaled(raw, tau/tauPrior))), tau, tauPrior)
	}
	t.Fail(fmt.Errorf("vi: unknown %v", e))
	return t.ConstScalar(math.NaN())
}

func scaled(x *ad.Tensor, a float64) *ad.Tensor {
	out := ad.Zeros(x.Shape...)
	for i, v := range x.Data {
		out.Data[i] = a * v
	}
	return out
}

// realLocal draws the value of local real site s, shape (K, B, Shape...),
// by reparameterization from the encoder's mean and log standard
// deviation, and returns it with its KL per data point (B): closed form
// for a models.Normal prior, the Monte Carlo log q(z) − log p(z) averaged
// over the K samples otherwise.
func realLocal(t *ad.Tape, s *models.RealSite, p LocalParams, kk int, rng *rand.Rand) (*ad.Var, *ad.Var) {
	b, d := p.Loc.Shape()[0], s.Size()
	loc, ls := ad.Reshape(p.Loc, b, d), ad.Reshape(p.LogScale, b, d)
	eps := ad.Zeros(kk, b, d)
	for i := range eps.Data {
		eps.Data[i] = rng.NormFloat64()
	}
	e := t.Const(eps)
	flat := ad.Add(loc, ad.Mul(ad.Exp(ls), e)) // (K, B, d)
	z := ad.Reshape(flat, append([]int{kk, b}, s.Shape...)...)
	if n, ok := s.Prior.(models.Normal); ok {
		// log(σ_p/σ_q) + (σ_q² + (μ_q − μ_p)²)/(2σ_p²) − ½ per coordinate.
		v := ad.Add(ad.Exp(ad.Scale(ls, 2)), ad.Square(ad.AddConst(loc, -n.Mu)))
		kl := ad.AddConst(ad.Sub(ad.Scale(v, 1/(2*n.Sigma*n.Sigma)), ls), math.Log(n.Sigma)-0.5)
		return z, ad.SumAxis(kl, 1)
	}
	// log q(z) = Σ_d [−ε²/2 − log σ_d] − (d/2) log 2π.
	logq := ad.AddConst(ad.Neg(ad.Add(ad.Scale(ad.Square(e), 0.5), ls)), -0.5*math.Log(2*math.Pi))
	lq := ad.SumAxis(logq, 2) // (K, B)
	lp := ad.Reshape(s.Prior.LogProbVar(ad.Reshape(flat, append([]int{kk * b}, s.Shape...)...)), kk, b)
	return z, ad.MeanAxis(ad.Sub(lq, lp), 0)
}

// FitAmortized fits an amortized model: the encoder enc maps each data
// point to the variational parameters of its local sites, the global sites
// get the guides FitModel would give them, and the encoder's, the model's
// own (models.Parametric) and the global guides' parameters are optimised
// by Adam on −ELBO_B/N over epochs of shuffled minibatches, with the
// minibatch loop of package nn/train: its seeded order, per-step
// random streams, atomic checkpoints and bit-exact resumption (see the
// package documentation, "Amortized models").
//
// A model that fails models.CheckAmortized, bad options, an encoder whose
// output misses a local site or has the wrong shape, observations that are
// not finite, and errors recorded by the model's LogLik are errors that
// name the problem. If ctx is cancelled FitAmortized checkpoints (when
// configured) and returns the partial result with ctx.Err().
func FitAmortized(ctx context.Context, m models.Amortized, enc Encoder, o AmortizedOptions) (*AmortizedResult, error) {
	task, err := NewAmortizedTask(m, enc, o)
	if err != nil {
		return nil, err
	}
	o = task.o
	res := &AmortizedResult{Globals: task.globals}
	var evalTask *AmortizedTask
	if o.Validation != nil {
		vo := o
		vo.Validation = nil
		if evalTask, err = NewAmortizedTask(o.Validation, enc, vo); err != nil {
			return nil, err
		}
		evalTask.globals = task.globals
	}
	to := train.Options{N: task.spec.N, BatchSize: o.BatchSize, Epochs: o.Epochs, Seed: o.Seed,
		LR: o.LR, Clip: o.Clip, Checkpoint: o.Checkpoint, CheckpointEvery: o.CheckpointEvery,
		Progress: o.Progress}
	to.OnEpoch = func(st train.EpochStats) error {
		ep := AmortizedEpoch{EpochStats: st, Tau: o.Tau.At(st.Step - 1), HeldOut: math.NaN(), HeldOutStdErr: math.NaN()}
		if evalTask != nil {
			ev, err := evalTask.eval(st.Step-1, deriveSeed(o.Seed, seedELBO, 0))
			if err != nil {
				return fmt.Errorf("vi: held-out evaluation: %w", err)
			}
			ep.HeldOut, ep.HeldOutStdErr = ev.NegELBO, ev.StdErr
		}
		res.Epochs = append(res.Epochs, ep)
		if o.OnEpoch != nil {
			return o.OnEpoch(ep)
		}
		return nil
	}
	tr, err := train.Run(ctx, task.params, task, to)
	if tr != nil {
		res.Loss, res.Steps, res.Resumed, res.Stopped, res.Elapsed = tr.Loss, tr.Steps, tr.Resumed, tr.Stopped, tr.Elapsed
		// Epochs finished before a resume come from the checkpoint, without
		// evaluations.
		if done := len(tr.Epochs) - len(res.Epochs); done > 0 {
			early := make([]AmortizedEpoch, done)
			for i, st := range tr.Epochs[:done] {
				early[i] = AmortizedEpoch{EpochStats: st, Tau: o.Tau.At(st.Step - 1), HeldOut: math.NaN(), HeldOutStdErr: math.NaN()}
			}
			res.Epochs = append(early, res.Epochs...)
		}
	}
	return res, err
}

// Eval is the evaluation of an amortized model on its data.
type Eval struct {
	// NegELBO is the negative ELBO of the discrete model per data point,
	// and StdErr its standard error over data points.
	NegELBO, StdErr float64
	N               int
}

// EvalOptions configures EvalAmortized.
type EvalOptions struct {
	BatchSize int    // data points per tape; default 100
	K         int    // samples per data point; default 1
	Seed      uint64 // the noise, and the randomness of the model's Observe
	// Globals are the fitted guides of the global sites
	// (AmortizedResult.Globals), required when the model has global
	// sites; Step is the step whose temperature they sample at.
	Globals []Guide
	Step    int
}

// EvalAmortized returns the negative ELBO per data point of the discrete
// model on the data of m (training or held-out data), with the encoder enc:
// for each data point, −[(1/K) Σ_k log p(x_n | z_n⁽ᵏ⁾, g⁽ᵏ⁾) − KL(q(z_n | x_n) ‖ p(z_n))]
// with exact one-hot categorical draws z ~ q and the analytic categorical KL
// (whatever estimator trained the encoder), reparameterized draws and the
// KL of FitAmortized for local real sites, and the global sites drawn
// from their fitted guides, whose divergence, a property of the training
// data, is left out. Data points are taken in order, in batches; the result
// depends on Seed only.
func EvalAmortized(m models.Amortized, enc Encoder, o EvalOptions) (Eval, error) {
	if o.BatchSize < 0 || o.K < 0 {
		return Eval{}, fmt.Errorf("vi: EvalAmortized: BatchSize %d and K %d must be >= 0", o.BatchSize, o.K)
	}
	if o.BatchSize == 0 {
		o.BatchSize = 100
	}
	task, err := NewAmortizedTask(m, enc, AmortizedOptions{BatchSize: o.BatchSize, Epochs: 1, EvalK: o.K, Tau: optim.Constant(1)})
	if err != nil {
		return Eval{}, err
	}
	if want := len(task.globals); len(o.Globals) != want {
		return Eval{}, fmt.Errorf("vi: EvalAmortized: %d global guides given, the model has %d global sites", len(o.Globals), want)
	}
	for i, g := range o.Globals {
		if g.Name() != task.globals[i].Name() {
			return Eval{}, fmt.Errorf("vi: EvalAmortized: global guide %d is %q, want %q", i, g.Name(), task.globals[i].Name())
		}
	}
	task.globals = o.Globals
	return task.eval(o.Step, o.Seed)
}

// eval computes the held-out negative ELBO at the temperature of step.
func (k *AmortizedTask) eval(step int, seed uint64) (Eval, error) {
	n := k.spec.N
	rng := rand.New(rand.NewPCG(seed, 0x6576616c))
	t := ad.NewTape()
	var sum, sq float64
	batch := make([]int, 0, k.o.BatchSize)
	for lo := 0; lo < n; lo += k.o.BatchSize {
		batch = batch[:0]
		for i := lo; i < min(lo+k.o.BatchSize, n); i++ {
			batch = append(batch, i)
		}
		t.Reset()
		r, err := k.record(t, batch, rng, step, true)
		if err != nil {
			return Eval{}, err
		}
		for j, v := range r.perPt.Value() {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return Eval{}, fmt.Errorf("vi: ELBO of data point %d is %v", batch[j], v)
			}
			sum += -v
			sq += v * v
		}
	}
	mean := sum / float64(n)
	se := 0.0
	if n > 1 {
		se = math.Sqrt(math.Max(sq/float64(n)-mean*mean, 0) * float64(n) / float64(n-1) / float64(n))
	}
	return Eval{NegELBO: mean, StdErr: se, N: n}, nil
}
