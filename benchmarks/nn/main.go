// Command nn compares the speed of one training step of permlab's Sinkhorn
// networks with the same step in PyTorch: forward pass, backward pass and one
// Adam update, in float64, with the same number of threads on each side
// (GOMAXPROCS; torch.set_num_threads, OPENBLAS_NUM_THREADS and
// OMP_NUM_THREADS; OMP_WAIT_POLICY=PASSIVE, see startPython).
//
// The cases are the seed paper's networks, built here from nn layers
// and relax.SinkhornVar so that both sides hold the same weights:
//
//   - sorting: n = 100 numbers, each through Dense(1, 32) → ReLU →
//     Dense(32, n), a batch of 10 lists with 5 Gumbel samples each,
//     S^L((g + ε)/τ) with L = 20, τ = 1, squared error of the soft sort;
//   - jigsaw3, jigsaw4: 32 MNIST images (cropped to 27 px for 3×3) cut into
//     3×3 or 4×4 pieces, each piece through conv (32 filters 5×5, padding 2)
//     → ReLU → 2×2 max-pool → dense to p², 5 Gumbel samples per image, L =
//     20, τ = 1, squared error of the soft reconstruction.
//
// The PyTorch side (nn_torch.py) is the straightforward implementation:
// the same layers as tensor operations, the log-domain Sinkhorn loop
// differentiated by autograd, and torch.optim.Adam.
//
// For each case the program writes the initial weights, inputs and noise to a
// temporary directory as raw float64 files, starts nn_torch.py on it, and
//
//   - checks that one step from the same weights gives the same loss (to
//     1e-10 relative), the same gradients and the same weights after the
//     Adam update (to 1e-10 relative to each parameter's largest entry);
//   - times the step in interleaved blocks (harness.InterleaveBlocks: a
//     block of Go steps, a block of PyTorch steps, alternating which goes
//     first), and prints the median wall and CPU times per step, their
//     ratio, and the achieved GFLOP/s against the machine's peak.
//
// The Adam learning rate is 1e-3, small enough that the repeated steps on
// one batch stay in the regime of training. Run it from the repository root:
//
//	go run ./benchmarks/nn -threads 1
//	go run ./benchmarks/nn -threads 2
//
// Without python3 or torch the program says so and times Go alone.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/permlab/permlab/benchmarks/internal/harness"
)

// config is the benchmark's protocol.
type config struct {
	cases               []string
	threads             int
	warmup, reps, block int
	seed                uint64
	mnist               string
	python, script      string
	quick               bool // tiny problems, for tests
}

func main() {
	var c config
	var cases string
	flag.StringVar(&cases, "cases", "sorting,jigsaw3,jigsaw4", "comma-separated cases: sorting, jigsaw3, jigsaw4")
	flag.IntVar(&c.threads, "threads", 1, "threads on each side (GOMAXPROCS, torch.set_num_threads)")
	flag.IntVar(&c.warmup, "warmup", 1, "untimed rounds")
	flag.IntVar(&c.reps, "reps", 6, "timed rounds")
	flag.IntVar(&c.block, "block", 4, "steps per block (the first of each block is not timed)")
	flag.Uint64Var(&c.seed, "seed", 1, "seed of weights, inputs and noise")
	flag.StringVar(&c.mnist, "mnist", "/work/shared/data/mnist", "folder with t10k-images-idx3-ubyte.gz (random images if absent)")
	flag.StringVar(&c.python, "python", "/usr/bin/python3", "Python interpreter with torch")
	flag.StringVar(&c.script, "script", filepath.Join("benchmarks", "nn", "nn_torch.py"), "reference script")
	flag.Parse()
	c.cases = strings.Split(cases, ",")
	log.SetFlags(0)
	if err := run(c, os.Stdout); err != nil {
		log.Fatal("nn: ", err)
	}
}

// lr is the Adam learning rate of every case.
const lr = 1e-3

