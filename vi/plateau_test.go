package vi

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewPlateauErrors(t *testing.T) {
	for _, c := range []struct {
		w int
		z float64
	}{{1, 2}, {0, 2}, {10, -1}, {10, math.NaN()}, {10, math.Inf(1)}} {
		_, err := NewPlateau(c.w, c.z)
		assert.Error(t, err, "window %d z %v", c.w, c.z)
	}
}

// firstPlateau feeds f(i) + noise until the detector fires and returns the
// index of that value (−1 if it never fires within n values).
func firstPlateau(t *testing.T, p *Plateau, n int, f func(i int) float64, noise float64, seed uint64) int {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := 0; i < n; i++ {
		if p.Add(f(i) + noise*rng.NormFloat64()) {
			return i
		}
	}
	return -1
}

func TestPlateau(t *testing.T) {
	p, err := NewPlateau(50, 2)
	require.NoError(t, err)
	assert.True(t, math.IsNaN(p.Mean()))
	assert.Zero(t, p.Count())

	// Exact values: a rising line never plateaus, a flat one does as soon as
	// two windows are in.
	assert.Equal(t, -1, firstPlateau(t, p, 1000, func(i int) float64 { return float64(i) }, 0, 1))
	assert.InDelta(t, 974.5, p.Mean(), 1e-9, "mean of the last window 950..999")
	assert.Equal(t, 50, p.Count())
	p.Reset()
	assert.Equal(t, 99, firstPlateau(t, p, 1000, func(int) float64 { return 3 }, 0, 1))

	// A noisy objective that rises like 1 − exp(−i/100) (scaled by 1000)
	// and then stays flat, with noise of sd 20: it must keep going while the
	// gain per window is many standard errors (sd·sqrt(2/50) = 4), and stop
	// once the curve is flat. Over many seeds it fires between i = 300 (the
	// gain per window is then still about 10 standard errors) and i = 1000.
	rise := func(i int) float64 { return 1000 * (1 - math.Exp(-float64(i)/100)) }
	for seed := uint64(0); seed < 200; seed++ {
		p.Reset()
		at := firstPlateau(t, p, 5000, rise, 20, seed)
		assert.True(t, at > 300 && at < 1000, "seed %d: plateau at %d", seed, at)
	}

	// Pure noise around a constant: fires right after two windows in most
	// seeds (when the later mean does not beat the earlier by 2 standard
	// errors, probability about 0.98).
	fired := 0
	for seed := uint64(0); seed < 200; seed++ {
		p.Reset()
		if firstPlateau(t, p, 100, func(int) float64 { return 0 }, 20, seed) == 99 {
			fired++
		}
	}
	assert.Greater(t, fired, 185)
}
