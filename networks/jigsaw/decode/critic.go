package decode

import (
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/ad/optim"
	"github.com/permlab/permlab/internal/atomicfile"
	"github.com/permlab/permlab/internal/paramfile"
	"github.com/permlab/permlab/networks/jigsaw"
	"github.com/permlab/permlab/nn"
	"github.com/permlab/permlab/nn/train"
	"github.com/permlab/permlab/perm"
)

// Critic is a convolutional network that looks at a whole assembled image
// and says whether its pieces are in place. The network of a puzzle sees
// one piece at a time (and, with jigsaw.Config.Context, the mean of the
// others), and its compatibilities see two touching strips; neither sees a
// stroke that leaves one piece and does not arrive in the next, or a dot
// of ink alone in a corner. The critic does:
//
//	Channels × CropH × CropW → conv 5×5, 32 → ReLU → pool 2
//	                         → conv 5×5, 64 → ReLU → pool 2
//	                         → dense 128 → ReLU → dense 2
//
// and its score D(x) = z₁ − z₀ is the log-odds that the assembled image x is
// right. It is trained (Critic.Train) on the training images: each right
// arrangement against one moved by a swap of two pieces or a 3-cycle of
// three, some of them the moves a decoder's score likes best.
//
// With Decoder.Critic set, the decoder, once its search has ended, compares
// the arrangement it found with every arrangement one such move away and
// keeps the one with the highest E + w·D (w = Decoder.CriticWeight). That is
// p²(p² − 1)(2p² − 1)/6 + 1 images per puzzle for the critic: 205 at 3 × 3,
// 1,241 at 4 × 4.
type Critic struct {
	grid   jigsaw.Grid
	net    nn.Sequential
	params []*ad.Param
}

// criticMinSide is the smallest crop side the critic's two convolutions and
// pools fit.
const criticMinSide = 16

// NewCritic returns a critic for the assembled crops of g (g.Channels ×
// g.CropH() × g.CropW()) with weights drawn from seed. It is an error if a
// crop side is below 16 px.
func NewCritic(g jigsaw.Grid, seed uint64) (*Critic, error) {
	c, err := newCritic(g, seed)
	if err != nil {
		return nil, fmt.Errorf("decode: NewCritic: %w", err)
	}
	return c, nil
}

func newCritic(g jigsaw.Grid, seed uint64) (*Critic, error) {
	if err := checkCriticGrid(g); err != nil {
		return nil, err
	}
	h, w := g.CropH(), g.CropW()
	rng := rand.New(rand.NewPCG(seed, 0xc217)) // "crit"
	conv1, err := nn.NewConv2D(rng, "critic.conv1", g.Channels, 32, 5, 1, 0, nn.HeUniform)
	if err != nil {
		return nil, err
	}
	conv2, err := nn.NewConv2D(rng, "critic.conv2", 32, 64, 5, 1, 0, nn.HeUniform)
	if err != nil {
		return nil, err
	}
	h2, w2 := ((h-4)/2-4)/2, ((w-4)/2-4)/2
	hidden, err := nn.NewDense(rng, "critic.hidden", 64*h2*w2, 128, nn.HeUniform)
	if err != nil {
		return nil, err
	}
	out, err := nn.NewDense(rng, "critic.out", 128, 2, nn.GlorotUniform)
	if err != nil {
		return nil, err
	}
	pool := nn.MaxPool2D{Size: 2, Stride: 2}
	net := nn.Sequential{conv1, nn.ReLU{}, pool, conv2, nn.ReLU{}, pool, nn.Flatten{}, hidden, nn.ReLU{}, out}
	return &Critic{grid: g, net: net, params: net.Params()}, nil
}

// checkCriticGrid returns an error if the critic cannot be made for g.
func checkCriticGrid(g jigsaw.Grid) error {
	if g.P < 2 || g.Channels < 1 {
		return fmt.Errorf("grid of %d × %d pieces, %d channels: want at least 2 × 2 pieces and 1 channel", g.P, g.P, g.Channels)
	}
	if !madeGrid(g) {
		return fmt.Errorf("grid %+v is not one jigsaw.NewGrid or jigsaw.NewGridCrop makes", g)
	}
	if h, w := g.CropH(), g.CropW(); h < criticMinSide || w < criticMinSide {
		return fmt.Errorf("crop of %d × %d px: the critic needs at least %d × %d", h, w, criticMinSide, criticMinSide)
	}
	return nil
}

