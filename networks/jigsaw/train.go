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
	"github.com/permlab/permlab/nn/train"
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
	// Checkpoint, if not empty, is a file that makes training resumable.
	// Train resumes from it when it exists, and writes it every
	// CheckpointEvery steps (default 1000), after the last step and when
	// ctx is done. It holds the weights, Adam's state, the random stream and
	// the loss trace, so a run stopped at any point (even by SIGKILL) and
	// started again with the same settings ends with the same weights, bit
	// for bit, as a run that never stopped. Steps may grow between runs to
	// train a finished network further; any other change of settings is an
	// error.
	Checkpoint      string
	CheckpointEvery int
	// Resumed, if not nil, is called when Train resumes from Checkpoint,
	// before the first step it trains, with the step it goes on from and
	// the training seconds the earlier calls recorded (for a progress
	// message: Training reports both too).
	Resumed func(step int, seconds float64)
}

// Training is what Train did.
type Training struct {
	// Losses holds the loss of every step, those of earlier calls
	// included when Train resumed from TrainConfig.Checkpoint.
	Losses []float64
	// ResumedFrom is the step Train resumed from, 0 when it started afresh.
	ResumedFrom int
	// Seconds is the training wall time of this call and of the earlier
	// calls it resumed from.
	Seconds float64
}

// Data is a set of images of one geometry, ImageSize values each, with an
// optional label per image (which selects the output head).
type Data struct {
	Pixels []float64
	Labels []int
}

// Train fits n to images by Adam on the loss of Loss, drawing every step a
// minibatch of images uniformly with replacement and a fresh random
// permutation for each. It stops early, with ctx's error, when ctx is done
// (after writing tc.Checkpoint, if set). Once it has begun training it
// returns what it did even with an error (Losses then ends with the last
// step done); an error found before, in its arguments or in
// tc.Checkpoint, comes with a nil Training.
func (n *Net) Train(ctx context.Context, data Data, tc TrainConfig) (*Training, error) {
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
	saveEvery := tc.CheckpointEvery
	if saveEvery < 1 {
		saveEvery = 1000
	}
	// One random stream draws the minibatches, the permutations and the
	// noise, step after step; the checkpoint keeps its state.
	src := rand.NewPCG(tc.Seed, 0x747261696e)
	rng := rand.New(src)
	ex := &trainExtra{src: src, begun: time.Now()}
	imgs := make([]float64, tc.Batch*is)
	var labels []int
	if len(n.heads) > 1 {
		labels = make([]int, tc.Batch)
	}
	var start time.Time
	sum, k := 0.0, 0
	loop := &train.Loop{
		Name: "jigsaw: Train", Params: n.Params(), Optim: opt, Steps: tc.Steps, LR: optim.Constant(tc.LR),
		Checkpoint: tc.Checkpoint, CheckpointEvery: saveEvery, Extra: ex,
		Settings: []train.Setting{
			{Name: "network", Value: fmt.Sprintf("%+v", n.cfg)}, {Name: "seed", Value: fmt.Sprint(tc.Seed)},
			{Name: "batch", Value: fmt.Sprint(tc.Batch)}, {Name: "learning rate", Value: fmt.Sprint(tc.LR)},
			{Name: "images", Value: fmt.Sprintf("%d of %d values", count, is)},
		},
		Started: func(step int, _ []float64) {
			if step > 0 && tc.Resumed != nil {
				tc.Resumed(step, ex.prior)
			}
			start = time.Now()
		},
		Loss: func(t *ad.Tape, i int) (*ad.Var, error) {
			for b := range tc.Batch {
				j := rng.IntN(count)
				copy(imgs[b*is:(b+1)*is], data.Pixels[j*is:(j+1)*is])
				if labels != nil {
					labels[b] = data.Labels[j]
				}
			}
			z, err := MakePuzzles(n.grid, imgs, labels, rng)
			if err != nil {
				return nil, err
			}
			loss := n.Loss(t, z, rng)
			if err := t.Err(); err != nil {
				return nil, err
			}
			if l := loss.Item(); math.IsNaN(l) || math.IsInf(l, 0) {
				return nil, errNonFinite
			}
			return loss, nil
		},
		AfterSave: func(i int, l float64) {
			step := i + 1
			sum, k = sum+l, k+1
			if tc.Progress != nil && (step%every == 0 || step == tc.Steps) {
				el := time.Since(start).Seconds()
				tc.Progress(step, sum/float64(k), float64(k*tc.Batch)/el)
				start, sum, k = time.Now(), 0, 0
			}
		},
	}
	lr, err := loop.Run(ctx)
	if lr == nil {
		return nil, err
	}
	secs := ex.seconds()
	if tc.Checkpoint != "" && ex.savedAt == lr.Steps {
		// Returning right after a checkpoint reports the time it
		// recorded, so that a run resumed from it reports this call's
		// seconds plus its own, never less.
		secs = ex.savedSec
	}
	return &Training{Losses: lr.Losses, ResumedFrom: lr.Resumed, Seconds: secs}, err
}

var errNonFinite = errors.New("loss is not finite")
