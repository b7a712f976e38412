package decode

import (
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/internal/longtest"
	"github.com/permlab/permlab/networks/jigsaw"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/relax"
)

// refineNet returns a 3 × 3 network with two rounds of edge matching whose
// edge matrices are random (New starts them at 0.5·I), and puzzles for it.
func refineNet(t *testing.T, depth, puzzles int) (*jigsaw.Net, *jigsaw.Puzzles) {
	t.Helper()
	cfg := tinyConfig()
	cfg.P, cfg.Height, cfg.Width, cfg.Refine, cfg.EdgeDepth = 3, 9, 9, 2, depth
	net, err := jigsaw.New(cfg, 5)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(2, 9))
	randomizeEdges(net, rng)
	z, err := jigsaw.MakePuzzles(net.Grid(), randomImages(rng, puzzles, 1, 9, 9), nil, rng)
	require.NoError(t, err)
	return net, z
}

// energyOf returns E of d for puzzle b of z at an arrangement, computed
// through the arranger from the logits of the puzzles.
func energyOf(net *jigsaw.Net, z *jigsaw.Puzzles, logits []*mat.Dense, d Decoder) func(b int, pred perm.Perm) float64 {
	s := newArranger(net.Grid().P)
	return func(b int, pred perm.Perm) float64 {
		s.lam = pairTables(net, net.Edges(), s.h, s.v, scrambledOf(z, b), d)
		s.u = logits[b].RawMatrix().Data
		s.place(pred)
		return s.energy()
	}
}

// randomizeEdges sets every entry of net's edge matrices to a standard
// normal draw, so that its own compatibilities are arbitrary.
func randomizeEdges(net *jigsaw.Net, rng *rand.Rand) {
	for _, m := range net.Params() {
		if !strings.HasPrefix(m.Name, "edge.") {
			continue
		}
		for i := range m.Value.Data {
			m.Value.Data[i] = rng.NormFloat64()
		}
	}
}

// TestEdgeTablesMatchEdges checks the decoder's edge compatibilities
// against E's pairwise part summed term by term from the network's edge
// matrices and border strips: at arrangement σ, every pair of neighbours
// (i left of or above j) adds b_d(i)ᵀ M_d b_opp(d)(j) + b_opp(d)(j)ᵀ M_opp(d) b_d(i).
// Package jigsaw checks the same sum against the network's own
// edge-matching terms.
func TestEdgeTablesMatchEdges(t *testing.T) {
	for _, depth := range []int{1, 2} {
		net, z := refineNet(t, depth, 1)
		nn2 := net.Grid().N()
		s := newArranger(net.Grid().P)
		edgeTables(net, net.Edges(), s.h, s.v, z.Scrambled)
		s.u = make([]float64, nn2*nn2)
		rng := rand.New(rand.NewPCG(3, uint64(depth)))
		for range 5 {
			sigma := perm.Random(nn2, rng)
			s.place(sigma)
			want := pairEnergy(net, z.Scrambled, sigma)
			assert.InDelta(t, want, s.energy(), 1e-9*(1+math.Abs(want)), "depth %d", depth)
		}
	}
}

// pairEnergy returns the pairwise part of E at σ (piece → position) for the
// scrambled pieces of one puzzle, entry by entry from Net.Edges and
// jigsaw.Strips.
func pairEnergy(net *jigsaw.Net, scrambled []float64, sigma perm.Perm) float64 {
	g := net.Grid()
	st := jigsaw.Strips(g, scrambled, 1, net.Config().StripDepth())
	m := net.Edges()
	at := make([]int, g.N())
	for i, q := range sigma {
		at[q] = i
	}
	// facing is b_d(i)ᵀ M_d b_opp(d)(j).
	facing := func(d, i, j int) float64 {
		w := st[d].Shape[2]
		bi, bj := st[d].Data[i*w:(i+1)*w], st[d^1].Data[j*w:(j+1)*w]
		s := 0.0
		for k := range w {
			for l := range w {
				s += bi[k] * m[d][k*w+l] * bj[l]
			}
		}
		return s
	}
	e := 0.0
	for q := range g.N() {
		r, c := q/g.P, q%g.P
		if c+1 < g.P { // at[q+1] right of at[q]: right side of one, left of the other
			e += facing(3, at[q], at[q+1]) + facing(2, at[q+1], at[q])
		}
		if r+1 < g.P { // at[q+P] below at[q]
			e += facing(1, at[q], at[q+g.P]) + facing(0, at[q+g.P], at[q])
		}
	}
	return e
}

