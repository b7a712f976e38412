package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/ad/optim"
)

// Task is a model with its training data: Loss records on t the mean loss of
// the examples batch (indices in [0, N)) and returns it as a scalar Var. rng
// is the step's only source of randomness. batch belongs to Run and must not
// be modified or kept.
type Task interface {
	Loss(t *ad.Tape, batch []int, rng *rand.Rand) (*ad.Var, error)
}

// StepSetter is implemented by a Task whose loss depends on the step, for
// example through an annealed temperature. Run calls SetStep(s) before the
// Loss of step s, resumed runs included, so such a schedule resumes exactly.
type StepSetter interface {
	SetStep(step int)
}

// ErrStop is returned by Options.OnEpoch to end training early; Run then
// returns without error and with Result.Stopped set.
var ErrStop = errors.New("train: stop")

// Options configures Run. Zero values select the documented defaults.
type Options struct {
	N         int    // training examples; required
	BatchSize int    // examples per step; required (the last batch of an epoch may be smaller)
	Epochs    int    // passes over the data; required
	Seed      uint64 // fixes the order of the examples and every step's rng

	LR    optim.Schedule                             // learning rate by step; default Constant(1e-3)
	Clip  float64                                    // if > 0, clip the gradient norm to Clip
	Optim func([]*ad.Param) (optim.Optimizer, error) // default Adam

	// Checkpoint is a file path; if set, Run resumes from it when it
	// exists, and writes it every CheckpointEvery steps (default 500), at
	// the end of every epoch, and when ctx is cancelled.
	Checkpoint      string
	CheckpointEvery int

	// Progress, if set, receives a progress bar (epoch, running mean loss,
	// examples per second) when it is a terminal, and a line per epoch
	// otherwise.
	Progress io.Writer

	// OnEpoch, if set, is called after every epoch (for validation, say).
	// Returning ErrStop ends training; any other error aborts Run.
	OnEpoch func(EpochStats) error
}

// EpochStats summarises one finished epoch.
type EpochStats struct {
	Epoch   int           // from 0
	Step    int           // steps done so far, over all epochs
	Loss    float64       // mean minibatch loss over the epoch
	Elapsed time.Duration // wall time of this call of Run so far
}

// Result is what Run returns.
type Result struct {
	Loss    []float64    // loss of every step from step 0, resumed runs included
	Epochs  []EpochStats // every finished epoch, resumed runs included (Elapsed as recorded then)
	Steps   int          // steps done
	Resumed int          // the step the run resumed from; 0 if it started afresh
	Stopped bool         // OnEpoch returned ErrStop
	Elapsed time.Duration
}

// StepRand returns the random source Run gives the task at step s of a run
// with the given seed.
func StepRand(seed uint64, step int) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15^uint64(step)))
}

// EpochRand returns the random source that draws the order of epoch e.
func EpochRand(seed uint64, epoch int) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x243f6a8885a308d3^uint64(epoch)))
}

// StepsPerEpoch returns ⌈n/batch⌉, the number of steps in one epoch.
func StepsPerEpoch(n, batch int) int { return (n + batch - 1) / batch }

// Run trains params on task for o.Epochs epochs (see the package doc) and
// returns the loss history. It stops with an error naming the step if a loss
// or gradient is NaN or infinite. When ctx is cancelled it writes a
// checkpoint (if configured) and returns the partial result with ctx.Err().
// The parameters are updated in place.
func Run(ctx context.Context, params []*ad.Param, task Task, o Options) (*Result, error) {
	r, err := newRunner(params, task, &o)
	if err != nil {
		return nil, err
	}
	lr, err := r.loop.Run(ctx)
	r.progress.close()
	if lr == nil {
		return nil, err
	}
	r.res.Loss, r.res.Steps, r.res.Resumed, r.res.Stopped = lr.Losses, lr.Steps, lr.Resumed, lr.Stopped
	r.res.Elapsed = lr.Elapsed
	return r.res, err
}

// runner is the state of one call of Run: the Loop and what Run adds to it,
// the epochs.
type runner struct {
	o        *Options
	task     Task
	loop     *Loop
	res      *Result
	progress *progress
	losses   []float64 // the loop's, kept current for progress and the epochs

	step, total, perEpoch int
	order                 []int // the current epoch's permutation of 0..N-1
	orderEpoch            int   // the epoch order belongs to; -1 for none
	began                 time.Time
}

