package vae

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/dataset"
)

// Eval holds the test-set estimates of Evaluate, in nats per image.
type Eval struct {
	Images int // images evaluated
	K      int // samples z ~ q per image

	// NegELBO is the mean over images of −ELBO of the discrete model: the
	// reconstruction term averaged over the K samples plus the analytic
	// KL(q(z | x) ‖ uniform). NegELBOSE is its standard error over images.
	NegELBO, NegELBOSE float64

	// NegLogPx is the mean over images of the importance-weighted estimate
	// −log (1/K) Σ_k p(x | z_k) p(z_k)/q(z_k | x), and NegLogPxSE its
	// standard error over images.
	NegLogPx, NegLogPxSE float64

	// PerImage holds each image's importance-weighted estimate
	// −log (1/K) Σ_k w_k, for paired comparisons with other estimates on
	// the same images (see Settle).
	PerImage []float64 `json:"-"`
}

// evalChunk is the number of decoder rows (images × samples) per tape.
const evalChunk = 2000

// Evaluate binarizes the images once with a source seeded by seed (the same
// seed gives the same binary test set), then estimates the discrete model's
// −ELBO and the importance-weighted −log p(x) of each image with k samples
// from q(z | x), one-hot, drawn by the Gumbel-max trick from the same seed.
func (m *Model) Evaluate(images *dataset.Images, k int, seed uint64) (*Eval, error) {
	if k < 1 {
		return nil, fmt.Errorf("vae: Evaluate: k = %d samples, want >= 1", k)
	}
	bin, err := m.evalBinary("Evaluate", images, seed)
	if err != nil {
		return nil, err
	}
	d, nl, nc := m.cfg.Input, m.cfg.Latents, m.cfg.Classes
	rng := rand.New(rand.NewPCG(seed, 2))
	per := max(1, evalChunk/k) // images per tape
	elbo := make([]float64, images.N)
	iw := make([]float64, images.N)
	t := ad.NewTape()
	logPrior := -float64(nl) * math.Log(float64(nc))
	for lo := 0; lo < images.N; lo += per {
		hi := min(images.N, lo+per)
		b := hi - lo
		t.Reset()
		x := &ad.Tensor{Shape: []int{b, d}, Data: bin[lo*d : hi*d]}
		logits := m.Encode(t, t.Const(x)).Value()
		logq := logSoftmaxRows(logits, nc)
		z := ad.Zeros(b*k, nl*nc)
		xs := ad.Zeros(b*k, d)
		logRatio := make([]float64, b*k) // log p(z) − log q(z | x)
		for i := range b {
			kl := 0.0
			for _, lq := range logq[i*nl*nc : (i+1)*nl*nc] {
				kl += math.Exp(lq) * (lq + math.Log(float64(nc)))
			}
			elbo[lo+i] = -kl
			for s := range k {
				row := i*k + s
				copy(xs.Data[row*d:(row+1)*d], x.Data[i*d:(i+1)*d])
				lr := logPrior
				for l := range nl {
					off := (i*nl + l) * nc
					c := gumbelMax(logq[off:off+nc], rng)
					z.Data[row*nl*nc+l*nc+c] = 1
					lr -= logq[off+c]
				}
				logRatio[row] = lr
			}
		}
		nll := m.NegLogLik(t, t.Const(z), t.Const(xs))
		if err := t.Err(); err != nil {
			return nil, fmt.Errorf("vae: Evaluate: %w", err)
		}
		v := nll.Value()
		for i := range b {
			var rec float64
			lw := make([]float64, k)
			for s := range k {
				row := i*k + s
				rec -= v[row]
				lw[s] = -v[row] + logRatio[row]
			}
			elbo[lo+i] += rec / float64(k)
			iw[lo+i] = logSumExp(lw) - math.Log(float64(k))
		}
	}
	e := &Eval{Images: images.N, K: k}
	e.NegELBO, e.NegELBOSE = meanSE(elbo)
	e.NegLogPx, e.NegLogPxSE = meanSE(iw)
	e.NegELBO, e.NegLogPx = -e.NegELBO, -e.NegLogPx
	e.PerImage = make([]float64, len(iw))
	for i, v := range iw {
		e.PerImage[i] = -v
	}
	return e, nil
}