// newCase builds the named case.
func newCase(name string, c config) (*problem, error) {
	if c.quick {
		switch name {
		case "sorting":
			return newSorting(sortingConfig{N: 7, Hidden: 5, Batch: 2, Samples: 2, Iters: 4, Tau: 1}, c.seed, lr)
		case "jigsaw3":
			return newJigsaw(jigsawConfig{P: 3, Crop: 27, Batch: 2, Samples: 2, Iters: 4, Filters: 3, Kernel: 5, Pool: 2, Tau: 1}, c.mnist, c.seed, lr)
		case "jigsaw4":
			return newJigsaw(jigsawConfig{P: 4, Crop: 28, Batch: 2, Samples: 2, Iters: 4, Filters: 3, Kernel: 5, Pool: 2, Tau: 1}, c.mnist, c.seed, lr)
		}
	}
	switch name {
	case "sorting":
		return newSorting(sortingConfig{N: 100, Hidden: 32, Batch: 10, Samples: 5, Iters: 20, Tau: 1}, c.seed, lr)
	case "jigsaw3":
		return newJigsaw(jigsawConfig{P: 3, Crop: 27, Batch: 32, Samples: 5, Iters: 20, Filters: 32, Kernel: 5, Pool: 2, Tau: 1}, c.mnist, c.seed, lr)
	case "jigsaw4":
		return newJigsaw(jigsawConfig{P: 4, Crop: 28, Batch: 32, Samples: 5, Iters: 20, Filters: 32, Kernel: 5, Pool: 2, Tau: 1}, c.mnist, c.seed, lr)
	}
	return nil, fmt.Errorf("unknown case %q (want sorting, jigsaw3 or jigsaw4)", name)
}

// result is one case's measurement.
type result struct {
	p         *problem
	goT       harness.Times
	pyT       *harness.Times
	torch     string
	agreement string
}

func run(c config, w io.Writer) error {
	if c.threads < 1 || c.reps < 1 || c.warmup < 0 || c.block < 1 || len(c.cases) == 0 {
		return fmt.Errorf("bad configuration %+v", c)
	}
	runtime.GOMAXPROCS(c.threads)
	peak, clock, lanes := harness.PeakGFLOPS(c.threads)
	fmt.Fprintf(w, "One training step (forward, backward, Adam) of Sinkhorn networks, float64, %d thread(s) on each side\n\n", c.threads)
	var results []result
	for _, name := range c.cases {
		p, err := newCase(name, c)
		if err != nil {
			return err
		}
		r, err := measure(c, p, w)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		results = append(results, r)
	}
	fmt.Fprintf(w, "\n| case | GFLOP/step | PyTorch wall (ms) | permlab wall (ms) | ratio wall | ratio CPU | permlab GFLOP/s (%% of peak) | PyTorch GFLOP/s |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		gw, gc := harness.Median(r.goT.Wall), harness.Median(r.goT.CPU)
		gf := r.p.flops / 1e9
		goRate := gf / (gw / 1e3)
		pw, ratioW, ratioC, pyRate := "–", "–", "–", "–"
		if r.pyT != nil {
			pwv, pcv := harness.Median(r.pyT.Wall), harness.Median(r.pyT.CPU)
			pw = fmt.Sprintf("%.2f", pwv)
			ratioW = fmt.Sprintf("%.1f×", pwv/gw)
			ratioC = fmt.Sprintf("%.1f×", pcv/gc)
			pyRate = fmt.Sprintf("%.1f", gf/(pwv/1e3))
		}
		fmt.Fprintf(w, "| %s | %.3f | %s | %.2f | %s | %s | %.1f (%.0f%%) | %s |\n",
			r.p.name, gf, pw, gw, ratioW, ratioC, goRate, 100*goRate/peak, pyRate)
	}
	fmt.Fprintf(w, "\nMedians of %d timed steps per side (%d rounds of blocks of %d, the first step of each block untimed) after %d warm-up round(s); load average %s on %d CPUs.\n",
		c.reps*max(c.block-1, 1), c.reps, c.block, c.warmup, harness.LoadAvg(1), runtime.NumCPU())
	fmt.Fprintf(w, "Peak %.1f GFLOP/s = %d core(s) × %d flops/cycle (two %d-wide FMA units) × %.2f GHz (/proc/cpuinfo).\n", peak, c.threads, 4*lanes, lanes, clock)
	fmt.Fprintln(w, flopNote)
	for _, r := range results {
		fmt.Fprintf(w, "- %s: %s.", r.p.name, r.p.desc)
		if r.agreement != "" {
			fmt.Fprintf(w, " %s", r.agreement)
		}
		fmt.Fprintln(w)
	}
	return nil
}

