package jigsaw

import (
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/dist"
	"github.com/permlab/permlab/internal/paramfile"
	"github.com/permlab/permlab/nn"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/relax"
)

// Config holds the architecture and the relaxation of a Sinkhorn network.
type Config struct {
	// P is the number of pieces per side; Channels, Height and Width the
	// image geometry (see NewGrid).
	P                       int
	Channels, Height, Width int

	// Crop, when > 0, is the side of the centred square the pieces tile (a
	// multiple of P, at most Height and Width); 0 is the largest multiple
	// of P that fits (see NewGridCrop).
	Crop int

	// Filters (n_f), Kernel (K_s, odd; "same" zero padding) and Pool (s,
	// the side and stride of the max-pool) define the convolutional layer
	// applied to every piece.
	Filters, Kernel, Pool int

	// Hidden, when > 0, puts a dense layer of that many ReLU units between
	// the pooled features of a piece and the output layer (0: the paper's
	// network, features straight to the output).
	Hidden int

	// Context (needs Hidden > 0) also feeds the hidden layer of every piece
	// the mean of the features of all pieces of its puzzle, through its own
	// weights (no bias): h_i = ReLU(A f_i + b + C mean_j f_j). The mean does
	// not depend on the order of the pieces, so the network stays
	// permutation equivariant, and a piece's row can depend on what the
	// whole puzzle shows (which digit it is), not only on the piece.
	Context bool

	// Refine is the number of edge-matching rounds after the first logits
	// (0: none, the paper's network). A round computes the soft assignment
	// P = S(g/τ) (L iterations, no noise), places the pieces softly, and
	// adds to g, for every piece i and position q, how well i's four border
	// strips match the facing strips of the soft pieces around q:
	// Σ_d e_d(i)ᵀ M_d s_d(q), with e_d(i) piece i's border on side d, s_d(q)
	// the opposite border of the soft piece next to q on side d (zero past
	// the edge of the image), and M_d a learned matrix (started at 0.5·I).
	// Jigsaw puzzles are quadratic assignment problems, which a row of
	// logits per piece cannot express; these terms let the network compare
	// neighbours. Permuting the pieces permutes P's rows, leaves the soft
	// placement alone and permutes the added rows, so the network stays
	// equivariant. Refine needs one head.
	Refine int
	// EdgeDepth is how many pixel rows (or columns) deep, from the border
	// inwards, a border strip of Refine is (0 means 1).
	EdgeDepth int

	// Heads is the number of dense output layers on the shared
	// convolutional trunk: 1 for jigsaw puzzles, the number of target
	// classes for assembly. A puzzle's label selects its head.
	Heads int

	// Tau is the Sinkhorn temperature τ and Iters the number L of Sinkhorn
	// iterations used in training.
	Tau   float64
	Iters int

	// Samples is the number of Gumbel noise draws per image in the loss,
	// and Noise scales the noise (0: no noise).
	Samples int
	Noise   float64

	// LossPower, when > 0 and not 1, is the exponent γ the loss raises
	// pixel values to before it compares the pieces with their soft
	// reconstruction: φ(x) = sign(x)·|x|^γ in place of x on both sides
	// (the network still sees the pixels themselves). The reconstruction
	// error of two pieces traded weighs their difference in pixels, so
	// faint pieces, whose few grey pixels differ little, barely count; γ < 1
	// lifts faint values (γ = 0.5 takes 0.01 to 0.1) and so gives a faint
	// piece put in the wrong place more weight. 0 and 1: the pixels
	// themselves, the paper's loss.
	LossPower float64 `json:",omitempty"`
}

// DefaultConfig returns the configuration used for the MNIST experiments
// with p pieces per side (see the README for how it was chosen).
func DefaultConfig(p int) Config {
	return Config{
		P: p, Channels: 1, Height: 28, Width: 28,
		Filters: 32, Kernel: 5, Pool: 2, Heads: 1,
		Tau: 1, Iters: 20, Samples: 2, Noise: 1,
	}
}

