package jigsaw

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/perm"
)

// blobs returns n synthetic 8 × 8 one-channel images: a Gaussian blob of
// random brightness near the centre plus faint noise. Each quadrant holds a
// different corner of the blob, so a 2 × 2 puzzle has a unique solution that
// a small network can learn.
func blobs(rng *rand.Rand, n int) []float64 {
	x := make([]float64, n*64)
	for b := range n {
		a := 0.6 + 0.4*rng.Float64()
		cy, cx := 3.5+rng.Float64()-0.5, 3.5+rng.Float64()-0.5
		for y := range 8 {
			for xx := range 8 {
				r2 := (float64(y)-cy)*(float64(y)-cy) + (float64(xx)-cx)*(float64(xx)-cx)
				x[b*64+y*8+xx] = a*math.Exp(-r2/6) + 0.02*rng.Float64()
			}
		}
	}
	return x
}

func tinyConfig() Config {
	return Config{
		P: 2, Channels: 1, Height: 8, Width: 8,
		Filters: 4, Kernel: 3, Pool: 2, Heads: 1,
		Tau: 1, Iters: 10, Samples: 2, Noise: 0.5,
	}
}

func TestNewErrors(t *testing.T) {
	for _, mod := range []func(c *Config){
		func(c *Config) { c.P = 0 },
		func(c *Config) { c.P = 9 },
		func(c *Config) { c.Filters = 0 },
		func(c *Config) { c.Kernel = 2 },
		func(c *Config) { c.Pool = 5 },
		func(c *Config) { c.Heads = 0 },
		func(c *Config) { c.Tau = 0 },
		func(c *Config) { c.Tau = math.NaN() },
		func(c *Config) { c.Iters = 0 },
		func(c *Config) { c.Samples = 0 },
		func(c *Config) { c.Noise = -1 },
		func(c *Config) { c.Hidden = -1 },
		func(c *Config) { c.Context = true },
		func(c *Config) { c.Refine = -1 },
		func(c *Config) { c.Refine, c.Heads = 1, 2 },
		func(c *Config) { c.EdgeDepth = -1 },
		func(c *Config) { c.Refine, c.EdgeDepth = 1, 9 },
		func(c *Config) { c.Crop = -2 },
		func(c *Config) { c.Crop = 5 },
		func(c *Config) { c.Crop = 10 },
		func(c *Config) { c.Crop = 2 }, // 1 px pieces, smaller than the pool
		func(c *Config) { c.LossPower = -0.5 },
		func(c *Config) { c.LossPower = math.NaN() },
		func(c *Config) { c.LossPower = math.Inf(1) },
	} {
		c := tinyConfig()
		mod(&c)
		_, err := New(c, 1)
		assert.Error(t, err, "%+v", c)
	}
}

// variants are the paper's network, the extensions of Config and a
// smaller crop than the default.
var variants = map[string]func(c *Config){
	"paper":          func(c *Config) {},
	"hidden":         func(c *Config) { c.Hidden = 6 },
	"hidden+context": func(c *Config) { c.Hidden, c.Context = 6, true },
	"refine":         func(c *Config) { c.Refine = 2 },
	"context+refine": func(c *Config) { c.Hidden, c.Context, c.Refine = 6, true, 1 },
	"refine depth 2": func(c *Config) { c.Refine, c.EdgeDepth = 1, 2 },
	"crop":           func(c *Config) { c.Crop = 6 },
	"loss power":     func(c *Config) { c.LossPower = 0.5 },
}

func TestEquivariance(t *testing.T) {
	for name, mod := range variants {
		t.Run(name, func(t *testing.T) { testEquivariance(t, mod) })
	}
}

