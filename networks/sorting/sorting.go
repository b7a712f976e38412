package sorting

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/ad/optim"
	"github.com/permlab/permlab/dist"
	"github.com/permlab/permlab/nn"
	"github.com/permlab/permlab/relax"
)

// Variant selects what the per-number network sees.
type Variant int

const (
	// Paper feeds the raw numbers, as in the seed paper.
	Paper Variant = iota
	// Standardized feeds each list mapped onto [0, 1] by its own minimum
	// and range (see the package documentation).
	Standardized
)

var variantNames = [...]string{"paper", "standardized"}

// String returns "paper" or "standardized".
func (v Variant) String() string {
	if v < 0 || int(v) >= len(variantNames) {
		return fmt.Sprintf("Variant(%d)", int(v))
	}
	return variantNames[v]
}

// ParseVariant returns the variant named s ("paper" or "standardized").
func ParseVariant(s string) (Variant, error) {
	for i, name := range variantNames {
		if s == name {
			return Variant(i), nil
		}
	}
	return 0, fmt.Errorf("sorting: unknown variant %q (want paper or standardized)", s)
}

// Config holds the architecture and the training settings of a Network.
type Config struct {
	N       int     // list length n, >= 2
	Hidden  int     // units of the hidden layer (the paper: 32)
	Steps   int     // training steps (Adam updates)
	Batch   int     // lists per step
	Samples int     // Gumbel samples per list
	Iters   int     // Sinkhorn iterations L
	Tau     float64 // Sinkhorn temperature τ at the first step
	TauEnd  float64 // τ at the last step, in (0, Tau], annealed geometrically; 0: Tau throughout
	LR      float64 // Adam learning rate at the first step
	LREnd   float64 // learning rate at the last step, in (0, LR]; cosine annealing in between
	Noise   float64 // noise factor c multiplying the Gumbel noise (0: none)
	Seed    uint64  // seed of the initial weights and of the training lists and noise
	Variant Variant
}

// DefaultSteps returns the number of training steps DefaultConfig uses for
// lists of length n: 1000 up to n = 15, where validation lists are sorted
// long before the end, and 2000 above, a limit set by the compute of the
// Table 1 grid rather than by convergence.
func DefaultSteps(n int) int {
	if n <= 15 {
		return 1000
	}
	return 2000
}

// DefaultConfig returns the default settings for lists of length n (see
// the package documentation for where they come from), with DefaultSteps(n)
// steps, seed 1 and the Paper variant.
func DefaultConfig(n int) Config {
	return Config{
		N:       n,
		Hidden:  32,
		Steps:   DefaultSteps(n),
		Batch:   20,
		Samples: 5,
		Iters:   10,
		Tau:     1,
		LR:      0.03,
		LREnd:   0.0003,
		Noise:   1,
		Seed:    1,
		Variant: Paper,
	}
}

// Validate returns an error describing the first invalid setting of c.
func (c Config) Validate() error {
	positive := func(name string, v float64) error {
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("sorting: Config: %s must be finite and > 0, got %v", name, v)
		}
		return nil
	}
	switch {
	case c.N < 2:
		return fmt.Errorf("sorting: Config: N must be >= 2, got %d", c.N)
	case c.Hidden < 1:
		return fmt.Errorf("sorting: Config: Hidden must be >= 1, got %d", c.Hidden)
	case c.Steps < 0:
		return fmt.Errorf("sorting: Config: Steps must be >= 0, got %d", c.Steps)
	case c.Batch < 1:
		return fmt.Errorf("sorting: Config: Batch must be >= 1, got %d", c.Batch)
	case c.Samples < 1:
		return fmt.Errorf("sorting: Config: Samples must be >= 1, got %d", c.Samples)
	case c.Iters < 1:
		return fmt.Errorf("sorting: Config: Iters must be >= 1, got %d", c.Iters)
	case c.Noise < 0 || math.IsNaN(c.Noise) || math.IsInf(c.Noise, 0):
		return fmt.Errorf("sorting: Config: Noise must be finite and >= 0, got %v", c.Noise)
	case c.Variant != Paper && c.Variant != Standardized:
		return fmt.Errorf("sorting: Config: unknown %v", c.Variant)
	}
	if err := positive("Tau", c.Tau); err != nil {
		return err
	}
	if err := positive("LR", c.LR); err != nil {
		return err
	}
	if err := positive("LREnd", c.LREnd); err != nil {
		return err
	}
	if c.TauEnd != 0 {
		if err := positive("TauEnd", c.TauEnd); err != nil {
			return err
		}
		if c.TauEnd > c.Tau {
			return fmt.Errorf("sorting: Config: TauEnd %v must be <= Tau %v", c.TauEnd, c.Tau)
		}
	}
	if c.LREnd > c.LR {
		return fmt.Errorf("sorting: Config: LREnd %v must be <= LR %v", c.LREnd, c.LR)
	}
	return nil
}

