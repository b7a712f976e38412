package celegans

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/internal/f64"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/perm"
)

// exactState returns a state of p's model with permutations drawn within
// the masks and W drawn from N(0, 0.2²).
func exactState(t *testing.T, p *Problem, seed uint64) *models.State {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	ps := make([]perm.Perm, p.Worms())
	for j, mk := range p.Masks {
		// The truth, then random exchanges the mask allows.
		q := append(perm.Perm(nil), p.Truth[j]...)
		for range 4 * p.N() {
			i, k := rng.IntN(p.N()), rng.IntN(p.N())
			if mk.Allowed(i, q[k]) && mk.Allowed(k, q[i]) {
				q[i], q[k] = q[k], q[i]
			}
		}
		ps[j] = q
	}
	w := make([]float64, len(p.Support()))
	for e := range w {
		w[e] = 0.2 * rng.NormFloat64()
	}
	return &models.State{Perms: map[string][]perm.Perm{SiteP: ps}, Reals: map[string][]float64{SiteW: w}}
}

func relClose(t *testing.T, want, got, tol float64, msg string, args ...any) {
	t.Helper()
	if math.Abs(want-got) > tol*math.Max(1, math.Abs(want)) {
		t.Errorf(msg+": data form %v, moments %v", append(args, got, want)...)
	}
}

// TestDataFormExactPaths: in the data form the exact-state paths that MCMC
// and the polish use (the log likelihood of a state, swap deltas, prepared
// swap deltas followed through accepted, undone and larger changes, the
// draw and the maximum of W given P, the collapsed likelihood) give the
// moments form's values.
func TestDataFormExactPaths(t *testing.T) {
	sim, masks := simFor(t, 24, 2, 2, 80, 0.5, 3)
	pm, pd := dataProblem(t, sim, masks)
	mm, md := NewModel(pm), NewModel(pd)
	s := exactState(t, pm, 1)

	want, err := mm.LogLikState(s)
	require.NoError(t, err)
	got, err := md.LogLikState(s)
	require.NoError(t, err)
	relClose(t, want, got, 1e-10, "LogLikState")

	rng := rand.New(rand.NewPCG(5, 6))
	n := pm.N()
	for b := range pm.Worms() {
		fm, err := mm.PrepareSwap(s, SiteP, b)
		require.NoError(t, err)
		fd, err := md.PrepareSwap(s, SiteP, b)
		require.NoError(t, err)
		p := s.Perms[SiteP][b]
		for trial := range 300 {
			i, k := rng.IntN(n), rng.IntN(n)
			relClose(t, fm(p, i, k), fd(p, i, k), 1e-9, "worm %d trial %d: delta(%d, %d)", b, trial, i, k)
			switch trial % 5 {
			case 0, 1: // accepted
				p[i], p[k] = p[k], p[i]
			case 2: // a 3-cycle scored as two deltas: exchanged, scored, undone
				j := rng.IntN(n)
				p[i], p[k] = p[k], p[i]
				relClose(t, fm(p, k, j), fd(p, k, j), 1e-9, "worm %d trial %d: the second delta of a 3-cycle", b, trial)
				p[i], p[k] = p[k], p[i]
			case 3:
				if trial%50 == 3 { // a large change: a rebuild
					rng.Shuffle(n, func(x, y int) { p[x], p[y] = p[y], p[x] })
				}
			}
		}
		d, err := md.SwapDelta(s, SiteP, b, 1, 2)
		require.NoError(t, err)
		dm, err := mm.SwapDelta(s, SiteP, b, 1, 2)
		require.NoError(t, err)
		relClose(t, dm, d, 1e-9, "SwapDelta")
	}
	want, err = mm.LogLikState(s)
	require.NoError(t, err)
	got, err = md.LogLikState(s)
	require.NoError(t, err)
	relClose(t, want, got, 1e-10, "LogLikState after the moves")

	// The conditionals of W.
	sm, sd := s.Clone(), s.Clone()
	require.NoError(t, mm.SampleConditional(rand.New(rand.NewPCG(9, 9)), sm, SiteW))
	require.NoError(t, md.SampleConditional(rand.New(rand.NewPCG(9, 9)), sd, SiteW))
	assert.InDeltaSlice(t, sm.Reals[SiteW], sd.Reals[SiteW], 1e-9, "the same draw of W")
	assert.NotEqual(t, s.Reals[SiteW], sd.Reals[SiteW])
	require.NoError(t, mm.MaximizeConditional(sm, SiteW))
	require.NoError(t, md.MaximizeConditional(sd, SiteW))
	assert.InDeltaSlice(t, sm.Reals[SiteW], sd.Reals[SiteW], 1e-9, "the same conditional mean of W")
	cm, err := Collapsed{mm}.CollapsedLogLik(s)
	require.NoError(t, err)
	cd, err := Collapsed{md}.CollapsedLogLik(s)
	require.NoError(t, err)
	relClose(t, cm, cd, 1e-10, "CollapsedLogLik")

	// The models package's own check of the fast paths against LogLik.
	require.NoError(t, models.CheckFastPaths(md, 10, 3, 1e-9))
}