func (c Config) validate() error {
	switch {
	case c.Filters < 1:
		return fmt.Errorf("filters %d must be >= 1", c.Filters)
	case c.Kernel < 1 || c.Kernel%2 == 0:
		return fmt.Errorf("kernel %d must be odd and >= 1", c.Kernel)
	case c.Pool < 1:
		return fmt.Errorf("pool %d must be >= 1", c.Pool)
	case c.Heads < 1:
		return fmt.Errorf("heads %d must be >= 1", c.Heads)
	case c.Hidden < 0:
		return fmt.Errorf("hidden %d must be >= 0", c.Hidden)
	case c.Context && c.Hidden == 0:
		return errors.New("context needs a hidden layer (hidden > 0)")
	case c.Refine < 0:
		return fmt.Errorf("refine %d must be >= 0", c.Refine)
	case c.EdgeDepth < 0:
		return fmt.Errorf("edge depth %d must be >= 0", c.EdgeDepth)
	case c.Refine > 0 && c.Heads != 1:
		return fmt.Errorf("refine needs one head, have %d", c.Heads)
	case !(c.Tau > 0) || math.IsInf(c.Tau, 0):
		return fmt.Errorf("tau %v must be finite and > 0", c.Tau)
	case c.Iters < 1:
		return fmt.Errorf("iters %d must be >= 1", c.Iters)
	case c.Samples < 1:
		return fmt.Errorf("samples %d must be >= 1", c.Samples)
	case !(c.Noise >= 0) || math.IsInf(c.Noise, 0):
		return fmt.Errorf("noise %v must be finite and >= 0", c.Noise)
	case !(c.LossPower >= 0) || math.IsInf(c.LossPower, 0):
		return fmt.Errorf("loss power %v must be finite and >= 0", c.LossPower)
	}
	return nil
}

// Net is a permutation-equivariant Sinkhorn network for p × p puzzles. Every
// piece goes through the same layers, conv → ReLU → max-pool → dense, whose N
// outputs are the row of the logit matrix g(X̃) for that piece; permuting the
// input pieces therefore permutes the rows of g. Config.Hidden and
// Config.Context add a hidden layer, optionally fed the puzzle's mean
// feature; both keep the equivariance.
type Net struct {
	cfg    Config
	grid   Grid
	trunk  nn.Sequential
	hidden *nn.Dense // nil without Config.Hidden
	ctx    *nn.Dense // nil without Config.Context
	heads  []*nn.Dense
	feat   int
	// edges holds the four matrices M_d of Config.Refine (top, bottom,
	// left, right), nil without it.
	edges []*ad.Param
}