// madeGrid reports whether g is a grid NewGrid or NewGridCrop returns, so
// that its pieces tile a crop inside the image (a grid read from a file
// may be anything).
func madeGrid(g jigsaw.Grid) bool {
	if want, err := jigsaw.NewGrid(g.Channels, g.Height, g.Width, g.P); err == nil && want == g {
		return true
	}
	want, err := jigsaw.NewGridCrop(g.Channels, g.Height, g.Width, g.P, g.CropH())
	return err == nil && want == g
}

// Grid returns the geometry of the puzzles the critic was made for.
func (c *Critic) Grid() jigsaw.Grid { return c.grid }

// Params returns the trainable parameters.
func (c *Critic) Params() []*ad.Param { return c.params }

// NumParams returns the number of weights.
func (c *Critic) NumParams() int {
	n := 0
	for _, p := range c.params {
		n += len(p.Value.Data)
	}
	return n
}

// criticBatch is the number of images Scores pushes through the network at
// once, which bounds the memory of one forward pass.
const criticBatch = 256

// Scores returns D, the log-odds of being assembled right, for every image
// of imgs: assembled crops (jigsaw.Grid.Assemble) one after another, each
// Channels × CropH × CropW. The result does not depend on GOMAXPROCS.
func (c *Critic) Scores(imgs []float64) ([]float64, error) {
	d, err := c.scores(ad.NewTape(), imgs)
	if err != nil {
		return nil, fmt.Errorf("decode: Critic.Scores: %w", err)
	}
	return d, nil
}

func (c *Critic) scores(t *ad.Tape, imgs []float64) ([]float64, error) {
	size := c.imageSize()
	if len(imgs)%size != 0 {
		return nil, fmt.Errorf("%d values is not a whole number of %d × %d × %d images", len(imgs), c.grid.Channels, c.grid.CropH(), c.grid.CropW())
	}
	n := len(imgs) / size
	out := make([]float64, 0, n)
	for lo := 0; lo < n; lo += criticBatch {
		hi := min(lo+criticBatch, n)
		t.Reset()
		x, err := ad.NewTensor([]int{hi - lo, c.grid.Channels, c.grid.CropH(), c.grid.CropW()}, imgs[lo*size:hi*size])
		if err != nil {
			return nil, err
		}
		z := c.net.Forward(t, t.Const(x))
		if err := t.Err(); err != nil {
			return nil, err
		}
		v := z.Value()
		for i := range hi - lo {
			out = append(out, v[2*i+1]-v[2*i])
		}
	}
	return out, nil
}

func (c *Critic) imageSize() int { return c.grid.Channels * c.grid.CropH() * c.grid.CropW() }

// move cycles the pieces at two or three positions: the piece at pos[j]
// goes to pos[(j+1) mod k].
type move struct {
	pos [3]int
	k   int
}

// oneMoves returns every swap of two of n positions and both 3-cycles of
// every three, in a fixed order.
func oneMoves(n int) []move {
	var ms []move
	for a := range n {
		for b := a + 1; b < n; b++ {
			ms = append(ms, move{[3]int{a, b}, 2})
			for c := b + 1; c < n; c++ {
				ms = append(ms, move{[3]int{a, b, c}, 3}, move{[3]int{a, c, b}, 3})
			}
		}
	}
	return ms
}

// apply writes into dst the arrangement src (position → anything) after m.
func (m move) apply(dst, src []int) {
	copy(dst, src)
	for j := range m.k {
		dst[m.pos[(j+1)%m.k]] = src[m.pos[j]]
	}
}

