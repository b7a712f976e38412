package harness

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Python is a reference implementation running as a child process in serve
// mode. It reads one command per line on its standard input and answers
// each with one line of JSON on its standard output; its first line, before
// any command, is {"ready": true, "torch": version, "threads": n, "blas":
// [paths]}, or
// {"error": message} if it cannot run. The command "quit" ends it.
type Python struct {
	// Torch and Threads are the torch version and the thread count the
	// reference reported when it started.
	Torch   string
	Threads int
	// BLAS lists the BLAS libraries the reference found mapped into its
	// process after a product (empty if it did not say).
	BLAS []string
	// Env lists the settings in effect for the keys of the defaults
	// passed to StartPython, as KEY=VALUE.
	Env []string

	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

// CheckPython returns an error saying why the reference cannot run if the
// interpreter python or the script does not exist, and nil otherwise.
func CheckPython(python, script string) error {
	if _, err := os.Stat(python); err != nil {
		return fmt.Errorf("no Python interpreter at %s (%v)", python, err)
	}
	if _, err := os.Stat(script); err != nil {
		return fmt.Errorf("reference script %s not found (run from the repository root or set -script)", script)
	}
	return nil
}

// StartPython runs "python script dir --serve" and waits for the reference
// to say it is ready. Its standard error goes to this process's.
//
// defaults are KEY=VALUE settings for the reference's environment, each of
// which applies only if this process's environment does not set KEY: the
// caller's setting wins.
func StartPython(python, script, dir string, defaults []string) (*Python, error) {
	cmd := exec.Command(python, script, dir, "--serve")
	cmd.Stderr = os.Stderr
	cmd.Env = os.Environ()
	var env []string
	for _, kv := range defaults {
		k, _, _ := strings.Cut(kv, "=")
		if v, ok := os.LookupEnv(k); ok {
			kv = k + "=" + v
		} else {
			cmd.Env = append(cmd.Env, kv)
		}
		env = append(env, kv)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	py := &Python{Env: env, cmd: cmd, in: in, out: bufio.NewScanner(out)}
	var ready struct {
		Ready   bool     `json:"ready"`
		Torch   string   `json:"torch"`
		Threads int      `json:"threads"`
		BLAS    []string `json:"blas"`
		Error   string   `json:"error"`
	}
	err = py.read(&ready)
	if err == nil && !ready.Ready {
		err = errors.New(ready.Error)
		if ready.Error == "" {
			err = errors.New("no ready message")
		}
	}
	if err != nil {
		py.Close()
		return nil, err
	}
	py.Torch, py.Threads, py.BLAS = ready.Torch, ready.Threads, ready.BLAS
	return py, nil
}

// read decodes the next line of the reference's output into v.
func (py *Python) read(v any) error {
	if !py.out.Scan() {
		if err := py.out.Err(); err != nil {
			return err
		}
		return errors.New("the reference exited")
	}
	return json.Unmarshal(py.out.Bytes(), v)
}

// Call sends the command cmd and decodes the answer into v.
func (py *Python) Call(cmd string, v any) error {
	if _, err := fmt.Fprintln(py.in, cmd); err != nil {
		return fmt.Errorf("reference: %s: %w", cmd, err)
	}
	if err := py.read(v); err != nil {
		return fmt.Errorf("reference: %s: %w", cmd, err)
	}
	return nil
}

// Step sends "step", to which the reference answers with the wall and CPU
// time in seconds of one step, {"wall": s, "cpu": s}, and returns them in
// milliseconds. It has the type of a Step.
func (py *Python) Step() (wall, cpu float64, err error) {
	var r struct {
		Wall  float64 `json:"wall"`
		CPU   float64 `json:"cpu"`
		Error string  `json:"error"`
	}
	if err := py.Call("step", &r); err != nil {
		return 0, 0, err
	}
	if r.Error != "" {
		return 0, 0, errors.New("reference: " + r.Error)
	}
	return 1e3 * r.Wall, 1e3 * r.CPU, nil
}

// Close asks the reference to quit and waits for it to exit, killing it
// if it has not exited after 10 seconds.
func (py *Python) Close() {
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

// StartTorch starts a PyTorch reference script with threads threads, or
// returns nil and the reason why not. OPENBLAS_NUM_THREADS is set because
// Debian's torch calls a pthreads OpenBLAS that starts one thread per core
// whatever torch.set_num_threads says; OMP_WAIT_POLICY=PASSIVE because on a
// loaded machine OpenMP's default of spinning before sleeping slowed
// PyTorch's two-thread steps about ten times
// (benchmarks/nn/results/threads2_omp_default.md), and PyTorch gets the
// better policy.
func StartTorch(python, script, dir string, threads int) (*Python, string) {
	if err := CheckPython(python, script); err != nil {
		return nil, err.Error()
	}
	g := strconv.Itoa(threads)
	py, err := StartPython(python, script, dir,
		[]string{"OMP_NUM_THREADS=" + g, "OPENBLAS_NUM_THREADS=" + g, "MKL_NUM_THREADS=" + g, "OMP_WAIT_POLICY=PASSIVE"})
	if err != nil {
		return nil, fmt.Sprintf("%s %s did not start: %v (is torch installed?)", python, script, err)
	}
	return py, ""
}

// BLASNote is a line for a benchmark's header that names the reference's
// BLAS, with a warning where it is the reference implementation (Debian's
// libblas3, which torch calls when libopenblas0 is not installed): its
// products are several times slower than OpenBLAS's, so ratios against it
// flatter permlab and must not be reported.
func (py *Python) BLASNote() string {
	if len(py.BLAS) == 0 {
		return "BLAS: not reported"
	}
	note := "BLAS: " + strings.Join(py.BLAS, ", ")
	if ReferenceBLAS(py.BLAS) {
		note += "\nWARNING: PyTorch runs on the reference BLAS; before reporting these ratios, install OpenBLAS " +
			"(apt-get install libopenblas0-pthread) or, where it is installed, point libblas.so.3 at it " +
			"(update-alternatives --config libblas.so.3-$(uname -m)-linux-gnu)"
	}
	return note
}

// ReferenceBLAS reports whether the libblas.so that torch calls, among
// libs, is the reference implementation: a libblas.so whose path names no
// optimized BLAS (OpenBLAS, MKL, BLIS), as Debian's libblas3 in
// /usr/lib/<arch>/blas/. The other libraries do not count: NumPy maps
// OpenBLAS itself even when libblas.so.3 points at the reference BLAS.
func ReferenceBLAS(libs []string) bool {
	for _, l := range libs {
		name := l[strings.LastIndex(l, "/")+1:]
		if !strings.HasPrefix(name, "libblas.so") {
			continue
		}
		if !strings.Contains(l, "openblas") && !strings.Contains(l, "mkl") && !strings.Contains(l, "blis") {
			return true
		}
	}
	return false
}