// New returns a network with weights drawn from a PCG source seeded by seed.
func New(cfg Config, seed uint64) (*Net, error) {
	g, err := NewGridCrop(cfg.Channels, cfg.Height, cfg.Width, cfg.P, cfg.Crop)
	if err != nil {
		return nil, fmt.Errorf("jigsaw: New: %w", err)
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("jigsaw: New: %w", err)
	}
	if cfg.Pool > g.PieceH || cfg.Pool > g.PieceW {
		return nil, fmt.Errorf("jigsaw: New: pool %d exceeds the %dx%d px pieces", cfg.Pool, g.PieceH, g.PieceW)
	}
	rng := rand.New(rand.NewPCG(seed, 0x6a6967736177))
	conv, err := nn.NewConv2D(rng, "conv", cfg.Channels, cfg.Filters, cfg.Kernel, 1, cfg.Kernel/2, nn.HeUniform)
	if err != nil {
		return nil, fmt.Errorf("jigsaw: New: %w", err)
	}
	n := &Net{cfg: cfg, grid: g}
	n.trunk = nn.Sequential{conv, nn.ReLU{}, nn.MaxPool2D{Size: cfg.Pool, Stride: cfg.Pool}, nn.Flatten{}}
	// Read the feature size off one forward pass rather than re-deriving the
	// pooling arithmetic.
	t := ad.NewTape()
	x := t.Const(ad.Zeros(1, cfg.Channels, g.PieceH, g.PieceW))
	h := n.trunk.Forward(t, x)
	if err := t.Err(); err != nil {
		return nil, fmt.Errorf("jigsaw: New: %w", err)
	}
	n.feat = h.Size()
	in := n.feat
	if cfg.Hidden > 0 {
		if n.hidden, err = nn.NewDense(rng, "hidden", n.feat, cfg.Hidden, nn.HeUniform); err != nil {
			return nil, fmt.Errorf("jigsaw: New: %w", err)
		}
		if cfg.Context {
			if n.ctx, err = nn.NewDense(rng, "context", n.feat, cfg.Hidden, nn.HeUniform, nn.NoBias()); err != nil {
				return nil, fmt.Errorf("jigsaw: New: %w", err)
			}
		}
		in = cfg.Hidden
	}
	for k := range cfg.Heads {
		d, err := nn.NewDense(rng, fmt.Sprintf("head%d", k), in, g.N(), nn.GlorotUniform)
		if err != nil {
			return nil, fmt.Errorf("jigsaw: New: %w", err)
		}
		n.heads = append(n.heads, d)
	}
	if cfg.Refine > 0 {
		if depth := cfg.edgeDepth(); depth > g.PieceH || depth > g.PieceW {
			return nil, fmt.Errorf("jigsaw: New: edge depth %d exceeds the %dx%d px pieces", depth, g.PieceH, g.PieceW)
		}
		for d, name := range edgeNames {
			w := stripLen(g, cfg.edgeDepth(), d)
			m := ad.Zeros(w, w)
			for i := range w {
				m.Data[i*w+i] = 0.5
			}
			n.edges = append(n.edges, ad.NewParam("edge."+name, m))
		}
	}
	return n, nil
}

func (c Config) edgeDepth() int { return max(c.EdgeDepth, 1) }

// StripDepth returns the depth in pixels of the border strips that edge
// matching compares (Config.EdgeDepth, at least 1).
func (c Config) StripDepth() int { return c.edgeDepth() }

// StripLen returns the number of values in a border strip of the given
// depth on side d (0 top, 1 bottom, 2 left, 3 right) of a piece of g.
func StripLen(g Grid, depth, d int) int { return stripLen(g, depth, d) }

// stripLen is the number of values in a border strip of the given depth on
// side d (top, bottom, left, right) of a piece.
func stripLen(g Grid, depth, d int) int {
	if d >= 2 {
		return g.Channels * depth * g.PieceH
	}
	return g.Channels * depth * g.PieceW
}

// edgeNames are the sides of a piece, in the order of Net.edges.
var edgeNames = [4]string{"top", "bottom", "left", "right"}

// Config returns the network's configuration.
func (n *Net) Config() Config { return n.cfg }

// Grid returns the puzzle geometry.
func (n *Net) Grid() Grid { return n.grid }

// Edges returns copies of the four matrices M_d of edge matching (top,
// bottom, left, right; each StripLen × StripLen of its side, row-major),
// or nil without Config.Refine. The compatibility of piece j next to piece
// i on side d is b_d(i)ᵀ M_d b_opp(d)(j), with b the border strips of
// Strips.
func (n *Net) Edges() [][]float64 {
	if len(n.edges) == 0 {
		return nil
	}
	out := make([][]float64, len(n.edges))
	for d, e := range n.edges {
		out[d] = slices.Clone(e.Value.Data)
	}
	return out
}

// Params returns the trainable parameters: the convolution, the hidden and
// context layers if any, then the heads.
func (n *Net) Params() []*ad.Param {
	layers := []nn.Layer{n.trunk}
	if n.hidden != nil {
		layers = append(layers, n.hidden)
	}
	if n.ctx != nil {
		layers = append(layers, n.ctx)
	}
	for _, h := range n.heads {
		layers = append(layers, h)
	}
	return append(nn.Collect(layers...), n.edges...)
}

// NumParams returns the number of trainable scalars.
func (n *Net) NumParams() int {
	s := 0
	for _, p := range n.Params() {
		s += p.Value.Size()
	}
	return s
}