// CriticConfig configures Critic.Train. Zero values select the defaults.
type CriticConfig struct {
	// Epochs is the number of passes over the training images (default
	// 20), Batch the images per Adam step, each with one wrong arrangement
	// (default 32), LR the first learning rate of a cosine schedule that
	// ends 100 times lower (default 10⁻³).
	Epochs, Batch int
	LR            float64
	// Seed fixes the order of the images and the wrong arrangements.
	Seed uint64
	// Hard, if not nil, is the ensemble whose decoder score (HardDecoder's
	// weights) ranks, for every training image, the arrangements one move
	// from the truth; the HardTop (default 8) it scores highest, among
	// those not equal to the truth up to identical pieces, are the hard
	// wrong arrangements, and HardShare of the wrong arrangements (default
	// 0.7 with Hard, else 0) are drawn from them. The rest are uniformly
	// random moves that change the image.
	Hard        *Ensemble `json:"-"`
	HardDecoder Decoder
	HardTop     int
	HardShare   float64
	// Checkpoint and Progress are as in train.Options: Train resumes from
	// Checkpoint when it exists, and Progress receives a progress bar.
	Checkpoint string
	Progress   io.Writer `json:"-"`
}

func (cfg *CriticConfig) defaults() error {
	if cfg.Epochs == 0 {
		cfg.Epochs = 20
	}
	if cfg.Batch == 0 {
		cfg.Batch = 32
	}
	if cfg.LR == 0 {
		cfg.LR = 1e-3
	}
	if cfg.Hard != nil {
		if cfg.HardTop == 0 {
			cfg.HardTop = 8
		}
		if cfg.HardShare == 0 {
			cfg.HardShare = 0.7
		}
	}
	switch {
	case cfg.Epochs < 0 || cfg.Batch < 0 || cfg.HardTop < 0:
		return fmt.Errorf("Epochs %d, Batch %d and HardTop %d must be >= 1", cfg.Epochs, cfg.Batch, cfg.HardTop)
	case !(cfg.LR > 0) || math.IsInf(cfg.LR, 0):
		return fmt.Errorf("learning rate %v, want a finite number > 0", cfg.LR)
	case !(cfg.HardShare >= 0 && cfg.HardShare <= 1):
		return fmt.Errorf("HardShare %v, want 0 to 1", cfg.HardShare)
	case cfg.HardShare > 0 && cfg.Hard == nil:
		return errors.New("HardShare > 0 needs an ensemble (Hard) to rank the moves")
	}
	return nil
}

// CriticResult reports a Critic.Train run.
type CriticResult struct {
	Config      CriticConfig // the settings used, defaults filled in
	Losses      []float64    // loss of every step, resumed runs included
	ResumedFrom int          // the step a resumed run went on from (0: afresh)
	HardSeconds float64      // seconds spent ranking the moves (Hard)
	Seconds     float64      // seconds of this call (not of earlier, resumed runs), ranking included
}

// Train fits the critic to the images of data (each Channels × Height ×
// Width, as the grid's) with Adam on the mean cross-entropy of right against
// wrong arrangements (see CriticConfig). A run is a function of the
// critic's weights, data and cfg, whatever GOMAXPROCS is, and resumes from
// cfg.Checkpoint.
func (c *Critic) Train(ctx context.Context, data jigsaw.Data, cfg CriticConfig) (*CriticResult, error) {
	res, err := c.train(ctx, data, cfg)
	if err != nil {
		return res, fmt.Errorf("decode: Critic.Train: %w", err)
	}
	return res, nil
}