// TestPairDotsExact checks the data form's cache of dot products: every
// entry of the pooled moments read through it, before and after it fills,
// from several goroutines at once and with a cache too small to hold them,
// equals the dot products computed directly, bit for bit, in both
// triangles of Sxx.
func TestPairDotsExact(t *testing.T) {
	sim, masks := simFor(t, 30, 2, 3, 40, 0.3, 7)
	_, data := dataProblem(t, sim, masks)
	rng := rand.New(rand.NewPCG(4, 5))
	ps := []perm.Perm{perm.Random(30, rng), perm.Random(30, rng)}
	direct := func(yx bool, a, c int) float64 {
		total := 0.0
		for j, s := range data.Stats {
			q := make([]int, 30)
			for i, b := range ps[j] {
				q[b] = i
			}
			x, src := s.Prev.RawMatrix().Data, s.Prev.RawMatrix().Data
			if yx {
				src = s.Next.RawMatrix().Data
			}
			tt := s.Count
			total += f64.Dot(src[q[a]*tt:(q[a]+1)*tt], x[q[c]*tt:(q[c]+1)*tt])
		}
		return total
	}
	for _, limit := range []int64{0, 50} {
		m := NewModel(data)
		for _, d := range m.dots {
			d.limit = limit
		}
		sxx, syx := m.dataStats(ps)
		for pass := range 2 {
			var wg sync.WaitGroup
			errs := make(chan string, 4*30*30)
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for a := range 30 {
						for c := range 30 {
							if (a+c)%4 != g && pass == 0 {
								continue
							}
							if got, want := sxx.At(a, c), direct(false, a, c); got != want {
								errs <- fmt.Sprintf("limit %d pass %d: Sxx[%d][%d] = %v, want %v", limit, pass, a, c, got, want)
							}
							if got, want := syx.At(a, c), direct(true, a, c); got != want {
								errs <- fmt.Sprintf("limit %d pass %d: Syx[%d][%d] = %v, want %v", limit, pass, a, c, got, want)
							}
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for e := range errs {
				t.Error(e)
			}
		}
		for j, d := range m.dots {
			kept := d.size.Load()
			if limit == 0 {
				// Sxx keeps one product per unordered pair, Syx one per ordered pair.
				assert.EqualValues(t, 30*31/2+30*30, kept, "worm %d", j)
			} else {
				assert.LessOrEqual(t, kept, limit+4, "worm %d: the cache outgrew its limit (by at most one product per concurrent writer)", j)
			}
		}
	}
}

// TestFinalCostSparse checks that the MCMC baseline times its final summary
// on the candidates when the masks are sparse (as RunModel then keeps the
// marginals): what it allocates grows with N, not N², from 200 to 800
// neurons.
func TestFinalCostSparse(t *testing.T) {
	alloc := func(n int) uint64 {
		sim, masks := simFor(t, n, 1, 20, 20, 8.0/float64(n), 3)
		_, data := dataProblem(t, sim, masks)
		require.True(t, models.SparseSummary(data.Masks), "the test needs sparse masks")
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		fixed, perDraw, err := finalCost(data, 2, 1)
		runtime.ReadMemStats(&after)
		require.NoError(t, err)
		assert.Positive(t, fixed)
		assert.GreaterOrEqual(t, perDraw, time.Duration(0))
		return after.TotalAlloc - before.TotalAlloc
	}
	small, large := alloc(200), alloc(800)
	// Linear: about 4 times; the dense summary's timing (N × N scores and
	// counts) makes it about 9.
	assert.Less(t, float64(large), 6*float64(small), "four times N multiplied finalCost's allocations by %.2f", float64(large)/float64(small))
}
