package vae

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/dist"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/nn"
	"github.com/permlab/permlab/vi"
)

// Estimator names the stochastic node of the ELBO and its KL term (see the
// package documentation). It is package vi's CatEstimator under this
// package's name (Estimator.CatEstimator): the same values, names and code.
type Estimator int

const (
	GumbelSoftmax = Estimator(vi.GumbelSoftmax) // relaxed sample, analytic categorical KL
	Concrete      = Estimator(vi.Concrete)      // relaxed densities, Monte Carlo KL
	GumbelSpace   = Estimator(vi.GumbelSpace)   // Gumbel-space node, closed-form KL
)

// estimatorList lists every Estimator, in order.
var estimatorList = [...]Estimator{GumbelSoftmax, Concrete, GumbelSpace}

func (e Estimator) valid() bool { return e >= 0 && int(e) < len(estimatorList) }

// String returns the estimator's flag name: "gumbel-softmax", "concrete" or
// "gumbel-space".
func (e Estimator) String() string {
	if !e.valid() {
		return fmt.Sprintf("Estimator(%d)", int(e))
	}
	return e.CatEstimator().String()
}

// CatEstimator returns the estimator of package vi that is e: they have the
// same names and the same stochastic nodes, and the loss of either is
// computed by package vi (vi.CatDivergence).
func (e Estimator) CatEstimator() vi.CatEstimator { return vi.CatEstimator(e) }

// ParseEstimator returns the estimator named s (see Estimator.String).
func ParseEstimator(s string) (Estimator, error) {
	names := make([]string, len(estimatorList))
	for i, e := range estimatorList {
		if s == e.String() {
			return e, nil
		}
		names[i] = e.String()
	}
	return 0, fmt.Errorf("vae: unknown estimator %q (want one of %s)", s, strings.Join(names, ", "))
}

// Config describes a categorical VAE.
type Config struct {
	Input   int   // pixels per image (784 for MNIST)
	Latents int   // categorical latent variables per image
	Classes int   // classes of each latent
	Hidden  []int // encoder hidden widths, input side first; the decoder mirrors them

	Estimator Estimator
	// PriorTemp is the prior's temperature λ_p for Concrete and τ_p for
	// GumbelSpace; 0 means the posterior's current temperature.
	PriorTemp float64
	// Precision is the arithmetic of the dense layers' matrix products
	// (nn.Float64, the zero value, or nn.Float32); everything else,
	// parameters included, is float64 either way.
	Precision nn.Precision `json:",omitempty"`
}

// DefaultConfig returns the setup of Jang et al. (2016): 20 latents of 10
// classes, encoder 784-512-256-200 and decoder 200-256-512-784.
func DefaultConfig() Config {
	return Config{Input: 784, Latents: 20, Classes: 10, Hidden: []int{512, 256}}
}

func (c *Config) validate() error {
	switch {
	case c.Input < 1:
		return fmt.Errorf("vae: Input %d must be >= 1", c.Input)
	case c.Latents < 1:
		return fmt.Errorf("vae: Latents %d must be >= 1", c.Latents)
	case c.Classes < 2:
		return fmt.Errorf("vae: Classes %d must be >= 2", c.Classes)
	case !c.Estimator.valid():
		return fmt.Errorf("vae: unknown %v", c.Estimator)
	case c.PriorTemp < 0 || math.IsNaN(c.PriorTemp) || math.IsInf(c.PriorTemp, 0):
		return fmt.Errorf("vae: PriorTemp %v must be finite and >= 0", c.PriorTemp)
	case !c.Precision.Valid():
		return fmt.Errorf("vae: unknown %v", c.Precision)
	}
	for i, h := range c.Hidden {
		if h < 1 {
			return fmt.Errorf("vae: Hidden[%d] = %d must be >= 1", i, h)
		}
	}
	return nil
}

// Model is a categorical VAE: an encoder to the logits of q(z | x) and a
// decoder from (relaxed) one-hot z to the Bernoulli logits of p(x | z).
type Model struct {
	cfg      Config
	enc, dec nn.Sequential
}