func newRunner(params []*ad.Param, task Task, o *Options) (*runner, error) {
	if err := o.check(params, task); err != nil {
		return nil, err
	}
	opt, err := o.Optim(params)
	if err != nil {
		return nil, fmt.Errorf("train: Run: %w", err)
	}
	r := &runner{o: o, task: task, res: &Result{},
		perEpoch: StepsPerEpoch(o.N, o.BatchSize), orderEpoch: -1, began: time.Now()}
	r.total = r.perEpoch * o.Epochs
	if err := optim.Validate(o.LR, r.total); err != nil {
		return nil, fmt.Errorf("train: Run: learning rate: %w", err)
	}
	r.loop = &Loop{
		Name: "train", Params: params, Optim: opt, Steps: r.total, LR: o.LR, Clip: o.Clip,
		Loss: r.loss, After: r.after,
		Started: func(step int, losses []float64) {
			// A copy: the loop appends to its own slice, which may share
			// this one's backing array.
			r.step, r.losses = step, slices.Clone(losses)
			r.progress = newProgress(o.Progress, r)
		},
		Checkpoint: o.Checkpoint, CheckpointEvery: o.CheckpointEvery,
		Settings: []Setting{{"N", fmt.Sprint(o.N)}, {"BatchSize", fmt.Sprint(o.BatchSize)}, {"Seed", fmt.Sprint(o.Seed)}},
		Extra:    epochState{r},
	}
	return r, nil
}

// check validates o and fills in its defaults.
func (o *Options) check(params []*ad.Param, task Task) error {
	switch {
	case task == nil:
		return errors.New("train: Run: nil Task")
	case len(params) == 0:
		return errors.New("train: Run: no parameters to train")
	case o.N < 1:
		return fmt.Errorf("train: Run: N must be >= 1, got %d", o.N)
	case o.BatchSize < 1:
		return fmt.Errorf("train: Run: BatchSize must be >= 1, got %d", o.BatchSize)
	case o.Epochs < 1:
		return fmt.Errorf("train: Run: Epochs must be >= 1, got %d", o.Epochs)
	case o.Clip < 0 || math.IsNaN(o.Clip):
		return fmt.Errorf("train: Run: Clip must be >= 0, got %v", o.Clip)
	case o.CheckpointEvery < 0:
		return fmt.Errorf("train: Run: CheckpointEvery must be >= 0, got %d", o.CheckpointEvery)
	}
	seen := make(map[*ad.Param]bool, len(params))
	for i, p := range params {
		if p == nil || p.Value == nil || p.Grad == nil {
			return fmt.Errorf("train: Run: parameter %d is nil or has no value", i)
		}
		if seen[p] {
			return fmt.Errorf("train: Run: parameter %q is listed twice", p.Name)
		}
		seen[p] = true
	}
	if o.LR == nil {
		o.LR = optim.Constant(1e-3)
	}
	if o.Optim == nil {
		o.Optim = func(ps []*ad.Param) (optim.Optimizer, error) { return optim.NewAdam(ps) }
	}
	if o.CheckpointEvery == 0 {
		o.CheckpointEvery = 500
	}
	return nil
}

// batch returns the examples of step i, drawing the epoch's order if it is
// not drawn yet.
func (r *runner) batch(i int) []int {
	e, k := i/r.perEpoch, i%r.perEpoch
	if e != r.orderEpoch {
		r.order = EpochRand(r.o.Seed, e).Perm(r.o.N)
		r.orderEpoch = e
	}
	return r.order[k*r.o.BatchSize : min((k+1)*r.o.BatchSize, r.o.N)]
}

// loss records the loss of step i.
func (r *runner) loss(t *ad.Tape, i int) (*ad.Var, error) {
	if s, ok := r.task.(StepSetter); ok {
		s.SetStep(i)
	}
	loss, err := r.task.Loss(t, r.batch(i), StepRand(r.o.Seed, i))
	if err == nil && (loss == nil || loss.Size() != 1) {
		err = errors.New("the task's loss is not a scalar")
	}
	if err != nil {
		return nil, err
	}
	if v := loss.Item(); math.IsNaN(v) || math.IsInf(v, 0) {
		return nil, fmt.Errorf("loss is %v (epoch %d)", v, i/r.perEpoch)
	}
	return loss, nil
}

// after records the finished step i; at the end of an epoch it records the
// epoch, calls OnEpoch and asks for a checkpoint.
func (r *runner) after(i int, v float64) (save, stop bool, err error) {
	r.losses = append(r.losses, v)
	r.step = i + 1
	r.progress.step(len(r.batch(i)), v)
	if r.step%r.perEpoch != 0 && r.step != r.total {
		return false, false, nil
	}
	e := i / r.perEpoch
	var sum float64
	losses := r.losses[e*r.perEpoch : r.step]
	for _, l := range losses {
		sum += l
	}
	st := EpochStats{Epoch: e, Step: r.step, Loss: sum / float64(len(losses)), Elapsed: time.Since(r.began)}
	r.res.Epochs = append(r.res.Epochs, st)
	r.progress.epoch(st)
	if r.o.OnEpoch != nil {
		switch err := r.o.OnEpoch(st); {
		case errors.Is(err, ErrStop):
			stop = true
		case err != nil:
			return false, false, fmt.Errorf("train: after epoch %d: %w", e, err)
		}
	}
	return true, stop, nil
}
