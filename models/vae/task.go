package vae

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/dataset"
	"github.com/permlab/permlab/vi"
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
// implements train.Task and train.StepSetter. It is a thin wrapper of
// vi.AmortizedTask on the model's Amortized view with the options of
// Model.AmortizedOptions, so its loss is that of vi.FitAmortized: each
// minibatch is binarized afresh from the step's random source, then the
// same source draws the Gumbel noise, and the loss is the mean −ELBO of the
// batch's images.
type Task struct {
	at *vi.AmortizedTask
}

// NewTask returns the task of fitting m to images, whose pixels (Channels ×
// Height × Width) must number m's Input, with the temperature schedule a.
func NewTask(m *Model, images *dataset.Images, a Anneal) (*Task, error) {
	if err := checkImages("NewTask", m, images); err != nil {
		return nil, err
	}
	o, err := m.AmortizedOptions(a)
	if err != nil {
		return nil, err
	}
	am, err := NewAmortized(m, images)
	if err != nil {
		return nil, err
	}
	// BatchSize and Epochs only size the defaults and checks of the
	// options: train.Run chooses the batches and SetStep the step.
	o.BatchSize, o.Epochs = images.N, 1
	at, err := vi.NewAmortizedTask(am, m.Encoder(), o)
	if err != nil {
		return nil, fmt.Errorf("vae: NewTask: %w", err)
	}
	return &Task{at: at}, nil
}

// SetStep tells the task the optimisation step of the next Loss, which fixes
// its temperature.
func (k *Task) SetStep(step int) { k.at.SetStep(step) }

// Temp returns the temperature of the current step.
func (k *Task) Temp() float64 { return k.at.Temp() }

// Loss records the mean negative ELBO of the images batch at the current
// step's temperature (vi.AmortizedTask.Loss). A batch holding a NaN or a
// pixel outside [0, 1] is an error naming the image.
func (k *Task) Loss(t *ad.Tape, batch []int, rng *rand.Rand) (*ad.Var, error) {
	return k.at.Loss(t, batch, rng)
}