// Logits records the logit matrices g(X̃) of puzzles [from, to) of z on t, as
// a (B, N, N) Var: row i of matrix b scores the positions of scrambled piece
// i. With several heads, each puzzle uses head z.Labels[b].
func (n *Net) Logits(t *ad.Tape, z *Puzzles, from, to int) *ad.Var {
	g, nn2, ps := n.grid, n.grid.N(), n.grid.PieceSize()
	if err := n.check(z, from, to); err != nil {
		t.Fail(fmt.Errorf("jigsaw: Logits: %w", err))
		return t.Const(ad.Zeros(max(to-from, 0), nn2, nn2))
	}
	b := to - from
	x, err := ad.NewTensor([]int{b * nn2, g.Channels, g.PieceH, g.PieceW}, z.Scrambled[from*nn2*ps:to*nn2*ps])
	if err != nil {
		t.Fail(fmt.Errorf("jigsaw: Logits: %w", err))
		return t.Const(ad.Zeros(b, nn2, nn2))
	}
	h := n.trunk.Forward(t, t.Const(x))
	if n.hidden != nil {
		a := n.hidden.Forward(t, h)
		if n.ctx != nil {
			// The mean feature of each puzzle, through the context weights,
			// added to the hidden pre-activation of each of its pieces.
			m := ad.MeanAxis(ad.Reshape(h, b, nn2, n.feat), 1)
			idx := make([]int, b*nn2)
			for r := range idx {
				idx[r] = r / nn2
			}
			a = ad.Add(a, ad.Take(n.ctx.Forward(t, m), idx))
		}
		h = ad.ReLU(a)
	}
	if len(n.heads) == 1 {
		g := ad.Reshape(n.heads[0].Forward(t, h), b, nn2, nn2)
		if n.cfg.Refine > 0 {
			e := n.edgeInputs(t, z.Scrambled[from*nn2*ps:to*nn2*ps], b)
			for range n.cfg.Refine {
				g = n.refine(g, e)
			}
		}
		return g
	}
	// Run each head on the rows of its puzzles, then restore batch order.
	var parts []*ad.Var
	order := make([]int, 0, b*nn2)
	for k, head := range n.heads {
		var rows []int
		for i := from; i < to; i++ {
			if z.Labels[i] == k {
				for r := range nn2 {
					rows = append(rows, (i-from)*nn2+r)
				}
			}
		}
		if len(rows) == 0 {
			continue
		}
		order = append(order, rows...)
		parts = append(parts, head.Forward(t, ad.Take(h, rows)))
	}
	inv := make([]int, len(order))
	for pos, r := range order {
		inv[r] = pos
	}
	return ad.Reshape(ad.Take(ad.Concat(parts...), inv), b, nn2, nn2)
}

// edgeInputs holds what every round of edge matching reads for a batch of
// B puzzles: per side d, the pieces' border strips on that side (B, N, w)
// and the row of each position's neighbour on that side (neighbourIndex),
// and the matrices M_d on the tape.
type edgeInputs struct {
	strips [4]*ad.Var
	next   [4][]int
	m      [4]*ad.Var
	zero   [4]*ad.Var // one zero row of each strip width, for past the edge
}

// edgeInputs extracts the border strips of the B·N scrambled pieces and
// records them, with the neighbour tables and the matrices M_d, once for
// all the rounds of a batch.
func (n *Net) edgeInputs(t *ad.Tape, scrambled []float64, b int) *edgeInputs {
	e := new(edgeInputs)
	for d, st := range strips(n.grid, scrambled, b, n.cfg.edgeDepth()) {
		e.strips[d] = t.Const(st)
		e.next[d] = neighbourIndex(n.grid, b, d)
		e.m[d] = t.Param(n.edges[d])
		e.zero[d] = t.Const(ad.Zeros(1, st.Shape[2]))
	}
	return e
}

// refine adds one round of edge-matching terms (Config.Refine) to the
// logits g (B, N, N).
func (n *Net) refine(g *ad.Var, e *edgeInputs) *ad.Var {
	return n.edgeTerms(g, relax.SinkhornVar(g, n.cfg.Tau, n.cfg.Iters), e)
}