// Streams of the PCG generator: with Config.Seed, one for the initial
// weights and one for the training lists and the Gumbel noise; with the seed
// of TestLists, one for test lists.
const (
	streamInit  = 0x5e1f_0001
	streamTrain = 0x5e1f_0002
	streamTest  = 0x5e1f_0003
)

// newRand returns a PCG generator for stream of seed.
func newRand(seed, stream uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, stream)) }

// Network is a Sinkhorn network that sorts lists of Config.N numbers.
// A Network is not safe for concurrent use.
type Network struct {
	cfg    Config
	hidden *nn.Dense // 1 → Hidden, followed by a ReLU
	out    *nn.Dense // Hidden → N: one row of the logits
	params []*ad.Param
	opt    *optim.Adam
	rng    *rand.Rand // training lists and noise
	step   int        // steps done
	tape   *ad.Tape

	// Per-step buffers, reused.
	input, noise, xs, target *ad.Tensor
	tile                     []int
}

// New returns an untrained network with Glorot-uniform weights drawn from
// cfg.Seed.
func New(cfg Config) (*Network, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	init := newRand(cfg.Seed, streamInit)
	// The variant is part of the parameter names, so that Load refuses a
	// file of the other variant (the shapes are the same).
	prefix := "sorting." + cfg.Variant.String()
	hidden, err := nn.NewDense(init, prefix+".hidden", 1, cfg.Hidden, nn.GlorotUniform)
	if err != nil {
		return nil, fmt.Errorf("sorting: New: %w", err)
	}
	out, err := nn.NewDense(init, prefix+".out", cfg.Hidden, cfg.N, nn.GlorotUniform)
	if err != nil {
		return nil, fmt.Errorf("sorting: New: %w", err)
	}
	net := &Network{
		cfg:    cfg,
		hidden: hidden,
		out:    out,
		params: nn.Collect(hidden, out),
		rng:    newRand(cfg.Seed, streamTrain),
		tape:   ad.NewTape(),
	}
	if net.opt, err = optim.NewAdam(net.params); err != nil {
		return nil, fmt.Errorf("sorting: New: %w", err)
	}
	return net, nil
}

// Config returns the settings the network was built with.
func (net *Network) Config() Config { return net.cfg }

// Params returns the trainable parameters: the weights and biases of the
// hidden and the output layer, in that order.
func (net *Network) Params() []*ad.Param { return slices.Clone(net.params) }

// StepsDone returns the number of training steps taken so far.
func (net *Network) StepsDone() int { return net.step }

// logits records g(x̃) on t for the lists in input, of shape (B, N, 1) and
// already transformed by the variant: each of the B·N numbers goes through
// the per-number network and gives one row, so the result has shape
// (B, N, N).
func (net *Network) logits(t *ad.Tape, input *ad.Tensor) *ad.Var {
	h := ad.ReLU(net.hidden.Forward(t, t.Const(input)))
	return net.out.Forward(t, h)
}

// Train takes the remaining Config.Steps training steps, calling progress
// (if not nil) after each with the number of steps done and the step's loss.
// It stops with ctx's error when ctx is cancelled; a later call goes on from
// where it stopped, with the same result as an uninterrupted run.
func (net *Network) Train(ctx context.Context, progress func(step int, loss float64)) error {
	for net.step < net.cfg.Steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		loss, err := net.trainStep()
		if err != nil {
			return fmt.Errorf("sorting: Train: step %d: %w", net.step+1, err)
		}
		net.step++
		if progress != nil {
			progress(net.step, loss)
		}
	}
	return nil
}

