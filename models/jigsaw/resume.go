package jigsaw

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/permlab/permlab/ad/optim"
	"github.com/permlab/permlab/internal/gobfile"
)

// trainStateVersion is the version of the file TrainConfig.Checkpoint names;
// a file of another version is refused, never misread.
const trainStateVersion = 1

// trainState is what Train needs to go on after Step steps exactly as if it
// had never stopped: the weights, Adam's moments and step count, the state of
// the one random stream that draws minibatches, permutations and noise, and
// the loss of every step so far. The settings that fix the sequence of steps
// (seed, batch, learning rate, training images, network configuration) are
// recorded so that a different run cannot resume from it.
type trainState struct {
	Version   int
	Seed      uint64
	Batch     int
	LR        float64
	Images    int
	ImageSize int
	Config    Config
	Names     []string
	Step      int
	Seconds   float64 // training wall time of every call so far
	Values    [][]float64
	Optim     optim.State
	RNG       []byte
	Trace     []float64
}

// saveTrainState writes the state of n's training after len(trace) steps to
// path atomically: a crash leaves the previous file or this one.
func (n *Net) saveTrainState(path string, tc *TrainConfig, count int, opt *optim.Adam, src *rand.PCG, trace []float64, seconds float64) error {
	rs, err := src.MarshalBinary()
	if err != nil {
		return err
	}
	st := trainState{
		Version: trainStateVersion, Seed: tc.Seed, Batch: tc.Batch, LR: tc.LR,
		Images: count, ImageSize: n.grid.ImageSize(), Config: n.cfg,
		Step: len(trace), Seconds: seconds, Optim: opt.State(), RNG: rs, Trace: trace,
	}
	for _, p := range n.Params() {
		st.Names = append(st.Names, p.Name)
		st.Values = append(st.Values, p.Value.Data)
	}
	if err := gobfile.Write(path, &st); err != nil {
		return fmt.Errorf("jigsaw: Train: writing checkpoint: %w", err)
	}
	return nil
}

// loadTrainState restores n, opt and src from the checkpoint at path and
// returns it, or returns nil when there is no such file. Every mismatch with
// the current run is an error that names the setting.
func (n *Net) loadTrainState(path string, tc *TrainConfig, count int, opt *optim.Adam, src *rand.PCG) (*trainState, error) {
	st := new(trainState)
	if found, err := gobfile.Read(path, st); err != nil || !found {
		if err != nil {
			err = fmt.Errorf("jigsaw: Train: checkpoint: %w", err)
		}
		return nil, err
	}
	if st.Version != trainStateVersion {
		return nil, fmt.Errorf("jigsaw: Train: checkpoint %s has version %d, want %d", path, st.Version, trainStateVersion)
	}
	var differ string
	switch {
	case st.Config != n.cfg:
		differ = fmt.Sprintf("network %+v, this run's is %+v", st.Config, n.cfg)
	case st.Seed != tc.Seed:
		differ = fmt.Sprintf("seed %d, this run has %d", st.Seed, tc.Seed)
	case st.Batch != tc.Batch:
		differ = fmt.Sprintf("batch %d, this run has %d", st.Batch, tc.Batch)
	case st.LR != tc.LR:
		differ = fmt.Sprintf("learning rate %v, this run has %v", st.LR, tc.LR)
	case st.Images != count || st.ImageSize != n.grid.ImageSize():
		differ = fmt.Sprintf("%d images of %d values, this run has %d of %d", st.Images, st.ImageSize, count, n.grid.ImageSize())
	}
	if differ != "" {
		return nil, fmt.Errorf("jigsaw: Train: checkpoint %s was written by another run: it has %s (delete it to start afresh)", path, differ)
	}
	if st.Step > tc.Steps {
		return nil, fmt.Errorf("jigsaw: Train: checkpoint %s is at step %d, beyond the %d steps asked", path, st.Step, tc.Steps)
	}
	ps := n.Params()
	if len(st.Trace) != st.Step || len(st.Values) != len(ps) || len(st.Names) != len(ps) {
		return nil, fmt.Errorf("jigsaw: Train: checkpoint %s is inconsistent: step %d, %d losses, %d parameters", path, st.Step, len(st.Trace), len(st.Values))
	}
	for i, l := range st.Trace {
		if math.IsNaN(l) || math.IsInf(l, 0) {
			return nil, fmt.Errorf("jigsaw: Train: checkpoint %s is inconsistent: the loss of step %d is %v", path, i+1, l)
		}
	}
	if !(st.Seconds >= 0) || math.IsInf(st.Seconds, 0) {
		return nil, fmt.Errorf("jigsaw: Train: checkpoint %s is inconsistent: %v seconds of training", path, st.Seconds)
	}
	for i, p := range ps {
		if st.Names[i] != p.Name || len(st.Values[i]) != len(p.Value.Data) {
			return nil, fmt.Errorf("jigsaw: Train: checkpoint %s is inconsistent: parameter %d is %q of %d values, want %q of %d",
				path, i, st.Names[i], len(st.Values[i]), p.Name, len(p.Value.Data))
		}
	}
	if err := src.UnmarshalBinary(st.RNG); err != nil {
		return nil, fmt.Errorf("jigsaw: Train: checkpoint %s: random state: %w", path, err)
	}
	if err := opt.SetState(st.Optim); err != nil {
		return nil, fmt.Errorf("jigsaw: Train: checkpoint %s: %w", path, err)
	}
	for i, p := range ps {
		copy(p.Value.Data, st.Values[i])
	}
	return st, nil
}