// edgeTerms adds to g (B, N, N) the edge-matching terms of the assignment
// p (B, pieces, positions), soft in refine and hard in the decoder's test.
func (n *Net) edgeTerms(g, p *ad.Var, e *edgeInputs) *ad.Var {
	b, nn2 := g.Shape()[0], n.grid.N()
	pt := ad.Transpose(p) // (B, positions, pieces)
	for d := range edgeNames {
		// The strips facing side d come from the opposite side of the
		// neighbour: s[b, q] = Σ_j P[b, j, q] · (strip of piece j on side
		// opp(d)), the soft piece at q; then row (b, q) takes that of the
		// position next to q on side d, or a zero row past the edge.
		opp := e.strips[d^1] // top↔bottom, left↔right
		w := opp.Shape()[2]
		soft := ad.MatMul(pt, opp)
		flat := ad.Concat(ad.Reshape(soft, b*nn2, w), e.zero[d])
		s := ad.Reshape(ad.Take(flat, e.next[d]), b, nn2, w)
		em := ad.MatMul(e.strips[d], e.m[d]) // (B, N, w)
		g = ad.Add(g, ad.MatMul(em, ad.Transpose(s)))
	}
	return g
}

// Strips returns, for the B·N scrambled pieces of B puzzles of g
// (scrambled holds B·N pieces of g.PieceSize values) and each side d (top,
// bottom, left, right), every piece's border strip on that side, depth
// pixels deep, as a (B, N, w) tensor with w = StripLen(g, depth, d). A strip
// lists, channel by channel, its rows (or columns) from the border inwards.
func Strips(g Grid, scrambled []float64, b, depth int) [4]*ad.Tensor {
	return strips(g, scrambled, b, depth)
}

// strips returns, for the B·N scrambled pieces and each side d (top,
// bottom, left, right), every piece's border strip on that side, depth
// pixels deep, as a (B, N, w) tensor. A strip lists, channel by channel,
// its rows (or columns) from the border inwards.
func strips(gr Grid, scrambled []float64, b, depth int) [4]*ad.Tensor {
	nn2, ph, pw, c := gr.N(), gr.PieceH, gr.PieceW, gr.Channels
	ps := gr.PieceSize()
	var out [4]*ad.Tensor
	for d := range out {
		// Pixel (y, x) of step l inwards and position u along the strip.
		along, at := pw, func(l, u int) (int, int) { return l, u } // top
		switch d {
		case 1: // bottom
			at = func(l, u int) (int, int) { return ph - 1 - l, u }
		case 2: // left
			along, at = ph, func(l, u int) (int, int) { return u, l }
		case 3: // right
			along, at = ph, func(l, u int) (int, int) { return u, pw - 1 - l }
		}
		w := stripLen(gr, depth, d)
		st := ad.Zeros(b, nn2, w)
		for i := range b * nn2 {
			dst := st.Data[i*w : (i+1)*w]
			k := 0
			for ch := range c {
				pix := scrambled[i*ps+ch*ph*pw:]
				for l := range depth {
					for u := range along {
						y, x := at(l, u)
						dst[k] = pix[y*pw+x]
						k++
					}
				}
			}
		}
		out[d] = st
	}
	return out
}

// neighbourIndex returns, for every row (b, q) of a (B·N, w) table with a
// zero row appended at B·N, the row of the position next to q on side d
// (top, bottom, left, right) in the same puzzle, or B·N past the edge.
func neighbourIndex(gr Grid, b, d int) []int {
	nn2, pp := gr.N(), gr.P
	idx := make([]int, b*nn2)
	for i := range b {
		for q := range nn2 {
			r, c := q/pp, q%pp
			switch d {
			case 0:
				r--
			case 1:
				r++
			case 2:
				c--
			case 3:
				c++
			}
			if r < 0 || r >= pp || c < 0 || c >= pp {
				idx[i*nn2+q] = b * nn2
			} else {
				idx[i*nn2+q] = i*nn2 + r*pp + c
			}
		}
	}
	return idx
}

