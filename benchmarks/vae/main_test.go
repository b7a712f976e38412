package main

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/internal/longtest"
	"github.com/permlab/permlab/models/vae"
	"github.com/permlab/permlab/nn"
)

var allEstimators = []vae.Estimator{vae.GumbelSoftmax, vae.Concrete, vae.GumbelSpace}

// quickConfig is a small batch at a temperature whose prior differs from
// the posterior's (r = τ_p/τ ≠ 1), so that every term of the KLs matters.
func quickConfig() config {
	return config{estimators: allEstimators, threads: 1, batch: 3, tau: 0.7, tauPrior: 0.5,
		warmup: 0, rounds: 1, steps: 2, seed: 3, python: "/usr/bin/python3", script: "vae_torch.py"}
}

func quickProblem(t testing.TB, e vae.Estimator) *problem {
	c := quickConfig()
	p, err := newProblem(e, c.batch, c.tau, c.tauPrior, c.mnist, c.seed, c.precision)
	require.NoError(t, err)
	return p
}

// dense returns x·W + b for W of shape (len(x), len(b)), with ReLU if relu.
func dense(x, w, b []float64, relu bool) []float64 {
	out := slices.Clone(b)
	for i, xi := range x {
		for j := range out {
			out[j] += xi * w[i*len(b)+j]
		}
	}
	if relu {
		for j, v := range out {
			out[j] = math.Max(v, 0)
		}
	}
	return out
}

// logSumExp returns log Σ exp(a_i).
func logSumExp(a []float64) float64 {
	m := slices.Max(a)
	s := 0.0
	for _, v := range a {
		s += math.Exp(v - m)
	}
	return m + math.Log(s)
}

// expConcreteLogProb is the ExpConcrete log density of lx with logits a and
// temperature t: log (k−1)! + (k−1) log t + Σ (a − t·lx) − k logsumexp(a − t·lx).
func expConcreteLogProb(a, lx []float64, t float64) float64 {
	k := len(a)
	s := make([]float64, k)
	sum := 0.0
	for i := range s {
		s[i] = a[i] - t*lx[i]
		sum += s[i]
	}
	lg, _ := math.Lgamma(float64(k))
	return lg + float64(k-1)*math.Log(t) + sum - float64(k)*logSumExp(s)
}

// naiveLoss recomputes the mean negative ELBO of p's step at the current
// weights with plain loops, from the formulas of the models/vae
// documentation.
func naiveLoss(p *problem) float64 {
	params := p.model.Params()
	depth := len(p.cfg.Hidden) + 1
	lat, cls, d := p.cfg.Latents, p.cfg.Classes, p.cfg.Input
	b := p.x.Shape[0]
	mlp := func(h []float64, layers []*ad.Param) []float64 {
		for i := 0; i < len(layers); i += 2 {
			h = dense(h, layers[i].Value.Data, layers[i+1].Value.Data, i+2 < len(layers))
		}
		return h
	}
	r := p.tauPrior / p.tau
	lgr, _ := math.Lgamma(1 + r)
	total := 0.0
	for n := range b {
		x := p.x.Data[n*d : (n+1)*d]
		l := mlp(x, params[:2*depth])
		y := make([]float64, lat*cls)
		kl := 0.0
		for k := range lat {
			lk, gk := l[k*cls:(k+1)*cls], p.g.Data[(n*lat+k)*cls:]
			u := make([]float64, cls)
			for c := range u {
				u[c] = (lk[c] + gk[c]) / p.tau
			}
			lseU, lseL := logSumExp(u), logSumExp(lk)
			lx := make([]float64, cls)
			for c := range u {
				lx[c] = u[c] - lseU
				y[k*cls+c] = math.Exp(lx[c])
			}
			switch p.est {
			case vae.GumbelSoftmax:
				for c := range lk {
					logq := lk[c] - lseL
					kl += math.Exp(logq) * (logq + math.Log(float64(cls)))
				}
			case vae.Concrete:
				kl += expConcreteLogProb(lk, lx, p.tau) - expConcreteLogProb(make([]float64, cls), lx, p.tauPrior)
			case vae.GumbelSpace:
				for _, v := range lk {
					kl += math.Log(p.tau/p.tauPrior) - 1 + 0.5772156649015329*(r-1) + r*v + math.Exp(lgr-r*v)
				}
			}
		}
		f := mlp(y, params[2*depth:])
		rec := 0.0
		for i, fi := range f {
			rec += math.Max(fi, 0) - fi*x[i] + math.Log1p(math.Exp(-math.Abs(fi)))
		}
		total += rec + kl
	}
	return total / float64(b)
}

