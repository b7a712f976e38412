package main

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/internal/longtest"
)

func quickConfig() config {
	return config{cases: []string{"sorting", "jigsaw3", "jigsaw4"}, threads: 1, warmup: 1, reps: 2, block: 2,
		seed: 3, mnist: "", python: "/usr/bin/python3", script: "nn_torch.py", quick: true}
}

// logSinkhornNaive returns exp of the log-domain Sinkhorn iteration on the
// n×n matrix z/τ, written out with math.Exp and math.Log.
func logSinkhornNaive(z []float64, n int, tau float64, iters int) []float64 {
	x := make([]float64, n*n)
	for i := range x {
		x[i] = z[i] / tau
	}
	lse := func(get func(k int) float64) float64 {
		m := math.Inf(-1)
		for k := range n {
			m = math.Max(m, get(k))
		}
		s := 0.0
		for k := range n {
			s += math.Exp(get(k) - m)
		}
		return m + math.Log(s)
	}
	for range iters {
		for i := range n {
			l := lse(func(k int) float64 { return x[i*n+k] })
			for k := range n {
				x[i*n+k] -= l
			}
		}
		for j := range n {
			l := lse(func(k int) float64 { return x[k*n+j] })
			for k := range n {
				x[k*n+j] -= l
			}
		}
	}
	for i := range x {
		x[i] = math.Exp(x[i])
	}
	return x
}

// naiveSortingLoss recomputes the sorting case's loss from its weights and
// inputs with plain loops.
func naiveSortingLoss(p *problem) float64 {
	w1, b1 := p.params[0].Value.Data, p.params[1].Value.Data
	w2, b2 := p.params[2].Value.Data, p.params[3].Value.Data
	n, b, s := p.hyper["n"].(int), p.hyper["batch"].(int), p.hyper["samples"].(int)
	tau, iters := p.hyper["tau"].(float64), p.hyper["iters"].(int)
	hid := len(b1)
	input, xs, target, noise := p.inputs["input"].Data, p.inputs["xs"].Data, p.inputs["target"].Data, p.inputs["noise"].Data
	sum := 0.0
	for i := range b {
		g := make([]float64, n*n)
		for r := range n {
			for l := range n {
				v := b2[l]
				for k := range hid {
					v += math.Max(0, input[i*n+r]*w1[k]+b1[k]) * w2[k*n+l]
				}
				g[r*n+l] = v
			}
		}
		for d := i * s; d < (i+1)*s; d++ {
			z := make([]float64, n*n)
			for e := range z {
				z[e] = g[e] + noise[d*n*n+e]
			}
			pm := logSinkhornNaive(z, n, tau, iters)
			for l := range n {
				soft := 0.0
				for r := range n {
					soft += xs[d*n+r] * pm[r*n+l]
				}
				e := soft - target[d*n+l]
				sum += e * e
			}
		}
	}
	return sum / float64(b*s*n)
}

// naiveJigsawLoss recomputes a jigsaw case's loss with plain loops: direct
// convolution, pooling, dense layer, Sinkhorn, reconstruction.
func naiveJigsawLoss(p *problem) float64 {
	w, bc := p.params[0].Value.Data, p.params[1].Value.Data
	wd, bd := p.params[2].Value.Data, p.params[3].Value.Data
	h := p.hyper
	n, b, s := h["n"].(int), h["batch"].(int), h["samples"].(int)
	tau, iters := h["tau"].(float64), h["iters"].(int)
	k, pad, pool, nf := h["kernel"].(int), h["pad"].(int), h["pool"].(int), h["filters"].(int)
	scr := p.inputs["scrambled"]
	side := scr.Shape[2]
	ps := side * side
	po := (side-pool)/pool + 1
	feat := nf * po * po
	g := make([]float64, b*n*n)
	for piece := range b * n {
		x := scr.Data[piece*ps : (piece+1)*ps]
		conv := make([]float64, nf*ps)
		for f := range nf {
			for i := range side {
				for j := range side {
					v := bc[f]
					for u := range k {
						for q := range k {
							y, z := i+u-pad, j+q-pad
							if y >= 0 && y < side && z >= 0 && z < side {
								v += w[f*k*k+u*k+q] * x[y*side+z]
							}
						}
					}
					conv[(f*side+i)*side+j] = math.Max(v, 0)
				}
			}
		}
		hv := make([]float64, feat)
		for f := range nf {
			for i := range po {
				for j := range po {
					m := math.Inf(-1)
					for u := range pool {
						for q := range pool {
							m = math.Max(m, conv[(f*side+i*pool+u)*side+j*pool+q])
						}
					}
					hv[(f*po+i)*po+j] = m
				}
			}
		}
		for l := range n {
			v := bd[l]
			for e := range feat {
				v += hv[e] * wd[e*n+l]
			}
			g[piece*n+l] = v
		}
	}
	xt, xx, noise := p.inputs["xt"].Data, p.inputs["x"].Data, p.inputs["noise"].Data
	sum := 0.0
	for d := range s * b {
		i := d % b
		z := make([]float64, n*n)
		for e := range z {
			z[e] = g[i*n*n+e] + noise[d*n*n+e]
		}
		pm := logSinkhornNaive(z, n, tau, iters)
		for r := range n {
			for e := range ps {
				v := 0.0
				for q := range n {
					v += pm[q*n+r] * xt[(d*n+q)*ps+e]
				}
				diff := v - xx[(d*n+r)*ps+e]
				sum += diff * diff
			}
		}
	}
	return sum / float64(s*b*n*ps)
}