func (n *Net) check(z *Puzzles, from, to int) error {
	switch {
	case z == nil:
		return errors.New("nil puzzles")
	case z.Grid != n.grid:
		return fmt.Errorf("puzzles of %d pieces of %dx%dx%d px, network for %d of %dx%dx%d", z.Grid.N(), z.Grid.Channels, z.Grid.PieceH, z.Grid.PieceW, n.grid.N(), n.grid.Channels, n.grid.PieceH, n.grid.PieceW)
	case from < 0 || to > z.Len() || from >= to:
		return fmt.Errorf("range [%d, %d) of %d puzzles", from, to, z.Len())
	}
	if len(n.heads) > 1 {
		if len(z.Labels) != z.Len() {
			return fmt.Errorf("%d heads need one label per puzzle, have %d for %d", len(n.heads), len(z.Labels), z.Len())
		}
		for _, l := range z.Labels[from:to] {
			if l < 0 || l >= len(n.heads) {
				return fmt.Errorf("label %d selects no head of %d", l, len(n.heads))
			}
		}
	}
	return nil
}

// Loss records the training loss on t: the mean squared error between the
// true piece matrix X and the soft reconstruction P^T X̃ with
// P = S((g(X̃) + σ ε)/τ), ε standard Gumbel noise drawn from rng, averaged over
// Config.Samples draws per puzzle and over all pixels. With Config.LossPower
// γ, X and X̃ are φ(X) and φ(X̃), φ(x) = sign(x)·|x|^γ, in that error.
func (n *Net) Loss(t *ad.Tape, z *Puzzles, rng *rand.Rand) *ad.Var {
	nn2, ps := n.grid.N(), n.grid.PieceSize()
	if err := n.check(z, 0, z.Len()); err != nil {
		t.Fail(fmt.Errorf("jigsaw: Loss: %w", err))
		return t.ConstScalar(math.NaN())
	}
	if rng == nil && n.cfg.Noise > 0 {
		t.Fail(errors.New("jigsaw: Loss: nil random source"))
		return t.ConstScalar(math.NaN())
	}
	b, k := z.Len(), n.cfg.Samples
	g := n.Logits(t, z, 0, b)
	var eps []float64
	if n.cfg.Noise > 0 {
		eps = t.Alloc(k * b * nn2 * nn2)
		dist.FillGumbel(eps, rng)
		for i := range eps {
			eps[i] *= n.cfg.Noise
		}
	}
	scrambled, pieces := z.Scrambled, z.Pieces
	if gamma := n.cfg.LossPower; gamma != 0 && gamma != 1 {
		scrambled, pieces = t.Alloc(len(scrambled)), t.Alloc(len(pieces))
		lossPower(scrambled, z.Scrambled, gamma)
		lossPower(pieces, z.Pieces, gamma)
	}
	return softLoss(g, scrambled, pieces, ps, k, eps, n.cfg.Tau, n.cfg.Iters)
}

// lossPower sets dst[i] = sign(x)·|x|^γ for x = src[i] (see Config.LossPower).
func lossPower(dst, src []float64, gamma float64) {
	for i, x := range src {
		switch {
		case x > 0:
			dst[i] = math.Pow(x, gamma)
		case x < 0:
			dst[i] = -math.Pow(-x, gamma)
		default:
			dst[i] = 0
		}
	}
}

