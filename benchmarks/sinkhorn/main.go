// Command sinkhorn compares the speed of permlab's differentiable Sinkhorn
// operator, relax.SinkhornVar, with the usual PyTorch implementation: the
// log-domain loop
//
//	z = x / tau
//	for l in range(L):
//	    z = z - torch.logsumexp(z, dim=2, keepdim=True)
//	    z = z - torch.logsumexp(z, dim=1, keepdim=True)
//	S = exp(z)
//
// differentiated by autograd. One step is the forward pass and the backward
// pass of loss = sum(S ⊙ R) for a fixed random R, in float64, on a batch of
// B = 4 matrices of 278×278 (the C. elegans size), L = 20, τ = 0.5, with one
// thread on each side (GOMAXPROCS=1, torch.set_num_threads(1)).
//
// The program draws X and R (standard normal, from -seed), writes them to a
// temporary directory as raw little-endian float64 files described by
// header.json, and starts sinkhorn_torch.py on it in serve mode. It then
//
//   - checks that both sides compute the same thing: S to 1e-12 absolute and
//     the gradient with respect to X to 1e-10 relative to its largest entry
//     (both agree to about 1e-15 in practice);
//   - times the step, alternating one PyTorch step and one Go step (which
//     goes first alternates too) after a warm-up, so that load from other
//     processes affects both alike, and prints the medians of the wall and
//     CPU times, and their ratio, as a markdown table.
//
// With -forward the step is the forward pass alone, S = S^L(X/τ): the
// numeric operator relax.Sinkhorn (relax.SinkhornBatch for B > 1) against
// the same loop under torch.no_grad(), checked on S only. The single-matrix
// comparison is
//
//	go run ./benchmarks/sinkhorn -forward -batch 1
//
// If python3 or torch is missing the program says so and reports the Go
// timing only. Run it from the repository root:
//
//	go run ./benchmarks/sinkhorn
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/benchmarks/internal/harness"
	"github.com/permlab/permlab/relax"
	"gonum.org/v1/gonum/mat"
)

// config is the benchmark's problem and protocol.
type config struct {
	batch, n, iters int
	tau             float64
	seed            uint64
	threads         int
	forward         bool
	warmup, reps    int
	python, script  string
	keep            bool
}

func main() {
	var c config
	flag.IntVar(&c.batch, "batch", 4, "number of matrices")
	flag.IntVar(&c.n, "n", 278, "matrix size")
	flag.IntVar(&c.iters, "iters", 20, "Sinkhorn iterations L")
	flag.Float64Var(&c.tau, "tau", 0.5, "temperature")
	flag.Uint64Var(&c.seed, "seed", 1, "seed of X and R")
	flag.IntVar(&c.threads, "threads", 1, "threads on each side (GOMAXPROCS, torch.set_num_threads)")
	flag.BoolVar(&c.forward, "forward", false, "time the forward pass alone (relax.Sinkhorn, torch.no_grad)")
	flag.IntVar(&c.warmup, "warmup", 3, "untimed steps on each side")
	flag.IntVar(&c.reps, "reps", 21, "timed steps on each side")
	flag.StringVar(&c.python, "python", "/usr/bin/python3", "Python interpreter with torch")
	flag.StringVar(&c.script, "script", filepath.Join("benchmarks", "sinkhorn", "sinkhorn_torch.py"), "reference script")
	flag.BoolVar(&c.keep, "keep", false, "keep the temporary directory")
	flag.Parse()
	log.SetFlags(0)
	if err := run(c, os.Stdout); err != nil {
		log.Fatal("sinkhorn: ", err)
	}
}

