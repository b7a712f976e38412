package vae

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/dataset"
	"github.com/permlab/permlab/internal/f64"
	"github.com/permlab/permlab/nn"
)

// AISOptions configures Model.AIS and Model.BDMC.
type AISOptions struct {
	// Steps is the number T of intermediate distributions. Each is
	// followed by one Gibbs update of one latent (latents in turn), so a
	// sweep over all latents takes Latents steps.
	Steps int
	// Chains is the number of independent chains per image.
	Chains int
	// Seed seeds the binarization of the images (as Evaluate's seed does,
	// so AIS and Evaluate with one seed see the same binary images), the
	// chains, and, for BDMC, the simulated data.
	Seed uint64
	// OnImage, if not nil, is called after each image with the number of
	// images done so far and their total. Calls are serialized.
	OnImage func(done, total int)
	// Subset, if not nil, lists the indices of the images AIS estimates,
	// each at most once; nil estimates them all. An image of the subset is
	// binarized, encoded and annealed exactly as in a run on all the
	// images, so its estimate is the one that run would give it, and AIS
	// on a random sample pairs image by image with Evaluate on the whole
	// set (see Settle). BDMC ignores it.
	Subset []int
	// Done holds the results of an earlier run of AIS, with the same model,
	// images and options, that stopped before the end (as OnResult
	// delivered them). AIS takes them as they are and anneals only the
	// other images; since every image has its own random stream, the
	// result is bit for bit that of a run that never stopped. BDMC ignores
	// it.
	Done []AISImage
	// OnResult, if not nil, is called with each image's result as soon as
	// it is done (calls are serialized), so that a caller can keep them
	// and resume an interrupted run through Done. BDMC ignores it.
	OnResult func(AISImage)
}

// AISImage is the AIS result of one image.
type AISImage struct {
	Index       int     `json:"index"`         // the image's index in the set
	NegLogPx    float64 `json:"neg_log_px"`    // −log (1/C) Σ_c w_c
	LogWeightSD float64 `json:"log_weight_sd"` // sd of log w over the chains
}

func (o AISOptions) validate(op string) error {
	if o.Steps < 1 || o.Chains < 1 {
		return fmt.Errorf("vae: %s: %d steps and %d chains, want both >= 1", op, o.Steps, o.Chains)
	}
	return nil
}

