package models

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/permlab/permlab/ad"
)

// Amortized is a model whose data points each have latent variables of
// their own (local sites), besides latents shared by the whole data set
// (global sites). Variational inference fits it with an amortized guide: a
// network maps each data point to the variational parameters of its local
// sites, and the ELBO is estimated from minibatches (see the package
// documentation, "Amortized models"). It is an ordinary Go type holding its
// data.
type Amortized interface {
	// Sites declares the global latent sites, as Model.Sites does; it may
	// return none.
	Sites() []Site
	// LocalSites declares the latent sites that every data point has: a
	// *CatSite, or a *RealSite whose Shape is that of one data point's
	// value.
	LocalSites() []Site
	// N returns the number of data points (>= 1).
	N() int
	// Observe returns the observations of the data points batch (indices
	// in [0, N)), one row each: a tensor of shape (len(batch), …). The
	// amortized guide reads it and LogLik finds it in BatchSample.X. rng is
	// the optimisation step's source of randomness, for models that
	// redraw their data (the dynamic binarization of a VAE); a model whose
	// data are fixed ignores it. Observations the model cannot use (a NaN,
	// a value outside the support, a wrong size) are errors naming the
	// data point.
	Observe(batch []int, rng *rand.Rand) (*ad.Tensor, error)
	// LogLik returns log p(x_n | z_n, g) for each of the z.K() samples and
	// each of the z.B() data points of the batch, shape (K, B). It reads
	// local sites with z.Cat and z.Real (shape (K, B, …)), global ones
	// with z.Perm and z.Real (shape (K, …)), and the observations with
	// z.X().
	LogLik(t *ad.Tape, z *BatchSample) *ad.Var
}

// Parametric is implemented by a model with parameters of its own, such as
// the decoder weights of a variational autoencoder. Engines that fit
// amortized models optimise them jointly with the variational parameters,
// by maximising the ELBO (variational EM); they are point estimates, not
// latent sites.
type Parametric interface {
	Params() []*ad.Param
}

// CatSite declares, for every data point, D independent categorical
// variables of C classes each. In a BatchSample its value has shape
// (K, B, D, C): one probability vector per variable, a relaxed one-hot
// vector when variational inference trains with a continuous relaxation
// and an exact one-hot vector when it evaluates the discrete model.
type CatSite struct {
	Name string
	D, C int // D >= 1 variables, C >= 2 classes

	// PriorLogits are the logits of the prior p(z_d = c) ∝ exp(l_dc):
	// nil for the uniform prior, C values shared by every variable, or
	// D·C values (variable-major). They need not be normalised.
	PriorLogits []float64
}

// SiteName implements Site.
func (s *CatSite) SiteName() string { return s.Name }
func (*CatSite) site()              {}

// LogPrior returns the normalised prior log-probabilities log p(z_d = c),
// D·C values, variable-major. The site must have passed CheckAmortized.
func (s *CatSite) LogPrior() []float64 {
	out := make([]float64, s.D*s.C)
	for d := range s.D {
		row := out[d*s.C : (d+1)*s.C]
		switch len(s.PriorLogits) {
		case 0:
			for c := range row {
				row[c] = -math.Log(float64(s.C))
			}
			continue
		case s.C:
			copy(row, s.PriorLogits)
		default:
			copy(row, s.PriorLogits[d*s.C:(d+1)*s.C])
		}
		m := slices.Max(row)
		var z float64
		for _, v := range row {
			z += math.Exp(v - m)
		}
		lz := m + math.Log(z)
		for c := range row {
			row[c] -= lz
		}
	}
	return out
}

// AmortizedSpec is the validated site list of an amortized model.
type AmortizedSpec struct {
	// Global holds the global sites, validated as Check validates a
	// Model's; nil when the model declares none.
	Global *Spec
	// Local holds the local sites in declaration order, and Cats and Reals
	// the same sites by kind.
	Local []Site
	Cats  []*CatSite
	Reals []*RealSite
	// N is the number of data points.
	N int

	index map[string]Site // every site, global and local
}

// Lookup returns the site, global or local, with the given name.
func (s *AmortizedSpec) Lookup(name string) (Site, bool) {
	x, ok := s.index[name]
	return x, ok
}

// IsLocal reports whether name is a local site.
func (s *AmortizedSpec) IsLocal(name string) bool {
	return slices.ContainsFunc(s.Local, func(x Site) bool { return x.SiteName() == name })
}