// evalBinary checks the images for m and returns them binarized once by a
// source seeded by (seed, 1): the fixed binary test set that Evaluate and
// AIS both see for one seed.
func (m *Model) evalBinary(op string, images *dataset.Images, seed uint64) ([]float64, error) {
	if err := checkImages(op, m, images); err != nil {
		return nil, err
	}
	bin, err := Binarize(nil, images.Pixels, rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		return nil, fmt.Errorf("vae: %s: %w", op, err)
	}
	return bin, nil
}

// logSoftmaxRows returns the log-softmax of each run of c values of x.
func logSoftmaxRows(x []float64, c int) []float64 {
	out := make([]float64, len(x))
	for o := 0; o < len(x); o += c {
		lse := logSumExp(x[o : o+c])
		for j := range c {
			out[o+j] = x[o+j] - lse
		}
	}
	return out
}

// logSumExp returns log Σ exp(x_i), shifted by the maximum.
func logSumExp(x []float64) float64 {
	mx := math.Inf(-1)
	for _, v := range x {
		mx = math.Max(mx, v)
	}
	if math.IsInf(mx, 0) {
		return mx
	}
	var s float64
	for _, v := range x {
		s += math.Exp(v - mx)
	}
	return mx + math.Log(s)
}

// gumbelMax returns argmax_c (l_c + g_c), a draw from Categorical(softmax(l)).
func gumbelMax(l []float64, rng *rand.Rand) int {
	best, arg := math.Inf(-1), 0
	for c, v := range l {
		u := rng.Float64()
		for u == 0 {
			u = rng.Float64()
		}
		if s := v - math.Log(-math.Log(u)); s > best {
			best, arg = s, c
		}
	}
	return arg
}

// meanSE returns the mean of x and its standard error.
func meanSE(x []float64) (mean, se float64) {
	n := float64(len(x))
	for _, v := range x {
		mean += v
	}
	mean /= n
	if len(x) < 2 {
		return mean, math.NaN()
	}
	var ss float64
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(ss / (n - 1) / n)
}

// Reconstruct returns, for n grey-level or binary images x (n × Input values),
// the decoder's pixel probabilities σ(f(ẑ)) at the mode ẑ of q(z | x), the
// one-hot of each latent's largest logit.
func (m *Model) Reconstruct(x []float64, n int) ([]float64, error) {
	d, nl, nc := m.cfg.Input, m.cfg.Latents, m.cfg.Classes
	if n < 1 || len(x) != n*d {
		return nil, fmt.Errorf("vae: Reconstruct: %d values for %d images of %d pixels", len(x), n, d)
	}
	if err := checkPixels("Reconstruct", x, d); err != nil {
		return nil, err
	}
	t := ad.NewTape()
	logits := m.Encode(t, t.Const(&ad.Tensor{Shape: []int{n, d}, Data: x})).Value()
	z := ad.Zeros(n, nl*nc)
	for r := range n * nl {
		arg := 0
		for c := 1; c < nc; c++ {
			if logits[r*nc+c] > logits[r*nc+arg] {
				arg = c
			}
		}
		z.Data[r*nc+arg] = 1
	}
	return m.probs(t, z)
}

// SamplePrior decodes n draws of z from the uniform prior and returns the
// pixel probabilities σ(f(z)), n × Input values.
func (m *Model) SamplePrior(n int, rng *rand.Rand) ([]float64, error) {
	if n < 1 {
		return nil, fmt.Errorf("vae: SamplePrior: n = %d, want >= 1", n)
	}
	if rng == nil {
		return nil, errors.New("vae: SamplePrior: nil rng")
	}
	nl, nc := m.cfg.Latents, m.cfg.Classes
	z := ad.Zeros(n, nl*nc)
	for r := range n * nl {
		z.Data[r*nc+rng.IntN(nc)] = 1
	}
	return m.probs(ad.NewTape(), z)
}

func (m *Model) probs(t *ad.Tape, z *ad.Tensor) ([]float64, error) {
	p := ad.Sigmoid(m.Decode(t, t.Const(z)))
	if err := t.Err(); err != nil {
		return nil, fmt.Errorf("vae: %w", err)
	}
	return append([]float64(nil), p.Value()...), nil
}
