package mcmc

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/internal/longtest"
)

// walk is a scalar state for a random-walk Metropolis kernel on N(0, 1).
type walk struct {
	x      float64
	sweeps int
}

func rwKernel(scale float64) Kernel[*walk] {
	return KernelFunc[*walk](func(rng *rand.Rand, s *walk) (bool, error) {
		y := s.x + scale*rng.NormFloat64()
		if math.Log(rng.Float64()) < (s.x*s.x-y*y)/2 {
			s.x = y
			return true, nil
		}
		return false, nil
	})
}

var countSweeps = KernelFunc[*walk](func(_ *rand.Rand, s *walk) (bool, error) {
	s.sweeps++
	return true, nil
})

func walkSampler(workers int) *Sampler[*walk] {
	return &Sampler[*walk]{
		Chains: 5, Burn: 100, Samples: 400, Thin: 3, Seed: 42, Workers: workers,
		Init: func(c int, rng *rand.Rand) (*walk, []Stage[*walk], error) {
			return &walk{x: 10 * rng.NormFloat64()}, []Stage[*walk]{
				{Name: "rw", Kernel: rwKernel(2.4), Repeat: 2},
				{Name: "count", Kernel: countSweeps},
			}, nil
		},
		Record: func(dst []float64, s *walk) []float64 { return append(dst, s.x, float64(s.sweeps)) },
	}
}

func TestSamplerDeterministic(t *testing.T) {
	ref, err := walkSampler(1).Run(context.Background())
	require.NoError(t, err)
	old := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(old)
	for _, procs := range []int{1, 2, 4} {
		runtime.GOMAXPROCS(procs)
		for _, workers := range []int{0, 2, 5, 9} {
			got, err := walkSampler(workers).Run(context.Background())
			require.NoError(t, err)
			for c := range ref.Chains {
				require.Equalf(t, ref.Chains[c].Trace, got.Chains[c].Trace, "GOMAXPROCS %d, workers %d, chain %d", procs, workers, c)
				require.Equal(t, ref.Chains[c].Stages, got.Chains[c].Stages)
			}
		}
	}
	// Chains use different streams.
	assert.NotEqual(t, ref.Chains[0].Trace[0][0], ref.Chains[1].Trace[0][0])
}

func TestSamplerBookkeeping(t *testing.T) {
	res, err := walkSampler(0).Run(context.Background())
	require.NoError(t, err)
	require.Len(t, res.Chains, 5)
	for _, ch := range res.Chains {
		require.Len(t, ch.Trace, 400)
		assert.Equal(t, 100+400*3, ch.Sweeps)
		assert.Equal(t, 100+400*3, ch.Final.sweeps)
		// Draw k is taken after Burn + Thin (k+1) sweeps.
		for k, row := range ch.Trace {
			require.Equal(t, float64(100+3*(k+1)), row[1])
		}
		assert.Equal(t, "rw", ch.Stages[0].Name)
		assert.Equal(t, 400*3*2, ch.Stages[0].Steps, "stage steps counted after burn-in, Repeat times per sweep")
		assert.Equal(t, 400*3, ch.Stages[1].Steps)
	}
	acc := res.Acceptance()
	require.Len(t, acc, 2)
	assert.Equal(t, 5*400*3*2, acc[0].Steps)
	assert.Equal(t, acc[1].Steps, acc[1].Accepted)
	// Random-walk Metropolis with scale 2.4 on N(0,1) accepts about 44%
	// (Roberts, Gelman and Gilks 1997 in one dimension).
	assert.InDelta(t, 0.44, acc[0].Rate(), 0.03)

	x, err := res.Draws(0)
	require.NoError(t, err)
	require.Len(t, x, 5)
	rh, err := SplitRHat(x)
	require.NoError(t, err)
	ess, err := ESS(x)
	require.NoError(t, err)
	mean := 0.0
	for _, c := range x {
		for _, v := range c {
			mean += v
		}
	}
	mean /= 5 * 400
	// Mean of N(0, 1) to 4 Monte Carlo standard errors 1/sqrt(ESS).
	assert.InDelta(t, 0, mean, 4/math.Sqrt(ess))
	assert.Less(t, rh, 1.02)
	t.Logf("acceptance %.3f, R-hat %.4f, ESS %.0f of 2000, mean %.4f", acc[0].Rate(), rh, ess, mean)

	_, err = res.Draws(2)
	assert.Error(t, err)
}

func TestSamplerProgressAndCancel(t *testing.T) {
	sm := walkSampler(2)
	var calls, last int
	sm.Progress = func(p Progress) {
		calls++
		assert.GreaterOrEqual(t, p.Done, last)
		last = p.Done
		assert.Equal(t, 5*1300, p.Total)
	}
	_, err := sm.Run(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 5*1300, last)
	assert.LessOrEqual(t, calls, 5*101)

	ctx, cancel := context.WithCancel(context.Background())
	sm.Progress = func(p Progress) {
		if p.Done > 1000 {
			cancel()
		}
	}
	res, err := sm.Run(ctx)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, res)
	for _, ch := range res.Chains {
		assert.Less(t, ch.Sweeps, 1300)
		assert.Len(t, ch.Trace, max(0, (ch.Sweeps-100)/3))
	}
}

