package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/ad/optim"
	"github.com/permlab/permlab/internal/gobfile"
)

// Loop is the optimisation loop that every trainer of the module runs: Run
// (minibatch epochs), vi.Fit (variational fits) and the jigsaw network's
// Train. A step records the loss on a fresh tape, back-propagates it,
// clips the gradient, and takes an optimizer step with the learning rate
// of the step's schedule; the loop checkpoints every CheckpointEvery steps,
// when asked after a step, at the end and when ctx is cancelled, and
// resumes from its checkpoint, so that a run killed at any point and started
// again ends with the parameters an uninterrupted run would have, bit for
// bit, as long as Loss depends on the step and on the state the loop
// restores (the parameters, the optimizer, Extra) alone.
//
// One checkpoint format serves every trainer: the parameters (names, shapes
// and values), the optimizer's state, the step, the losses, the trainer's
// Settings (the values a resumed run must repeat) and its Extra state,
// written atomically (see package gobfile).
type Loop struct {
	// Name prefixes errors: "train", "vi", "jigsaw: Train".
	Name   string
	Params []*ad.Param
	Optim  optim.Optimizer
	Steps  int            // the run's total number of steps
	LR     optim.Schedule // learning rate by step
	Clip   float64        // if > 0, the gradient norm is clipped to Clip

	// Loss records on t the scalar to minimise at step (from 0). It may
	// check the value itself and return an error naming the problem; the
	// loop refuses a loss that is not a finite scalar either way.
	Loss func(t *ad.Tape, step int) (*ad.Var, error)
	// After, if set, is called after every step with the step's index and
	// loss. save asks for a checkpoint after it; stop ends the loop after
	// it (Result.Stopped); an error ends the loop with that error.
	After func(step int, loss float64) (save, stop bool, err error)
	// AfterSave, if set, is called after After and after the checkpoint
	// of the step, if one was written: a callback there sees the file as
	// a run resumed from it would.
	AfterSave func(step int, loss float64)
	// Started, if set, is called once the checkpoint (if any) is restored,
	// before the first step, with the step the loop starts from and the
	// losses of the steps before it.
	Started func(step int, losses []float64)

	// Checkpoint is a file path; if set, the loop resumes from it when it
	// exists and writes it as described above. CheckpointEvery defaults
	// to 500.
	Checkpoint      string
	CheckpointEvery int
	// Settings are the trainer's values that a checkpoint must share
	// with the run that resumes it, by name, in order ("Seed", "11").
	Settings []Setting
	// Extra, if set, saves and restores the trainer's own state (a random
	// source, a history) with the checkpoint.
	Extra Extra
}

// A Setting is one value a checkpoint must share with the run resuming it.
type Setting struct{ Name, Value string }

// Extra is the trainer's own part of a checkpoint.
type Extra interface {
	// SaveState returns the state after the given number of steps.
	SaveState(steps int) ([]byte, error)
	// RestoreState restores the state a checkpoint holds after steps
	// steps, with the losses before it (len(losses) == steps); an error
	// says why the checkpoint cannot be the trainer's.
	RestoreState(b []byte, steps int, losses []float64, stopped bool) error
}

// LoopResult is what Loop.Run did.
type LoopResult struct {
	Losses  []float64 // the loss of every step from step 0, resumed runs included
	Steps   int       // steps done
	Resumed int       // the step the run resumed from; 0 if it started afresh
	Stopped bool      // After asked to stop
	Elapsed time.Duration
}

const loopVersion = 2

// loopCheckpoint is the on-disk state of a Loop.
type loopCheckpoint struct {
	Version  int
	Settings []Setting
	Names    []string
	Shapes   [][]int
	Step     int
	Stopped  bool
	Values   [][]float64
	Optim    optim.State
	Losses   []float64
	Extra    []byte
}