// trainStep draws a batch of fresh lists and noise, and takes one Adam step
// on the loss of the package documentation, which it returns.
func (net *Network) trainStep() (float64, error) {
	net.draw()
	t := net.tape
	t.Reset()
	loss := net.loss(t)
	if err := t.Backward(loss); err != nil {
		return 0, err
	}
	l := loss.Item()
	if math.IsNaN(l) || math.IsInf(l, 0) {
		return l, errors.New("loss is not finite")
	}
	lr := optim.Cosine{Start: net.cfg.LR, End: net.cfg.LREnd, Steps: net.cfg.Steps}.At(net.step)
	return l, net.opt.Step(lr)
}

// draw fills the step's buffers with Batch fresh lists from U(0, 1), each
// repeated for its Samples Gumbel samples, their sorted targets and the
// scaled Gumbel noise.
func (net *Network) draw() {
	n, b, s := net.cfg.N, net.cfg.Batch, net.cfg.Samples
	if net.input == nil {
		net.input = ad.Zeros(b, n, 1)
		net.noise = ad.Zeros(b*s, n, n)
		net.xs = ad.Zeros(b*s, 1, n)
		net.target = ad.Zeros(b*s, 1, n)
		net.tile = make([]int, b*s)
		for k := range net.tile {
			net.tile[k] = k / s
		}
	}
	list, sorted := make([]float64, n), make([]float64, n)
	for i := range b {
		for j := range list {
			list[j] = net.rng.Float64()
		}
		copy(sorted, list)
		slices.Sort(sorted)
		net.cfg.Variant.transform(net.input.Data[i*n:(i+1)*n], list)
		for k := i * s; k < (i+1)*s; k++ {
			copy(net.xs.Data[k*n:], list)
			copy(net.target.Data[k*n:], sorted)
		}
	}
	dist.FillGumbel(net.noise.Data, net.rng)
	if c := net.cfg.Noise; c != 1 {
		for k := range net.noise.Data {
			net.noise.Data[k] *= c
		}
	}
}

// loss records on t the training loss of the lists and noise that draw
// left in the buffers: the mean of (x − Pᵀx̃)² with P = S((g + c·ε)/τ).
func (net *Network) loss(t *ad.Tape) *ad.Var {
	n, b := net.cfg.N, net.cfg.Batch
	g := ad.Reshape(net.logits(t, net.input), b, n, n)
	noisy := ad.Add(ad.Take(g, net.tile), t.Const(net.noise))
	p := relax.SinkhornVar(noisy, net.cfg.TauAt(net.step), net.cfg.Iters)
	// Row k of xsᵀP is (Pᵀx̃)ᵀ, the soft-sorted list.
	soft := ad.MatMul(t.Const(net.xs), p)
	return ad.Mean(ad.Square(ad.Sub(soft, t.Const(net.target))))
}

// TauAt returns the Sinkhorn temperature of training step k (counted from
// 0): Tau when TauEnd is 0, and otherwise the geometric interpolation
// Tau·(TauEnd/Tau)^(k/(Steps−1)), which goes from Tau at the first step to
// TauEnd at the last.
func (c Config) TauAt(k int) float64 {
	if c.TauEnd == 0 || c.TauEnd == c.Tau || c.Steps <= 1 {
		return c.Tau
	}
	f := float64(min(max(k, 0), c.Steps-1)) / float64(c.Steps-1)
	return c.Tau * math.Pow(c.TauEnd/c.Tau, f)
}

// transform writes into dst what the network of variant v sees of list.
func (v Variant) transform(dst, list []float64) {
	if v != Standardized {
		copy(dst, list)
		return
	}
	lo, hi := slices.Min(list), slices.Max(list)
	r, scale := hi-lo, 1.0
	if math.IsInf(r, 0) {
		// The range overflows; halving is exact and brings it back.
		lo, r, scale = lo/2, hi/2-lo/2, 0.5
	}
	for i, x := range list {
		x *= scale
		if r > 0 {
			dst[i] = (x - lo) / r
		} else {
			dst[i] = 0
		}
	}
}
