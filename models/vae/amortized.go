package vae

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/dataset"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/vi"
)

// SiteName is the name of the VAE's local categorical site in the models
// contract.
const SiteName = "z"

// Amortized is the VAE on a set of images in the vocabulary of package
// models: a models.Amortized whose local site "z" is a models.CatSite of
// Latents × Classes with the uniform prior, whose likelihood is the
// decoder's Bernoulli, and whose own parameters (models.Parametric) are the
// decoder's. Its Observe binarizes each image afresh from the step's random
// source. With the Model's Encoder as the amortized guide and the options
// of Model.AmortizedOptions, vi.FitAmortized trains it: that is the VAE's
// one training path, which Task wraps for train.Run and examples/vae
// takes.
type Amortized struct {
	m      *Model
	images *dataset.Images
	buf    []float64
}

// NewAmortized returns m on images, whose pixels (Channels × Height ×
// Width) must number m's Input. The model is shared, not copied: a
// validation set is another Amortized of the same m.
func NewAmortized(m *Model, images *dataset.Images) (*Amortized, error) {
	if err := checkImages("NewAmortized", m, images); err != nil {
		return nil, err
	}
	return &Amortized{m: m, images: images}, nil
}

// checkImages validates a model and the images it is to see.
func checkImages(op string, m *Model, images *dataset.Images) error {
	switch {
	case m == nil:
		return fmt.Errorf("vae: %s: nil model", op)
	case images == nil || images.N < 1:
		return fmt.Errorf("vae: %s: no images", op)
	case images.Size() != m.cfg.Input:
		return fmt.Errorf("vae: %s: images have %d×%d×%d = %d pixels, the model takes %d",
			op, images.Channels, images.Height, images.Width, images.Size(), m.cfg.Input)
	case len(images.Pixels) != images.N*images.Size():
		return fmt.Errorf("vae: %s: %d pixels for %d images of %d", op, len(images.Pixels), images.N, images.Size())
	}
	return nil
}

// Sites implements models.Amortized: the VAE has no global latent sites.
func (a *Amortized) Sites() []models.Site { return nil }

// LocalSites implements models.Amortized: one categorical site of Latents
// variables with Classes classes, uniform a priori.
func (a *Amortized) LocalSites() []models.Site {
	return []models.Site{a.m.site()}
}

// N implements models.Amortized.
func (a *Amortized) N() int { return a.images.N }

// Params implements models.Parametric: the decoder's parameters.
func (a *Amortized) Params() []*ad.Param { return a.m.dec.Params() }

// Observe implements models.Amortized: the images of batch, binarized with
// one uniform draw from rng per pixel, shape (len(batch), Input). A NaN or
// a pixel outside [0, 1] is an error naming the image and the pixel.
func (a *Amortized) Observe(batch []int, rng *rand.Rand) (*ad.Tensor, error) {
	d := a.m.cfg.Input
	for _, i := range batch {
		if i < 0 || i >= a.images.N {
			return nil, fmt.Errorf("vae: Observe: image %d outside [0, %d)", i, a.images.N)
		}
	}
	a.buf = a.images.Batch(batch, a.buf)
	if len(a.buf) != len(batch)*d {
		return nil, fmt.Errorf("vae: Observe: batch of %d images gave %d pixels", len(batch), len(a.buf))
	}
	for i, v := range a.buf {
		if !(v >= 0 && v <= 1) {
			return nil, fmt.Errorf("vae: Observe: image %d, pixel %d is %v, want a value in [0, 1]", batch[i/d], i%d, v)
		}
	}
	if rng == nil {
		return nil, errors.New("vae: Observe: nil rng")
	}
	x := ad.Zeros(len(batch), d)
	if _, err := Binarize(x.Data, a.buf, rng); err != nil {
		return nil, fmt.Errorf("vae: Observe: %w", err)
	}
	return x, nil
}

// LogLik implements models.Amortized: the Bernoulli log-likelihood of the
// decoder, log p(x_n | z_n) = −BCE(f(z_n), x_n), shape (K, B).
func (a *Amortized) LogLik(t *ad.Tape, z *models.BatchSample) *ad.Var {
	k, b, d := z.K(), z.B(), a.m.cfg.Input
	y := z.Cat(SiteName) // (K, B, L, C)
	x := z.X()
	if err := t.Err(); err != nil {
		return nil
	}
	if k == 1 {
		x = ad.Reshape(x, 1, b, d)
	} else { // one copy of the images per sample
		tiled := ad.Zeros(k, b, d)
		for s := range k {
			copy(tiled.Data[s*b*d:], x.Value())
		}
		x = t.Const(tiled)
	}
	return ad.Neg(a.m.NegLogLik(t, y, x))
}

// Encoder returns the VAE's encoder as the amortized guide of its site
// "z": its parameters are the encoder's, and it maps binarized images to
// the logits of q(z | x).
func (m *Model) Encoder() vi.Encoder { return encoder{m} }

type encoder struct{ m *Model }

func (e encoder) Params() []*ad.Param { return e.m.enc.Params() }

func (e encoder) Encode(t *ad.Tape, x *ad.Var) (map[string]vi.LocalParams, error) {
	return map[string]vi.LocalParams{SiteName: {Logits: e.m.Encode(t, x)}}, nil
}

// AmortizedOptions returns the options of vi.FitAmortized (and
// vi.NewAmortizedTask) that train m with its Config: the estimator
// Config.Estimator, the prior temperature Config.PriorTemp (0: the
// posterior's) and the temperature schedule a. The caller sets BatchSize,
// Epochs, Seed, LR and the rest. An invalid schedule is an error.
func (m *Model) AmortizedOptions(a Anneal) (vi.AmortizedOptions, error) {
	if err := a.validate(); err != nil {
		return vi.AmortizedOptions{}, err
	}
	return vi.AmortizedOptions{Estimator: m.cfg.Estimator.CatEstimator(), Tau: a, TauPrior: m.cfg.PriorTemp}, nil
}