// New returns a model with He-initialised weights drawn from rng.
// Parameters are named "enc0.W", "enc0.b", …, "dec0.W", ….
func New(cfg Config, rng *rand.Rand) (*Model, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.Hidden = append([]int(nil), cfg.Hidden...)
	m := &Model{cfg: cfg}
	k := cfg.Latents * cfg.Classes
	encW := append(append([]int{cfg.Input}, cfg.Hidden...), k)
	decW := []int{k}
	for i := len(cfg.Hidden) - 1; i >= 0; i-- {
		decW = append(decW, cfg.Hidden[i])
	}
	decW = append(decW, cfg.Input)
	build := func(prefix string, w []int) (nn.Sequential, error) {
		var s nn.Sequential
		for i := 0; i+1 < len(w); i++ {
			init := nn.HeUniform
			if i+2 == len(w) {
				init = nn.GlorotUniform // no ReLU after the last layer
			}
			d, err := nn.NewDense(rng, fmt.Sprintf("%s%d", prefix, i), w[i], w[i+1], init, nn.WithPrecision(cfg.Precision))
			if err != nil {
				return nil, fmt.Errorf("vae: New: %w", err)
			}
			s = append(s, d)
			if i+2 < len(w) {
				s = append(s, nn.ReLU{})
			}
		}
		return s, nil
	}
	var err error
	if m.enc, err = build("enc", encW); err != nil {
		return nil, err
	}
	if m.dec, err = build("dec", decW); err != nil {
		return nil, err
	}
	return m, nil
}

// Config returns the model's configuration.
func (m *Model) Config() Config {
	c := m.cfg
	c.Hidden = append([]int(nil), c.Hidden...)
	return c
}

// Params returns the encoder's parameters followed by the decoder's.
func (m *Model) Params() []*ad.Param {
	return append(m.enc.Params(), m.dec.Params()...)
}

// Encode returns the logits of q(z | x), shape (B, Latents, Classes), for
// images x of shape (B, Input).
func (m *Model) Encode(t *ad.Tape, x *ad.Var) *ad.Var {
	return ad.Reshape(m.enc.Forward(t, x), -1, m.cfg.Latents, m.cfg.Classes)
}

// Decode returns the Bernoulli logits of p(x | z), shape (B, Input), for
// (relaxed) one-hot z of shape (B, Latents, Classes) or (B, Latents·Classes).
func (m *Model) Decode(t *ad.Tape, z *ad.Var) *ad.Var {
	return m.dec.Forward(t, ad.Reshape(z, -1, m.cfg.Latents*m.cfg.Classes))
}

// NegLogLik returns −log p(x | z) = BCE(f(z), x) per image: the Bernoulli
// likelihood of the decoder f, the one line of the model that every loss,
// fit and evaluation goes through. x has shape (…, Input) and z the same
// leading dimensions followed by (Latents, Classes) or Latents·Classes; the
// result has x's leading shape.
func (m *Model) NegLogLik(t *ad.Tape, z, x *ad.Var) *ad.Var {
	logits := m.Decode(t, z)
	if x != nil && len(x.Shape()) != 2 {
		logits = ad.Reshape(logits, x.Shape()...)
	}
	return nn.BinaryCrossEntropyWithLogits(logits, x)
}

// Loss records on t the mean negative ELBO of the binary images x, shape
// (B, Input), with one relaxed sample per image at temperature tau whose
// Gumbel noise is drawn from rng. It returns an error for a wrong shape,
// pixels outside [0, 1] or a temperature that is not positive.
func (m *Model) Loss(t *ad.Tape, x *ad.Var, tau float64, rng *rand.Rand) (*ad.Var, error) {
	if err := m.checkInput("Loss", x, tau); err != nil {
		return nil, err
	}
	b := x.Shape()[0]
	g, err := dist.GumbelNoise(rng, b, m.cfg.Latents, m.cfg.Classes)
	if err != nil {
		return nil, fmt.Errorf("vae: Loss: %w", err)
	}
	return m.LossNoise(t, x, tau, g)
}

