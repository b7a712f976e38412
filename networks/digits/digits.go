// Package digits is a small convolutional network that classifies MNIST
// digits. The digit-assembly experiment of Mena et al. (2018, section 5.3)
// uses such a network as a judge: a digit rebuilt from the scrambled pieces
// of another counts as a success when the classifier reads the intended
// digit. The paper's judge was the two-layer CNN of TensorFlow's "Deep MNIST
// for experts" tutorial, at 99.2 % test accuracy.
//
// # Network
//
// The input is a batch of 1×28×28 images with intensities in [0, 1]. Two
// convolution blocks extract features, each a 5×5 convolution (no padding,
// stride 1), a rectifier max(0, x) and a 2×2 max pool of stride 2; a hidden
// dense layer and a linear read-out give ten logits:
//
//	1×28×28 → conv 5×5, 32 → ReLU → pool → 32×12×12
//	        → conv 5×5, 64 → ReLU → pool → 64×4×4 = 1024
//	        → dense 128 → ReLU → dense 10
//
// 184,586 weights, He-initialised (Glorot for the read-out). This is the
// tutorial network made cheaper for a CPU: no padding (so 4×4 rather than
// 7×7 maps reach the dense layer), 128 hidden units rather than 1,024, and
// no dropout. Training minimises the mean
// cross-entropy −log softmax(z)_y of the logits z against the label y with
// Adam and a cosine-annealed learning rate, over minibatches drawn by
// package train, so a run is reproducible from its seed and resumable from a
// checkpoint.
//
// # Protocol
//
// Fit on the first 50,000 training images, select on the last 10,000 (the
// validation accuracy is reported after every epoch) and evaluate on the
// 10,000 test images once. The command examples/digits does exactly this;
// README.md records its result.
package digits

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/ad/optim"
	"github.com/permlab/permlab/dataset"
	"github.com/permlab/permlab/nn"
	"github.com/permlab/permlab/nn/train"
)

// Input size and number of classes.
const (
	Height  = 28
	Width   = 28
	Classes = 10
)

// Classifier is the digit network with its parameters.
type Classifier struct {
	net    nn.Sequential
	params []*ad.Param
}

// New returns a classifier with weights drawn from seed.
func New(seed uint64) (*Classifier, error) {
	rng := rand.New(rand.NewPCG(seed, 0xd1617))
	conv1, err := nn.NewConv2D(rng, "conv1", 1, 32, 5, 1, 0, nn.HeUniform)
	if err != nil {
		return nil, fmt.Errorf("digits: New: %w", err)
	}
	conv2, err := nn.NewConv2D(rng, "conv2", 32, 64, 5, 1, 0, nn.HeUniform)
	if err != nil {
		return nil, fmt.Errorf("digits: New: %w", err)
	}
	hidden, err := nn.NewDense(rng, "hidden", 64*4*4, 128, nn.HeUniform)
	if err != nil {
		return nil, fmt.Errorf("digits: New: %w", err)
	}
	out, err := nn.NewDense(rng, "out", 128, Classes, nn.GlorotUniform)
	if err != nil {
		return nil, fmt.Errorf("digits: New: %w", err)
	}
	pool := nn.MaxPool2D{Size: 2, Stride: 2}
	net := nn.Sequential{conv1, nn.ReLU{}, pool, conv2, nn.ReLU{}, pool, nn.Flatten{}, hidden, nn.ReLU{}, out}
	return &Classifier{net: net, params: net.Params()}, nil
}

// Params returns the trainable parameters.
func (c *Classifier) Params() []*ad.Param { return c.params }

// Forward records the network on t for x of shape (B, 1, 28, 28) and
// returns the logits, of shape (B, 10).
func (c *Classifier) Forward(t *ad.Tape, x *ad.Var) *ad.Var { return c.net.Forward(t, x) }

// TrainOptions configures Train. Zero values select the defaults.
type TrainOptions struct {
	Epochs    int            // default 3
	BatchSize int            // default 64
	Seed      uint64         // order of the examples
	LR        optim.Schedule // default cosine from 1e-3 to 1e-5 over the run

	Checkpoint string    // resume from and write to this file if set (see train.Options)
	Progress   io.Writer // progress bar; nil is silent

	// OnEpoch, if set, is called after every epoch with the epoch's mean
	// training loss and the accuracy on the validation set (0 when there is
	// none). Returning train.ErrStop ends training.
	OnEpoch func(e EpochReport) error
}

// EpochReport describes a finished epoch.
type EpochReport struct {
	Epoch       int           // from 0
	Loss        float64       // mean training loss over the epoch
	ValAccuracy float64       // accuracy on the validation set
	Elapsed     time.Duration // since Train was called (this process)
}