func (c *Critic) train(ctx context.Context, data jigsaw.Data, cfg CriticConfig) (*CriticResult, error) {
	start := time.Now()
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	g := c.grid
	for i, v := range data.Pixels {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("pixel %d of the training images is %v", i, v)
		}
	}
	if cfg.Hard != nil && cfg.Hard.Grid() != g {
		return nil, fmt.Errorf("the ensemble's grid %+v is not the critic's %+v", cfg.Hard.Grid(), g)
	}
	z, err := jigsaw.MakePuzzles(g, data.Pixels, nil, rand.New(rand.NewPCG(cfg.Seed, 0x68617264))) // "hard"
	if err != nil {
		return nil, err
	}
	task := &criticTask{c: c, z: z, moves: oneMoves(g.N()), share: cfg.HardShare}
	res := &CriticResult{Config: cfg}
	if cfg.Hard != nil {
		t := time.Now()
		if task.hard, err = cfg.Hard.hardMoves(z, task.moves, cfg.HardDecoder, cfg.HardTop); err != nil {
			return nil, err
		}
		res.HardSeconds = time.Since(t).Seconds()
	}
	steps := train.StepsPerEpoch(z.Len(), cfg.Batch) * cfg.Epochs
	r, err := train.Run(ctx, c.params, task, train.Options{
		N: z.Len(), BatchSize: cfg.Batch, Epochs: cfg.Epochs, Seed: cfg.Seed,
		LR:         optim.Cosine{Start: cfg.LR, End: cfg.LR / 100, Steps: steps},
		Checkpoint: cfg.Checkpoint, Progress: cfg.Progress,
	})
	if r != nil {
		res.Losses, res.ResumedFrom = r.Loss, r.Resumed
	}
	res.Seconds = time.Since(start).Seconds()
	return res, err
}

// criticTask is the loss of Critic.Train.
type criticTask struct {
	c     *Critic
	z     *jigsaw.Puzzles
	moves []move
	hard  [][]int32 // per image: indices into moves of its hard wrong arrangements
	share float64
	x     []float64
	lab   []int
	img   []float64
	src   []int
	pcs   []float64
}

// Loss is the mean cross-entropy of the critic on the images of batch,
// each right and moved.
func (k *criticTask) Loss(t *ad.Tape, batch []int, rng *rand.Rand) (*ad.Var, error) {
	g := k.c.grid
	n, ps := g.N(), g.PieceSize()
	if k.img == nil {
		k.img, k.src, k.pcs = make([]float64, k.c.imageSize()), make([]int, n), make([]float64, n*ps)
	}
	k.x, k.lab = k.x[:0], k.lab[:0]
	id := make([]int, n)
	for q := range id {
		id[q] = q
	}
	for _, b := range batch {
		pieces := k.z.Pieces[b*n*ps : (b+1)*n*ps]
		if err := g.Assemble(k.img, pieces); err != nil {
			return nil, err
		}
		k.x, k.lab = append(k.x, k.img...), append(k.lab, 1)
		if !k.wrong(pieces, id, b, rng) {
			continue // every piece alike: nothing can be out of place
		}
		if err := g.Assemble(k.img, k.pcs); err != nil {
			return nil, err
		}
		k.x, k.lab = append(k.x, k.img...), append(k.lab, 0)
	}
	x, err := ad.NewTensor([]int{len(k.lab), g.Channels, g.CropH(), g.CropW()}, k.x)
	if err != nil {
		return nil, err
	}
	return nn.CrossEntropy(k.c.net.Forward(t, t.Const(x)), k.lab), t.Err()
}

// wrong writes into k.pcs a wrong arrangement of image b's pieces (in
// position order): a hard one with probability share, else a random move
// that changes the image. It reports false when no move changes it.
func (k *criticTask) wrong(pieces []float64, id []int, b int, rng *rand.Rand) bool {
	ps := k.c.grid.PieceSize()
	var m move
	if len(k.hard) > 0 && len(k.hard[b]) > 0 && rng.Float64() < k.share {
		m = k.moves[k.hard[b][rng.IntN(len(k.hard[b]))]]
	} else {
		found := false
		for range 64 {
			m = k.moves[rng.IntN(len(k.moves))]
			if !sameUnder(m, pieces, ps) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	m.apply(k.src, id)
	return k.c.grid.Scramble(k.pcs, pieces, k.src) == nil // sizes are the grid's: cannot fail
}

// sameUnder reports whether m leaves the image of pieces (position order)
// unchanged, that is, moves only identical pieces.
func sameUnder(m move, pieces []float64, ps int) bool {
	for j := range m.k {
		a, b := m.pos[j], m.pos[(j+1)%m.k]
		if !slices.Equal(pieces[a*ps:(a+1)*ps], pieces[b*ps:(b+1)*ps]) {
			return false
		}
	}
	return true
}

// hardMoves returns, for every puzzle of z, the indices into moves of the top
// moves from the true arrangement that the decoder score of d ranks highest,
// leaving out those that change nothing.
func (e *Ensemble) hardMoves(z *jigsaw.Puzzles, moves []move, d Decoder, top int) ([][]int32, error) {
	e = e.snapshot()
	d.Critic, d.CriticWeight = nil, 0 // the moves are ranked by E alone
	if err := e.check(d); err != nil {
		return nil, err
	}
	logits, err := e.logits(z)
	if err != nil {
		return nil, err
	}
	n := e.nets[0]
	nn2, ps := n.Grid().N(), n.Grid().PieceSize()
	out := make([][]int32, z.Len())
	eachPuzzle(n.Grid().P, z.Len(), func(s *arranger, b int) {
		e.setScore(s, z, b, logits[b], d)
		s.place(z.Perms[b])
		truth := append([]int(nil), s.at...)
		pieces := z.Pieces[b*nn2*ps : (b+1)*nn2*ps]
		type ranked struct {
			m int32
			e float64
		}
		var rs []ranked
		for i, m := range moves {
			if sameUnder(m, pieces, ps) {
				continue
			}
			m.apply(s.at, truth)
			rs = append(rs, ranked{int32(i), s.energy()})
		}
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].e > rs[j].e })
		for _, r := range rs[:min(top, len(rs))] {
			out[b] = append(out[b], r.m)
		}
	})
	return out, nil
}

