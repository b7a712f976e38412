package celegans

import (
	"context"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/internal/racedetect"
)

// TestSolveVIDeterministic: without a budget, the variational methods give
// bit-identical estimates whatever GOMAXPROCS is, restarts included.
func TestSolveVIDeterministic(t *testing.T) {
	p, _ := smallProblem(t, 60, 2, 6, 0.3, 7)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, m := range []Method{GumbelSinkhorn, GumbelSinkhornNoReg, Rounding} {
		s := DefaultSettings()
		s.Steps, s.Draws, s.PlateauWindow = 80, 8, 10
		if racedetect.Enabled {
			// Under the detector the point is the concurrency of the
			// fits and the draws, which fewer steps and no polish still
			// exercise.
			s.Steps, s.NoPolish = 30, true
		}
		var first *Outcome
		for _, procs := range []int{1, 2, 8} {
			runtime.GOMAXPROCS(procs)
			out, err := Solve(context.Background(), p, m, s, 5)
			require.NoError(t, err)
			if first == nil {
				first = out
				continue
			}
			assert.Equal(t, first.Perms, out.Perms, "%s at GOMAXPROCS %d", m, procs)
			assert.Equal(t, first.Iterations, out.Iterations, "%s at GOMAXPROCS %d", m, procs)
			assert.Equal(t, first.Fits, out.Fits, "%s at GOMAXPROCS %d", m, procs)
		}
	}
}
