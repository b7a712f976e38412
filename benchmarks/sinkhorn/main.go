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
// If python3 or torch is missing the program says so and reports the Go
// timing only. Run it from the repository root:
//
//	go run ./benchmarks/sinkhorn
package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/relax"
)

// config is the benchmark's problem and protocol.
type config struct {
	batch, n, iters int
	tau             float64
	seed            uint64
	threads         int
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

	fmt.Fprintf(w, "Sinkhorn forward+backward of sum(S ⊙ R), S = S^L(X/τ): batch %d × %d×%d, L = %d, τ = %g, float64, %d thread(s)\n\n",
		c.batch, c.n, c.n, c.iters, c.tau, c.threads)
	py, why := startPython(c, dir)
	if py == nil {
		fmt.Fprintf(w, "PyTorch reference not run: %s\n\n", why)
		goT, err := timeGo(st, c.warmup, c.reps)
		if err != nil {
			return err
		}
		table(w, c, goT, nil, "")
		return nil
	}
	defer py.close()
	fmt.Fprintf(w, "PyTorch %s, %d thread(s), %s\n\n", py.version, py.threads, c.python)
	agree, err := compare(py, dir, s, grad)
	if err != nil {
		return err
	}
	goT, pyT, err := interleave(st, py, c.warmup, c.reps)
	if err != nil {
		return err
	}
	table(w, c, *goT, pyT, agree)
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
}

func newStepper(c config, x, r []float64) *stepper {
	shape := []int{c.batch, c.n, c.n}
	return &stepper{c: c, tape: ad.NewTape(), x: &ad.Tensor{Shape: shape, Data: x}, r: &ad.Tensor{Shape: shape, Data: r}}
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

// result returns copies of S and of the gradient with respect to X.
func (s *stepper) result() (sv, grad []float64, err error) {
	v, x, err := s.step()
	if err != nil {
		return nil, nil, err
	}
	return slices.Clone(v.Value()), slices.Clone(x.Grad()), nil
}

func writeProblem(dir string, c config, x, r []float64) error {
	h := map[string]any{
		"batch": c.batch, "n": c.n, "iters": c.iters, "tau": c.tau, "threads": c.threads,
		"x": "x.f64", "r": "r.f64",
	}
	b, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "header.json"), b, 0o644); err != nil {
		return err
	}
	if err := writeF64(filepath.Join(dir, "x.f64"), x); err != nil {
		return err
	}
	return writeF64(filepath.Join(dir, "r.f64"), r)
}

func writeF64(path string, data []float64) error {
	buf := make([]byte, 8*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint64(buf[8*i:], math.Float64bits(v))
	}
	return os.WriteFile(path, buf, 0o644)
}

func readF64(path string, want int) ([]float64, error) {
	buf, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(buf) != 8*want {
		return nil, fmt.Errorf("%s: %d bytes, want %d float64", path, len(buf), want)
	}
	out := make([]float64, want)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(buf[8*i:]))
	}
	return out, nil
}

// python is the reference process in serve mode.
type python struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	out     *bufio.Scanner
	version string
	threads int
}

// startPython starts the reference, or returns nil and the reason why not.
func startPython(c config, dir string) (*python, string) {
	if _, err := os.Stat(c.python); err != nil {
		return nil, fmt.Sprintf("no Python interpreter at %s (%v)", c.python, err)
	}
	if _, err := os.Stat(c.script); err != nil {
		return nil, fmt.Sprintf("reference script %s not found (run from the repository root or set -script)", c.script)
	}
	cmd := exec.Command(c.python, c.script, dir, "--serve")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err.Error()
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err.Error()
	}
	if err := cmd.Start(); err != nil {
		return nil, err.Error()
	}
	py := &python{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	var ready struct {
		Ready   bool   `json:"ready"`
		Torch   string `json:"torch"`
		Threads int    `json:"threads"`
		Error   string `json:"error"`
	}
	err = py.read(&ready)
	if err == nil && !ready.Ready {
		err = errors.New(ready.Error)
	}
	if err != nil {
		py.close()
		return nil, fmt.Sprintf("%s %s did not start: %v (is torch installed?)", c.python, c.script, err)
	}
	py.version, py.threads = ready.Torch, ready.Threads
	return py, ""
}

func (py *python) read(v any) error {
	if !py.out.Scan() {
		if err := py.out.Err(); err != nil {
			return err
		}
		return errors.New("reference exited")
	}
	return json.Unmarshal(py.out.Bytes(), v)
}