// subset returns the indices AIS estimates among n images: opt.Subset,
// checked, or 0 … n−1.
func (o AISOptions) subset(n int) ([]int, error) {
	if o.Subset == nil {
		return seq(n), nil
	}
	if len(o.Subset) == 0 {
		return nil, errors.New("vae: AIS: empty Subset (nil estimates every image)")
	}
	seen := make(map[int]bool, len(o.Subset))
	for _, i := range o.Subset {
		if i < 0 || i >= n {
			return nil, fmt.Errorf("vae: AIS: Subset index %d out of range [0, %d)", i, n)
		}
		if seen[i] {
			return nil, fmt.Errorf("vae: AIS: Subset index %d listed twice", i)
		}
		seen[i] = true
	}
	return slices.Clone(o.Subset), nil
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// AISEval holds the estimates of Model.AIS, in nats per image.
type AISEval struct {
	Images int // images evaluated
	Steps  int // intermediate distributions per chain
	Chains int // chains per image

	// NegLogPx is the mean over images of −log (1/C) Σ_c w_c, the chains'
	// AIS weights; NegLogPxSE is its standard error over images. As for the
	// importance-weighted estimate, E[NegLogPx] ≥ −log p(x).
	NegLogPx, NegLogPxSE float64

	// LogWeightSD is the mean over images of the standard deviation of
	// log w over the chains (NaN for one chain). It shrinks towards 0 as
	// the schedule lengthens and the chains reach the posterior.
	LogWeightSD float64

	// PerImage holds each image's −log (1/C) Σ_c w_c, for paired
	// comparisons with other estimates on the same images.
	PerImage []float64 `json:"-"`

	// Subset holds the indices of the estimated images when AISOptions.Subset
	// chose them (PerImage[j] is image Subset[j]), and is nil otherwise.
	Subset []int `json:",omitempty"`
}

// BDMCEval holds the estimates of Model.BDMC on data simulated from the
// model, in nats per image: the forward chains' estimate is an upper bound
// on the mean −log p(x) in expectation, the reverse chains' a lower bound,
// so Gap = Forward − Reverse bounds the error of forward AIS with this
// schedule on these data (Grosse, Ghahramani and Adams, 2015).
type BDMCEval struct {
	Images, Steps, Chains int
	Forward, ForwardSE    float64 // mean of −log (1/C) Σ_c w_c, forward chains
	Reverse, ReverseSE    float64 // mean of log (1/C) Σ_c w'_c, reverse chains
	Gap, GapSE            float64 // mean of the per-image differences and its standard error
}

// AIS estimates −log p(x) of each image by annealed importance sampling
// (Neal, 2001) in the discrete model, from q(z | x) to the posterior
// p(z | x) ∝ p(z) p(x | z) along
//
//	f_β(z) = q(z | x)^(1−β) · (p(z) p(x | z))^β,  0 = β_0 < β_1 < … < β_T = 1,
//
// with β on the sigmoid schedule of Grosse et al. (2015) and, after each
// β_t, an exact Gibbs update of one latent z_l under f_{β_t} (the decoder
// is evaluated at the C values of z_l). A chain starts from z ~ q(z | x)
// and carries the log weight Σ_t (β_t − β_{t−1}) [log p(x, z) − log q(z | x)];
// its weight w is an unbiased estimate of p(x). Unlike the importance-
// weighted estimate, whose proposal stays q, the chains move to where the
// posterior is, so the estimate settles with far fewer decoder evaluations
// per image. The images are binarized from Seed as Evaluate binarizes them.
// Each image has its own random stream, so the result does not depend on
// GOMAXPROCS. The decoder's products run in float64 whatever the model's
// Config.Precision.
func (m *Model) AIS(images *dataset.Images, opt AISOptions) (*AISEval, error) {
	return m.AISContext(context.Background(), images, opt)
}

// AISContext is AIS that stops when ctx is done: the images being
// annealed finish, no other starts, and it returns ctx's error. Every
// finished image has reached opt.OnResult, so a run given them as
// opt.Done goes on where this one stopped.
func (m *Model) AISContext(ctx context.Context, images *dataset.Images, opt AISOptions) (*AISEval, error) {
	if err := opt.validate("AIS"); err != nil {
		return nil, err
	}
	bin, err := m.evalBinary("AIS", images, opt.Seed)
	if err != nil {
		return nil, err
	}
	d := m.cfg.Input
	an, err := m.annealer(opt.Chains)
	if err != nil {
		return nil, fmt.Errorf("vae: AIS: %w", err)
	}
	idx, err := opt.subset(images.N)
	if err != nil {
		return nil, err
	}
	// The encoder runs on every image even for a subset, so that each
	// image's q(z | x) comes from the same chunk of rows as in a run on all
	// of them, bit for bit.
	logq, err := m.logQ(bin, images.N)
	if err != nil {
		return nil, fmt.Errorf("vae: AIS: %w", err)
	}
	betas := sigmoidSchedule(opt.Steps)
	e := &AISEval{Images: len(idx), Steps: opt.Steps, Chains: opt.Chains, PerImage: make([]float64, len(idx))}
	if opt.Subset != nil {
		e.Subset = idx
	}
	sds := make([]float64, len(idx))
	todo, err := applyDone(idx, opt.Done, e.PerImage, sds)
	if err != nil {
		return nil, err
	}
	var after func(j int)
	if opt.OnResult != nil {
		after = func(j int) { opt.OnResult(AISImage{Index: idx[j], NegLogPx: e.PerImage[j], LogWeightSD: sds[j]}) }
	}
	nlq := m.cfg.Latents * m.cfg.Classes
	err = forImages(ctx, todo, len(idx)-len(todo), opt.OnImage, after, an, func(w *aisWork, j int) {
		i := idx[j]
		rng := rand.New(rand.NewPCG(opt.Seed, aisStream|uint64(i)))
		lw := w.run(an, bin[i*d:(i+1)*d], logq[i*nlq:(i+1)*nlq], betas, nil, rng)
		e.PerImage[j] = -(logSumExp(lw) - math.Log(float64(len(lw))))
		_, sds[j] = meanSD(lw)
	})
	if err != nil {
		return nil, fmt.Errorf("vae: AIS: %w", err)
	}
	e.NegLogPx, e.NegLogPxSE = meanSE(e.PerImage)
	e.LogWeightSD, _ = meanSD(sds)
	return e, nil
}

// BDMC runs bidirectional Monte Carlo on n images simulated from the model
// (z from the uniform prior, then each pixel from Bernoulli(σ(f(z)))): for
// each image, forward AIS as in AIS, and reverse AIS that starts from the
// z that generated the image, an exact draw from p(z | x), and anneals from
// β = 1 down to 0. The reverse weights are unbiased estimates of 1/p(x), so
// their log-mean is a stochastic lower bound on −log p(x) as the forward
// one is an upper bound; the gap between them bounds the error of forward
// AIS with the same schedule on data like these.
func (m *Model) BDMC(n int, opt AISOptions) (*BDMCEval, error) {
	if err := opt.validate("BDMC"); err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("vae: BDMC: n = %d images, want >= 1", n)
	}
	an, err := m.annealer(opt.Chains)
	if err != nil {
		return nil, fmt.Errorf("vae: BDMC: %w", err)
	}
	d, nl, nc := m.cfg.Input, m.cfg.Latents, m.cfg.Classes
	zs, x, err := m.simulate(n, opt.Seed)
	if err != nil {
		return nil, fmt.Errorf("vae: BDMC: %w", err)
	}
	logq, err := m.logQ(x, n)
	if err != nil {
		return nil, fmt.Errorf("vae: BDMC: %w", err)
	}
	fwd := sigmoidSchedule(opt.Steps)
	rev := make([]float64, len(fwd))
	for i, b := range fwd {
		rev[len(fwd)-1-i] = b
	}
	nf, nr := make([]float64, n), make([]float64, n)
	_ = forImages(context.Background(), seq(n), 0, opt.OnImage, nil, an, func(w *aisWork, i int) {
		xi, lq := x[i*d:(i+1)*d], logq[i*nl*nc:(i+1)*nl*nc]
		r := rand.New(rand.NewPCG(opt.Seed, aisStream|uint64(i)))
		lw := w.run(an, xi, lq, fwd, nil, r)
		nf[i] = -(logSumExp(lw) - math.Log(float64(len(lw))))
		r = rand.New(rand.NewPCG(opt.Seed, reverseStream|uint64(i)))
		lw = w.run(an, xi, lq, rev, zs[i*nl:(i+1)*nl], r)
		nr[i] = logSumExp(lw) - math.Log(float64(len(lw)))
	})
	e := &BDMCEval{Images: n, Steps: opt.Steps, Chains: opt.Chains}
	e.Forward, e.ForwardSE = meanSE(nf)
	e.Reverse, e.ReverseSE = meanSE(nr)
	gap := make([]float64, n)
	for i := range gap {
		gap[i] = nf[i] - nr[i]
	}
	e.Gap, e.GapSE = meanSE(gap)
	return e, nil
}