// measure checks one case against PyTorch and times it.
func measure(c config, p *problem, w io.Writer) (result, error) {
	r := result{p: p}
	dir, err := os.MkdirTemp("", "permlab-nn-bench-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	if err := writeProblem(dir, c, p); err != nil {
		return r, err
	}
	// The Go result of the check step, from the initial weights.
	loss, err := p.lossGrad()
	if err != nil {
		return r, err
	}
	var grads, after []float64
	for _, q := range p.params {
		grads = append(grads, q.Grad.Data...)
	}
	if err := p.opt.Step(p.lr); err != nil {
		return r, err
	}
	for _, q := range p.params {
		after = append(after, q.Value.Data...)
	}

	py, why := startPython(c, dir)
	if py == nil {
		fmt.Fprintf(w, "%s: PyTorch reference not run: %s\n", p.name, why)
		r.goT, err = harness.Measure(timed(p), c.warmup*c.block, c.reps*c.block)
		return r, err
	}
	defer py.Close()
	r.torch = py.Torch
	r.agreement, err = compare(py, dir, p, loss, grads, after)
	if err != nil {
		return r, err
	}
	fmt.Fprintf(w, "%s: PyTorch %s, %d thread(s), %s; %s\n%s\n", p.name, py.Torch, py.Threads, strings.Join(py.Env, " "), r.agreement, py.BLASNote())
	goT, pyT, err := harness.InterleaveBlocks(timed(p), py.Step, c.warmup, c.reps, c.block, 0)
	if err != nil {
		return r, err
	}
	r.goT, r.pyT = goT, &pyT
	return r, nil
}

func timed(p *problem) harness.Step {
	return harness.Timed(func() error {
		_, err := p.trainStep()
		return err
	})
}

// writeProblem writes header.json, the parameters and the inputs.
func writeProblem(dir string, c config, p *problem) error {
	type entry struct {
		Name  string `json:"name"`
		Shape []int  `json:"shape"`
		File  string `json:"file"`
	}
	h := map[string]any{"case": p.name, "threads": c.threads, "lr": p.lr}
	for k, v := range p.hyper {
		h[k] = v
	}
	var params, inputs []entry
	for i, q := range p.params {
		e := entry{q.Name, q.Value.Shape, fmt.Sprintf("param%d.f64", i)}
		if err := harness.WriteF64(filepath.Join(dir, e.File), q.Value.Data); err != nil {
			return err
		}
		params = append(params, e)
	}
	names := make([]string, 0, len(p.inputs))
	for k := range p.inputs {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		e := entry{k, p.inputs[k].Shape, k + ".f64"}
		if err := harness.WriteF64(filepath.Join(dir, e.File), p.inputs[k].Data); err != nil {
			return err
		}
		inputs = append(inputs, e)
	}
	h["params"], h["inputs"] = params, inputs
	b, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "header.json"), b, 0o644)
}

// startPython starts the reference, or returns nil and the reason why not.
func startPython(c config, dir string) (*harness.Python, string) {
	return harness.StartTorch(c.python, c.script, dir, c.threads)
}

// tolerance of the check: relative to the loss, and to each parameter's
// largest gradient or weight.
const tolerance = 1e-10

// compare runs the check step on the Python side and compares it with Go's.
func compare(py *harness.Python, dir string, p *problem, loss float64, grads, after []float64) (string, error) {
	var res struct {
		Loss  float64 `json:"loss"`
		Error string  `json:"error"`
	}
	if err := py.Call("check", &res); err != nil {
		return "", err
	}
	if res.Error != "" {
		return "", errors.New(res.Error)
	}
	tg, err := harness.ReadF64(filepath.Join(dir, "grad_torch.f64"), len(grads))
	if err != nil {
		return "", err
	}
	ta, err := harness.ReadF64(filepath.Join(dir, "after_torch.f64"), len(after))
	if err != nil {
		return "", err
	}
	dl := math.Abs(loss-res.Loss) / math.Abs(res.Loss)
	dg := harness.MaxRelDiff(p.params, grads, tg)
	da := harness.MaxRelDiff(p.params, after, ta)
	line := fmt.Sprintf("agreement: loss %.1e, gradients %.1e, weights after Adam %.1e (relative)", dl, dg, da)
	if !(dl <= tolerance && dg <= tolerance && da <= tolerance) {
		return "", fmt.Errorf("Go and PyTorch disagree (loss %v against %v): %s", loss, res.Loss, line)
	}
	return line, nil
}
