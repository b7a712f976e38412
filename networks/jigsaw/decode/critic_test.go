package decode

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/networks/jigsaw"
	"github.com/permlab/permlab/perm"
)

// wavyImages returns n grey side × side images, each a sum of three random
// waves, whose pieces continue one another smoothly.
func wavyImages(rng *rand.Rand, n, side int) []float64 {
	imgs := make([]float64, n*side*side)
	for b := range n {
		var a, fy, fx, ph [3]float64
		for k := range a {
			a[k], fy[k], fx[k], ph[k] = rng.Float64(), 0.1+0.2*rng.Float64(), 0.1+0.2*rng.Float64(), 2*math.Pi*rng.Float64()
		}
		for y := range side {
			for x := range side {
				v := 0.0
				for k := range a {
					v += a[k] * math.Sin(fy[k]*float64(y)+fx[k]*float64(x)+ph[k])
				}
				imgs[(b*side+y)*side+x] = v
			}
		}
	}
	return imgs
}

// criticNet returns a 3 × 3 network with edge matching for 18 × 18 images
// (6 px pieces) and puzzles of wavy images for it.
func criticNet(t *testing.T, puzzles int) (*jigsaw.Net, *jigsaw.Puzzles) {
	t.Helper()
	cfg := tinyConfig()
	cfg.P, cfg.Height, cfg.Width, cfg.Refine = 3, 18, 18, 1
	net, err := jigsaw.New(cfg, 4)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(8, 8))
	randomizeEdges(net, rng)
	z, err := jigsaw.MakePuzzles(net.Grid(), wavyImages(rng, puzzles, 18), nil, rng)
	require.NoError(t, err)
	return net, z
}

// trainedCritic returns a critic trained briefly on wavy images.
func trainedCritic(t *testing.T, g jigsaw.Grid, cfg CriticConfig) (*Critic, *CriticResult) {
	t.Helper()
	c, err := NewCritic(g, 1)
	require.NoError(t, err)
	if cfg.Epochs == 0 {
		cfg.Epochs = 4
	}
	res, err := c.Train(context.Background(), jigsaw.Data{Pixels: wavyImages(rand.New(rand.NewPCG(3, 1)), 400, 18)}, cfg)
	require.NoError(t, err)
	return c, res
}