func testEquivariance(t *testing.T, mod func(*Config)) {
	// Permuting the input pieces by q permutes the rows of the logit matrix
	// by q: g(Q X̃) = Q g(X̃).
	cfg := tinyConfig()
	cfg.P, cfg.Height, cfg.Width = 3, 9, 9
	mod(&cfg)
	net, err := New(cfg, 7)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(1, 1))
	z, err := MakePuzzles(net.Grid(), randomImages(rng, 3, 1, 9, 9), nil, rng)
	require.NoError(t, err)
	q := perm.Random(9, rng)
	zq := *z
	zq.Scrambled = make([]float64, len(z.Scrambled))
	np := 9 * net.Grid().PieceSize()
	for b := range z.Len() {
		require.NoError(t, net.Grid().Scramble(zq.Scrambled[b*np:(b+1)*np], z.Scrambled[b*np:(b+1)*np], q))
	}
	g, err := net.LogitMatrices(z)
	require.NoError(t, err)
	gq, err := net.LogitMatrices(&zq)
	require.NoError(t, err)
	for b := range g {
		want, err := q.ApplyRows(g[b])
		require.NoError(t, err)
		// The same arithmetic on each row, up to the rounding of blocked
		// matrix products.
		for i := range 9 {
			for j := range 9 {
				assert.InDelta(t, want.At(i, j), gq[b].At(i, j), 1e-12)
			}
		}
		// Hence the predicted assignment composes with q too.
	}
	p, err := net.Solve(z)
	require.NoError(t, err)
	pq, err := net.Solve(&zq)
	require.NoError(t, err)
	for b := range p {
		want, err := perm.Permute(q, p[b])
		require.NoError(t, err)
		assert.Equal(t, perm.Perm(want), pq[b])
	}
}

func TestSoftLossGradient(t *testing.T) {
	// Two puzzles of three pieces of two values, two noise draws each.
	rng := rand.New(rand.NewPCG(5, 6))
	g := ad.Zeros(2, 3, 3)
	for i := range g.Data {
		g.Data[i] = rng.NormFloat64()
	}
	pieces := randomImages(rng, 1, 1, 1, 12)
	scrambled := randomImages(rng, 1, 1, 1, 12)
	eps := randomImages(rng, 1, 1, 1, 36)
	f := func(t *ad.Tape, xs []*ad.Var) *ad.Var {
		return softLoss(xs[0], scrambled, pieces, 2, 2, eps, 0.7, 5)
	}
	require.NoError(t, ad.CheckGradient(f, g))
	// One draw, no noise.
	f1 := func(t *ad.Tape, xs []*ad.Var) *ad.Var {
		return softLoss(xs[0], scrambled, pieces, 2, 1, nil, 1.3, 3)
	}
	require.NoError(t, ad.CheckGradient(f1, g))
}

func TestSoftLossAtPermutation(t *testing.T) {
	// Logits that strongly favour the true permutation give a soft
	// reconstruction equal to X, so zero loss; the wrong one does not.
	tp := ad.NewTape()
	truth := perm.Perm{2, 0, 1}
	pieces := []float64{1, 2, 3}
	scrambled := []float64{3, 1, 2}
	g := ad.Zeros(1, 3, 3)
	for i, j := range truth {
		g.Data[i*3+j] = 50
	}
	loss := softLoss(tp.Const(g), scrambled, pieces, 1, 1, nil, 1, 20)
	require.NoError(t, tp.Err())
	assert.InDelta(t, 0, loss.Item(), 1e-12)
	for i := range g.Data {
		g.Data[i] = 0
	}
	for i := range truth {
		g.Data[i*3+i] = 50
	}
	loss = softLoss(tp.Const(g), scrambled, pieces, 1, 1, nil, 1, 20)
	assert.InDelta(t, (4+1+1)/3.0, loss.Item(), 1e-9)
}