// Names returns every site name, global sites first, each group in
// declaration order.
func (s *AmortizedSpec) Names() []string {
	var out []string
	if s.Global != nil {
		out = s.Global.Names()
	}
	for _, x := range s.Local {
		out = append(out, x.SiteName())
	}
	return out
}

// CheckAmortized validates an amortized model's sites and data size. Global
// sites get the checks of Check; local sites must be *CatSite (D >= 1,
// C >= 2, prior logits finite and of length C or D·C) or *RealSite (shape and
// prior as for a global real site). A model without local sites, a site
// declared twice (locally, globally or both), a local permutation site and
// N() < 1 are errors; every error names the site.
func CheckAmortized(m Amortized) (*AmortizedSpec, error) {
	if m == nil {
		return nil, errors.New("models: CheckAmortized: nil model")
	}
	if n := m.N(); n < 1 {
		return nil, fmt.Errorf("models: CheckAmortized: the model has N = %d data points, want >= 1", n)
	}
	spec := &AmortizedSpec{N: m.N(), index: map[string]Site{}}
	if globals := m.Sites(); len(globals) > 0 {
		g, err := checkSites(globals, "", "site %q has kind %T, which cannot be global")
		if err != nil {
			return nil, fmt.Errorf("models: CheckAmortized: global sites: %w", err)
		}
		spec.Global = g
		for k, v := range g.index {
			spec.index[k] = v
		}
	}
	locals := m.LocalSites()
	if len(locals) == 0 {
		return nil, errors.New("models: CheckAmortized: the model declares no local sites (a model with global sites only is a Model; fit it with vi.FitModel)")
	}
	for k, x := range locals {
		if x == nil {
			return nil, fmt.Errorf("models: CheckAmortized: local site %d is nil", k)
		}
		name := x.SiteName()
		if name == "" {
			return nil, fmt.Errorf("models: CheckAmortized: local site %d has no name", k)
		}
		if _, dup := spec.index[name]; dup {
			return nil, fmt.Errorf("models: CheckAmortized: site %q declared twice", name)
		}
		switch s := x.(type) {
		case *CatSite:
			if err := checkCat(s); err != nil {
				return nil, fmt.Errorf("models: CheckAmortized: %w", err)
			}
			spec.Cats = append(spec.Cats, s)
		case *RealSite:
			if err := checkReal(s); err != nil {
				return nil, fmt.Errorf("models: CheckAmortized: %w", err)
			}
			spec.Reals = append(spec.Reals, s)
		case *PermSite:
			return nil, fmt.Errorf("models: CheckAmortized: local site %q is a permutation site; local sites must be *CatSite or *RealSite", name)
		default:
			return nil, fmt.Errorf("models: CheckAmortized: local site %q has unknown kind %T", name, x)
		}
		spec.index[name] = x
		spec.Local = append(spec.Local, x)
	}
	return spec, nil
}

func checkCat(s *CatSite) error {
	switch {
	case s.D < 1:
		return fmt.Errorf("site %q: D must be >= 1, got %d", s.Name, s.D)
	case s.C < 2:
		return fmt.Errorf("site %q: C must be >= 2, got %d", s.Name, s.C)
	case len(s.PriorLogits) != 0 && len(s.PriorLogits) != s.C && len(s.PriorLogits) != s.D*s.C:
		return fmt.Errorf("site %q: %d prior logits, want 0 (uniform), C = %d or D·C = %d", s.Name, len(s.PriorLogits), s.C, s.D*s.C)
	}
	for i, v := range s.PriorLogits {
		if !finite(v) {
			return fmt.Errorf("site %q: prior logit %d is %v", s.Name, i, v)
		}
	}
	return nil
}

// BatchSample holds, for a minibatch of B data points and K joint samples,
// the values of an amortized model's sites and the batch's observations,
// as Vars on one tape. A local site has shape (K, B, …): (K, B, D, C) for a
// *CatSite, (K, B, Shape...) for a *RealSite; a global site has the shape
// it has in a Sample. Engines fill it with Set; models read it with Cat,
// Real, Perm, X and Index. Mistakes (an unknown name, a site of another
// kind, a missing value) are recorded on the tape, as Sample records them.
type BatchSample struct {
	t      *ad.Tape
	spec   *AmortizedSpec
	k      int
	hard   bool
	index  []int
	x      *ad.Var
	global *Sample
	local  map[string]*ad.Var
}