// rerankChunk is the number of puzzles whose candidates rerank scores
// together.
const rerankChunk = 32

// rerank replaces every prediction by the arrangement with the highest
// E + w·D among it and its one-move neighbours (see Critic).
func (e *Ensemble) rerank(z *jigsaw.Puzzles, logits []*mat.Dense, preds []perm.Perm, d Decoder) error {
	n := e.nets[0]
	g := n.Grid()
	nn2 := g.N()
	moves := oneMoves(nn2)
	cands := len(moves) + 1
	size := d.Critic.imageSize()
	energies := make([]float64, rerankChunk*cands)
	ats := make([]int, rerankChunk*cands*nn2)
	imgs := make([]float64, rerankChunk*cands*size)
	t := ad.NewTape()
	for lo := 0; lo < len(preds); lo += rerankChunk {
		hi := min(lo+rerankChunk, len(preds))
		eachPuzzle(n.Grid().P, hi-lo, func(s *arranger, k int) {
			b := lo + k
			e.setScore(s, z, b, logits[b], d)
			s.place(preds[b])
			base := ats[k*cands*nn2 : (k*cands+1)*nn2]
			copy(base, s.at)
			if len(s.pieces) != nn2*g.PieceSize() {
				s.pieces = make([]float64, nn2*g.PieceSize())
			}
			for c := range cands {
				at := ats[(k*cands+c)*nn2 : (k*cands+c+1)*nn2]
				if c > 0 {
					moves[c-1].apply(at, base)
				}
				copy(s.at, at)
				energies[k*cands+c] = s.energy()
				// the sizes are the grid's, so neither call can fail
				_ = g.Scramble(s.pieces, scrambledOf(z, b), at)
				_ = g.Assemble(imgs[(k*cands+c)*size:(k*cands+c+1)*size], s.pieces)
			}
		})
		D, err := d.Critic.scores(t, imgs[:(hi-lo)*cands*size])
		if err != nil {
			return err
		}
		for k := range hi - lo {
			best, won := 0, math.Inf(-1)
			for c := range cands {
				if v := energies[k*cands+c] + d.CriticWeight*D[k*cands+c]; v > won {
					best, won = c, v
				}
			}
			at := ats[(k*cands+best)*nn2 : (k*cands+best+1)*nn2]
			for q, i := range at {
				preds[lo+k][i] = q
			}
		}
	}
	return nil
}

// criticFile is the gob form of a saved critic.
type criticFile struct {
	Version int
	Grid    jigsaw.Grid
	Names   []string
	Values  [][]float64
}

// criticVersion is the version of criticFile written by Save.
const criticVersion = 1