func (py *python) call(cmd string, v any) error {
	if _, err := fmt.Fprintln(py.in, cmd); err != nil {
		return err
	}
	return py.read(v)
}

func (py *python) close() {
	fmt.Fprintln(py.in, "quit")
	py.in.Close()
	done := make(chan struct{})
	go func() { py.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		py.cmd.Process.Kill()
		<-done
	}
}

// compare checks that Go and PyTorch agree on S and on the gradient, and
// returns a line describing the agreement.
func compare(py *python, dir string, s, grad []float64) (string, error) {
	var res struct {
		Loss  float64 `json:"loss"`
		Error string  `json:"error"`
	}
	if err := py.call("check", &res); err != nil {
		return "", err
	}
	if res.Error != "" {
		return "", errors.New(res.Error)
	}
	ts, err := readF64(filepath.Join(dir, "s_torch.f64"), len(s))
	if err != nil {
		return "", err
	}
	tg, err := readF64(filepath.Join(dir, "grad_torch.f64"), len(grad))
	if err != nil {
		return "", err
	}
	ds, dg, gmax := 0.0, 0.0, 0.0
	for i := range s {
		ds = math.Max(ds, math.Abs(s[i]-ts[i]))
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

// times holds per-step wall and CPU times in milliseconds.
type times struct{ wall, cpu []float64 }

// cpuTime is the CPU time of this process so far, all threads.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func (s *stepper) timed() (wall, cpu float64, err error) {
	c0, w0 := cpuTime(), time.Now()
	_, _, err = s.step()
	return ms(time.Since(w0)), ms(cpuTime() - c0), err
}

func (py *python) timed() (wall, cpu float64, err error) {
	var res struct{ Wall, CPU float64 }
	if err := py.call("step", &res); err != nil {
		return 0, 0, err
	}
	return 1e3 * res.Wall, 1e3 * res.CPU, nil
}

func timeGo(s *stepper, warmup, reps int) (times, error) {
	var t times
	for k := 0; k < warmup+reps; k++ {
		wall, cpu, err := s.timed()
		if err != nil {
			return t, err
		}
		if k >= warmup {
			t.wall = append(t.wall, wall)
			t.cpu = append(t.cpu, cpu)
		}
	}
	return t, nil
}

// interleave alternates Go and PyTorch steps, swapping which goes first.
func interleave(s *stepper, py *python, warmup, reps int) (goT, pyT *times, err error) {
	goT, pyT = new(times), new(times)
	for k := 0; k < warmup+reps; k++ {
		sides := []func() (float64, float64, error){s.timed, py.timed}
		dst := []*times{goT, pyT}
		if k%2 == 1 {
			sides[0], sides[1] = sides[1], sides[0]
			dst[0], dst[1] = dst[1], dst[0]
		}
		for i, f := range sides {
			wall, cpu, err := f()
			if err != nil {
				return nil, nil, err
			}
			if k >= warmup {
				dst[i].wall = append(dst[i].wall, wall)
				dst[i].cpu = append(dst[i].cpu, cpu)
			}
		}
	}
	return goT, pyT, nil
}

func median(x []float64) float64 {
	y := slices.Clone(x)
	slices.Sort(y)
	n := len(y)
	if n%2 == 1 {
		return y[n/2]
	}
	return (y[n/2-1] + y[n/2]) / 2
}

// loadAvg returns the 1-minute load average, or "?".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// table prints the medians as markdown; pyT may be nil.
func table(w io.Writer, c config, goT times, pyT *times, agree string) {
	fmt.Fprintf(w, "| implementation | median wall (ms) | median CPU (ms) |\n|---|---:|---:|\n")
	gw, gc := median(goT.wall), median(goT.cpu)
	if pyT != nil {
		pw, pc := median(pyT.wall), median(pyT.cpu)
		fmt.Fprintf(w, "| PyTorch log-domain loop + autograd | %.2f | %.2f |\n", pw, pc)
		fmt.Fprintf(w, "| permlab relax.SinkhornVar | %.2f | %.2f |\n", gw, gc)
		fmt.Fprintf(w, "| ratio PyTorch / Go | %.1f× | %.1f× |\n", pw/gw, pc/gc)
	} else {
		fmt.Fprintf(w, "| permlab relax.SinkhornVar | %.2f | %.2f |\n", gw, gc)
	}
	fmt.Fprintf(w, "\n%d timed steps per side after %d warm-up steps; load average %s on %d CPUs.\n",
		c.reps, c.warmup, loadAvg(), runtime.NumCPU())
	if agree != "" {
		fmt.Fprintln(w, agree)
	}
}
