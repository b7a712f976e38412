package train

import (
	"context"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/permlab/permlab/ad"
)

// stepped is a regression task that records the steps Run announces.
type stepped struct {
	*regression
	steps []int
}

func (s *stepped) SetStep(step int) { s.steps = append(s.steps, step) }

func (s *stepped) Loss(t *ad.Tape, batch []int, rng *rand.Rand) (*ad.Var, error) {
	return s.regression.Loss(t, batch, rng)
}

// TestStepSetter checks that a StepSetter hears every step once, in order,
// and that a resumed run continues from the step it resumed at.
func TestStepSetter(t *testing.T) {
	o := baseOptions()
	o.Checkpoint = filepath.Join(t.TempDir(), "ck")
	total := StepsPerEpoch(o.N, o.BatchSize) * o.Epochs
	const stopAt = 19
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &stepped{regression: newRegression(37, 3)}
	s.onStep = func(n int) {
		if n == stopAt-1 {
			cancel()
		}
	}
	if _, err := Run(ctx, s.params(), s, o); !errors.Is(err, context.Canceled) {
		t.Fatalf("first run: err %v, want context.Canceled", err)
	}
	s2 := &stepped{regression: newRegression(37, 3)}
	if _, err := Run(context.Background(), s2.params(), s2, o); err != nil {
		t.Fatal(err)
	}
	got := append(s.steps, s2.steps...)
	want := make([]int, total)
	for i := range want {
		want[i] = i
	}
	if !slices.Equal(got, want) {
		t.Errorf("SetStep saw %v, want 0..%d", got, total-1)
	}
}