// softLoss records the mean squared error between the pieces X and the soft
// reconstructions S((g + eps)/τ)^T X̃ on g's tape, for logits g of shape
// (B, N, N), k noise draws per puzzle (eps holds k·B·N² values, draw s of
// puzzle b at (s·B + b)·N², or is nil for no noise), and scrambled and true
// pieces of ps values each.
func softLoss(g *ad.Var, scrambled, pieces []float64, ps, k int, eps []float64, tau float64, iters int) *ad.Var {
	t := g.Tape()
	sh := g.Shape()
	b, nn2 := sh[0], sh[1]
	if k > 1 {
		idx := make([]int, 0, k*b)
		for range k {
			for i := range b {
				idx = append(idx, i)
			}
		}
		g = ad.Take(g, idx)
	}
	if eps != nil {
		g = ad.Add(g, t.Const(&ad.Tensor{Shape: []int{k * b, nn2, nn2}, Data: eps}))
	}
	p := relax.SinkhornVar(g, tau, iters)
	xt, x := scrambled, pieces
	if k > 1 {
		xt, x = t.Alloc(k*b*nn2*ps), t.Alloc(k*b*nn2*ps)
		for s := range k {
			copy(xt[s*b*nn2*ps:], scrambled)
			copy(x[s*b*nn2*ps:], pieces)
		}
	}
	rec := ad.MatMul(ad.Transpose(p), t.Const(&ad.Tensor{Shape: []int{k * b, nn2, ps}, Data: xt}))
	return nn.MSE(rec, t.Const(&ad.Tensor{Shape: []int{k * b, nn2, ps}, Data: x}))
}

// evalBatch bounds the puzzles per forward pass at evaluation.
const evalBatch = 256

// LogitMatrices returns g(X̃) for every puzzle of z, computed without noise.
func (n *Net) LogitMatrices(z *Puzzles) ([]*mat.Dense, error) {
	if err := n.check(z, 0, z.Len()); err != nil {
		return nil, fmt.Errorf("jigsaw: LogitMatrices: %w", err)
	}
	nn2 := n.grid.N()
	out := make([]*mat.Dense, 0, z.Len())
	t := ad.NewTape()
	for from := 0; from < z.Len(); from += evalBatch {
		to := min(from+evalBatch, z.Len())
		t.Reset()
		g := n.Logits(t, z, from, to)
		if err := t.Err(); err != nil {
			return nil, fmt.Errorf("jigsaw: LogitMatrices: %w", err)
		}
		v := g.Value()
		for b := range to - from {
			out = append(out, mat.NewDense(nn2, nn2, append([]float64(nil), v[b*nn2*nn2:(b+1)*nn2*nn2]...)))
		}
	}
	return out, nil
}

// Solve returns the hard assignment M(g(X̃)) of every puzzle: pred[b][i] is the
// predicted position of scrambled piece i of puzzle b. Package
// networks/jigsaw/decode decodes with the pairwise score of neighbouring
// pieces as well; with its zero Decoder it returns Solve's assignment.
func (n *Net) Solve(z *Puzzles) ([]perm.Perm, error) {
	logits, err := n.LogitMatrices(z)
	if err != nil {
		return nil, err
	}
	ms := make([]mat.Matrix, len(logits))
	for i, g := range logits {
		ms[i] = g
	}
	preds, err := relax.MatchingBatch(ms)
	if err != nil {
		return nil, fmt.Errorf("jigsaw: Solve: %w", err)
	}
	return preds, nil
}

// Evaluate solves every puzzle of z and averages the Metrics.
func (n *Net) Evaluate(z *Puzzles) (Metrics, error) {
	preds, err := n.Solve(z)
	if err != nil {
		return Metrics{}, err
	}
	return ScoreAll(z, preds)
}

// ScoreAll averages Score over the puzzles of z with predictions preds.
func ScoreAll(z *Puzzles, preds []perm.Perm) (Metrics, error) {
	if len(preds) != z.Len() {
		return Metrics{}, fmt.Errorf("jigsaw: ScoreAll: %d predictions for %d puzzles", len(preds), z.Len())
	}
	np, ps := z.Grid.N()*z.Grid.PieceSize(), z.Grid.PieceSize()
	var sum Metrics
	for b, p := range preds {
		m, err := Score(p, z.Perms[b], z.Pieces[b*np:(b+1)*np], ps)
		if err != nil {
			return Metrics{}, fmt.Errorf("jigsaw: ScoreAll: puzzle %d: %w", b, err)
		}
		sum.add(m)
	}
	return sum, nil
}