// tinyConfig is a small network for tests.
func tinyConfig() jigsaw.Config {
	return jigsaw.Config{
		P: 2, Channels: 1, Height: 8, Width: 8,
		Filters: 4, Kernel: 3, Pool: 2, Heads: 1,
		Tau: 1, Iters: 10, Samples: 2, Noise: 0.5,
	}
}

// TestArrangerFindsOptimum checks the search on random 3 × 3 instances of
// E against all 9! arrangements.
func TestArrangerFindsOptimum(t *testing.T) {
	longtest.Skip(t, "brute force over 9! arrangements")
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
		s.u = u
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

func TestSolveQuadratic(t *testing.T) {
	net, z := refineNet(t, 1, 12)
	logits, err := net.LogitMatrices(z)
	require.NoError(t, err)
	plain := make([]perm.Perm, len(logits))
	for b, g := range logits {
		plain[b], err = relax.Matching(g)
		require.NoError(t, err)
	}
	zero, err := Solve(net, z, Decoder{})
	require.NoError(t, err)
	assert.Equal(t, plain, zero, "the zero Decoder is M(g)")

	d := Decoder{Pairwise: 2, Seam: 0.5, Anneal: 3000, Seed: 3}
	got, err := Solve(net, z, d)
	require.NoError(t, err)
	// Never below E(M(g)), whatever GOMAXPROCS.
	energy := energyOf(net, z, logits, d)
	for b := range got {
		require.NoError(t, got[b].Validate())
		assert.GreaterOrEqual(t, energy(b, got[b]), energy(b, plain[b])-1e-9, "puzzle %d", b)
	}
	checkSerialAndEvaluate(t, single(net), z, d, got)
}

// checkSerialAndEvaluate checks that s decodes z with d to got on one
// thread too, and that its Evaluate scores got.
func checkSerialAndEvaluate(t *testing.T, s *Ensemble, z *jigsaw.Puzzles, d Decoder, got []perm.Perm) {
	t.Helper()
	prev := runtime.GOMAXPROCS(1)
	one, err := s.Solve(z, d)
	runtime.GOMAXPROCS(prev)
	require.NoError(t, err)
	assert.Equal(t, got, one, "Solve depends on GOMAXPROCS")
	m, err := s.Evaluate(z, d)
	require.NoError(t, err)
	want, err := jigsaw.ScoreAll(z, got)
	require.NoError(t, err)
	assert.Equal(t, want, m)
}

func TestDecoderErrors(t *testing.T) {
	net, z := refineNet(t, 1, 2)
	plainCfg := tinyConfig()
	plainCfg.P, plainCfg.Height, plainCfg.Width = 3, 9, 9
	plain, err := jigsaw.New(plainCfg, 1)
	require.NoError(t, err)
	_, err = Solve(plain, z, Decoder{Pairwise: 1})
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
		{Seam: -1},
		{Seam: math.NaN()},
		{Seam: math.Inf(1)},
	} {
		_, err := Solve(net, z, d)
		assert.Error(t, err, "%+v", d)
	}
	_, err = Solve(net, nil, Decoder{Pairwise: 1})
	assert.Error(t, err)
	_, err = Solve(plain, z, Decoder{Seam: 1, Anneal: 10})
	assert.NoError(t, err, "the seam term needs no edge matching")
}

// TestPairTables checks the tables of the decoder against E written out
// piece by piece: λ times the learned compatibilities (checked against the
// network by TestEdgeTablesMatchRefineTerms) minus μ times the squared
// distances of the facing pixel columns and rows, read off the pieces.
func TestPairTables(t *testing.T) {
	net, z := refineNet(t, 2, 1)
	gr := net.Grid()
	nn2, ph, pw := gr.N(), gr.PieceH, gr.PieceW
	ch, cv := make([]float64, nn2*nn2), make([]float64, nn2*nn2)
	edgeTables(net, net.Edges(), ch, cv, z.Scrambled)
	pix := func(i, y, x int) float64 { return z.Scrambled[i*gr.PieceSize()+y*pw+x] }
	d := Decoder{Pairwise: 1.5, Seam: 0.7}
	h, v := make([]float64, nn2*nn2), make([]float64, nn2*nn2)
	h[0], v[0] = 99, 99 // stale values are overwritten
	assert.Equal(t, 1.5, pairTables(net, net.Edges(), h, v, z.Scrambled, d))
	for i := range nn2 {
		for j := range nn2 {
			dh, dv := 0.0, 0.0
			for y := range ph {
				dh += math.Pow(pix(i, y, pw-1)-pix(j, y, 0), 2)
			}
			for x := range pw {
				dv += math.Pow(pix(i, ph-1, x)-pix(j, 0, x), 2)
			}
			assert.InDelta(t, 1.5*ch[i*nn2+j]-0.7*dh, 1.5*h[i*nn2+j], 1e-12, "h %d %d", i, j)
			assert.InDelta(t, 1.5*cv[i*nn2+j]-0.7*dv, 1.5*v[i*nn2+j], 1e-12, "v %d %d", i, j)
		}
	}
	hs, vs := make([]float64, nn2*nn2), make([]float64, nn2*nn2)
	assert.Equal(t, 1.0, pairTables(net, net.Edges(), hs, vs, z.Scrambled, Decoder{Seam: 0.7}))
	for k := range hs {
		assert.InDelta(t, 1.5*h[k]-1.5*ch[k], hs[k], 1e-12, "without λ, no c (h %d)", k)
		assert.InDelta(t, 1.5*v[k]-1.5*cv[k], vs[k], 1e-12, "without λ, no c (v %d)", k)
	}
	// Without μ the tables are exactly c, as before Seam existed.
	assert.Equal(t, 2.0, pairTables(net, net.Edges(), hs, vs, z.Scrambled, Decoder{Pairwise: 2}))
	assert.Equal(t, ch, hs)
	assert.Equal(t, cv, vs)
}

