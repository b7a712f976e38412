package train

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress shows a run's progress on a terminal as a bar over all the
// examples of all epochs, described by the epoch and the running mean loss
// of the epoch, with the rate in examples per second; on any other writer
// (a log file) it prints a line every tenth of an epoch and at the end of
// each. A nil *progress shows nothing.
type progress struct {
	w     io.Writer
	bar   *progressbar.ProgressBar // nil unless w is a terminal
	r     *runner
	sum   float64 // loss summed over the current epoch
	count int     // steps in the current epoch so far

	examples int       // examples seen since since
	since    time.Time // when this call of Run started
}

func newProgress(w io.Writer, r *runner) *progress {
	if w == nil {
		return nil
	}
	p := &progress{w: w, r: r, since: time.Now()}
	if isTerminal(w) {
		o := r.o
		total := int64(o.N) * int64(o.Epochs)
		p.bar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetWidth(30),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("ex"),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionShowDescriptionAtLineEnd(),
			progressbar.OptionThrottle(200*time.Millisecond),
		)
		// A resumed run starts the bar where the checkpoint left off.
		done := int64(r.step/r.perEpoch)*int64(o.N) + int64(r.step%r.perEpoch*o.BatchSize)
		p.bar.Set64(done)
	}
	// Resume the running mean of a resumed epoch.
	for _, v := range r.losses[r.step/r.perEpoch*r.perEpoch : r.step] {
		p.sum += v
		p.count++
	}
	return p
}

// step records a finished step of n examples with loss v.
func (p *progress) step(n int, v float64) {
	if p == nil {
		return
	}
	p.sum += v
	p.count++
	r := p.r
	e := (r.step - 1) / r.perEpoch
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("epoch %d/%d loss %.4f", e+1, r.o.Epochs, p.sum/float64(p.count)))
		p.bar.Add(n)
		return
	}
	// In a log, a line every tenth of an epoch.
	if k := r.step % r.perEpoch; r.perEpoch >= 10 && k != 0 && k%(r.perEpoch/10) == 0 {
		rate := float64(p.examples+n) / time.Since(p.since).Seconds()
		fmt.Fprintf(p.w, "epoch %d/%d: step %d, %d%%, running mean loss %.4g, %.0f examples/s\n",
			e+1, r.o.Epochs, r.step, 100*k/r.perEpoch, p.sum/float64(p.count), rate)
	}
	p.examples += n
}

// epoch records the end of an epoch.
func (p *progress) epoch(st EpochStats) {
	if p == nil {
		return
	}
	p.sum, p.count = 0, 0
	if p.bar == nil {
		fmt.Fprintf(p.w, "epoch %d/%d: step %d, mean loss %.6g, %s\n",
			st.Epoch+1, p.r.o.Epochs, st.Step, st.Loss, st.Elapsed.Round(time.Second))
	}
}

func (p *progress) close() {
	if p == nil || p.bar == nil {
		return
	}
	p.bar.Exit()
	fmt.Fprintln(p.w)
}

// isTerminal reports whether w is a character device such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