// TestCriticLearns checks that a briefly trained critic tells right wavy
// images from ones with two or three pieces moved, on images it has not
// seen, and that its loss falls.
func TestCriticLearns(t *testing.T) {
	net, z := criticNet(t, 200)
	c, res := trainedCritic(t, net.Grid(), CriticConfig{Seed: 2, LR: 3e-3})
	k := 10
	assert.Less(t, mean(res.Losses[len(res.Losses)-k:]), 0.5*mean(res.Losses[:k]), "the loss falls")

	g := net.Grid()
	n, ps := g.N(), g.PieceSize()
	task := &criticTask{c: c, z: z, moves: oneMoves(n)}
	rng := rand.New(rand.NewPCG(4, 4))
	id := make([]int, n)
	for q := range id {
		id[q] = q
	}
	task.img, task.src, task.pcs = make([]float64, c.imageSize()), make([]int, n), make([]float64, n*ps)
	var imgs []float64
	for b := range z.Len() {
		pieces := z.Pieces[b*n*ps : (b+1)*n*ps]
		require.NoError(t, g.Assemble(task.img, pieces))
		imgs = append(imgs, task.img...)
		require.True(t, task.wrong(pieces, id, b, rng))
		require.NoError(t, g.Assemble(task.img, task.pcs))
		imgs = append(imgs, task.img...)
	}
	d, err := c.Scores(imgs)
	require.NoError(t, err)
	right := 0
	for b := range z.Len() {
		if d[2*b] > d[2*b+1] {
			right++
		}
	}
	assert.Greater(t, float64(right)/float64(z.Len()), 0.9, "the right image scores above the moved one")
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// TestOneMoves checks the candidate moves: every swap and both 3-cycles of
// every three positions, each a distinct permutation other than the
// identity, p²(p² − 1)(2p² − 1)/6 of them.
func TestOneMoves(t *testing.T) {
	for _, n := range []int{4, 9} {
		ms := oneMoves(n)
		assert.Len(t, ms, n*(n-1)/2+n*(n-1)*(n-2)/3)
		seen := map[string]bool{}
		id := make([]int, n)
		for q := range id {
			id[q] = q
		}
		at := make([]int, n)
		for _, m := range ms {
			m.apply(at, id)
			require.NoError(t, perm.Perm(at).Validate())
			moved := 0
			for q := range at {
				if at[q] != q {
					moved++
				}
			}
			assert.Equal(t, m.k, moved)
			key := fmt.Sprint(at)
			assert.False(t, seen[key], "move %v twice", m)
			seen[key] = true
		}
	}
}

// TestCriticRerank checks the reranking against its definition: the
// arrangement it returns scores E + w·D at least as high as the arrangement
// the search ended with and every one move from that; and it does not
// depend on GOMAXPROCS. SearchGap's score includes the critic's term.
func TestCriticRerank(t *testing.T) {
	net, z := criticNet(t, 12)
	c, _ := trainedCritic(t, net.Grid(), CriticConfig{Seed: 2, Epochs: 1})
	base := Decoder{Pairwise: 1, Anneal: 2000, Seed: 3}
	searched, err := Solve(net, z, base)
	require.NoError(t, err)
	d := base
	d.Critic, d.CriticWeight = c, 2
	got, err := Solve(net, z, d)
	require.NoError(t, err)
	checkSerialAndEvaluate(t, single(net), z, d, got)

	logits, err := net.LogitMatrices(z)
	require.NoError(t, err)
	energy := energyOf(net, z, logits, base)
	score := func(b int, p perm.Perm) float64 {
		one := &jigsaw.Puzzles{Grid: z.Grid, Scrambled: scrambledOf(z, b)}
		w, err := criticTerms(one, []perm.Perm{p}, d)
		require.NoError(t, err)
		return energy(b, p) + w[0]
	}
	n := net.Grid().N()
	moves := oneMoves(n)
	changed := 0
	for b := range z.Len() {
		if !assert.ObjectsAreEqual(searched[b], got[b]) {
			changed++
		}
		best := score(b, got[b])
		at := make([]int, n) // position → piece of the searched arrangement
		for i, q := range searched[b] {
			at[q] = i
		}
		cand, p := make([]int, n), make(perm.Perm, n)
		for _, m := range append([]move{{k: 0}}, moves...) {
			m.apply(cand, at)
			for q, i := range cand {
				p[i] = q
			}
			assert.GreaterOrEqual(t, best+1e-9, score(b, p), "puzzle %d, move %v", b, m)
		}
	}
	t.Logf("the critic changed %d of %d arrangements", changed, z.Len())

	gap, err := SearchGap(net, z, got, d)
	require.NoError(t, err)
	want := 0.0
	for b := range z.Len() {
		want += score(b, got[b]) / float64(z.Len())
	}
	assert.InDelta(t, want, gap.MeanScore, 1e-9)
}

// TestCriticHardMoves checks the ranking of the hard wrong arrangements:
// for each puzzle, the top moves by the decoder's score, highest first,
// none of which leaves the image unchanged.
func TestCriticHardMoves(t *testing.T) {
	net, z := criticNet(t, 6)
	e, err := NewEnsemble(net)
	require.NoError(t, err)
	n, ps := net.Grid().N(), net.Grid().PieceSize()
	// make two pieces of puzzle 0 identical, so some moves change nothing
	copy(z.Pieces[ps:2*ps], z.Pieces[:ps])
	for i, q := range z.Perms[0] {
		copy(z.Scrambled[i*ps:(i+1)*ps], z.Pieces[q*ps:(q+1)*ps])
	}
	d := Decoder{Pairwise: 1.5}
	moves := oneMoves(n)
	hard, err := e.hardMoves(z, moves, d, 5)
	require.NoError(t, err)
	logits, err := net.LogitMatrices(z)
	require.NoError(t, err)
	energy := energyOf(net, z, logits, d)
	for b := range z.Len() {
		require.Len(t, hard[b], 5)
		pieces := z.Pieces[b*n*ps : (b+1)*n*ps]
		at := make([]int, n)
		for i, q := range z.Perms[b] {
			at[q] = i
		}
		eOf := func(m move) float64 {
			cand, p := make([]int, n), make(perm.Perm, n)
			m.apply(cand, at)
			for q, i := range cand {
				p[i] = q
			}
			return energy(b, p)
		}
		var all []float64
		for _, m := range moves {
			if !sameUnder(m, pieces, ps) {
				all = append(all, eOf(m))
			}
		}
		prev := math.Inf(1)
		for r, k := range hard[b] {
			m := moves[k]
			assert.False(t, sameUnder(m, pieces, ps))
			v := eOf(m)
			assert.LessOrEqual(t, v, prev)
			prev = v
			above := 0
			for _, x := range all {
				if x > v {
					above++
				}
			}
			assert.LessOrEqual(t, above, r, "puzzle %d: rank %d", b, r)
		}
	}
}

// TestCriticTrainReproducible checks that training is a function of the
// seed, with hard moves too, whatever GOMAXPROCS is, and that an
// interrupted run resumes to the same weights.
func TestCriticTrainReproducible(t *testing.T) {
	net, _ := criticNet(t, 1)
	e, err := NewEnsemble(net)
	require.NoError(t, err)
	cfg := CriticConfig{Seed: 5, Epochs: 2, Batch: 16, Hard: e, HardDecoder: Decoder{Pairwise: 1}}
	a, res := trainedCritic(t, net.Grid(), cfg)
	assert.Greater(t, res.HardSeconds, 0.0)
	assert.Equal(t, 8, res.Config.HardTop, "the defaults are filled in")
	assert.Equal(t, 0.7, res.Config.HardShare)
	prev := runtime.GOMAXPROCS(1)
	b, _ := trainedCritic(t, net.Grid(), cfg)
	runtime.GOMAXPROCS(prev)
	assert.Equal(t, a.Params()[0].Value.Data, b.Params()[0].Value.Data)
	assert.Equal(t, a.Params()[len(a.Params())-1].Value.Data, b.Params()[len(b.Params())-1].Value.Data)

	other := cfg
	other.Seed = 6
	c, _ := trainedCritic(t, net.Grid(), other)
	assert.NotEqual(t, a.Params()[0].Value.Data, c.Params()[0].Value.Data)

	// interrupted at its first progress report, then resumed from the checkpoint
	ckpt := filepath.Join(t.TempDir(), "critic.ckpt")
	withCkpt := cfg
	withCkpt.Checkpoint = ckpt
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	withCkpt.Progress = cancelWriter(cancel)
	_, err = trainedCriticCtx(ctx, net.Grid(), withCkpt)
	require.ErrorIs(t, err, context.Canceled)
	withCkpt.Progress = nil
	r, err := trainedCriticCtx(context.Background(), net.Grid(), withCkpt)
	require.NoError(t, err)
	assert.Greater(t, r.res.ResumedFrom, 0)
	assert.Equal(t, a.Params()[0].Value.Data, r.c.Params()[0].Value.Data)
	assert.Equal(t, res.Losses, r.res.Losses)
}

// cancelWriter is a progress writer that cancels a run at its first report.
type cancelWriter context.CancelFunc

func (c cancelWriter) Write(p []byte) (int, error) {
	c()
	return len(p), nil
}

type criticRun struct {
	c   *Critic
	res *CriticResult
}

func trainedCriticCtx(ctx context.Context, g jigsaw.Grid, cfg CriticConfig) (criticRun, error) {
	c, err := NewCritic(g, 1)
	if err != nil {
		return criticRun{}, err
	}
	res, err := c.Train(ctx, jigsaw.Data{Pixels: wavyImages(rand.New(rand.NewPCG(3, 1)), 400, 18)}, cfg)
	return criticRun{c, res}, err
}

// TestCriticSaveLoad checks that a saved critic scores as the original, and
// that a file of another version or shape is an error.
func TestCriticSaveLoad(t *testing.T) {
	net, z := criticNet(t, 5)
	c, _ := trainedCritic(t, net.Grid(), CriticConfig{Epochs: 1})
	path := filepath.Join(t.TempDir(), "critic.gob")
	require.NoError(t, c.SaveFile(path))
	back, err := LoadCriticFile(path)
	require.NoError(t, err)
	assert.Equal(t, c.Grid(), back.Grid())
	preds := z.Perms
	d := Decoder{Critic: c, CriticWeight: 1}
	want, err := criticTerms(z, preds, d)
	require.NoError(t, err)
	d.Critic = back
	got, err := criticTerms(z, preds, d)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Equal(t, 32*25+32+64*32*25+64+64*1*1*128+128+128*2+2, c.NumParams())

	var buf bytes.Buffer
	require.NoError(t, c.Save(&buf))
	var f criticFile
	require.NoError(t, gob.NewDecoder(bytes.NewReader(buf.Bytes())).Decode(&f))
	for name, mod := range map[string]func(*criticFile){
		"version":  func(f *criticFile) { f.Version = 2 },
		"names":    func(f *criticFile) { f.Names[0] = "x" },
		"shape":    func(f *criticFile) { f.Values[1] = f.Values[1][:3] },
		"count":    func(f *criticFile) { f.Names, f.Values = f.Names[1:], f.Values[1:] },
		"grid":     func(f *criticFile) { f.Grid.PieceH, f.Grid.PieceW = 2, 2 },
		"inside":   func(f *criticFile) { f.Grid.Top = 5 },
		"not fin.": func(f *criticFile) { f.Values[0][0] = math.NaN() },
	} {
		g := f
		g.Names, g.Values = append([]string(nil), f.Names...), make([][]float64, len(f.Values))
		for i := range f.Values {
			g.Values[i] = append([]float64(nil), f.Values[i]...)
		}
		mod(&g)
		var b bytes.Buffer
		require.NoError(t, gob.NewEncoder(&b).Encode(g))
		_, err := LoadCritic(&b)
		assert.Error(t, err, name)
	}
	_, err = LoadCritic(bytes.NewReader(buf.Bytes()[:buf.Len()/2]))
	assert.Error(t, err, "truncated")
	_, err = LoadCriticFile(filepath.Join(t.TempDir(), "none"))
	assert.Error(t, err)
}

// TestCriticErrors checks bad critics, training settings and decoders.
func TestCriticErrors(t *testing.T) {
	small, err := jigsaw.NewGrid(1, 12, 12, 3)
	require.NoError(t, err)
	_, err = NewCritic(small, 1)
	assert.ErrorContains(t, err, "at least 16")

	net, z := criticNet(t, 3)
	c, err := NewCritic(net.Grid(), 1)
	require.NoError(t, err)
	_, err = c.Scores(make([]float64, 17))
	assert.Error(t, err)
	data := jigsaw.Data{Pixels: wavyImages(rand.New(rand.NewPCG(1, 1)), 4, 18)}
	for name, cfg := range map[string]CriticConfig{
		"epochs":  {Epochs: -1},
		"lr":      {LR: math.NaN()},
		"share":   {HardShare: 1.5},
		"no hard": {HardShare: 0.5},
	} {
		_, err := c.Train(context.Background(), data, cfg)
		assert.Error(t, err, name)
	}
	_, err = c.Train(context.Background(), jigsaw.Data{Pixels: make([]float64, 7)}, CriticConfig{})
	assert.Error(t, err, "images of the wrong size")
	bad := append([]float64(nil), data.Pixels...)
	bad[5] = math.NaN()
	_, err = c.Train(context.Background(), jigsaw.Data{Pixels: bad}, CriticConfig{})
	assert.ErrorContains(t, err, "pixel 5")
	// the hard moves are ranked by E alone, whatever critic weight the decoder names
	e1, err := NewEnsemble(net)
	require.NoError(t, err)
	_, err = c.Train(context.Background(), data, CriticConfig{Epochs: 1, Hard: e1, HardDecoder: Decoder{Pairwise: 1, CriticWeight: 5}})
	assert.NoError(t, err)

	other, err := jigsaw.NewGrid(1, 20, 20, 4)
	require.NoError(t, err)
	oc, err := NewCritic(other, 1)
	require.NoError(t, err)
	for name, d := range map[string]Decoder{
		"no weight":  {Critic: c},
		"inf weight": {Critic: c, CriticWeight: math.Inf(1)},
		"no critic":  {CriticWeight: 1},
		"other grid": {Critic: oc, CriticWeight: 1},
	} {
		_, err := Solve(net, z, d)
		assert.Error(t, err, name)
	}
	e, err := NewEnsemble(net)
	require.NoError(t, err)
	_, err = oc.Train(context.Background(), data, CriticConfig{Hard: e})
	assert.Error(t, err, "an ensemble for other puzzles")
}