// TestSeamSolvesSmoothImages decodes puzzles of smooth random images, whose
// true arrangement has the smallest seams, with an untrained network: M(g)
// places the pieces nearly at random, the seam term alone puts them back.
func TestSeamSolvesSmoothImages(t *testing.T) {
	net, z := smoothPuzzles(t, 40)
	plain, err := Evaluate(net, z, Decoder{})
	require.NoError(t, err)
	seam, err := Evaluate(net, z, Decoder{Seam: 10, Anneal: 20000, Seed: 1})
	require.NoError(t, err)
	assert.Greater(t, plain.PropWrong, 0.5, "an untrained network should not solve the puzzles")
	assert.Less(t, seam.PropWrong, 0.05, "the seam term should solve smooth puzzles")
}

// TestRestarts checks that more annealing runs never lower E below the
// single run (the first restart is that run) and raise it on some puzzle
// when each run is short, and that one restart is the single run itself.
func TestRestarts(t *testing.T) {
	net, z := refineNet(t, 1, 12)
	logits, err := net.LogitMatrices(z)
	require.NoError(t, err)
	d := Decoder{Pairwise: 2, Seam: 0.5, Anneal: 40, Seed: 3}
	single, err := Solve(net, z, d)
	require.NoError(t, err)
	d.Restarts = 1
	one, err := Solve(net, z, d)
	require.NoError(t, err)
	assert.Equal(t, single, one, "one restart is the single run")
	d.Restarts = 6
	many, err := Solve(net, z, d)
	require.NoError(t, err)
	energy := energyOf(net, z, logits, d)
	raised := 0
	for b := range many {
		require.NoError(t, many[b].Validate())
		e1, e6 := energy(b, single[b]), energy(b, many[b])
		assert.GreaterOrEqual(t, e6, e1, "puzzle %d", b)
		if e6 > e1+1e-9 {
			raised++
		}
	}
	assert.Positive(t, raised, "six short runs should beat one on some puzzle")
	prev := runtime.GOMAXPROCS(1)
	serial, err := Solve(net, z, d)
	runtime.GOMAXPROCS(prev)
	require.NoError(t, err)
	assert.Equal(t, many, serial, "restarts depend on GOMAXPROCS")
	for _, bad := range []Decoder{{Pairwise: 1, Anneal: 10, Restarts: -1}, {Pairwise: 1, Restarts: 2}} {
		_, err := Solve(net, z, bad)
		assert.Error(t, err, "%+v", bad)
	}
}

// smoothPuzzles returns n puzzles of smooth random 12 × 12 images (sums of
// waves of 0.1 to 0.3 radians per pixel), whose true arrangement has the
// smallest seams, and an untrained 3 × 3 network for them.
func smoothPuzzles(t *testing.T, n int) (*jigsaw.Net, *jigsaw.Puzzles) {
	t.Helper()
	cfg := tinyConfig()
	cfg.P, cfg.Height, cfg.Width = 3, 12, 12
	net, err := jigsaw.New(cfg, 1)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(6, 6))
	z, err := jigsaw.MakePuzzles(net.Grid(), smoothImages(rng, n), nil, rng)
	require.NoError(t, err)
	return net, z
}

// smoothImages returns n grey 12 × 12 images, each a sum of three random
// waves of 0.1 to 0.3 radians per pixel.
func smoothImages(rng *rand.Rand, n int) []float64 {
	imgs := make([]float64, n*12*12)
	for b := range n {
		var a, fy, fx, ph [3]float64
		for k := range a {
			a[k], fy[k], fx[k], ph[k] = rng.Float64(), 0.1+0.2*rng.Float64(), 0.1+0.2*rng.Float64(), 2*math.Pi*rng.Float64()
		}
		for y := range 12 {
			for x := range 12 {
				val := 0.0
				for k := range a {
					val += a[k] * math.Sin(fy[k]*float64(y)+fx[k]*float64(x)+ph[k])
				}
				imgs[(b*12+y)*12+x] = val
			}
		}
	}
	return imgs
}