// NewBatchSample returns an empty sample of k draws of the sites in spec
// for the data points index, whose observations (one row each) are x.
// hard records whether categorical and permutation values are exact
// one-hot vectors and matrices.
func NewBatchSample(t *ad.Tape, spec *AmortizedSpec, k int, hard bool, index []int, x *ad.Var) *BatchSample {
	z := &BatchSample{t: t, spec: spec, k: k, hard: hard, index: index, x: x, local: make(map[string]*ad.Var, len(spec.Local))}
	if spec.Global != nil {
		z.global = NewSample(t, spec.Global, k, hard)
	}
	return z
}

// K returns the number of samples.
func (z *BatchSample) K() int { return z.k }

// B returns the number of data points in the batch.
func (z *BatchSample) B() int { return len(z.index) }

// Index returns the data points of the batch, in [0, N). It belongs to the
// engine and must not be modified.
func (z *BatchSample) Index() []int { return z.index }

// X returns the observations of the batch, as Observe returned them.
func (z *BatchSample) X() *ad.Var { return z.x }

// Tape returns the tape the values live on.
func (z *BatchSample) Tape() *ad.Tape { return z.t }

// Hard reports whether categorical and permutation sites hold exact one-hot
// values.
func (z *BatchSample) Hard() bool { return z.hard }

// Global returns the sample of the global sites, or nil if there are none.
func (z *BatchSample) Global() *Sample { return z.global }

// Set stores the value of site name, local or global. It records an error
// on the tape if the site is unknown or the shape is not the declared one.
func (z *BatchSample) Set(name string, v *ad.Var) {
	site, ok := z.spec.Lookup(name)
	if !ok {
		z.t.Fail(fmt.Errorf("models: BatchSample.Set: unknown site %q (sites: %v)", name, z.spec.Names()))
		return
	}
	if !z.spec.IsLocal(name) {
		z.global.Set(name, v)
		return
	}
	if v == nil {
		z.t.Fail(fmt.Errorf("models: BatchSample.Set: nil value for site %q", name))
		return
	}
	want := []int{z.k, z.B()}
	switch s := site.(type) {
	case *CatSite:
		want = append(want, s.D, s.C)
	case *RealSite:
		want = append(want, s.Shape...)
	}
	if !slices.Equal(v.Shape(), want) {
		z.t.Fail(fmt.Errorf("models: BatchSample.Set: local site %q has shape %v, want %v", name, v.Shape(), want))
		return
	}
	z.local[name] = v
}

// Cat returns the value of local categorical site name, shape (K, B, D, C).
func (z *BatchSample) Cat(name string) *ad.Var {
	site, ok := z.spec.Lookup(name)
	if !ok {
		return z.fail(fmt.Errorf("models: unknown site %q (sites: %v)", name, z.spec.Names()))
	}
	if _, cat := site.(*CatSite); !cat {
		return z.fail(fmt.Errorf("models: site %q is not a categorical site", name))
	}
	return z.localValue(name)
}

// Real returns the value of real site name: shape (K, B, Shape...) for a
// local site, (K, Shape...) for a global one.
func (z *BatchSample) Real(name string) *ad.Var {
	site, ok := z.spec.Lookup(name)
	if !ok {
		return z.fail(fmt.Errorf("models: unknown site %q (sites: %v)", name, z.spec.Names()))
	}
	if !z.spec.IsLocal(name) {
		return z.global.Real(name)
	}
	if _, real := site.(*RealSite); !real {
		return z.fail(fmt.Errorf("models: site %q is not a real site", name))
	}
	return z.localValue(name)
}

// Perm returns the value of global permutation site name, shape
// (K, B', N, N) with B' the site's Batch.
func (z *BatchSample) Perm(name string) *ad.Var {
	if _, ok := z.spec.Lookup(name); !ok {
		return z.fail(fmt.Errorf("models: unknown site %q (sites: %v)", name, z.spec.Names()))
	}
	if z.spec.IsLocal(name) {
		return z.fail(fmt.Errorf("models: site %q is local, not a permutation site", name))
	}
	return z.global.Perm(name)
}

func (z *BatchSample) localValue(name string) *ad.Var {
	v, ok := z.local[name]
	if !ok {
		return z.fail(fmt.Errorf("models: site %q has no value in this sample", name))
	}
	return v
}

func (z *BatchSample) fail(err error) *ad.Var {
	z.t.Fail(err)
	return ad.Neg(z.t.ConstScalar(math.NaN())) // the tape's dead value
}