func TestTrainSolvesTinyPuzzle(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	net, err := New(tinyConfig(), 3)
	require.NoError(t, err)
	test, err := MakePuzzles(net.Grid(), blobs(rng, 200), nil, rng)
	require.NoError(t, err)
	before, err := net.Evaluate(test)
	require.NoError(t, err)
	res, err := net.Train(context.Background(), Data{Pixels: blobs(rng, 500)}, TrainConfig{Steps: 300, Batch: 16, LR: 0.01, Seed: 1})
	require.NoError(t, err)
	trace := res.Losses
	require.Len(t, trace, 300)
	assert.Zero(t, res.ResumedFrom)
	assert.Positive(t, res.Seconds)
	after, err := net.Evaluate(test)
	require.NoError(t, err)
	// An untrained net is near chance (3/4 of pieces wrong).
	assert.Greater(t, before.PropWrong, 0.3)
	assert.Equal(t, 0.0, after.PropWrong)
	assert.Equal(t, 1.0, after.KendallTau)
	assert.Zero(t, after.L1)
	assert.Less(t, tailMean(trace), trace[0]/10)
}

func tailMean(x []float64) float64 {
	s := 0.0
	for _, v := range x[len(x)-20:] {
		s += v
	}
	return s / 20
}

func TestTrainReproducible(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := Data{Pixels: blobs(rng, 100)}
	tc := TrainConfig{Steps: 10, Batch: 8, LR: 0.01, Seed: 4}
	trace := func(procs int) []float64 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		net, err := New(tinyConfig(), 9)
		require.NoError(t, err)
		tr, err := net.Train(context.Background(), data, tc)
		require.NoError(t, err)
		return tr.Losses
	}
	a := trace(1)
	assert.Equal(t, a, trace(1))
	assert.Equal(t, a, trace(4))
	tc.Seed = 5
	net, err := New(tinyConfig(), 9)
	require.NoError(t, err)
	b, err := net.Train(context.Background(), data, tc)
	require.NoError(t, err)
	assert.NotEqual(t, a, b.Losses)
}

func TestTrainErrors(t *testing.T) {
	net, err := New(tinyConfig(), 1)
	require.NoError(t, err)
	ctx := context.Background()
	good := TrainConfig{Steps: 2, Batch: 2, LR: 0.01}
	_, err = net.Train(ctx, Data{Pixels: make([]float64, 63)}, good)
	assert.Error(t, err, "wrong image size")
	nan := make([]float64, 64)
	nan[3] = math.NaN()
	_, err = net.Train(ctx, Data{Pixels: nan}, good)
	assert.ErrorContains(t, err, "NaN")
	bad := good
	bad.LR = 0
	_, err = net.Train(ctx, Data{Pixels: make([]float64, 64)}, bad)
	assert.Error(t, err)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = net.Train(cctx, Data{Pixels: make([]float64, 64)}, good)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestSaveLoad(t *testing.T) {
	for name, mod := range variants {
		t.Run(name, func(t *testing.T) { testSaveLoad(t, mod) })
	}
}

func testSaveLoad(t *testing.T, mod func(*Config)) {
	cfg := tinyConfig()
	cfg.Heads = 3
	mod(&cfg)
	if cfg.Refine > 0 {
		cfg.Heads = 1 // edge matching has one head; its matrices are saved too
	}
	net, err := New(cfg, 21)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(1, 3))
	z, err := MakePuzzles(net.Grid(), blobs(rng, 6), []int{0, 1, 2, 2, 1, 0}, rng)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, net.Save(&buf))
	back, err := Load(&buf)
	require.NoError(t, err)
	assert.Equal(t, net.Config(), back.Config())
	g1, err := net.LogitMatrices(z)
	require.NoError(t, err)
	g2, err := back.LogitMatrices(z)
	require.NoError(t, err)
	assert.Equal(t, g1, g2)
	_, err = Load(bytes.NewReader([]byte("not a checkpoint")))
	assert.Error(t, err)
}

