package train

import (
	"fmt"
	"math"
	"slices"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/ad/optim"
	"github.com/permlab/permlab/internal/gobfile"
)

const checkpointVersion = 1

// fingerprint is what a checkpoint must share with the run that resumes it.
type fingerprint struct {
	N, BatchSize int
	Seed         uint64
	Names        []string
	Shapes       [][]int
}

func newFingerprint(o *Options, params []*ad.Param) fingerprint {
	f := fingerprint{N: o.N, BatchSize: o.BatchSize, Seed: o.Seed}
	for _, p := range params {
		f.Names = append(f.Names, p.Name)
		f.Shapes = append(f.Shapes, slices.Clone(p.Value.Shape))
	}
	return f
}

// mismatch describes the first difference between the fingerprint of a
// checkpoint, f, and that of the current run, g, or returns "".
func (f fingerprint) mismatch(g fingerprint) string {
	switch {
	case f.N != g.N:
		return fmt.Sprintf("it was written with N = %d, this run has N = %d", f.N, g.N)
	case f.BatchSize != g.BatchSize:
		return fmt.Sprintf("it was written with BatchSize = %d, this run has %d", f.BatchSize, g.BatchSize)
	case f.Seed != g.Seed:
		return fmt.Sprintf("it was written with Seed = %d, this run has %d", f.Seed, g.Seed)
	case len(f.Names) != len(g.Names):
		return fmt.Sprintf("it holds %d parameters, this run has %d", len(f.Names), len(g.Names))
	case len(f.Shapes) != len(f.Names):
		return fmt.Sprintf("it names %d parameters but gives %d shapes", len(f.Names), len(f.Shapes))
	}
	for i := range f.Names {
		if f.Names[i] != g.Names[i] || !slices.Equal(f.Shapes[i], g.Shapes[i]) {
			return fmt.Sprintf("its parameter %d is %q of shape %v, this run's is %q of shape %v",
				i, f.Names[i], f.Shapes[i], g.Names[i], g.Shapes[i])
		}
	}
	return ""
}

// checkpoint is the on-disk state of a run after Step steps.
type checkpoint struct {
	Version     int
	Fingerprint fingerprint
	Step        int
	Stopped     bool
	Values      [][]float64
	Optim       optim.State
	Loss        []float64
	Epochs      []EpochStats
}

func (r *runner) checkpoint() *checkpoint {
	ck := &checkpoint{Version: checkpointVersion, Fingerprint: newFingerprint(r.o, r.params),
		Step: r.step, Stopped: r.res.Stopped, Optim: r.opt.State(), Loss: r.res.Loss, Epochs: r.res.Epochs}
	for _, p := range r.params {
		ck.Values = append(ck.Values, p.Value.Data)
	}
	return ck
}

// resume restores the run from its checkpoint file, if there is one.
func (r *runner) resume() error {
	path := r.o.Checkpoint
	ck := new(checkpoint)
	if found, err := gobfile.Read(path, ck); err != nil || !found {
		if err != nil {
			err = fmt.Errorf("train: Run: checkpoint: %w", err)
		}
		return err
	}
	if ck.Version != checkpointVersion {
		return fmt.Errorf("train: Run: checkpoint %s has version %d, want %d", path, ck.Version, checkpointVersion)
	}
	if m := ck.Fingerprint.mismatch(newFingerprint(r.o, r.params)); m != "" {
		return fmt.Errorf("train: Run: checkpoint %s does not match the run: %s (delete it to start afresh)", path, m)
	}
	if ck.Step > r.total {
		return fmt.Errorf("train: Run: checkpoint %s is at step %d, beyond the %d steps of %d epochs", path, ck.Step, r.total, r.o.Epochs)
	}
	if len(ck.Loss) != ck.Step || len(ck.Values) != len(r.params) {
		return fmt.Errorf("train: Run: checkpoint %s is inconsistent: step %d, %d losses, %d parameters", path, ck.Step, len(ck.Loss), len(ck.Values))
	}
	if m := ck.inconsistency(r.perEpoch); m != "" {
		return fmt.Errorf("train: Run: checkpoint %s is inconsistent: %s", path, m)
	}
	for i, p := range r.params {
		if len(ck.Values[i]) != len(p.Value.Data) {
			return fmt.Errorf("train: Run: checkpoint %s is inconsistent: parameter %q has %d values, want %d", path, p.Name, len(ck.Values[i]), len(p.Value.Data))
		}
	}
	if err := r.opt.SetState(ck.Optim); err != nil {
		return fmt.Errorf("train: Run: checkpoint %s: %w", path, err)
	}
	for i, p := range r.params {
		copy(p.Value.Data, ck.Values[i])
	}
	r.step = ck.Step
	r.res.Resumed = ck.Step
	r.res.Stopped = ck.Stopped
	r.res.Loss = ck.Loss
	r.res.Epochs = ck.Epochs
	return nil
}

// inconsistency describes the first way in which ck's history is not one
// that Run writes with perEpoch steps per epoch (a finite loss per step, the
// statistics of every finished epoch, a stop only at the end of an epoch),
// or returns "".
func (ck *checkpoint) inconsistency(perEpoch int) string {
	for i, v := range ck.Loss {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Sprintf("the loss of step %d is %v", i, v)
		}
	}
	if want := ck.Step / perEpoch; len(ck.Epochs) != want {
		return fmt.Sprintf("step %d with %d finished epochs, want %d", ck.Step, len(ck.Epochs), want)
	}
	for i, e := range ck.Epochs {
		if e.Epoch != i || e.Step != (i+1)*perEpoch || math.IsNaN(e.Loss) || math.IsInf(e.Loss, 0) {
			return fmt.Sprintf("epoch %d is recorded as epoch %d ending at step %d with loss %v", i, e.Epoch, e.Step, e.Loss)
		}
	}
	if ck.Stopped && ck.Step%perEpoch != 0 {
		return fmt.Sprintf("stopped at step %d, inside an epoch", ck.Step)
	}
	return ""
}

// writeCheckpoint writes ck to path atomically: the bytes go to a temporary
// file in the same folder, which is synced and renamed over path, so a crash
// leaves either the old checkpoint or the new one.
func writeCheckpoint(path string, ck *checkpoint) error {
	if err := gobfile.Write(path, ck); err != nil {
		return fmt.Errorf("train: writing checkpoint: %w", err)
	}
	return nil
}
