package harness

import (
	"os"
	"slices"
	"strings"
	"time"

	"github.com/permlab/permlab/internal/cputime"
)

// Times holds per-step wall and CPU times in milliseconds.
type Times struct{ Wall, CPU []float64 }

func (t *Times) add(wall, cpu float64) {
	t.Wall, t.CPU = append(t.Wall, wall), append(t.CPU, cpu)
}

// A Step runs one step of an implementation and returns its wall time and
// CPU time in milliseconds.
type Step func() (wall, cpu float64, err error)

// Timed returns a Step that runs f in this process and measures its wall
// time and the CPU time this process spends meanwhile, summed over its
// threads.
func Timed(f func() error) Step {
	return func() (wall, cpu float64, err error) {
		c0, w0 := cputime.Process(), time.Now()
		err = f()
		return ms(time.Since(w0)), ms(cputime.Process() - c0), err
	}
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// Measure runs s warmup+reps times and returns the times of the last reps
// runs.
func Measure(s Step, warmup, reps int) (Times, error) {
	var t Times
	for i := 0; i < warmup+reps; i++ {
		wall, cpu, err := s()
		if err != nil {
			return t, err
		}
		if i >= warmup {
			t.add(wall, cpu)
		}
	}
	return t, nil
}

// Interleave runs warmup+reps rounds of one step of a and one step of b, a
// first in even rounds and b first in odd ones, so that load from other
// processes affects both alike. It sleeps for pause after each step, if
// pause is positive, and returns the times of the last reps rounds.
func Interleave(a, b Step, warmup, reps int, pause time.Duration) (ta, tb Times, err error) {
	return InterleaveBlocks(a, b, warmup, reps, 1, pause)
}

// InterleaveBlocks runs warmup+reps rounds of block consecutive steps of a
// and block consecutive steps of b, a first in even rounds and b first in
// odd ones, sleeping for pause after each block. Within a block the steps
// run back to back, as in a training loop; the first step of a block is
// not timed when block > 1, since it pays for waking threads (and, on a
// virtual machine, CPUs) that went idle during the pause. It returns the
// times of the timed steps of the last reps rounds. Block 1 is Interleave.
func InterleaveBlocks(a, b Step, warmup, reps, block int, pause time.Duration) (ta, tb Times, err error) {
	block = max(block, 1)
	for i := 0; i < warmup+reps; i++ {
		steps, dst := [2]Step{a, b}, [2]*Times{&ta, &tb}
		if i%2 == 1 {
			steps[0], steps[1] = steps[1], steps[0]
			dst[0], dst[1] = dst[1], dst[0]
		}
		for j, s := range steps {
			for k := 0; k < block; k++ {
				wall, cpu, err := s()
				if err != nil {
					return ta, tb, err
				}
				if i >= warmup && (block == 1 || k > 0) {
					dst[j].add(wall, cpu)
				}
			}
			if pause > 0 {
				time.Sleep(pause)
			}
		}
	}
	return ta, tb, nil
}

// Median returns the median of x, which must not be empty; x is not
// modified.
func Median(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// LoadAvg returns the first n (1 to 3) of the 1, 5 and 15 minute load
// averages as /proc/loadavg gives them, separated by spaces, or "unknown"
// where they cannot be read.
func LoadAvg(n int) string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if n < 1 || n > 3 || len(f) < n {
		return "unknown"
	}
	return strings.Join(f[:n], " ")
}