func TestStepLossMatchesNaive(t *testing.T) {
	for _, e := range allEstimators {
		p := quickProblem(t, e)
		want := naiveLoss(p)
		got, err := p.trainStep()
		require.NoError(t, err, e)
		// Same sums in other orders: rounding only.
		assert.InDelta(t, 1, got/want, 1e-12, "%v: step loss %v, naive %v", e, got, want)
		// The Adam step moved the weights, and the next loss is the
		// naive loss at the new weights.
		want2 := naiveLoss(p)
		assert.NotEqual(t, want, want2, e)
		got, err = p.lossGrad()
		require.NoError(t, err, e)
		assert.InDelta(t, 1, got/want2, 1e-12, "%v after one step: loss %v, naive %v", e, got, want2)
	}
}

func TestGradientsMatchFiniteDifferences(t *testing.T) {
	// For every parameter, the entry with the largest gradient and one
	// other: central differences of the naive loss with step h = 1e-5 have
	// truncation error O(h²) and rounding error about 1e-16·|loss|/h ≈ 1e-8.
	const h = 1e-5
	for _, e := range allEstimators {
		p := quickProblem(t, e)
		_, err := p.lossGrad()
		require.NoError(t, err)
		for _, q := range p.model.Params() {
			big := 0
			for i, g := range q.Grad.Data {
				if math.Abs(g) > math.Abs(q.Grad.Data[big]) {
					big = i
				}
			}
			for _, i := range []int{big, len(q.Grad.Data) / 3} {
				v := q.Value.Data[i]
				q.Value.Data[i] = v + h
				up := naiveLoss(p)
				q.Value.Data[i] = v - h
				down := naiveLoss(p)
				q.Value.Data[i] = v
				fd := (up - down) / (2 * h)
				g := q.Grad.Data[i]
				assert.InDelta(t, fd, g, 1e-6*math.Max(1, math.Abs(g)), "%v: ∂loss/∂%s[%d]", e, q.Name, i)
			}
		}
	}
}

func TestEveryEstimatorStartsAlike(t *testing.T) {
	// writeProblem writes the first estimator's weights, images and noise
	// for all of them: they must be the same.
	ref := quickProblem(t, vae.GumbelSoftmax)
	for _, e := range allEstimators[1:] {
		p := quickProblem(t, e)
		for i, q := range p.model.Params() {
			assert.Equal(t, ref.model.Params()[i].Value.Data, q.Value.Data, "%v: %s", e, q.Name)
		}
		assert.Equal(t, ref.x.Data, p.x.Data)
		assert.Equal(t, ref.g.Data, p.g.Data)
	}
	// Biases are random, the images binary and about half on.
	assert.NotZero(t, ref.model.Params()[1].Value.Data[0])
	on := 0.0
	for _, v := range ref.x.Data {
		require.True(t, v == 0 || v == 1, "pixel %v", v)
		on += v
	}
	assert.InDelta(t, 0.5, on/float64(len(ref.x.Data)), 0.05)
	assert.Equal(t, 0.7, ref.tau)
	assert.Equal(t, 0.5, ref.tauPrior)
}

func TestPriorTempDefaultsToTau(t *testing.T) {
	p, err := newProblem(vae.Concrete, 2, 0.8, 0, "", 1, nn.Float64)
	require.NoError(t, err)
	assert.Equal(t, 0.8, p.tauPrior)
	_, err = newProblem(vae.Concrete, 0, 1, 0, "", 1, nn.Float64)
	assert.Error(t, err)
	_, err = newProblem(vae.Concrete, 2, 0, 0, "", 1, nn.Float64)
	assert.Error(t, err)
}

func TestImagesFromMNIST(t *testing.T) {
	dir := "../../../shared/data/mnist" // ../shared beside the checkout
	if _, err := os.Stat(filepath.Join(dir, "t10k-images-idx3-ubyte.gz")); err != nil {
		t.Skipf("MNIST not found in %s: %v", dir, err)
	}
	p, err := newProblem(vae.GumbelSoftmax, 5, 1, 0, dir, 1, nn.Float64)
	require.NoError(t, err)
	assert.Contains(t, p.source, "MNIST")
	on := 0.0
	for _, v := range p.x.Data {
		require.True(t, v == 0 || v == 1, "pixel %v", v)
		on += v
	}
	// Digits cover about a seventh of the image.
	frac := on / float64(len(p.x.Data))
	assert.True(t, frac > 0.05 && frac < 0.3, "fraction of pixels on %v", frac)
	_, err = newProblem(vae.GumbelSoftmax, 5, 1, 0, t.TempDir(), 1, nn.Float64)
	assert.Error(t, err)
}