func run(c config, w io.Writer) error {
	if c.batch < 1 || c.n < 1 || c.iters < 1 || c.threads < 1 || c.reps < 1 || c.warmup < 0 {
		return fmt.Errorf("bad configuration %+v", c)
	}
	runtime.GOMAXPROCS(c.threads)
	x, r := problem(c)
	dir, err := os.MkdirTemp("", "permlab-sinkhorn-bench-")
	if err != nil {
		return err
	}
	if c.keep {
		fmt.Fprintf(w, "data in %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	if err := writeProblem(dir, c, x, r); err != nil {
		return err
	}
	st := newStepper(c, x, r)
	s, grad, err := st.result()
	if err != nil {
		return err
	}

	what := "Sinkhorn forward+backward of sum(S ⊙ R), S = S^L(X/τ)"
	if c.forward {
		what = "Sinkhorn forward S = S^L(X/τ)"
	}
	fmt.Fprintf(w, "%s: batch %d × %d×%d, L = %d, τ = %g, float64, %d thread(s)\n\n",
		what, c.batch, c.n, c.n, c.iters, c.tau, c.threads)
	py, why := startPython(c, dir)
	if py == nil {
		fmt.Fprintf(w, "PyTorch reference not run: %s\n\n", why)
		goT, err := harness.Measure(st.timed(), c.warmup, c.reps)
		if err != nil {
			return err
		}
		table(w, c, goT, nil, "")
		return nil
	}
	defer py.Close()
	fmt.Fprintf(w, "PyTorch %s, %d thread(s), %s\n%s\n\n", py.Torch, py.Threads, c.python, py.BLASNote())
	agree, err := compare(py, dir, s, grad)
	if err != nil {
		return err
	}
	goT, pyT, err := harness.Interleave(st.timed(), py.Step, c.warmup, c.reps, 0)
	if err != nil {
		return err
	}
	table(w, c, goT, &pyT, agree)
	return nil
}

// problem draws X and R, each B×N×N standard normal.
func problem(c config) (x, r []float64) {
	rng := rand.New(rand.NewPCG(c.seed, 0x5117))
	m := c.batch * c.n * c.n
	x, r = make([]float64, m), make([]float64, m)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	for i := range r {
		r[i] = rng.NormFloat64()
	}
	return x, r
}

// stepper runs the Go step on a reused tape.
type stepper struct {
	c    config
	tape *ad.Tape
	x, r *ad.Tensor
	xs   []mat.Matrix // the matrices of x, for the forward-only step
}

func newStepper(c config, x, r []float64) *stepper {
	shape := []int{c.batch, c.n, c.n}
	xs := make([]mat.Matrix, c.batch)
	nn := c.n * c.n
	for k := range xs {
		xs[k] = mat.NewDense(c.n, c.n, x[k*nn:(k+1)*nn])
	}
	return &stepper{c: c, tape: ad.NewTape(), x: &ad.Tensor{Shape: shape, Data: x}, r: &ad.Tensor{Shape: shape, Data: r}, xs: xs}
}

// forward computes S alone with the numeric operator.
func (s *stepper) forward() ([]*mat.Dense, error) {
	if len(s.xs) == 1 {
		d, err := relax.Sinkhorn(s.xs[0], s.c.tau, s.c.iters)
		return []*mat.Dense{d}, err
	}
	return relax.SinkhornBatch(s.xs, s.c.tau, s.c.iters)
}

// step computes S, the loss and its gradient; the values stay on the tape
// until the next step.
func (s *stepper) step() (sv, xv *ad.Var, err error) {
	t := s.tape
	t.Reset()
	xv = t.Variable(s.x)
	sv = relax.SinkhornVar(xv, s.c.tau, s.c.iters)
	loss := ad.Sum(ad.Mul(sv, t.Const(s.r)))
	return sv, xv, t.Backward(loss)
}

// result returns copies of S and of the gradient with respect to X (nil
// in forward mode).
func (s *stepper) result() (sv, grad []float64, err error) {
	if s.c.forward {
		ds, err := s.forward()
		if err != nil {
			return nil, nil, err
		}
		for _, d := range ds {
			sv = append(sv, d.RawMatrix().Data...)
		}
		return sv, nil, nil
	}
	v, x, err := s.step()
	if err != nil {
		return nil, nil, err
	}
	return slices.Clone(v.Value()), slices.Clone(x.Grad()), nil
}

func writeProblem(dir string, c config, x, r []float64) error {
	h := map[string]any{
		"batch": c.batch, "n": c.n, "iters": c.iters, "tau": c.tau, "threads": c.threads, "forward": c.forward,
		"x": "x.f64", "r": "r.f64",
	}
	b, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "header.json"), b, 0o644); err != nil {
		return err
	}
	if err := harness.WriteF64(filepath.Join(dir, "x.f64"), x); err != nil {
		return err
	}
	return harness.WriteF64(filepath.Join(dir, "r.f64"), r)
}