// Save writes the critic (its grid and weights) to w.
func (c *Critic) Save(w io.Writer) error {
	f := criticFile{Version: criticVersion, Grid: c.grid}
	f.Names, f.Values = paramfile.Values(c.params)
	if err := gob.NewEncoder(w).Encode(f); err != nil {
		return fmt.Errorf("decode: Critic.Save: %w", err)
	}
	return nil
}

// LoadCritic reads a critic written by Critic.Save. A file of another
// version, or whose weights do not fit its grid, is an error.
func LoadCritic(r io.Reader) (*Critic, error) {
	var f criticFile
	if err := gob.NewDecoder(r).Decode(&f); err != nil {
		return nil, fmt.Errorf("decode: LoadCritic: %w", err)
	}
	if f.Version != criticVersion {
		return nil, fmt.Errorf("decode: LoadCritic: file version %d, this build reads %d", f.Version, criticVersion)
	}
	// Check the weights the grid asks for before allocating them.
	if err := checkCriticGrid(f.Grid); err != nil {
		return nil, fmt.Errorf("decode: LoadCritic: %w", err)
	}
	if want, have := criticWeights(f.Grid), paramfile.Count(f.Values); have != want {
		return nil, fmt.Errorf("decode: LoadCritic: the file holds %d weights, a critic of its grid has %d", have, want)
	}
	c, err := newCritic(f.Grid, 0)
	if err != nil {
		return nil, fmt.Errorf("decode: LoadCritic: %w", err)
	}
	if err := paramfile.Set(c.params, f.Names, f.Values); err != nil {
		return nil, fmt.Errorf("decode: LoadCritic: %w", err)
	}
	return c, nil
}

// SaveFile writes the critic to the named file, atomically: a crash
// leaves the old file or the new one, never a part.
func (c *Critic) SaveFile(path string) error {
	if err := atomicfile.Write(path, c.Save); err != nil {
		return fmt.Errorf("decode: Critic.SaveFile: %w", err)
	}
	return nil
}

// LoadCriticFile reads a critic from the named file.
func LoadCriticFile(path string) (*Critic, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("decode: LoadCriticFile: %w", err)
	}
	defer f.Close()
	return LoadCritic(f)
}

// criticTerms returns w·D (w = d.CriticWeight) of every puzzle of z in the
// arrangement preds[b] (piece → position).
func criticTerms(z *jigsaw.Puzzles, preds []perm.Perm, d Decoder) ([]float64, error) {
	c := d.Critic
	g := c.grid
	nn2, ps, size := g.N(), g.PieceSize(), c.imageSize()
	out := make([]float64, 0, len(preds))
	imgs := make([]float64, criticBatch*size)
	pcs := make([]float64, nn2*ps)
	t := ad.NewTape()
	for lo := 0; lo < len(preds); lo += criticBatch {
		hi := min(lo+criticBatch, len(preds))
		for b := lo; b < hi; b++ {
			// position q holds scrambled piece preds[b]⁻¹(q)
			inv, err := preds[b].Inverse()
			if err != nil {
				return nil, err
			}
			if err := g.Scramble(pcs, z.Scrambled[b*nn2*ps:(b+1)*nn2*ps], inv); err != nil {
				return nil, err
			}
			if err := g.Assemble(imgs[(b-lo)*size:(b-lo+1)*size], pcs); err != nil {
				return nil, err
			}
		}
		D, err := c.scores(t, imgs[:(hi-lo)*size])
		if err != nil {
			return nil, err
		}
		for _, v := range D {
			out = append(out, d.CriticWeight*v)
		}
	}
	return out, nil
}

// criticWeights returns the number of weights newCritic makes on grid g,
// which checkCriticGrid accepts (see newCritic).
func criticWeights(g jigsaw.Grid) int {
	h2, w2 := ((g.CropH()-4)/2-4)/2, ((g.CropW()-4)/2-4)/2
	w := paramfile.DenseWeights(paramfile.Mul(g.Channels, 25), 32, true) // conv1
	w = paramfile.Add(w, paramfile.DenseWeights(32*25, 64, true))        // conv2
	w = paramfile.Add(w, paramfile.DenseWeights(paramfile.Mul(64, paramfile.Mul(h2, w2)), 128, true))
	return paramfile.Add(w, paramfile.DenseWeights(128, 2, true))
}