// simulate draws n images from the model with a source seeded by (seed,
// simStream): first every z from the uniform prior (n × Latents classes),
// then every pixel from Bernoulli(σ(f(z))). It returns the classes and the
// binary images.
func (m *Model) simulate(n int, seed uint64) (zs []int, x []float64, err error) {
	nl, nc := m.cfg.Latents, m.cfg.Classes
	rng := rand.New(rand.NewPCG(seed, simStream))
	zs = make([]int, n*nl)
	for i := range zs {
		zs[i] = rng.IntN(nc)
	}
	z := ad.Zeros(n, nl*nc)
	for i, c := range zs {
		z.Data[i*nc+c] = 1
	}
	p, err := m.probs(ad.NewTape(), z)
	if err != nil {
		return nil, nil, err
	}
	x = make([]float64, len(p))
	for i, pi := range p {
		if rng.Float64() < pi {
			x[i] = 1
		}
	}
	return zs, x, nil
}

// Streams of the PCG sources, beside Evaluate's 1 (binarization) and 2
// (samples); the low 32 bits hold the image index.
const (
	aisStream     = 3 << 32
	reverseStream = 4 << 32
	simStream     = 5 << 32
)

// sigmoidSchedule returns β_0 = 0, …, β_T = 1 on the sigmoid schedule of
// Grosse et al. (2015): σ(δ(2t/T − 1)) rescaled to [0, 1], δ = 4. It
// spends more steps near both ends, where f_β changes fastest.
func sigmoidSchedule(steps int) []float64 {
	const delta = 4.0
	s := func(t int) float64 { return 1 / (1 + math.Exp(-delta*(2*float64(t)/float64(steps)-1))) }
	lo, hi := s(0), s(steps)
	b := make([]float64, steps+1)
	for t := range b {
		b[t] = (s(t) - lo) / (hi - lo)
	}
	b[0], b[steps] = 0, 1
	return b
}