// Run runs the loop. When ctx is cancelled it writes a checkpoint (if
// configured) and returns what it did with ctx.Err(). The parameters are
// updated in place.
func (l *Loop) Run(ctx context.Context) (*LoopResult, error) {
	if err := l.check(); err != nil {
		return nil, err
	}
	res := &LoopResult{}
	step, began := 0, time.Now()
	if l.Checkpoint != "" {
		ck, err := l.read()
		if err != nil {
			return nil, err
		}
		if ck != nil {
			step, res.Resumed, res.Stopped = ck.Step, ck.Step, ck.Stopped
			res.Losses = ck.Losses
		}
	}
	for _, p := range l.Params {
		p.ZeroGrad()
	}
	if l.Started != nil {
		l.Started(step, res.Losses)
	}
	finish := func(err error) (*LoopResult, error) {
		res.Steps, res.Elapsed = step, time.Since(began)
		return res, err
	}
	// onDisk is the step the checkpoint file holds (-1: none yet).
	onDisk := -1
	if res.Resumed > 0 {
		onDisk = step
	}
	save := func() error {
		if l.Checkpoint == "" || onDisk == step {
			return nil
		}
		onDisk = step
		return l.write(step, res)
	}
	t := ad.NewTape()
	for step < l.Steps && !res.Stopped {
		if err := ctx.Err(); err != nil {
			return finish(errors.Join(err, save()))
		}
		t.Reset()
		loss, err := l.Loss(t, step)
		if err == nil && (loss == nil || loss.Size() != 1) {
			err = errors.New("the loss is not a scalar")
		}
		if err == nil {
			if v := loss.Item(); math.IsNaN(v) || math.IsInf(v, 0) {
				err = fmt.Errorf("loss is %v", v)
			}
		}
		if err == nil {
			err = t.Backward(loss)
		}
		if err == nil && l.Clip > 0 {
			_, err = optim.ClipGradNorm(l.Params, l.Clip)
		}
		if err == nil {
			err = l.Optim.Step(l.LR.At(step))
		}
		if err != nil {
			return finish(fmt.Errorf("%s: step %d: %w", l.Name, step, err))
		}
		v := loss.Item()
		res.Losses = append(res.Losses, v)
		step++
		var want bool
		if l.After != nil {
			var stop bool
			want, stop, err = l.After(step-1, v)
			if err != nil {
				return finish(err)
			}
			res.Stopped = stop
		}
		if want || step%l.CheckpointEvery == 0 || step == l.Steps {
			if err := save(); err != nil {
				return finish(fmt.Errorf("%s: step %d: %w", l.Name, step-1, err))
			}
		}
		if l.AfterSave != nil {
			l.AfterSave(step-1, v)
		}
	}
	return finish(nil)
}

func (l *Loop) check() error {
	switch {
	case l.Loss == nil:
		return fmt.Errorf("%s: no loss", l.Name)
	case len(l.Params) == 0:
		return fmt.Errorf("%s: no parameters to train", l.Name)
	case l.Optim == nil:
		return fmt.Errorf("%s: no optimizer", l.Name)
	case l.Steps < 0:
		return fmt.Errorf("%s: Steps must be >= 0, got %d", l.Name, l.Steps)
	case l.Clip < 0 || math.IsNaN(l.Clip):
		return fmt.Errorf("%s: Clip must be >= 0, got %v", l.Name, l.Clip)
	case l.CheckpointEvery < 0:
		return fmt.Errorf("%s: CheckpointEvery must be >= 0, got %d", l.Name, l.CheckpointEvery)
	case l.LR == nil:
		return fmt.Errorf("%s: no learning rate schedule", l.Name)
	}
	if l.CheckpointEvery == 0 {
		l.CheckpointEvery = 500
	}
	return nil
}

func (l *Loop) write(step int, res *LoopResult) error {
	ck := &loopCheckpoint{Version: loopVersion, Settings: l.Settings, Step: step, Stopped: res.Stopped,
		Optim: l.Optim.State(), Losses: res.Losses}
	for _, p := range l.Params {
		ck.Names = append(ck.Names, p.Name)
		ck.Shapes = append(ck.Shapes, slices.Clone(p.Value.Shape))
		ck.Values = append(ck.Values, p.Value.Data)
	}
	if l.Extra != nil {
		b, err := l.Extra.SaveState(step)
		if err != nil {
			return fmt.Errorf("writing checkpoint: %w", err)
		}
		ck.Extra = b
	}
	if err := gobfile.Write(l.Checkpoint, ck); err != nil {
		return fmt.Errorf("writing checkpoint: %w", err)
	}
	return nil
}

