package jigsaw

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/relax"
)

// refineNet returns a 3 × 3 network with two rounds of edge matching whose
// edge matrices are random (New starts them at 0.5·I), and puzzles for it.
func refineNet(t *testing.T, depth, puzzles int) (*Net, *Puzzles) {
	t.Helper()
	cfg := tinyConfig()
	cfg.P, cfg.Height, cfg.Width, cfg.Refine, cfg.EdgeDepth = 3, 9, 9, 2, depth
	net, err := New(cfg, 5)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(2, 9))
	for _, m := range net.edges {
		for i := range m.Value.Data {
			m.Value.Data[i] = rng.NormFloat64()
		}
	}
	z, err := MakePuzzles(net.Grid(), randomImages(rng, puzzles, 1, 9, 9), nil, rng)
	require.NoError(t, err)
	return net, z
}

// TestEdgeTablesMatchRefineTerms checks the decoder's edge compatibilities
// against the network's own edge-matching terms: with a hard assignment σ,
// the terms one round adds at the entries (i, σ(i)) sum to the pairwise part
// of E(σ).
func TestEdgeTablesMatchRefineTerms(t *testing.T) {
	for _, depth := range []int{1, 2} {
		net, z := refineNet(t, depth, 1)
		nn2 := net.grid.N()
		s := newArranger(net.grid.P)
		net.edgeTables(s.h, s.v, z.Scrambled)
		s.u, s.lam = make([]float64, nn2*nn2), 1
		rng := rand.New(rand.NewPCG(3, uint64(depth)))
		for range 5 {
			sigma := perm.Random(nn2, rng)
			s.place(sigma)
			hard, err := sigma.Matrix()
			require.NoError(t, err)
			tp := ad.NewTape()
			e := net.edgeInputs(tp, z.Scrambled, 1)
			added := net.edgeTerms(tp.Const(ad.Zeros(1, nn2, nn2)), tp.Const(&ad.Tensor{Shape: []int{1, nn2, nn2}, Data: hard.RawMatrix().Data}), e).Value()
			require.NoError(t, tp.Err())
			want := 0.0
			for i, q := range sigma {
				want += added[i*nn2+q]
			}
			assert.InDelta(t, want, s.energy(), 1e-9*(1+math.Abs(want)), "depth %d", depth)
		}
	}
}

// TestArrangerFindsOptimum checks the search on random 3 × 3 instances of
// E against all 9! arrangements.
func TestArrangerFindsOptimum(t *testing.T) {
	if testing.Short() {
		t.Skip("brute force over 9! arrangements")
	}
	const p, n = 3, 9
	rng := rand.New(rand.NewPCG(4, 4))
	climbMissed := 0
	for inst := range 6 {
		s := newArranger(p)
		u := make([]float64, n*n)
		for i := range u {
			u[i] = rng.NormFloat64()
		}
		for i := range s.h {
			s.h[i], s.v[i] = 2*rng.NormFloat64(), 2*rng.NormFloat64()
		}
		s.u, s.lam = u, 1
		best := math.Inf(-1)
		require.NoError(t, perm.Enumerate(n, nil, func(all perm.Perm) error {
			s.place(all)
			best = max(best, s.energy())
			return nil
		}))
		start := perm.Identity(n)
		s.place(start)
		e0 := s.energy()

		climbed := start.Clone()
		s.decode(climbed, u, Decoder{Pairwise: 1}, 0)
		s.place(climbed)
		assert.GreaterOrEqual(t, s.energy(), e0-1e-12, "instance %d: climbing lowered E", inst)
		if s.energy() < best-1e-9 {
			climbMissed++
		}

		annealed := start.Clone()
		s.decode(annealed, u, Decoder{Pairwise: 1, Anneal: 100000, StartTemp: 20, EndTemp: 0.01}, uint64(inst))
		require.NoError(t, annealed.Validate())
		s.place(annealed)
		assert.InDelta(t, best, s.energy(), 1e-9, "instance %d: annealing missed the optimum", inst)
	}
	// The instances are hard enough that swaps alone get stuck.
	assert.Positive(t, climbMissed, "pair swaps found every optimum; the instances test nothing")
}