// logQ returns the log-probabilities log q(z_l = c | x), n × Latents ×
// Classes, of the n binary images x.
func (m *Model) logQ(x []float64, n int) ([]float64, error) {
	d := m.cfg.Input
	out := make([]float64, 0, n*m.cfg.Latents*m.cfg.Classes)
	t := ad.NewTape()
	for lo := 0; lo < n; lo += evalChunk {
		hi := min(n, lo+evalChunk)
		t.Reset()
		l := m.Encode(t, t.Const(&ad.Tensor{Shape: []int{hi - lo, d}, Data: x[lo*d : hi*d]}))
		if err := t.Err(); err != nil {
			return nil, err
		}
		out = append(out, logSoftmaxRows(l.Value(), m.cfg.Classes)...)
	}
	return out, nil
}

// annealer holds the decoder in the form the Gibbs updates use: the first
// layer's weights as rows (one per latent class, since z is one-hot) and
// the later layers packed for f64.Gemm.
type annealer struct {
	nl, nc, d, chains int
	w0, b0            []float64 // first layer: (nl·nc) × h0 weights, h0 bias
	h0                int
	layers            []packedDense // the dense layers after the first, ReLU before each
}

type packedDense struct {
	w   *f64.Packed
	b   []float64
	out int
}

func (m *Model) annealer(chains int) (*annealer, error) {
	// Dense layers at even places, ReLU between them, a Dense layer last.
	var dense []*nn.Dense
	for i, l := range m.dec {
		if d, ok := l.(*nn.Dense); ok && i%2 == 0 {
			dense = append(dense, d)
		} else if _, ok := l.(nn.ReLU); !ok || i%2 == 0 {
			return nil, fmt.Errorf("decoder layer %d is %T: the decoder is not dense layers with ReLU between them", i, l)
		}
	}
	if len(m.dec)%2 == 0 {
		return nil, errors.New("decoder is not dense layers with ReLU between them: it is empty or ends in ReLU")
	}
	bias := func(l *nn.Dense) []float64 {
		if l.B == nil {
			return make([]float64, l.Out)
		}
		return l.B.Value.Data
	}
	a := &annealer{
		nl: m.cfg.Latents, nc: m.cfg.Classes, d: m.cfg.Input, chains: chains,
		w0: dense[0].W.Value.Data, b0: bias(dense[0]), h0: dense[0].Out,
	}
	for _, l := range dense[1:] {
		a.layers = append(a.layers, packedDense{w: f64.Pack(l.W.Value.Data, l.In, l.Out), b: bias(l), out: l.Out})
	}
	return a, nil
}

// aisWork is one worker's scratch space.
type aisWork struct {
	acts [][]float64 // activations of each layer, chains·nc rows
	z    []int       // chains × nl current classes
	lpx  []float64   // log p(x | z) of each chain's current z
	lw   []float64   // log weights
	base []float64   // first layer's pre-activation without the updated latent
	cond []float64   // conditional log-probabilities of one latent
	ll   []float64   // log p(x | z) of each chain's nc candidates
}