// Reconstruct returns, for each puzzle, the image P^T X̃ assembled from its
// scrambled pieces, where P is the permutation matrix of preds[b] (hard
// reconstruction). The images are Channels × CropH × CropW.
func Reconstruct(z *Puzzles, preds []perm.Perm) ([][]float64, error) {
	if len(preds) != z.Len() {
		return nil, fmt.Errorf("jigsaw: Reconstruct: %d predictions for %d puzzles", len(preds), z.Len())
	}
	g := z.Grid
	np, ps := g.N()*g.PieceSize(), g.PieceSize()
	out := make([][]float64, len(preds))
	buf := make([]float64, np)
	for b, p := range preds {
		if len(p) != g.N() {
			return nil, fmt.Errorf("jigsaw: Reconstruct: prediction %d has %d items, want %d", b, len(p), g.N())
		}
		if err := p.Validate(); err != nil {
			return nil, fmt.Errorf("jigsaw: Reconstruct: prediction %d: %w", b, err)
		}
		xt := z.Scrambled[b*np : (b+1)*np]
		for i, j := range p {
			copy(buf[j*ps:(j+1)*ps], xt[i*ps:(i+1)*ps])
		}
		out[b] = make([]float64, g.Channels*g.CropH()*g.CropW())
		if err := g.Assemble(out[b], buf); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// SoftReconstruct returns the soft reconstructions S(g(X̃)/τ)^T X̃ of every
// puzzle at temperature tau with iters Sinkhorn iterations and no noise, the
// images of the paper's Figure 3a.
func (n *Net) SoftReconstruct(z *Puzzles, tau float64, iters int) ([][]float64, error) {
	gs, err := n.LogitMatrices(z)
	if err != nil {
		return nil, err
	}
	g := n.grid
	np, ps := g.N()*g.PieceSize(), g.PieceSize()
	out := make([][]float64, len(gs))
	for b, lg := range gs {
		s, err := relax.Sinkhorn(lg, tau, iters)
		if err != nil {
			return nil, fmt.Errorf("jigsaw: SoftReconstruct: %w", err)
		}
		xt := mat.NewDense(g.N(), ps, z.Scrambled[b*np:(b+1)*np])
		var rec mat.Dense
		rec.Mul(s.T(), xt)
		out[b] = make([]float64, g.Channels*g.CropH()*g.CropW())
		if err := g.Assemble(out[b], rec.RawMatrix().Data); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkpoint is the on-disk form of a Net.
type checkpoint struct {
	Config Config
	Names  []string
	Values [][]float64
}

// Save writes the configuration and weights of n to w (encoding/gob).
func (n *Net) Save(w io.Writer) error {
	c := checkpoint{Config: n.cfg}
	c.Names, c.Values = paramfile.Values(n.Params())
	if err := gob.NewEncoder(w).Encode(c); err != nil {
		return fmt.Errorf("jigsaw: Save: %w", err)
	}
	return nil
}

// Load reads a network written by Save. A file whose weights are not
// those of its configuration is an error, found before the network is
// built, and so is one whose network would need more than 2²⁶ values for
// the forward pass of a piece (no network of this package comes near).
func Load(r io.Reader) (*Net, error) {
	var c checkpoint
	if err := gob.NewDecoder(r).Decode(&c); err != nil {
		return nil, fmt.Errorf("jigsaw: Load: %w", err)
	}
	if err := c.Config.checkLoadSize(paramfile.Count(c.Values)); err != nil {
		return nil, fmt.Errorf("jigsaw: Load: %w", err)
	}
	n, err := New(c.Config, 0)
	if err != nil {
		return nil, fmt.Errorf("jigsaw: Load: %w", err)
	}
	if err := paramfile.Set(n.Params(), c.Names, c.Values); err != nil {
		return nil, fmt.Errorf("jigsaw: Load: %w", err)
	}
	return n, nil
}

// SaveFile writes n to the named file.
func (n *Net) SaveFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("jigsaw: SaveFile: %w", err)
	}
	if err := n.Save(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// LoadFile reads a network from the named file.
func LoadFile(path string) (*Net, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("jigsaw: LoadFile: %w", err)
	}
	defer f.Close()
	return Load(f)
}