func TestShiftBlockPermutes(t *testing.T) {
	s := newArranger(4)
	rng := rand.New(rand.NewPCG(5, 5))
	for i := range s.at {
		s.at[i] = i
	}
	moved := 0
	for range 200 {
		before := append([]int(nil), s.at...)
		s.shiftBlock(rng)
		require.NoError(t, perm.Perm(s.at).Validate())
		for q := range s.at {
			if s.at[q] != before[q] {
				moved++
				break
			}
		}
	}
	assert.Greater(t, moved, 150, "most block shifts should move pieces")
}

func TestSolveWith(t *testing.T) {
	net, z := refineNet(t, 1, 12)
	logits, err := net.LogitMatrices(z)
	require.NoError(t, err)
	plain := make([]perm.Perm, len(logits))
	for b, g := range logits {
		plain[b], err = relax.Matching(g)
		require.NoError(t, err)
	}
	zero, err := net.SolveWith(z, Decoder{})
	require.NoError(t, err)
	assert.Equal(t, plain, zero, "the zero Decoder is M(g)")

	d := Decoder{Pairwise: 2, Anneal: 3000, Seed: 3}
	got, err := net.SolveWith(z, d)
	require.NoError(t, err)
	// Never below E(M(g)), whatever GOMAXPROCS.
	nn2, ps := net.grid.N(), net.grid.PieceSize()
	s := newArranger(net.grid.P)
	energy := func(b int, pred perm.Perm) float64 {
		net.edgeTables(s.h, s.v, z.Scrambled[b*nn2*ps:(b+1)*nn2*ps])
		s.u, s.lam = logits[b].RawMatrix().Data, d.Pairwise
		s.place(pred)
		return s.energy()
	}
	for b := range got {
		require.NoError(t, got[b].Validate())
		assert.GreaterOrEqual(t, energy(b, got[b]), energy(b, plain[b])-1e-9, "puzzle %d", b)
	}
	prev := runtime.GOMAXPROCS(1)
	one, err := net.SolveWith(z, d)
	runtime.GOMAXPROCS(prev)
	require.NoError(t, err)
	assert.Equal(t, got, one, "SolveWith depends on GOMAXPROCS")
	m, err := net.EvaluateWith(z, d)
	require.NoError(t, err)
	want, err := ScoreAll(z, got)
	require.NoError(t, err)
	assert.Equal(t, want, m)
}

func TestDecoderErrors(t *testing.T) {
	net, z := refineNet(t, 1, 2)
	plainCfg := tinyConfig()
	plainCfg.P, plainCfg.Height, plainCfg.Width = 3, 9, 9
	plain, err := New(plainCfg, 1)
	require.NoError(t, err)
	_, err = plain.SolveWith(z, Decoder{Pairwise: 1})
	assert.ErrorContains(t, err, "edge matching")
	for _, d := range []Decoder{
		{Pairwise: -1},
		{Pairwise: math.NaN()},
		{Pairwise: math.Inf(1)},
		{Pairwise: 1, Anneal: -1},
		{Anneal: 10},
		{Pairwise: 1, StartTemp: -1},
		{Pairwise: 1, StartTemp: 1, EndTemp: 2},
		{Pairwise: 1, EndTemp: math.NaN()},
	} {
		_, err := net.SolveWith(z, d)
		assert.Error(t, err, "%+v", d)
	}
	_, err = net.SolveWith(nil, Decoder{Pairwise: 1})
	assert.Error(t, err)
}

func TestSolveWithOnePiece(t *testing.T) {
	cfg := tinyConfig()
	cfg.P, cfg.Height, cfg.Width, cfg.Refine = 1, 4, 4, 1
	net, err := New(cfg, 1)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(1, 1))
	z, err := MakePuzzles(net.Grid(), randomImages(rng, 2, 1, 4, 4), nil, rng)
	require.NoError(t, err)
	got, err := net.SolveWith(z, Decoder{Pairwise: 1, Anneal: 10})
	require.NoError(t, err)
	assert.Equal(t, []perm.Perm{{0}, {0}}, got)
}