// startPython starts the reference, or returns nil and the reason why not.
func startPython(c config, dir string) (*harness.Python, string) {
	if err := harness.CheckPython(c.python, c.script); err != nil {
		return nil, err.Error()
	}
	py, err := harness.StartPython(c.python, c.script, dir, nil)
	if err != nil {
		return nil, fmt.Sprintf("%s %s did not start: %v (is torch installed?)", c.python, c.script, err)
	}
	return py, ""
}

// compare checks that Go and PyTorch agree on S and on the gradient, and
// returns a line describing the agreement.
func compare(py *harness.Python, dir string, s, grad []float64) (string, error) {
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
	ts, err := harness.ReadF64(filepath.Join(dir, "s_torch.f64"), len(s))
	if err != nil {
		return "", err
	}
	ds := 0.0
	for i := range s {
		ds = math.Max(ds, math.Abs(s[i]-ts[i]))
	}
	if grad == nil {
		line := fmt.Sprintf("Agreement on the same X: max |S_go − S_torch| = %.1e.", ds)
		if !(ds <= 1e-12) {
			return "", fmt.Errorf("Go and PyTorch disagree: %s", line)
		}
		return line, nil
	}
	tg, err := harness.ReadF64(filepath.Join(dir, "grad_torch.f64"), len(grad))
	if err != nil {
		return "", err
	}
	dg, gmax := 0.0, 0.0
	for i := range grad {
		dg = math.Max(dg, math.Abs(grad[i]-tg[i]))
		gmax = math.Max(gmax, math.Abs(tg[i]))
	}
	rel := dg / math.Max(gmax, math.SmallestNonzeroFloat64)
	line := fmt.Sprintf("Agreement on the same X and R: max |S_go − S_torch| = %.1e, max |∇_go − ∇_torch| / max |∇_torch| = %.1e.", ds, rel)
	if !(ds <= 1e-12) || !(rel <= 1e-10) {
		return "", fmt.Errorf("Go and PyTorch disagree: %s", line)
	}
	return line, nil
}

// timed is the Go step as a harness.Step.
func (s *stepper) timed() harness.Step {
	return harness.Timed(func() error {
		if s.c.forward {
			_, err := s.forward()
			return err
		}
		_, _, err := s.step()
		return err
	})
}

// table prints the medians as markdown; pyT may be nil.
func table(w io.Writer, c config, goT harness.Times, pyT *harness.Times, agree string) {
	fmt.Fprintf(w, "| implementation | median wall (ms) | median CPU (ms) |\n|---|---:|---:|\n")
	gw, gc := harness.Median(goT.Wall), harness.Median(goT.CPU)
	pyName, goName := "PyTorch log-domain loop + autograd", "permlab relax.SinkhornVar"
	if c.forward {
		pyName, goName = "PyTorch log-domain loop, no_grad", "permlab relax.Sinkhorn"
		if c.batch > 1 {
			goName = "permlab relax.SinkhornBatch"
		}
	}
	if pyT != nil {
		pw, pc := harness.Median(pyT.Wall), harness.Median(pyT.CPU)
		fmt.Fprintf(w, "| %s | %.3f | %.3f |\n", pyName, pw, pc)
		fmt.Fprintf(w, "| %s | %.3f | %.3f |\n", goName, gw, gc)
		fmt.Fprintf(w, "| ratio PyTorch / Go | %.1f× | %.1f× |\n", pw/gw, pc/gc)
	} else {
		fmt.Fprintf(w, "| %s | %.3f | %.3f |\n", goName, gw, gc)
	}
	fmt.Fprintf(w, "\n%d timed steps per side after %d warm-up steps; load average %s on %d CPUs.\n",
		c.reps, c.warmup, harness.LoadAvg(1), runtime.NumCPU())
	if agree != "" {
		fmt.Fprintln(w, agree)
	}
}