// LossNoise is Loss with the standard Gumbel noise g, of shape (B, Latents,
// Classes), given: the mean over the B images of
//
//	BCE(f(y), x) + D,   y = softmax(u),  u = (l(x) + g)/τ,
//
// with D the KL term of Config.Estimator, which package vi computes
// (vi.CatDivergence, the term vi.FitAmortized uses).
func (m *Model) LossNoise(t *ad.Tape, x *ad.Var, tau float64, g *ad.Tensor) (*ad.Var, error) {
	if err := m.checkInput("LossNoise", x, tau); err != nil {
		return nil, err
	}
	b := x.Shape()[0]
	if g == nil || g.Size() != b*m.cfg.Latents*m.cfg.Classes {
		return nil, fmt.Errorf("vae: LossNoise: noise must have shape (%d, %d, %d)", b, m.cfg.Latents, m.cfg.Classes)
	}
	logits := m.Encode(t, x)
	y, u := dist.ConcreteVar{Logits: logits, Temp: tau}.RsampleNoise(g)
	rec := m.NegLogLik(t, y, x)
	kl, err := vi.CatDivergence(t, m.cfg.Estimator.CatEstimator(), m.site(), logits, u, tau, m.priorTemp(tau))
	if err != nil {
		return nil, fmt.Errorf("vae: LossNoise: %w", err)
	}
	loss := ad.Add(ad.Mean(rec), ad.Scale(kl, 1/float64(b)))
	if err := t.Err(); err != nil {
		return nil, fmt.Errorf("vae: LossNoise: %w", err)
	}
	return loss, nil
}

// site returns the model's latent site in the vocabulary of package models:
// Latents categoricals of Classes classes, uniform a priori.
func (m *Model) site() *models.CatSite {
	return &models.CatSite{Name: SiteName, D: m.cfg.Latents, C: m.cfg.Classes}
}

func (m *Model) priorTemp(tau float64) float64 {
	if m.cfg.PriorTemp > 0 {
		return m.cfg.PriorTemp
	}
	return tau
}

// checkInput validates the images and temperature of a loss.
func (m *Model) checkInput(op string, x *ad.Var, tau float64) error {
	if x == nil {
		return fmt.Errorf("vae: %s: nil images", op)
	}
	if s := x.Shape(); len(s) != 2 || s[1] != m.cfg.Input || s[0] < 1 {
		return fmt.Errorf("vae: %s: images have shape %v, want (B, %d)", op, s, m.cfg.Input)
	}
	if !(tau > 0) || math.IsInf(tau, 0) {
		return fmt.Errorf("vae: %s: temperature %v must be positive and finite", op, tau)
	}
	return checkPixels(op, x.Value(), m.cfg.Input)
}

// checkPixels returns an error naming the first pixel that is NaN or outside
// [0, 1].
func checkPixels(op string, px []float64, d int) error {
	for i, v := range px {
		if !(v >= 0 && v <= 1) {
			return fmt.Errorf("vae: %s: image %d, pixel %d is %v, want a value in [0, 1]", op, i/d, i%d, v)
		}
	}
	return nil
}

// Binarize sets dst[i] to 1 with probability src[i] and to 0 otherwise,
// reading one uniform draw from rng per pixel in order, and returns dst
// (allocated when nil). It returns an error for a pixel outside [0, 1].
func Binarize(dst, src []float64, rng *rand.Rand) ([]float64, error) {
	if dst == nil {
		dst = make([]float64, len(src))
	}
	if len(dst) != len(src) {
		return nil, fmt.Errorf("vae: Binarize: dst has %d values, src %d", len(dst), len(src))
	}
	if rng == nil {
		return nil, errors.New("vae: Binarize: nil rng")
	}
	for i, p := range src {
		if !(p >= 0 && p <= 1) {
			return nil, fmt.Errorf("vae: Binarize: value %d is %v, want a value in [0, 1]", i, p)
		}
		if rng.Float64() < p {
			dst[i] = 1
		} else {
			dst[i] = 0
		}
	}
	return dst, nil
}
