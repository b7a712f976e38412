package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/ad/optim"
	"github.com/permlab/permlab/dataset"
	"github.com/permlab/permlab/dist"
	"github.com/permlab/permlab/nn"
	"github.com/permlab/permlab/relax"
)

// problem is one Sinkhorn network with fixed inputs and noise: the Go
// training step, and what the Python side needs to build the same step.
type problem struct {
	name, desc string
	params     []*ad.Param
	// inputs are the constant tensors of the step, handed to Python by name.
	inputs map[string]*ad.Tensor
	// hyper are the case's settings, handed to Python in the header.
	hyper map[string]any
	// loss records the loss on t.
	loss func(t *ad.Tape) *ad.Var
	// flops is the estimate of floating-point operations per step (see
	// flopNote).
	flops float64
	lr    float64

	tape *ad.Tape
	opt  *optim.Adam
}

// flopNote says how problem.flops is estimated.
const flopNote = `FLOPs per step are counted as 2 per multiply-add of the dense products (layers, convolution as im2col, soft sort or reconstruction), forward and backward (the gradient with respect to the network input is not needed and not counted), plus 12·L·N² per Sinkhorn matrix (forward: two matrix-vector products per iteration; backward: two more and the rank-2L update), the work of permlab's scaling form; exponentials and elementwise work are not counted, and the same count divides both sides' times.`

func newProblem(name, desc string, params []*ad.Param, lr float64) (*problem, error) {
	opt, err := optim.NewAdam(params)
	if err != nil {
		return nil, err
	}
	return &problem{name: name, desc: desc, params: params, lr: lr,
		inputs: map[string]*ad.Tensor{}, hyper: map[string]any{}, tape: ad.NewTape(), opt: opt}, nil
}

// trainStep takes one step: forward, backward, Adam. It returns the loss.
func (p *problem) trainStep() (float64, error) {
	l, err := p.lossGrad()
	if err != nil {
		return 0, err
	}
	return l, p.opt.Step(p.lr)
}

// lossGrad records the loss and runs the backward pass, leaving the
// gradients in the parameters.
func (p *problem) lossGrad() (float64, error) {
	t := p.tape
	t.Reset()
	loss := p.loss(t)
	if err := t.Backward(loss); err != nil {
		return 0, fmt.Errorf("%s: %w", p.name, err)
	}
	return loss.Item(), nil
}

// sortingConfig is the sorting case: each of the B·N numbers of B lists goes
// through Dense(1, H) → ReLU → Dense(H, N), giving one row of the N×N logits
// of its list; every list gets S Gumbel draws, P = S^L((g + ε)/τ), and the
// loss is the mean squared error between xᵀP and the sorted list.
type sortingConfig struct {
	N, Hidden, Batch, Samples, Iters int
	Tau                              float64
}

func newSorting(c sortingConfig, seed uint64, lr float64) (*problem, error) {
	rng := rand.New(rand.NewPCG(seed, 0x50f7))
	d1, err := nn.NewDense(rng, "dense1", 1, c.Hidden, nn.GlorotUniform)
	if err != nil {
		return nil, err
	}
	d2, err := nn.NewDense(rng, "dense2", c.Hidden, c.N, nn.GlorotUniform)
	if err != nil {
		return nil, err
	}
	// Random biases, so that the check covers their gradients too.
	for _, b := range []*ad.Param{d1.B, d2.B} {
		for i := range b.Value.Data {
			b.Value.Data[i] = 0.1 * rng.NormFloat64()
		}
	}
	n, b, s := c.N, c.Batch, c.Samples
	p, err := newProblem("sorting", fmt.Sprintf("sorting n = %d, batch %d lists × %d samples, L = %d, τ = %g",
		n, b, s, c.Iters, c.Tau), nn.Collect(d1, d2), lr)
	if err != nil {
		return nil, err
	}
	input := ad.Zeros(b, n, 1)
	xs := ad.Zeros(b*s, 1, n)
	target := ad.Zeros(b*s, 1, n)
	noise := ad.Zeros(b*s, n, n)
	tile := make([]int, b*s)
	sorted := make([]float64, n)
	for i := range b {
		list := input.Data[i*n : (i+1)*n]
		for j := range list {
			list[j] = rng.Float64()
		}
		copy(sorted, list)
		slices.Sort(sorted)
		for k := i * s; k < (i+1)*s; k++ {
			copy(xs.Data[k*n:], list)
			copy(target.Data[k*n:], sorted)
			tile[k] = i
		}
	}
	dist.FillGumbel(noise.Data, rng)
	p.inputs = map[string]*ad.Tensor{"input": input, "xs": xs, "target": target, "noise": noise}
	p.hyper = map[string]any{"tau": c.Tau, "iters": c.Iters, "samples": s, "batch": b, "n": n}
	p.loss = func(t *ad.Tape) *ad.Var {
		h := ad.ReLU(d1.Forward(t, t.Const(input)))
		g := ad.Reshape(d2.Forward(t, h), b, n, n)
		noisy := ad.Add(ad.Take(g, tile), t.Const(noise))
		sk := relax.SinkhornVar(noisy, c.Tau, c.Iters)
		soft := ad.MatMul(t.Const(xs), sk)
		return ad.Mean(ad.Square(ad.Sub(soft, t.Const(target))))
	}
	bn, bs := float64(b*n), float64(b*s)
	nf := float64(n)
	p.flops = 3*2*bn*float64(c.Hidden)*nf + // dense2: forward, dW, dX
		2*2*bn*float64(c.Hidden) + // dense1: forward, dW
		bs*12*float64(c.Iters)*nf*nf + // Sinkhorn
		2*2*bs*nf*nf // soft sort: forward, gradient with respect to P
	return p, nil
}

