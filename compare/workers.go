package compare

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
)

// EnvPinCPUs names the CPUs a worker started by RunWorkers pins itself to
// (a comma-separated list of CPU numbers); see PinFromEnv.
const EnvPinCPUs = "PERMLAB_PIN_CPUS"

// Workers runs a grid on one machine as k shards in k processes, each pinned
// to its own CPUs: the same code path as a cluster job array, on a laptop.
type Workers struct {
	// Count is the number of worker processes (>= 1).
	Count int
	// CPUsPerWorker is the number of CPUs each worker is pinned to; 0 means
	// no pinning. Count·CPUsPerWorker CPUs must exist.
	CPUsPerWorker int
	// Command is the program and the arguments every worker runs; the
	// worker's shard is passed as the two extra arguments "-shard i/n".
	Command []string
	// Stdout and Stderr receive the workers' output, each line prefixed with
	// "[i] " (nil discards it).
	Stdout, Stderr io.Writer
}

// Run starts the workers, waits for all of them and returns an error naming
// every worker that failed. Cancelling ctx kills the workers; their
// finished runs stay in their results files.
func (w *Workers) Run(ctx context.Context) error {
	if w.Count < 1 || len(w.Command) == 0 {
		return errors.New("compare: Workers needs Count >= 1 and a command")
	}
	if w.CPUsPerWorker < 0 {
		return fmt.Errorf("compare: CPUsPerWorker must be >= 0, got %d", w.CPUsPerWorker)
	}
	var mu sync.Mutex
	errs := make([]error, w.Count)
	var wg sync.WaitGroup
	for i := range w.Count {
		args := append(append([]string(nil), w.Command[1:]...), "-shard", fmt.Sprintf("%d/%d", i, w.Count))
		cmd := exec.CommandContext(ctx, w.Command[0], args...)
		cmd.Env = os.Environ()
		if w.CPUsPerWorker > 0 {
			cpus := make([]string, w.CPUsPerWorker)
			for k := range cpus {
				cpus[k] = strconv.Itoa(i*w.CPUsPerWorker + k)
			}
			cmd.Env = append(cmd.Env, EnvPinCPUs+"="+strings.Join(cpus, ","),
				"GOMAXPROCS="+strconv.Itoa(w.CPUsPerWorker))
		}
		cmd.Stdout = &prefixWriter{w: w.Stdout, prefix: fmt.Sprintf("[%d] ", i), mu: &mu}
		cmd.Stderr = &prefixWriter{w: w.Stderr, prefix: fmt.Sprintf("[%d] ", i), mu: &mu}
		if err := cmd.Start(); err != nil {
			errs[i] = fmt.Errorf("worker %d: %w", i, err)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := cmd.Wait(); err != nil {
				errs[i] = fmt.Errorf("worker %d: %w", i, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// prefixWriter writes whole lines with a prefix under a shared lock.
type prefixWriter struct {
	w      io.Writer
	prefix string
	mu     *sync.Mutex
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	if p.w == nil {
		return len(b), nil
	}
	p.buf = append(p.buf, b...)
	for {
		i := strings.IndexByte(string(p.buf), '\n')
		if i < 0 {
			break
		}
		p.mu.Lock()
		_, err := fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf[:i])
		p.mu.Unlock()
		p.buf = p.buf[i+1:]
		if err != nil {
			return len(b), err
		}
	}
	return len(b), nil
}

// PinFromEnv pins every thread of the calling process to the CPUs listed in
// PERMLAB_PIN_CPUS, if it is set; threads started later inherit the mask.
// A worker's main calls it first thing. It returns the CPUs, or nil when the
// variable is unset.
func PinFromEnv() ([]int, error) {
	v, ok := os.LookupEnv(EnvPinCPUs)
	if !ok || strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var cpus []int
	for _, f := range strings.Split(v, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || c < 0 {
			return nil, fmt.Errorf("compare: %s = %q: want CPU numbers separated by commas", EnvPinCPUs, v)
		}
		cpus = append(cpus, c)
	}
	if err := pin(cpus); err != nil {
		return nil, fmt.Errorf("compare: pinning to CPUs %v: %w", cpus, err)
	}
	return cpus, nil
}
