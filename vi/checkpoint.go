package vi

import (
	"errors"
	"fmt"
	"math"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/ad/optim"
	"github.com/permlab/permlab/internal/gobfile"
)

const checkpointVersion = 1

var errNoCheckpoint = errors.New("vi: no checkpoint")

// checkpoint is the on-disk state of a fit after Step steps.
type checkpoint struct {
	Version int
	Step    int
	Names   []string
	Values  [][]float64
	Optim   optim.State
	ELBO    []float64
}

func newCheckpoint(step int, params []*ad.Param, opt optim.Optimizer, elbo []float64) *checkpoint {
	ck := &checkpoint{Version: checkpointVersion, Step: step, Optim: opt.State(), ELBO: elbo}
	for _, p := range params {
		ck.Names = append(ck.Names, p.Name)
		ck.Values = append(ck.Values, p.Value.Data)
	}
	return ck
}

// check reports a checkpoint that Fit cannot have written: of another
// version, with an ELBO trace that is not one finite value per step, or
// with names and values that do not pair up.
func (ck *checkpoint) check() error {
	switch {
	case ck.Version != checkpointVersion:
		return fmt.Errorf("unsupported checkpoint version %d", ck.Version)
	case ck.Step < 0 || len(ck.ELBO) != ck.Step:
		return fmt.Errorf("checkpoint is inconsistent: step %d with %d ELBO values", ck.Step, len(ck.ELBO))
	case len(ck.Names) != len(ck.Values):
		return fmt.Errorf("checkpoint is inconsistent: %d parameter names for %d parameters", len(ck.Names), len(ck.Values))
	}
	for i, v := range ck.ELBO {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("checkpoint is inconsistent: the ELBO of step %d is %v", i, v)
		}
	}
	return nil
}

func (ck *checkpoint) restore(params []*ad.Param, opt optim.Optimizer) error {
	if err := ck.check(); err != nil {
		return err
	}
	if len(ck.Values) != len(params) {
		return fmt.Errorf("checkpoint has %d parameters, model has %d", len(ck.Values), len(params))
	}
	for i, p := range params {
		if ck.Names[i] != p.Name || len(ck.Values[i]) != len(p.Value.Data) {
			return fmt.Errorf("checkpoint parameter %d is %q with %d values, model has %q with %d", i, ck.Names[i], len(ck.Values[i]), p.Name, len(p.Value.Data))
		}
	}
	if err := opt.SetState(ck.Optim); err != nil {
		return err
	}
	for i, p := range params {
		copy(p.Value.Data, ck.Values[i])
	}
	return nil
}

// writeCheckpoint writes ck to path atomically: the data goes to a
// temporary file in the same directory, which is synced and renamed over
// path, so a crash leaves either the old or the new checkpoint, never a
// partial one.
func writeCheckpoint(path string, ck *checkpoint) error {
	if err := gobfile.Write(path, ck); err != nil {
		return fmt.Errorf("vi: writing checkpoint: %w", err)
	}
	return nil
}

func readCheckpoint(path string) (*checkpoint, error) {
	ck := new(checkpoint)
	found, err := gobfile.Read(path, ck)
	switch {
	case err != nil:
		return nil, fmt.Errorf("vi: reading checkpoint: %w", err)
	case !found:
		return nil, errNoCheckpoint
	}
	if err := ck.check(); err != nil {
		return nil, fmt.Errorf("vi: reading checkpoint %s: %w", path, err)
	}
	return ck, nil
}