func TestSamplerErrors(t *testing.T) {
	boom := errors.New("boom")
	sm := walkSampler(0)
	sm.Init = func(c int, rng *rand.Rand) (*walk, []Stage[*walk], error) {
		k := KernelFunc[*walk](func(_ *rand.Rand, s *walk) (bool, error) {
			s.sweeps++
			if c == 3 && s.sweeps == 10 {
				return false, boom
			}
			return true, nil
		})
		return &walk{}, []Stage[*walk]{{Name: "k", Kernel: k}}, nil
	}
	_, err := sm.Run(context.Background())
	require.Error(t, err)
	assert.ErrorIs(t, err, boom)
	assert.Contains(t, err.Error(), "chain 3")

	sm = walkSampler(0)
	sm.Record = func(dst []float64, s *walk) []float64 {
		if s.sweeps > 200 {
			return append(dst, 1, 2)
		}
		return append(dst, 1)
	}
	_, err = sm.Run(context.Background())
	assert.ErrorContains(t, err, "Record")

	for name, mutate := range map[string]func(*Sampler[*walk]){
		"chains":  func(s *Sampler[*walk]) { s.Chains = 0 },
		"samples": func(s *Sampler[*walk]) { s.Samples = 0 },
		"burn":    func(s *Sampler[*walk]) { s.Burn = -1 },
		"thin":    func(s *Sampler[*walk]) { s.Thin = -1 },
		"init":    func(s *Sampler[*walk]) { s.Init = nil },
		"no stages": func(s *Sampler[*walk]) {
			s.Init = func(int, *rand.Rand) (*walk, []Stage[*walk], error) { return &walk{}, nil, nil }
		},
		"nil kernel": func(s *Sampler[*walk]) {
			s.Init = func(int, *rand.Rand) (*walk, []Stage[*walk], error) {
				return &walk{}, []Stage[*walk]{{Name: "x"}}, nil
			}
		},
		"init error": func(s *Sampler[*walk]) {
			s.Init = func(int, *rand.Rand) (*walk, []Stage[*walk], error) { return nil, nil, boom }
		},
	} {
		sm := walkSampler(0)
		mutate(sm)
		_, err := sm.Run(context.Background())
		assert.Error(t, err, name)
	}
}

// Observe comes every ObserveEvery sweeps when that is set, and Progress
// keeps its own schedule.
func TestSamplerObserveEvery(t *testing.T) {
	sm := walkSampler(2)
	sm.ObserveEvery = 90
	seen := map[int][]int{}
	progress := 0
	sm.Observe = func(c, sweep int, _ *walk) { seen[c] = append(seen[c], sweep) }
	sm.Progress = func(Progress) { progress++ }
	_, err := sm.Run(context.Background())
	require.NoError(t, err)
	// 100 + 400·3 = 1300 sweeps per chain.
	want := []int{90, 180, 270, 360, 450, 540, 630, 720, 810, 900, 990, 1080, 1170, 1260}
	for c := range 5 {
		assert.Equal(t, want, seen[c], "chain %d", c)
	}
	assert.Equal(t, 5*100, progress)
	sm.ObserveEvery = -1
	_, err = sm.Run(context.Background())
	assert.ErrorContains(t, err, "ObserveEvery")
}

// A deadline ends each chain before a sweep that would not end by it,
// without an error.
func TestSamplerDeadline(t *testing.T) {
	longtest.Skip(t, "a wall-clock budget test: it needs the cores to itself, which the long stage of CI gives it (one package at a time)")
	const step = 20 * time.Millisecond
	sm := &Sampler[*walk]{
		Chains: 2, Samples: 1000, Seed: 1,
		Init: func(c int, rng *rand.Rand) (*walk, []Stage[*walk], error) {
			return &walk{}, []Stage[*walk]{{Name: "wait", Kernel: KernelFunc[*walk](func(*rand.Rand, *walk) (bool, error) {
				time.Sleep(step)
				return true, nil
			})}}, nil
		},
		Record: func(dst []float64, s *walk) []float64 { return append(dst, s.x) },
	}
	sm.Deadline = time.Now().Add(5*step + step/2)
	res, err := sm.Run(context.Background())
	require.NoError(t, err)
	assert.False(t, time.Now().After(sm.Deadline), "the run ended %v after its deadline", time.Since(sm.Deadline))
	for c, ch := range res.Chains {
		assert.Equal(t, ch.Sweeps, len(ch.Trace), "chain %d", c)
		assert.Positive(t, ch.Sweeps, "chain %d", c)
		assert.LessOrEqual(t, ch.Sweeps, 5, "chain %d", c)
	}

	// A reserve that grows with the draws: a step's worth per two draws
	// keeps, after d draws, d/2 steps before the deadline.
	var mu sync.Mutex
	var asked []int
	sm.Reserve = func(draws int) time.Duration {
		mu.Lock()
		asked = append(asked, draws)
		mu.Unlock()
		return time.Duration(draws) * step / 2
	}
	sm.Deadline = time.Now().Add(8*step + step/2)
	res, err = sm.Run(context.Background())
	require.NoError(t, err)
	left := time.Until(sm.Deadline)
	for c, ch := range res.Chains {
		// Sweep d ends at about d steps, and another would need d/2 steps
		// kept after it: 5 sweeps leave 3.5 steps, less than a sixth and
		// its reserve of 3.
		assert.LessOrEqual(t, ch.Sweeps, 5, "chain %d", c)
		assert.GreaterOrEqual(t, ch.Sweeps, 3, "chain %d", c)
	}
	assert.Greater(t, left, step, "the reserve is kept")
	assert.Contains(t, asked, 0)
	assert.Contains(t, asked, 3)
}