// Train fits the classifier to trainSet, reporting the accuracy on valSet
// (which may be nil) after every epoch. Both must be labelled 1×28×28 images.
func (c *Classifier) Train(ctx context.Context, trainSet, valSet *dataset.Images, o TrainOptions) error {
	if err := checkImages(trainSet, true); err != nil {
		return fmt.Errorf("digits: Train: training set: %w", err)
	}
	if valSet != nil {
		if err := checkImages(valSet, true); err != nil {
			return fmt.Errorf("digits: Train: validation set: %w", err)
		}
	}
	if o.Epochs == 0 {
		o.Epochs = 3
	}
	if o.BatchSize == 0 {
		o.BatchSize = 64
	}
	if o.Epochs < 0 || o.BatchSize < 0 {
		return fmt.Errorf("digits: Train: Epochs %d and BatchSize %d must be >= 1", o.Epochs, o.BatchSize)
	}
	steps := train.StepsPerEpoch(trainSet.N, o.BatchSize) * o.Epochs
	if o.LR == nil {
		o.LR = optim.Cosine{Start: 1e-3, End: 1e-5, Steps: steps}
	}
	ro := train.Options{
		N: trainSet.N, BatchSize: o.BatchSize, Epochs: o.Epochs, Seed: o.Seed, LR: o.LR,
		Checkpoint: o.Checkpoint, Progress: o.Progress,
	}
	if o.OnEpoch != nil {
		ro.OnEpoch = func(st train.EpochStats) error {
			r := EpochReport{Epoch: st.Epoch, Loss: st.Loss, Elapsed: st.Elapsed}
			if valSet != nil {
				acc, err := c.Accuracy(valSet)
				if err != nil {
					return err
				}
				r.ValAccuracy = acc
			}
			return o.OnEpoch(r)
		}
	}
	_, err := train.Run(ctx, c.params, &task{c: c, data: trainSet}, ro)
	if err != nil {
		return fmt.Errorf("digits: Train: %w", err)
	}
	return nil
}

// task is the cross-entropy of the classifier on a training set.
type task struct {
	c      *Classifier
	data   *dataset.Images
	x      []float64
	labels []int
}

func (k *task) Loss(t *ad.Tape, batch []int, _ *rand.Rand) (*ad.Var, error) {
	k.x = k.data.Batch(batch, k.x)
	k.labels = k.data.BatchLabels(batch, k.labels)
	x, err := ad.NewTensor([]int{len(batch), 1, Height, Width}, k.x)
	if err != nil {
		return nil, err
	}
	loss := nn.CrossEntropy(k.c.Forward(t, t.Const(x)), k.labels)
	return loss, t.Err()
}

// evalBatch is the number of images Logits pushes through the network at
// once.
const evalBatch = 500

// Logits returns the logits of every image, row-major (N, 10).
func (c *Classifier) Logits(images *dataset.Images) ([]float64, error) {
	if err := checkImages(images, false); err != nil {
		return nil, fmt.Errorf("digits: Logits: %w", err)
	}
	out := make([]float64, 0, images.N*Classes)
	t := ad.NewTape()
	size := images.Size()
	for lo := 0; lo < images.N; lo += evalBatch {
		hi := min(lo+evalBatch, images.N)
		t.Reset()
		x, err := ad.NewTensor([]int{hi - lo, 1, Height, Width}, images.Pixels[lo*size:hi*size])
		if err != nil {
			return nil, fmt.Errorf("digits: Logits: %w", err)
		}
		z := c.Forward(t, t.Const(x))
		if err := t.Err(); err != nil {
			return nil, fmt.Errorf("digits: Logits: %w", err)
		}
		out = append(out, z.Value()...)
	}
	return out, nil
}

// Predict returns the most likely digit for every image.
func (c *Classifier) Predict(images *dataset.Images) ([]int, error) {
	z, err := c.Logits(images)
	if err != nil {
		return nil, err
	}
	pred := make([]int, images.N)
	for i := range pred {
		row := z[i*Classes : (i+1)*Classes]
		best := 0
		for k, v := range row {
			if v > row[best] {
				best = k
			}
		}
		pred[i] = best
	}
	return pred, nil
}

// Accuracy returns the fraction of labelled images classified correctly.
func (c *Classifier) Accuracy(images *dataset.Images) (float64, error) {
	if images != nil && images.Labels == nil {
		return 0, errors.New("digits: Accuracy: the images have no labels")
	}
	pred, err := c.Predict(images)
	if err != nil {
		return 0, err
	}
	if len(pred) == 0 {
		return 0, errors.New("digits: Accuracy: no images")
	}
	right := 0
	for i, p := range pred {
		if p == images.Labels[i] {
			right++
		}
	}
	return float64(right) / float64(len(pred)), nil
}

// Save writes the weights to path (see nn.SaveFile).
func (c *Classifier) Save(path string) error {
	if err := nn.SaveFile(path, c.params); err != nil {
		return fmt.Errorf("digits: Save: %w", err)
	}
	return nil
}

// Load reads a classifier saved with Save.
func Load(path string) (*Classifier, error) {
	c, err := New(0)
	if err != nil {
		return nil, err
	}
	if err := nn.LoadFile(path, c.params); err != nil {
		return nil, fmt.Errorf("digits: Load: %w", err)
	}
	return c, nil
}

// checkImages checks that images are 1×28×28, with labels in 0..9 if
// labelled is set.
func checkImages(images *dataset.Images, labelled bool) error {
	if images == nil {
		return errors.New("nil images")
	}
	if images.Channels != 1 || images.Height != Height || images.Width != Width {
		return fmt.Errorf("images are %d×%d×%d, want 1×%d×%d", images.Channels, images.Height, images.Width, Height, Width)
	}
	if len(images.Pixels) != images.N*images.Size() {
		return fmt.Errorf("%d pixels for %d images of %d", len(images.Pixels), images.N, images.Size())
	}
	if !labelled {
		return nil
	}
	if len(images.Labels) != images.N {
		return fmt.Errorf("%d labels for %d images", len(images.Labels), images.N)
	}
	for i, l := range images.Labels {
		if l < 0 || l >= Classes {
			return fmt.Errorf("label %d is %d, want 0..9", i, l)
		}
	}
	if images.N == 0 {
		return errors.New("no images")
	}
	return nil
}
