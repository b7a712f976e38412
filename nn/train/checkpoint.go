package train

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"math"
)

// epochState is Run's part of a Loop checkpoint: the statistics of the
// finished epochs.
type epochState struct{ r *runner }

func (e epochState) SaveState(int) ([]byte, error) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(e.r.res.Epochs); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (e epochState) RestoreState(b []byte, steps int, losses []float64, stopped bool) error {
	var epochs []EpochStats
	if len(b) > 0 {
		if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&epochs); err != nil {
			return fmt.Errorf("its epochs are unreadable: %w", err)
		}
	}
	if m := inconsistency(epochs, steps, stopped, e.r.perEpoch); m != "" {
		return fmt.Errorf("%s", m)
	}
	e.r.res.Epochs = epochs
	return nil
}

// inconsistency describes the first way in which a history of steps steps
// with these epochs is not one that Run writes with perEpoch steps per
// epoch (the statistics of every finished epoch, a stop only at the end of
// an epoch), or returns "".
func inconsistency(epochs []EpochStats, steps int, stopped bool, perEpoch int) string {
	if want := steps / perEpoch; len(epochs) != want {
		return fmt.Sprintf("step %d with %d finished epochs, want %d", steps, len(epochs), want)
	}
	for i, e := range epochs {
		if e.Epoch != i || e.Step != (i+1)*perEpoch || math.IsNaN(e.Loss) || math.IsInf(e.Loss, 0) {
			return fmt.Sprintf("epoch %d is recorded as epoch %d ending at step %d with loss %v", i, e.Epoch, e.Step, e.Loss)
		}
	}
	if stopped && steps%perEpoch != 0 {
		return fmt.Sprintf("stopped at step %d, inside an epoch", steps)
	}
	return ""
}