func TestHeadsSelectedByLabel(t *testing.T) {
	cfg := tinyConfig()
	cfg.Heads = 3
	net, err := New(cfg, 5)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(2, 3))
	labels := []int{2, 0, 1, 0, 2}
	z, err := MakePuzzles(net.Grid(), blobs(rng, 5), labels, rng)
	require.NoError(t, err)
	mixed, err := net.LogitMatrices(z)
	require.NoError(t, err)
	for k := range 3 {
		w := *z
		w.Labels = []int{k, k, k, k, k}
		all, err := net.LogitMatrices(&w)
		require.NoError(t, err)
		for b, l := range labels {
			if l == k {
				assert.InDeltaSlice(t, all[b].RawMatrix().Data, mixed[b].RawMatrix().Data, 1e-12)
			} else {
				assert.NotEqual(t, all[b].RawMatrix().Data, mixed[b].RawMatrix().Data)
			}
		}
	}
	w := *z
	w.Labels = []int{0, 0, 3, 0, 0}
	_, err = net.LogitMatrices(&w)
	assert.Error(t, err, "label without a head")
	w.Labels = nil
	_, err = net.LogitMatrices(&w)
	assert.Error(t, err, "heads need labels")
}

func TestAssemblyRates(t *testing.T) {
	cfg := tinyConfig()
	cfg.Heads = 2
	net, err := New(cfg, 5)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(2, 3))
	labels := []int{0, 1, 1, 0, 1}
	z, err := MakePuzzles(net.Grid(), blobs(rng, 5), labels, rng)
	require.NoError(t, err)
	// A judge that says "0" when the top-left pixel is brighter than the
	// bottom-right one: the rates must be what it says of each assembly.
	judge := func(pix []float64, count int) ([]int, error) {
		out := make([]int, count)
		for i := range out {
			if pix[i*64] <= pix[i*64+63] {
				out[i] = 1
			}
		}
		return out, nil
	}
	res, err := net.AssemblyRates(z, judge)
	require.NoError(t, err)
	assert.Equal(t, []int{2, 3}, res.Counts)
	want := [2][2]float64{}
	hits := 0
	for k := range 2 {
		_, recs, err := net.Assemble(z, k)
		require.NoError(t, err)
		got, _ := judge(flatten(recs), len(recs))
		for i, c := range got {
			if c == k {
				want[labels[i]][k]++
				hits++
			}
		}
	}
	for a := range 2 {
		for k := range 2 {
			assert.InDelta(t, want[a][k]/float64(res.Counts[a]), res.Rates[a][k], 1e-15)
		}
	}
	assert.InDelta(t, float64(hits)/10, res.Overall, 1e-15)
	_, _, err = net.Assemble(z, 2)
	assert.Error(t, err)
}

func flatten(x [][]float64) []float64 {
	var out []float64
	for _, r := range x {
		out = append(out, r...)
	}
	return out
}

// TestContextGradient checks the gradient of the loss of a network with a
// hidden and a context layer (and so of the mean over pieces and its
// broadcast) against central finite differences in every parameter.
func TestContextGradient(t *testing.T) {
	cfg := tinyConfig()
	cfg.Hidden, cfg.Context = 5, true
	testGradient(t, cfg)
}

// TestRefineGradient checks the gradients of the loss through two rounds
// of edge matching (the edge matrices included) by central differences.
func TestRefineGradient(t *testing.T) {
	cfg := tinyConfig()
	cfg.Refine = 2
	testGradient(t, cfg)
	cfg.Refine, cfg.EdgeDepth = 1, 2
	testGradient(t, cfg)
}

