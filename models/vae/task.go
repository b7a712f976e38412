package vae

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/dataset"
)

// Anneal is the temperature schedule of Jang et al. (2016),
//
//	τ(t) = max(Min, Start · exp(−Rate · ⌊t/Every⌋ · Every)),
//
// for the optimisation step t: the temperature changes every Every steps.
type Anneal struct {
	Start, Min, Rate float64
	Every            int
}

// DefaultAnneal returns τ from 1 towards 0.5 at rate 10⁻⁴ per step, updated
// every 500 steps (one MNIST epoch at batch 100); the floor is reached at step
// 7,000.
func DefaultAnneal() Anneal { return Anneal{Start: 1, Min: 0.5, Rate: 1e-4, Every: 500} }

// At returns the temperature at step t.
func (a Anneal) At(t int) float64 {
	if a.Every > 1 {
		t -= t % a.Every
	}
	return math.Max(a.Min, a.Start*math.Exp(-a.Rate*float64(t)))
}

func (a Anneal) validate() error {
	switch {
	case !(a.Start > 0) || math.IsInf(a.Start, 0):
		return fmt.Errorf("vae: Anneal.Start %v must be positive and finite", a.Start)
	case !(a.Min > 0) || a.Min > a.Start:
		return fmt.Errorf("vae: Anneal.Min %v must be in (0, Start = %v]", a.Min, a.Start)
	case !(a.Rate >= 0) || math.IsInf(a.Rate, 0):
		return fmt.Errorf("vae: Anneal.Rate %v must be finite and >= 0", a.Rate)
	case a.Every < 0:
		return fmt.Errorf("vae: Anneal.Every %d must be >= 0", a.Every)
	}
	return nil
}

// Task trains a Model on a set of grey-level images with train.Run: it
// implements train.Task and train.StepSetter. Each minibatch is binarized
// afresh from the step's random source, then the same source draws the
// Gumbel noise.
type Task struct {
	model  *Model
	images *dataset.Images
	anneal Anneal
	step   int
	buf    []float64
}

// NewTask returns the task of fitting m to images, whose pixels (Channels ×
// Height × Width) must number m's Input, with the temperature schedule a.
func NewTask(m *Model, images *dataset.Images, a Anneal) (*Task, error) {
	switch {
	case m == nil:
		return nil, errors.New("vae: NewTask: nil model")
	case images == nil || images.N < 1:
		return nil, errors.New("vae: NewTask: no images")
	case images.Size() != m.cfg.Input:
		return nil, fmt.Errorf("vae: NewTask: images have %d×%d×%d = %d pixels, the model takes %d",
			images.Channels, images.Height, images.Width, images.Size(), m.cfg.Input)
	case len(images.Pixels) != images.N*images.Size():
		return nil, fmt.Errorf("vae: NewTask: %d pixels for %d images of %d", len(images.Pixels), images.N, images.Size())
	}
	if err := a.validate(); err != nil {
		return nil, err
	}
	return &Task{model: m, images: images, anneal: a}, nil
}

// SetStep tells the task the optimisation step of the next Loss, which fixes
// its temperature.
func (k *Task) SetStep(step int) { k.step = step }

// Temp returns the temperature of the current step.
func (k *Task) Temp() float64 { return k.anneal.At(k.step) }

// Loss records the mean negative ELBO of the images batch at the current
// step's temperature. A batch holding a NaN or a pixel outside [0, 1] is an
// error naming the image.
func (k *Task) Loss(t *ad.Tape, batch []int, rng *rand.Rand) (*ad.Var, error) {
	d := k.model.cfg.Input
	k.buf = k.images.Batch(batch, k.buf)
	if len(k.buf) != len(batch)*d {
		return nil, fmt.Errorf("vae: Loss: batch of %d images gave %d pixels", len(batch), len(k.buf))
	}
	for i, v := range k.buf {
		if !(v >= 0 && v <= 1) {
			return nil, fmt.Errorf("vae: Loss: image %d, pixel %d is %v, want a value in [0, 1]", batch[i/d], i%d, v)
		}
	}
	x := ad.Zeros(len(batch), d)
	if _, err := Binarize(x.Data, k.buf, rng); err != nil {
		return nil, fmt.Errorf("vae: Loss: %w", err)
	}
	return k.model.Loss(t, t.Const(x), k.Temp(), rng)
}
