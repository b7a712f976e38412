package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/ad/optim"
	"github.com/permlab/permlab/benchmarks/internal/harness"
	"github.com/permlab/permlab/dataset"
	"github.com/permlab/permlab/dist"
	"github.com/permlab/permlab/models/vae"
	"github.com/permlab/permlab/nn"
)

// lr is the Adam learning rate of models/vae's training (and of Jang et al.).
const lr = 1e-3

// Streams of the PCG source seeded by -seed, one per kind of random input,
// so that changing how one is drawn leaves the others as they were.
const (
	streamWeights = 0x7ae1 + iota
	streamBatch
	streamNoise
)

// problem is one estimator's training step with fixed initial weights,
// binary images and Gumbel noise: the Go step, and what the Python side
// needs to build the same step.
type problem struct {
	est   vae.Estimator
	cfg   vae.Config
	model *vae.Model
	// x holds the binary images (B, Input) and g the standard Gumbel noise
	// (B, Latents, Classes) of every step.
	x, g     *ad.Tensor
	tau      float64
	tauPrior float64 // the prior's temperature in effect (τ when Config.PriorTemp is 0)
	source   string  // where the images come from
	flops    float64 // estimate of floating-point operations per step (see flopNote)
	lr       float64
	tape     *ad.Tape
	opt      *optim.Adam
}

// flopNote says how problem.flops is estimated.
const flopNote = `FLOPs per step are counted as 2 per multiply-add of the six dense layers' products, forward and backward (the weight gradient of every layer, and the input gradient of every layer but the encoder's first, since the images need none): 2·B·(3·Σ in·out − 784·512) = 0.62 GFLOP at batch 100; the softmaxes, the KL terms, the likelihood and Adam are not counted, and the same count divides both sides' times.`

// newProblem builds the step of estimator est at batch b. The weights come
// from vae.New with a source seeded by seed, so every estimator starts from
// the same ones; the biases, zero after vae.New, are set to small random
// values so that the check covers their gradients. The images are the first
// b of mnist/t10k-images-idx3-ubyte.gz binarized with vae.Binarize when
// mnist is not empty, and b synthetic images of independent
// Bernoulli(1/2) pixels otherwise (the time of a step does not depend on
// the pixel values).
func newProblem(est vae.Estimator, b int, tau, tauPrior float64, mnist string, seed uint64, prec nn.Precision) (*problem, error) {
	if b < 1 {
		return nil, fmt.Errorf("batch %d must be >= 1", b)
	}
	if !(tau > 0) {
		return nil, fmt.Errorf("temperature %v must be > 0", tau)
	}
	cfg := vae.DefaultConfig()
	cfg.Estimator, cfg.PriorTemp, cfg.Precision = est, tauPrior, prec
	rng := rand.New(rand.NewPCG(seed, streamWeights))
	m, err := vae.New(cfg, rng)
	if err != nil {
		return nil, err
	}
	for _, q := range m.Params() {
		if len(q.Value.Shape) == 1 {
			for i := range q.Value.Data {
				q.Value.Data[i] = 0.1 * rng.NormFloat64()
			}
		}
	}
	x, source, err := images(cfg.Input, b, mnist, rand.New(rand.NewPCG(seed, streamBatch)))
	if err != nil {
		return nil, err
	}
	g := ad.Zeros(b, cfg.Latents, cfg.Classes)
	dist.FillGumbel(g.Data, rand.New(rand.NewPCG(seed, streamNoise)))
	opt, err := optim.NewAdam(m.Params())
	if err != nil {
		return nil, err
	}
	p := &problem{est: est, cfg: m.Config(), model: m, x: x, g: g, tau: tau, tauPrior: tau,
		source: source, lr: lr, tape: ad.NewTape(), opt: opt}
	if tauPrior > 0 {
		p.tauPrior = tauPrior
	}
	p.flops = denseFlops(p.cfg, b)
	return p, nil
}

// images returns b binary images of d pixels and a description of them.
func images(d, b int, mnist string, rng *rand.Rand) (*ad.Tensor, string, error) {
	x := ad.Zeros(b, d)
	if mnist == "" {
		for i := range x.Data {
			x.Data[i] = float64(rng.Uint64() >> 63)
		}
		return x, "synthetic binary images (pixels Bernoulli(1/2), no -mnist)", nil
	}
	path := filepath.Join(mnist, "t10k-images-idx3-ubyte.gz")
	im, err := dataset.ReadIDXImages(path)
	if err != nil {
		return nil, "", err
	}
	if im.Size() != d || im.N < b {
		return nil, "", fmt.Errorf("%s: %d images of %d pixels, want at least %d of %d", path, im.N, im.Size(), b, d)
	}
	if _, err := vae.Binarize(x.Data, im.Pixels[:b*d], rng); err != nil {
		return nil, "", err
	}
	return x, "the first MNIST test images, binarized", nil
}

// denseFlops returns the flopNote count for configuration c at batch b.
func denseFlops(c vae.Config, b int) float64 {
	widths := append(append([]int{c.Input}, c.Hidden...), c.Latents*c.Classes)
	var macs float64
	for i := 0; i+1 < len(widths); i++ {
		macs += float64(widths[i] * widths[i+1]) // the decoder mirrors the encoder
	}
	return 2 * float64(b) * (3*2*macs - float64(widths[0]*widths[1]))
}

// trainStep takes one step: forward, backward, Adam. It returns the loss.
func (p *problem) trainStep() (float64, error) {
	l, err := p.lossGrad()
	if err != nil {
		return 0, err
	}
	if err := p.opt.Step(p.lr); err != nil {
		return 0, err
	}
	return l, nil
}

// lossGrad records the loss and runs the backward pass, leaving the
// gradients in the parameters.
func (p *problem) lossGrad() (float64, error) {
	t := p.tape
	t.Reset()
	loss, err := p.model.LossNoise(t, t.Const(p.x), p.tau, p.g)
	if err != nil {
		return 0, fmt.Errorf("%v: %w", p.est, err)
	}
	if err := t.Backward(loss); err != nil {
		return 0, fmt.Errorf("%v: %w", p.est, err)
	}
	return loss.Item(), nil
}

// writeProblem writes header.json, the parameters and the inputs of p for
// the Python side, which runs the estimators ests with the given threads.
func writeProblem(dir string, p *problem, ests []vae.Estimator, threads int) error {
	type entry struct {
		Name  string `json:"name"`
		Shape []int  `json:"shape"`
		File  string `json:"file"`
	}
	var params []entry
	for i, q := range p.model.Params() {
		e := entry{q.Name, q.Value.Shape, fmt.Sprintf("param%d.f64", i)}
		if err := harness.WriteF64(filepath.Join(dir, e.File), q.Value.Data); err != nil {
			return err
		}
		params = append(params, e)
	}
	inputs := []entry{{"x", p.x.Shape, "x.f64"}, {"g", p.g.Shape, "g.f64"}}
	for i, t := range []*ad.Tensor{p.x, p.g} {
		if err := harness.WriteF64(filepath.Join(dir, inputs[i].File), t.Data); err != nil {
			return err
		}
	}
	names := make([]string, len(ests))
	for i, e := range ests {
		names[i] = e.String()
	}
	h := map[string]any{
		"input": p.cfg.Input, "latents": p.cfg.Latents, "classes": p.cfg.Classes, "hidden": p.cfg.Hidden,
		"tau": p.tau, "tau_prior": p.tauPrior, "lr": p.lr, "threads": threads, "estimators": names,
		"params": params, "inputs": inputs, "dtype": p.cfg.Precision.String(),
	}
	b, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "header.json"), b, 0o644)
}