// TestLossPower checks the loss with Config.LossPower against its
// definition: the loss of the same logits on pieces mapped by φ, which
// leaves 0 and 1 alone (so images of only 0 and 1 lose the same), and the
// gradients by central differences.
func TestLossPower(t *testing.T) {
	dst := make([]float64, 5)
	lossPower(dst, []float64{0.25, -0.04, 0, 1, 0.01}, 0.5)
	assert.InDeltaSlice(t, []float64{0.5, -0.2, 0, 1, 0.1}, dst, 1e-15)

	cfg := tinyConfig()
	cfg.P, cfg.Height, cfg.Width, cfg.Noise = 3, 9, 9, 0
	plain, err := New(cfg, 3)
	require.NoError(t, err)
	cfg.LossPower = 0.5
	lifted, err := New(cfg, 3)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(4, 5))
	grey := randomImages(rng, 3, 1, 9, 9)
	binary := make([]float64, len(grey))
	for i, v := range grey {
		if v > 0.5 {
			binary[i] = 1
		}
	}
	tape := ad.NewTape()
	loss := func(n *Net, z *Puzzles) float64 {
		tape.Reset()
		v := n.Loss(tape, z, nil).Item()
		require.NoError(t, tape.Err())
		return v
	}
	zb, err := MakePuzzles(plain.Grid(), binary, nil, rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, err)
	assert.Equal(t, loss(plain, zb), loss(lifted, zb), "0 and 1 are fixed points of φ")
	zg, err := MakePuzzles(plain.Grid(), grey, nil, rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, err)
	// The same logits on the mapped pieces: the network sees the pixels.
	tape.Reset()
	g := lifted.Logits(tape, zg, 0, zg.Len())
	xt, x := make([]float64, len(zg.Scrambled)), make([]float64, len(zg.Pieces))
	lossPower(xt, zg.Scrambled, 0.5)
	lossPower(x, zg.Pieces, 0.5)
	want := softLoss(g, xt, x, zg.Grid.PieceSize(), cfg.Samples, nil, cfg.Tau, cfg.Iters).Item()
	require.NoError(t, tape.Err())
	got := loss(lifted, zg)
	assert.Equal(t, want, got)
	assert.NotEqual(t, loss(plain, zg), got, "grey pixels are lifted")
	cfg.LossPower, cfg.Hidden, cfg.Refine = 0.3, 5, 1
	testGradient(t, cfg)
}

func testGradient(t *testing.T, cfg Config) {
	cfg.P, cfg.Height, cfg.Width = 3, 9, 9
	cfg.Noise = 0
	net, err := New(cfg, 3)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(4, 4))
	z, err := MakePuzzles(net.Grid(), randomImages(rng, 2, 1, 9, 9), nil, rng)
	require.NoError(t, err)
	tape := ad.NewTape()
	loss := func() float64 {
		tape.Reset()
		v := net.Loss(tape, z, nil).Item()
		require.NoError(t, tape.Err())
		return v
	}
	ps := net.Params()
	for _, p := range ps {
		p.ZeroGrad()
	}
	tape.Reset()
	l := net.Loss(tape, z, nil)
	require.NoError(t, tape.Backward(l))
	grads := make([][]float64, len(ps))
	for i, p := range ps {
		grads[i] = append([]float64(nil), p.Grad.Data...)
	}
	const h = 1e-6
	checked := 0
	for i, p := range ps {
		for j := range p.Value.Data {
			x := p.Value.Data[j]
			p.Value.Data[j] = x + h
			up := loss()
			p.Value.Data[j] = x - h
			down := loss()
			p.Value.Data[j] = x
			fd := (up - down) / (2 * h)
			// ReLU kinks make a few entries of a finite difference
			// meaningless; none lies within h of a kink for this seed.
			assert.InDelta(t, fd, grads[i][j], 1e-7+1e-5*math.Abs(fd), "%s[%d]", p.Name, j)
			checked++
		}
	}
	assert.Greater(t, checked, 100)
}