// read returns the checkpoint, restored into the parameters, the optimizer
// and Extra, or nil when there is none.
func (l *Loop) read() (*loopCheckpoint, error) {
	path := l.Checkpoint
	ck := new(loopCheckpoint)
	found, err := gobfile.Read(path, ck)
	if err != nil {
		return nil, fmt.Errorf("%s: checkpoint: %w", l.Name, err)
	}
	if !found {
		return nil, nil
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%s: checkpoint %s %s", l.Name, path, fmt.Sprintf(format, a...))
	}
	if ck.Version != loopVersion {
		return nil, bad("has version %d, want %d (written by an older version: delete it to start afresh)", ck.Version, loopVersion)
	}
	if m := l.mismatch(ck); m != "" {
		return nil, bad("does not match the run: %s (delete it to start afresh)", m)
	}
	switch {
	case ck.Step < 0 || ck.Step > l.Steps:
		return nil, bad("is at step %d, beyond the run's %d steps", ck.Step, l.Steps)
	case len(ck.Values) != len(l.Params):
		return nil, bad("is inconsistent: step %d, %d losses, %d parameters", ck.Step, len(ck.Losses), len(ck.Values))
	}
	if m := ck.history(); m != "" {
		return nil, bad("is inconsistent: %s", m)
	}
	for i, p := range l.Params {
		if len(ck.Values[i]) != len(p.Value.Data) {
			return nil, bad("is inconsistent: parameter %q has %d values, want %d", p.Name, len(ck.Values[i]), len(p.Value.Data))
		}
	}
	if l.Extra != nil {
		if err := l.Extra.RestoreState(ck.Extra, ck.Step, ck.Losses, ck.Stopped); err != nil {
			return nil, bad("is inconsistent: %v", err)
		}
	} else if len(ck.Extra) > 0 || ck.Stopped {
		return nil, bad("is inconsistent: it holds a trainer's state this run does not have")
	}
	if err := l.Optim.SetState(ck.Optim); err != nil {
		return nil, bad("is inconsistent: its optimizer state: %v", err)
	}
	for i, p := range l.Params {
		copy(p.Value.Data, ck.Values[i])
	}
	return ck, nil
}

// mismatch describes the first difference between the checkpoint's
// settings and parameters and the run's, or returns "".
func (l *Loop) mismatch(ck *loopCheckpoint) string {
	if len(ck.Settings) != len(l.Settings) {
		return fmt.Sprintf("it records %d settings, this run has %d", len(ck.Settings), len(l.Settings))
	}
	for i, s := range l.Settings {
		c := ck.Settings[i]
		if c.Name != s.Name {
			return fmt.Sprintf("its setting %d is %s, this run's is %s", i, c.Name, s.Name)
		}
		if c.Value != s.Value {
			return fmt.Sprintf("it was written with %s = %s, this run has %s", s.Name, c.Value, s.Value)
		}
	}
	switch {
	case len(ck.Names) != len(l.Params):
		return fmt.Sprintf("it holds %d parameters, this run has %d", len(ck.Names), len(l.Params))
	case len(ck.Shapes) != len(ck.Names):
		return fmt.Sprintf("it names %d parameters but gives %d shapes", len(ck.Names), len(ck.Shapes))
	}
	for i, p := range l.Params {
		if ck.Names[i] != p.Name || !slices.Equal(ck.Shapes[i], p.Value.Shape) {
			return fmt.Sprintf("its parameter %d is %q of shape %v, this run's is %q of shape %v",
				i, ck.Names[i], ck.Shapes[i], p.Name, p.Value.Shape)
		}
	}
	return ""
}

// ReadLosses returns the losses of the steps a Loop checkpoint at path
// holds, after the checks that need no Loop (its version, one finite loss
// per step); found is false when there is no such file. A trainer that
// must know its history before it sets up its Loop (a plateau rule
// deciding the number of steps, say) reads it here.
func ReadLosses(path string) (losses []float64, found bool, err error) {
	ck := new(loopCheckpoint)
	if found, err = gobfile.Read(path, ck); err != nil || !found {
		return nil, found, err
	}
	if ck.Version != loopVersion {
		return nil, true, fmt.Errorf("checkpoint %s has version %d, want %d (written by an older version: delete it to start afresh)", path, ck.Version, loopVersion)
	}
	if m := ck.history(); m != "" {
		return nil, true, fmt.Errorf("checkpoint %s is inconsistent: %s", path, m)
	}
	return ck.Losses, true, nil
}

// history describes the first way in which ck's history is not one a Loop
// writes (one finite loss per step), or returns "".
func (ck *loopCheckpoint) history() string {
	if ck.Step < 0 || len(ck.Losses) != ck.Step {
		return fmt.Sprintf("step %d with %d losses", ck.Step, len(ck.Losses))
	}
	for i, v := range ck.Losses {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Sprintf("the loss of step %d is %v", i, v)
		}
	}
	return ""
}