// TestSearchGap checks the split of the decoder's failures on three cases
// whose answer is known: smooth images, where the seam score ranks the true
// arrangement first, left at M(g) of an untrained network (the search's
// fault) and decoded by annealing (solved); and images of white noise, whose
// true arrangement the seam score does not prefer (the score's fault).
func TestSearchGap(t *testing.T) {
	net, z := smoothPuzzles(t, 40)
	d := Decoder{Seam: 10, Anneal: 20000, Seed: 1}
	plain, err := Solve(net, z, Decoder{})
	require.NoError(t, err)
	g, err := SearchGap(net, z, plain, d)
	require.NoError(t, err)
	assert.Equal(t, 40, g.Puzzles)
	assert.Equal(t, 40, g.Solved+g.SearchMisses+g.ScoreMisses)
	assert.Greater(t, g.SearchMisses, 30, "M(g) of an untrained network scores below the truth: %+v", g)
	assert.Positive(t, g.MeanShortfall)
	assert.Less(t, g.MeanScore, g.MeanTrueScore)
	plainScore := g.MeanScore
	decoded, err := Solve(net, z, d)
	require.NoError(t, err)
	g, err = SearchGap(net, z, decoded, d)
	require.NoError(t, err)
	assert.Greater(t, g.MeanScore, plainScore, "annealing scores higher than M(g)")
	// Annealing solves most; what it leaves is the score's fault, not the
	// search's (an untrained network's logits can outweigh a smooth seam).
	assert.GreaterOrEqual(t, g.Solved, 30, "%+v", g)
	assert.LessOrEqual(t, g.SearchMisses, 2, "%+v", g)
	truth, err := SearchGap(net, z, z.Perms, d)
	require.NoError(t, err)
	assert.Equal(t, truth.MeanTrueScore, truth.MeanScore)
	assert.Equal(t, g.MeanTrueScore, truth.MeanScore)
	truth.MeanScore, truth.MeanTrueScore = 0, 0
	assert.Equal(t, Gap{Puzzles: 40, Solved: 40}, truth)

	// White noise: the seam score has no reason to rank the truth first,
	// and annealing finds arrangements it scores higher.
	rng := rand.New(rand.NewPCG(8, 8))
	noise, err := jigsaw.MakePuzzles(net.Grid(), randomImages(rng, 20, 1, 12, 12), nil, rng)
	require.NoError(t, err)
	decoded, err = Solve(net, noise, d)
	require.NoError(t, err)
	g, err = SearchGap(net, noise, decoded, d)
	require.NoError(t, err)
	t.Logf("white noise: %+v", g)
	assert.Greater(t, g.ScoreMisses, 15, "%+v", g)
	assert.Less(t, g.Solved, 5, "%+v", g)

	_, err = SearchGap(net, z, plain, Decoder{})
	assert.ErrorContains(t, err, "no quadratic score")
	_, err = SearchGap(net, z, plain[:3], d)
	assert.ErrorContains(t, err, "3 predictions for 40 puzzles")
	bad := append([]perm.Perm(nil), plain...)
	bad[2] = perm.Perm{0, 0, 1, 2, 3, 4, 5, 6, 7}
	_, err = SearchGap(net, z, bad, d)
	assert.ErrorContains(t, err, "prediction 2")
	bad[2] = perm.Perm{0, 1}
	_, err = SearchGap(net, z, bad, d)
	assert.ErrorContains(t, err, "prediction 2 has 2 items")
}

func TestSolveOnePiece(t *testing.T) {
	cfg := tinyConfig()
	cfg.P, cfg.Height, cfg.Width, cfg.Refine = 1, 4, 4, 1
	net, err := jigsaw.New(cfg, 1)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(1, 1))
	z, err := jigsaw.MakePuzzles(net.Grid(), randomImages(rng, 2, 1, 4, 4), nil, rng)
	require.NoError(t, err)
	got, err := Solve(net, z, Decoder{Pairwise: 1, Anneal: 10})
	require.NoError(t, err)
	assert.Equal(t, []perm.Perm{{0}, {0}}, got)
}

// randomImages returns n images of c × h × w uniform values.
func randomImages(rng *rand.Rand, n, c, h, w int) []float64 {
	x := make([]float64, n*c*h*w)
	for i := range x {
		x[i] = rng.Float64()
	}
	return x
}
