// A progress display for Experiment.Run.

package celegans

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/permlab/permlab/compare"
)

// Progress shows the events of Experiment.Run: on a terminal, a progress bar
// that advances with the budget of the running task, with a line per finished
// run above it; elsewhere (a file, a pipe), plain log lines. Use its Handle
// method as Experiment.Progress and call Close when Run returns.
type Progress struct {
	w   io.Writer
	bar *progressbar.ProgressBar // nil without a terminal

	mu      sync.Mutex
	total   int
	done    int
	skipped int
	budget  time.Duration
	running bool
	started time.Time
	stop    chan struct{}
	stopped chan struct{}
	once    sync.Once
}

// progressUnits is the number of bar units per task.
const progressUnits = 1000

// NewProgress returns a Progress writing to w, with a bar if w is a
// terminal; the bar advances within a run as a share of budget (the
// experiment's Settings.Budget; 0: only between runs).
func NewProgress(w io.Writer, budget time.Duration) *Progress {
	return newProgress(w, isTerminal(w), budget)
}

func newProgress(w io.Writer, bar bool, budget time.Duration) *Progress {
	p := &Progress{w: w, budget: budget}
	if bar {
		p.bar = progressbar.NewOptions64(progressUnits,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetWidth(30),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionShowDescriptionAtLineEnd(),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetRenderBlankState(true),
		)
		p.stop = make(chan struct{})
		p.stopped = make(chan struct{})
		go p.tick()
	}
	return p
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

// tick advances the bar within the running task, as a fraction of its budget.
func (p *Progress) tick() {
	defer close(p.stopped)
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			if p.running && p.budget > 0 {
				f := float64(time.Since(p.started)) / float64(p.budget)
				if f > 0.99 {
					f = 0.99
				}
				p.bar.Set64(int64(p.done)*progressUnits + int64(f*progressUnits))
			}
			p.mu.Unlock()
		}
	}
}

// Handle shows one event; it is an Experiment.Progress function.
func (p *Progress) Handle(ev compare.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ev.Kind != compare.EventSkip {
		p.flushSkipped()
	}
	switch ev.Kind {
	case compare.EventPlan:
		p.total = ev.Total
		if p.bar != nil {
			p.bar.ChangeMax64(int64(max(ev.Total, 1)) * progressUnits)
		}
		p.println(ev.Message)
	case compare.EventInfo:
		p.println("note: " + ev.Message)
	case compare.EventSkip:
		p.done = ev.Done
		p.skipped++
		p.setBar(ev)
	case compare.EventStart:
		p.done = ev.Done
		p.running = true
		p.started = time.Now()
		if p.bar == nil {
			p.println(fmt.Sprintf("[%d/%d] %s: started", ev.Done+1, ev.Total, ev.Task))
		}
		p.setBar(ev)
	case compare.EventDone, compare.EventFail:
		p.done = ev.Done
		p.running = false
		p.println(fmt.Sprintf("[%d/%d] %s", ev.Done, ev.Total, resultLine(ev)))
		p.setBar(ev)
	}
}

func resultLine(ev compare.Event) string {
	cr := ev.Record
	if ev.Kind == compare.EventFail {
		return fmt.Sprintf("%s: FAILED: %s", ev.Task, cr.Error)
	}
	r, err := RecordOf(cr)
	if err != nil {
		// Not a run of Experiment: what package compare keeps.
		r = &Record{Method: Method(cr.Method), Accuracy: cr.Metrics["accuracy"], AccuracyUnknown: cr.Metrics["accuracy_unknown"],
			Iterations: cr.Iterations, ElapsedSec: cr.ElapsedSec}
	}
	unit := "steps"
	if r.Method == MCMC {
		unit = "sweeps"
	}
	fits := ""
	if r.Fits > 1 {
		fits = fmt.Sprintf(" over %d fits", r.Fits)
	}
	return fmt.Sprintf("%s: accuracy %.3f (unknown %.3f), %d %s%s in %.1f s",
		ev.Task, r.Accuracy, r.AccuracyUnknown, r.Iterations, unit, fits, r.ElapsedSec)
}

func (p *Progress) flushSkipped() {
	if p.skipped > 0 {
		p.println(fmt.Sprintf("skipped %d runs already in the results file", p.skipped))
		p.skipped = 0
	}
}

func (p *Progress) setBar(ev compare.Event) {
	if p.bar == nil {
		return
	}
	desc := fmt.Sprintf("[%d/%d]", ev.Done, ev.Total)
	if ev.Kind == compare.EventStart {
		desc = fmt.Sprintf("[%d/%d] %s", ev.Done+1, ev.Total, ev.Task)
	}
	p.bar.Describe(desc)
	p.bar.Set64(int64(ev.Done) * progressUnits)
}

// println writes a line, above the bar if there is one.
func (p *Progress) println(s string) {
	if p.bar != nil {
		p.bar.Clear()
	}
	fmt.Fprintln(p.w, s)
}

// Close stops the bar and clears its line. It may be called more than once.
func (p *Progress) Close() {
	if p.bar != nil {
		p.once.Do(func() {
			close(p.stop)
			<-p.stopped
		})
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flushSkipped()
	if p.bar != nil {
		p.bar.Clear()
	}
}