func newAISWork(a *annealer) *aisWork {
	rows := a.chains * a.nc
	w := &aisWork{
		acts: [][]float64{make([]float64, rows*a.h0)},
		z:    make([]int, a.chains*a.nl),
		lpx:  make([]float64, a.chains),
		lw:   make([]float64, a.chains),
		base: make([]float64, a.h0),
		cond: make([]float64, a.nc),
		ll:   make([]float64, rows),
	}
	for _, l := range a.layers {
		w.acts = append(w.acts, make([]float64, rows*l.out))
	}
	return w
}

// forward runs the decoder from the first layer's pre-activations in
// w.acts[0] (rows of them, changed in place by the ReLU) and returns the
// Bernoulli log-likelihood of x for each row in ll.
func (w *aisWork) forward(a *annealer, rows int, x, ll []float64) {
	in := w.acts[0][:rows*a.h0]
	for li, l := range a.layers {
		for j, v := range in {
			in[j] = math.Max(v, 0)
		}
		out := w.acts[li+1][:rows*l.out]
		f64.Gemm(rows, in, l.w, out)
		for r := range rows {
			o := out[r*l.out : (r+1)*l.out]
			for j, b := range l.b {
				o[j] += b
			}
		}
		in = out
	}
	for r := range rows {
		// log σ(v) if x = 1, log(1 − σ(v)) if x = 0, that is
		// x·v − max(v, 0) − log(1 + e^−|v|). The last terms are summed as
		// the log of a product, one math.Log per 512 pixels instead of a
		// math.Log1p per pixel (which took 40% of the time): each factor
		// lies in (1, 2], so 512 of them stay below 2^512, and the product's
		// relative rounding error, a few 1e−14, is the sum's absolute one.
		s, prod := 0.0, 1.0
		for j, v := range in[r*a.d : (r+1)*a.d] {
			s += x[j]*v - math.Max(v, 0)
			prod *= 1 + math.Exp(-math.Abs(v))
			if j%512 == 511 {
				s -= math.Log(prod)
				prod = 1
			}
		}
		s -= math.Log(prod)
		ll[r] = s
	}
}

// run anneals the chains along betas for the binary image x with
// log q(z | x) = logq (nl × nc) and returns their log weights
// Σ_t (β_t − β_{t−1}) [log p(x, z_{t−1}) − log q(z_{t−1} | x)], with the
// Gibbs update of latent (t−1) mod nl under f_{β_t} after each β_t. The
// chains start from z0 (all of them, nl classes) or, if z0 is nil, from
// independent draws from q. The returned slice is w's.
func (w *aisWork) run(a *annealer, x, logq, betas []float64, z0 []int, rng *rand.Rand) []float64 {
	nl, nc, h0 := a.nl, a.nc, a.h0
	logPrior := -float64(nl) * math.Log(float64(nc))
	logqOf := func(z []int) float64 {
		s := 0.0
		for l, c := range z {
			s += logq[l*nc+c]
		}
		return s
	}
	// Initial states and their likelihoods, one decoder row per chain.
	for c := range a.chains {
		z := w.z[c*nl : (c+1)*nl]
		for l := range nl {
			if z0 != nil {
				z[l] = z0[l]
			} else {
				z[l] = sampleLog(logq[l*nc:(l+1)*nc], rng)
			}
		}
		row := w.acts[0][c*h0 : (c+1)*h0]
		copy(row, a.b0)
		for l, k := range z {
			f64.Axpy(1, a.w0[(l*nc+k)*h0:(l*nc+k+1)*h0], row)
		}
		w.lw[c] = 0
	}
	w.forward(a, a.chains, x, w.lpx)
	ll := w.ll
	for t := 1; t < len(betas); t++ {
		beta, db := betas[t], betas[t]-betas[t-1]
		for c := range a.chains {
			w.lw[c] += db * (logPrior + w.lpx[c] - logqOf(w.z[c*nl:(c+1)*nl]))
		}
		if t == len(betas)-1 {
			break // the last transition would not change the weights
		}
		l := (t - 1) % nl
		for c := range a.chains {
			z := w.z[c*nl : (c+1)*nl]
			copy(w.base, a.b0)
			for l2, k := range z {
				if l2 != l {
					f64.Axpy(1, a.w0[(l2*nc+k)*h0:(l2*nc+k+1)*h0], w.base)
				}
			}
			for k := range nc {
				row := w.acts[0][(c*nc+k)*h0 : (c*nc+k+1)*h0]
				copy(row, w.base)
				f64.Axpy(1, a.w0[(l*nc+k)*h0:(l*nc+k+1)*h0], row)
			}
		}
		w.forward(a, a.chains*nc, x, ll)
		for c := range a.chains {
			for k := range nc {
				w.cond[k] = (1-beta)*logq[l*nc+k] + beta*ll[c*nc+k]
			}
			k := sampleLog(w.cond, rng)
			w.z[c*nl+l] = k
			w.lpx[c] = ll[c*nc+k]
		}
	}
	return w.lw
}