// TestBorders checks the strips of edge matching on one 3×3 piece with
// pixels 0 … 8: rows or columns from the border inwards, and the opposite
// side's strip beside each.
func TestBorders(t *testing.T) {
	g, err := NewGrid(1, 3, 3, 1)
	require.NoError(t, err)
	piece := []float64{0, 1, 2, 3, 4, 5, 6, 7, 8}
	want := map[int][]float64{
		0: {0, 1, 2, 3, 4, 5}, // top: rows 0, 1
		1: {6, 7, 8, 3, 4, 5}, // bottom: rows 2, 1
		2: {0, 3, 6, 1, 4, 7}, // left: columns 0, 1
		3: {2, 5, 8, 1, 4, 7}, // right: columns 2, 1
	}
	deep, shallow := strips(g, piece, 1, 2), strips(g, piece, 1, 1)
	for d := range 4 {
		assert.Equal(t, want[d], deep[d].Data, "side %d", d)
		assert.Equal(t, want[d^1], deep[d^1].Data, "opposite of side %d", d)
		assert.Equal(t, want[d][:3], shallow[d].Data, "side %d, depth 1", d)
	}
	// Above each of the four positions of a 2×2 puzzle: nothing, nothing,
	// 0, 1 (row 4 is the zero row).
	assert.Equal(t, []int{4, 4, 0, 1}, neighbourIndex(Grid{P: 2}, 1, 0))
	assert.Equal(t, []int{1, 4, 3, 4}, neighbourIndex(Grid{P: 2}, 1, 3))
}

// TestEdgesMatchRefineTerms checks Net.Edges and Strips against the
// network's own edge matching: with a hard assignment σ, the terms one round
// adds at the entries (i, σ(i)) sum to the pairwise part of the decoder's
// score, b_d(i)ᵀ M_d b_opp(d)(j) + b_opp(d)(j)ᵀ M_opp(d) b_d(i) over every
// pair of neighbours (i left of or above j), summed here entry by entry.
func TestEdgesMatchRefineTerms(t *testing.T) {
	for _, depth := range []int{1, 2} {
		cfg := tinyConfig()
		cfg.P, cfg.Height, cfg.Width, cfg.Refine, cfg.EdgeDepth = 3, 9, 9, 2, depth
		net, err := New(cfg, 5)
		require.NoError(t, err)
		rng := rand.New(rand.NewPCG(2, 9))
		for _, e := range net.edges {
			for i := range e.Value.Data {
				e.Value.Data[i] = rng.NormFloat64()
			}
		}
		z, err := MakePuzzles(net.Grid(), randomImages(rng, 1, 1, 9, 9), nil, rng)
		require.NoError(t, err)
		nn2, p := net.Grid().N(), net.Grid().P
		st := Strips(net.Grid(), z.Scrambled, 1, cfg.StripDepth())
		m := net.Edges()
		facing := func(d, i, j int) float64 {
			w := st[d].Shape[2]
			require.Equal(t, StripLen(net.Grid(), depth, d), w)
			s := 0.0
			for k := range w {
				for l := range w {
					s += st[d].Data[i*w+k] * m[d][k*w+l] * st[d^1].Data[j*w+l]
				}
			}
			return s
		}
		for range 5 {
			sigma := perm.Random(nn2, rng)
			at := make([]int, nn2)
			for i, q := range sigma {
				at[q] = i
			}
			want := 0.0
			for q := range nn2 {
				if q%p+1 < p {
					want += facing(3, at[q], at[q+1]) + facing(2, at[q+1], at[q])
				}
				if q/p+1 < p {
					want += facing(1, at[q], at[q+p]) + facing(0, at[q+p], at[q])
				}
			}
			hard, err := sigma.Matrix()
			require.NoError(t, err)
			tp := ad.NewTape()
			e := net.edgeInputs(tp, z.Scrambled, 1)
			added := net.edgeTerms(tp.Const(ad.Zeros(1, nn2, nn2)), tp.Const(&ad.Tensor{Shape: []int{1, nn2, nn2}, Data: hard.RawMatrix().Data}), e).Value()
			require.NoError(t, tp.Err())
			got := 0.0
			for i, q := range sigma {
				got += added[i*nn2+q]
			}
			assert.InDelta(t, want, got, 1e-9*(1+math.Abs(want)), "depth %d", depth)
		}
	}
}