// jigsawConfig is the jigsaw case: B images cut into P×P pieces of
// h×w pixels, scrambled; each piece goes through conv (Filters filters of
// Kernel², "same" padding) → ReLU → max-pool Pool → dense to N = P² (one
// row of the logits); every image gets S Gumbel draws, P = S^L((g + ε)/τ),
// and the loss is the mean squared error between the soft reconstruction
// Pᵀ X̃ and the true pieces.
type jigsawConfig struct {
	P, Crop, Batch, Samples, Iters int
	Filters, Kernel, Pool          int
	Tau                            float64
}

// loadImages returns count 28×28 images: the first MNIST test images when
// dir holds them, otherwise uniform noise (with a note saying so).
func loadImages(dir string, count int, rng *rand.Rand) ([]float64, string) {
	if dir != "" {
		im, err := dataset.ReadIDXImages(filepath.Join(dir, "t10k-images-idx3-ubyte.gz"))
		if err == nil && im.N >= count && im.Height == 28 && im.Width == 28 && im.Channels == 1 {
			return slices.Clone(im.Pixels[:count*28*28]), "MNIST test images"
		}
	}
	px := make([]float64, count*28*28)
	for i := range px {
		px[i] = rng.Float64()
	}
	return px, "random images (no MNIST found)"
}

func newJigsaw(c jigsawConfig, mnist string, seed uint64, lr float64) (*problem, error) {
	if c.Crop%c.P != 0 || c.Crop > 28 || c.Kernel%2 == 0 {
		return nil, errors.New("jigsaw: bad geometry")
	}
	rng := rand.New(rand.NewPCG(seed, 0x6a15))
	side := c.Crop / c.P
	conv, err := nn.NewConv2D(rng, "conv", 1, c.Filters, c.Kernel, 1, c.Kernel/2, nn.HeUniform)
	if err != nil {
		return nil, err
	}
	pooled := side / c.Pool
	feat := c.Filters * pooled * pooled
	n := c.P * c.P
	dense, err := nn.NewDense(rng, "dense", feat, n, nn.GlorotUniform)
	if err != nil {
		return nil, err
	}
	for _, b := range []*ad.Param{conv.B, dense.B} {
		for i := range b.Value.Data {
			b.Value.Data[i] = 0.1 * rng.NormFloat64()
		}
	}
	b, s := c.Batch, c.Samples
	imgs, src := loadImages(mnist, b, rng)
	p, err := newProblem(fmt.Sprintf("jigsaw%dx%d", c.P, c.P), fmt.Sprintf("jigsaw %d×%d on %s cropped to %d px, batch %d × %d samples, n_f = %d, K_s = %d, s = %d, L = %d, τ = %g",
		c.P, c.P, src, c.Crop, b, s, c.Filters, c.Kernel, c.Pool, c.Iters, c.Tau), nn.Collect(conv, dense), lr)
	if err != nil {
		return nil, err
	}
	ps := side * side
	pieces := ad.Zeros(b*n, 1, side, side)
	scrambled := ad.Zeros(b*n, 1, side, side)
	for i := range b {
		img := imgs[i*28*28 : (i+1)*28*28]
		for r := range c.P {
			for q := range c.P {
				dst := pieces.Data[(i*n+r*c.P+q)*ps:]
				for y := range side {
					copy(dst[y*side:(y+1)*side], img[(r*side+y)*28+q*side:])
				}
			}
		}
		perm := rng.Perm(n)
		for k, src := range perm {
			copy(scrambled.Data[(i*n+k)*ps:(i*n+k+1)*ps], pieces.Data[(i*n+src)*ps:])
		}
	}
	// Sample-major tiling, as in networks/jigsaw: draw d of image i is
	// matrix d·B + i.
	idx := make([]int, 0, s*b)
	xt, x := ad.Zeros(s*b, n, ps), ad.Zeros(s*b, n, ps)
	for d := range s {
		for i := range b {
			idx = append(idx, i)
		}
		copy(xt.Data[d*b*n*ps:], scrambled.Data)
		copy(x.Data[d*b*n*ps:], pieces.Data)
	}
	noise := ad.Zeros(s*b, n, n)
	dist.FillGumbel(noise.Data, rng)
	p.inputs = map[string]*ad.Tensor{"scrambled": scrambled, "xt": xt, "x": x, "noise": noise}
	p.hyper = map[string]any{"tau": c.Tau, "iters": c.Iters, "samples": s, "batch": b, "n": n,
		"pad": c.Kernel / 2, "pool": c.Pool, "kernel": c.Kernel, "filters": c.Filters}
	trunk := nn.Sequential{conv, nn.ReLU{}, nn.MaxPool2D{Size: c.Pool, Stride: c.Pool}, nn.Flatten{}}
	p.loss = func(t *ad.Tape) *ad.Var {
		h := trunk.Forward(t, t.Const(scrambled))
		g := ad.Reshape(dense.Forward(t, h), b, n, n)
		noisy := ad.Add(ad.Take(g, idx), t.Const(noise))
		sk := relax.SinkhornVar(noisy, c.Tau, c.Iters)
		rec := ad.MatMul(ad.Transpose(sk), t.Const(xt))
		return nn.MSE(rec, t.Const(x))
	}
	pieceCount, bs, nf := float64(b*n), float64(b*s), float64(n)
	p.flops = 2*2*pieceCount*float64(side*side*c.Filters*c.Kernel*c.Kernel) + // conv: forward, dW
		3*2*pieceCount*float64(feat)*nf + // dense: forward, dW, dX
		bs*12*float64(c.Iters)*nf*nf + // Sinkhorn
		2*2*bs*nf*nf*float64(ps) // reconstruction: forward, gradient with respect to P
	return p, nil
}
