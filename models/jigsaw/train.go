package jigsaw

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/ad/optim"
)

// TrainConfig holds the optimisation settings of Train.
type TrainConfig struct {
	// Steps is the number of Adam steps, Batch the images per step and LR
	// the learning rate.
	Steps, Batch int
	LR           float64
	// Seed seeds the minibatch draws, the scrambling permutations and the
	// Gumbel noise; a run is a function of Seed and the network's weights.
	Seed uint64
	// Progress, if not nil, is called every ReportEvery steps (and after the
	// last) with the step count, the mean loss since the previous call and
	// the throughput in images per second.
	Progress    func(step int, loss, imagesPerSec float64)
	ReportEvery int
}

// Data is a set of images of one geometry, ImageSize values each, with an
// optional label per image (which selects the output head).
type Data struct {
	Pixels []float64
	Labels []int
}

// Train fits n to images by Adam on the loss of Loss, drawing every step a
// minibatch of images uniformly with replacement and a fresh random
// permutation for each. It returns the loss of every step. It stops early,
// with ctx's error, when ctx is done.
func (n *Net) Train(ctx context.Context, data Data, tc TrainConfig) ([]float64, error) {
	is := n.grid.ImageSize()
	switch {
	case len(data.Pixels) == 0 || len(data.Pixels)%is != 0:
		return nil, fmt.Errorf("jigsaw: Train: %d values is not a whole number of %d-value images", len(data.Pixels), is)
	case tc.Steps < 1 || tc.Batch < 1:
		return nil, fmt.Errorf("jigsaw: Train: steps %d and batch %d must be >= 1", tc.Steps, tc.Batch)
	case !(tc.LR > 0) || math.IsInf(tc.LR, 0):
		return nil, fmt.Errorf("jigsaw: Train: learning rate %v must be finite and > 0", tc.LR)
	}
	count := len(data.Pixels) / is
	if len(n.heads) > 1 {
		if len(data.Labels) != count {
			return nil, fmt.Errorf("jigsaw: Train: %d heads need one label per image, have %d for %d", len(n.heads), len(data.Labels), count)
		}
		for i, l := range data.Labels {
			if l < 0 || l >= len(n.heads) {
				return nil, fmt.Errorf("jigsaw: Train: label %d of image %d selects no head of %d", l, i, len(n.heads))
			}
		}
	}
	opt, err := optim.NewAdam(n.Params())
	if err != nil {
		return nil, fmt.Errorf("jigsaw: Train: %w", err)
	}
	every := tc.ReportEvery
	if every < 1 {
		every = 100
	}
	rng := rand.New(rand.NewPCG(tc.Seed, 0x747261696e))
	t := ad.NewTape()
	imgs := make([]float64, tc.Batch*is)
	var labels []int
	if len(n.heads) > 1 {
		labels = make([]int, tc.Batch)
	}
	trace := make([]float64, 0, tc.Steps)
	start, sum := time.Now(), 0.0
	for step := 1; step <= tc.Steps; step++ {
		if err := ctx.Err(); err != nil {
			return trace, err
		}
		for b := range tc.Batch {
			i := rng.IntN(count)
			copy(imgs[b*is:(b+1)*is], data.Pixels[i*is:(i+1)*is])
			if labels != nil {
				labels[b] = data.Labels[i]
			}
		}
		z, err := MakePuzzles(n.grid, imgs, labels, rng)
		if err != nil {
			return trace, fmt.Errorf("jigsaw: Train: %w", err)
		}
		t.Reset()
		loss := n.Loss(t, z, rng)
		if err := t.Backward(loss); err != nil {
			return trace, fmt.Errorf("jigsaw: Train: step %d: %w", step, err)
		}
		l := loss.Item()
		if math.IsNaN(l) || math.IsInf(l, 0) {
			return trace, fmt.Errorf("jigsaw: Train: step %d: %w", step, errNonFinite)
		}
		if err := opt.Step(tc.LR); err != nil {
			return trace, fmt.Errorf("jigsaw: Train: %w", err)
		}
		trace = append(trace, l)
		sum += l
		if tc.Progress != nil && (step%every == 0 || step == tc.Steps) {
			k := (step-1)%every + 1
			el := time.Since(start).Seconds()
			tc.Progress(step, sum/float64(k), float64(k*tc.Batch)/el)
			start, sum = time.Now(), 0
		}
	}
	return trace, nil
}

var errNonFinite = errors.New("loss is not finite")