// sampleLog draws an index from the categorical distribution with
// unnormalised log-probabilities l.
func sampleLog(l []float64, rng *rand.Rand) int {
	mx := math.Inf(-1)
	for _, v := range l {
		mx = math.Max(mx, v)
	}
	var tot float64
	for _, v := range l {
		tot += math.Exp(v - mx)
	}
	u := rng.Float64() * tot
	for k, v := range l {
		if u -= math.Exp(v - mx); u < 0 {
			return k
		}
	}
	return len(l) - 1
}

// meanSD returns the mean of x and its sample standard deviation (NaN for
// fewer than two values).
func meanSD(x []float64) (mean, sd float64) {
	mean, se := meanSE(x)
	return mean, se * math.Sqrt(float64(len(x)))
}

// forImages calls f(w, j) for each j of todo on up to GOMAXPROCS workers,
// each with its own scratch w, and after each, serialized, after(j) (if
// not nil) and onImage(done, total), done counting from already. When ctx
// is done it hands out no more work, waits for the calls under way, and
// returns ctx's error if some of todo did not run.
func forImages(ctx context.Context, todo []int, already int, onImage func(done, total int), after func(j int), a *annealer, f func(w *aisWork, j int)) error {
	workers := min(runtime.GOMAXPROCS(0), len(todo))
	next := make(chan int)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		done = already
	)
	total := already + len(todo)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := newAISWork(a)
			for j := range next {
				f(w, j)
				mu.Lock()
				done++
				if after != nil {
					after(j)
				}
				if onImage != nil {
					onImage(done, total)
				}
				mu.Unlock()
			}
		}()
	}
	var err error
feed:
	for _, j := range todo {
		select {
		case next <- j:
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(next)
	wg.Wait()
	return err
}

// applyDone copies the results of done into perImage and sds at the
// positions of their images in idx, and returns the positions still to
// run.
func applyDone(idx []int, done []AISImage, perImage, sds []float64) ([]int, error) {
	pos := make(map[int]int, len(idx))
	for j, i := range idx {
		pos[i] = j
	}
	have := make([]bool, len(idx))
	for _, r := range done {
		j, ok := pos[r.Index]
		switch {
		case !ok:
			return nil, fmt.Errorf("vae: AIS: Done holds image %d, which this run does not estimate", r.Index)
		case have[j]:
			return nil, fmt.Errorf("vae: AIS: Done holds image %d twice", r.Index)
		case math.IsNaN(r.NegLogPx) || math.IsInf(r.NegLogPx, 0):
			return nil, fmt.Errorf("vae: AIS: Done holds %v for image %d, not a result", r.NegLogPx, r.Index)
		}
		have[j] = true
		perImage[j], sds[j] = r.NegLogPx, r.LogWeightSD
	}
	todo := make([]int, 0, len(idx)-len(done))
	for j := range idx {
		if !have[j] {
			todo = append(todo, j)
		}
	}
	return todo, nil
}