func TestDenseFlops(t *testing.T) {
	// 2·B·(3·2·(784·512 + 512·256 + 256·200) − 784·512) at B = 100.
	assert.Equal(t, 620134400.0, denseFlops(vae.DefaultConfig(), 100))
}

func TestParseEstimators(t *testing.T) {
	all, err := parseEstimators("all")
	require.NoError(t, err)
	assert.Equal(t, allEstimators, all)
	two, err := parseEstimators("gumbel-space, concrete")
	require.NoError(t, err)
	assert.Equal(t, []vae.Estimator{vae.GumbelSpace, vae.Concrete}, two)
	_, err = parseEstimators("gumbel")
	assert.Error(t, err)
}

func TestRunWithoutPython(t *testing.T) {
	c := quickConfig()
	c.python = "/nonexistent/python3"
	var out bytes.Buffer
	require.NoError(t, run(c, &out))
	s := out.String()
	assert.Contains(t, s, "PyTorch reference not run: no Python interpreter")
	for _, e := range allEstimators {
		assert.Contains(t, s, "| "+e.String()+" |")
	}
	assert.Contains(t, s, "synthetic binary images")
}

func TestRunRejectsBadConfig(t *testing.T) {
	for _, mod := range []func(*config){
		func(c *config) { c.threads = 0 },
		func(c *config) { c.batch = 0 },
		func(c *config) { c.estimators = nil },
		func(c *config) { c.tauPrior = -1 },
		func(c *config) { c.tau = 0 },
	} {
		c := quickConfig()
		c.python = "/nonexistent/python3"
		mod(&c)
		assert.Error(t, run(c, &bytes.Buffer{}), "%+v", c)
	}
}

// needTorch skips the test unless the reference can run.
func needTorch(t *testing.T, c config) {
	longtest.Skip(t, "starts PyTorch")
	if _, err := os.Stat(c.python); err != nil {
		t.Skipf("no Python interpreter at %s: the cross-check against PyTorch needs python3-torch", c.python)
	}
	if out, err := exec.Command(c.python, "-c", "import torch").CombinedOutput(); err != nil {
		t.Skipf("%s cannot import torch (%v: %s): install python3-torch for the cross-check", c.python, err, strings.TrimSpace(string(out)))
	}
}

func TestRunAgainstTorch(t *testing.T) {
	c := quickConfig()
	needTorch(t, c)
	var out bytes.Buffer
	require.NoError(t, run(c, &out))
	s := out.String()
	t.Log("\n" + s)
	for _, e := range allEstimators {
		assert.Contains(t, s, e.String()+": agreement: loss")
	}
	assert.NotContains(t, s, "| – |")
}

// TestRunAgainstTorchFloat32 runs the float32 comparison: permlab's
// products in float32 against PyTorch in float32, checked to tolerance32.
func TestRunAgainstTorchFloat32(t *testing.T) {
	c := quickConfig()
	c.precision = nn.Float32
	needTorch(t, c)
	var out bytes.Buffer
	require.NoError(t, run(c, &out))
	s := out.String()
	t.Log("\n" + s)
	assert.Contains(t, s, "PyTorch: everything float32")
	for _, e := range allEstimators {
		assert.Contains(t, s, e.String()+": agreement: loss")
	}
	assert.Contains(t, s, "weights after Adam not checked")
}

func TestCheckCatchesDisagreement(t *testing.T) {
	// The check is not vacuous: one weight moved by 1e-6 on the Go side
	// only is caught.
	c := quickConfig()
	needTorch(t, c)
	p := quickProblem(t, vae.Concrete)
	dir := t.TempDir()
	require.NoError(t, writeProblem(dir, p, []vae.Estimator{p.est}, 1))
	p.model.Params()[2].Value.Data[7] += 1e-6
	py, why := startPython(c, dir)
	require.NotNil(t, py, why)
	defer py.Close()
	_, err := measure(c, p, py, dir, &bytes.Buffer{})
	assert.ErrorContains(t, err, "Go and PyTorch disagree")
}

// BenchmarkStep times the full-size Go step (batch 100) of each estimator;
// profile with -cpuprofile.
func BenchmarkStep(b *testing.B) {
	for _, e := range allEstimators {
		b.Run(e.String(), func(b *testing.B) {
			p, err := newProblem(e, 100, 1, 0, "", 1, nn.Float64)
			require.NoError(b, err)
			for b.Loop() {
				if _, err := p.trainStep(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