func TestStepLossMatchesNaive(t *testing.T) {
	c := quickConfig()
	for _, name := range c.cases {
		p, err := newCase(name, c)
		require.NoError(t, err, name)
		want := naiveJigsawLoss
		if name == "sorting" {
			want = naiveSortingLoss
		}
		ref := want(p)
		got, err := p.trainStep()
		require.NoError(t, err, name)
		assert.InDelta(t, 1, got/ref, 1e-12, "%s: step loss %v, naive %v", name, got, ref)
		// The Adam step moved the weights: the next loss is the naive
		// loss at the new weights.
		ref = want(p)
		got, err = p.lossGrad()
		require.NoError(t, err, name)
		assert.InDelta(t, 1, got/ref, 1e-12, "%s after one step: loss %v, naive %v", name, got, ref)
	}
}

func TestFullCasesBuild(t *testing.T) {
	// The full-size problems build, and their FLOP estimates are the
	// closed forms of the documentation, e.g. sorting:
	// 3·2·1000·32·100 + 2·2·1000·32 + 50·12·20·100² + 2·2·50·100².
	c := quickConfig()
	c.quick = false
	p, err := newCase("sorting", c)
	require.NoError(t, err)
	assert.Equal(t, 3*2*1000*32*100+2*2*1000*32+50*12*20*1e4+2*2*50*1e4, p.flops)

	// Jigsaw 3×3: 288 pieces of 9×9 px, pooled to 4×4, 512 features.
	p, err = newCase("jigsaw3", c)
	require.NoError(t, err)
	assert.Equal(t, []int{288, 1, 9, 9}, p.inputs["scrambled"].Shape)
	assert.Equal(t, float64(2*2*288*81*32*25+3*2*288*512*9+160*12*20*81+2*2*160*81*81), p.flops)
	// Jigsaw 4×4: 512 pieces of 7×7 px, pooled to 3×3, 288 features.
	p, err = newCase("jigsaw4", c)
	require.NoError(t, err)
	assert.Equal(t, []int{512, 1, 7, 7}, p.inputs["scrambled"].Shape)
	assert.Equal(t, float64(2*2*512*49*32*25+3*2*512*288*16+160*12*20*256+2*2*160*256*49), p.flops)
	_, err = newCase("bogus", c)
	assert.ErrorContains(t, err, `unknown case "bogus"`)
}

func TestRunWithoutPython(t *testing.T) {
	c := quickConfig()
	c.python = "/nonexistent/python3"
	var out bytes.Buffer
	require.NoError(t, run(c, &out))
	s := out.String()
	assert.Contains(t, s, "sorting: PyTorch reference not run: no Python interpreter")
	assert.Contains(t, s, "| jigsaw4x4 |")
	assert.Contains(t, s, "random images (no MNIST found)")
}

func TestRunAgainstTorch(t *testing.T) {
	longtest.Skip(t, "starts PyTorch")
	c := quickConfig()
	if _, err := os.Stat(c.python); err != nil {
		t.Skip("no python3")
	}
	if err := exec.Command(c.python, "-c", "import torch").Run(); err != nil {
		t.Skip("torch not installed")
	}
	var out bytes.Buffer
	require.NoError(t, run(c, &out))
	s := out.String()
	for _, name := range []string{"sorting", "jigsaw3x3", "jigsaw4x4"} {
		assert.Contains(t, s, name+": PyTorch ")
	}
	assert.Contains(t, s, "agreement: loss")
}

func TestRunRejectsBadConfig(t *testing.T) {
	c := quickConfig()
	c.threads = 0
	assert.Error(t, run(c, &bytes.Buffer{}))
	c = quickConfig()
	c.cases = []string{"nope"}
	assert.Error(t, run(c, &bytes.Buffer{}))
}

// BenchmarkStep times the full-size Go steps (profile with -cpuprofile).
func BenchmarkStep(b *testing.B) {
	c := quickConfig()
	c.quick = false
	c.mnist = "../../../shared/data/mnist" // ../shared beside the checkout
	for _, name := range c.cases {
		b.Run(name, func(b *testing.B) {
			p, err := newCase(name, c)
			require.NoError(b, err)
			for b.Loop() {
				if _, err := p.trainStep(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
