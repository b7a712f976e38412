package main

import (
	"fmt"
	"io"
	"time"

	"github.com/permlab/permlab/networks/sorting"
)

// progress prints the training step, the loss (mean over the last lines'
// steps) and the speed in lists per second, every few seconds.
type progress struct {
	w          io.Writer
	cfg        sorting.Config
	start      time.Time
	last       time.Time
	every      time.Duration
	sum        float64
	count      int
	step       int
	lastLogged int
}

func newProgress(w io.Writer, cfg sorting.Config) *progress {
	now := time.Now()
	return &progress{w: w, cfg: cfg, start: now, last: now, every: 5 * time.Second}
}

// update is the callback of sorting.Network.Train.
func (p *progress) update(step int, loss float64) {
	p.step = step
	p.sum += loss
	p.count++
	if now := time.Now(); now.Sub(p.last) >= p.every || step == p.cfg.Steps {
		p.print(now)
	}
}

func (p *progress) print(now time.Time) {
	if p.count == 0 {
		return
	}
	rate := float64((p.step-p.lastLogged)*p.cfg.Batch) / now.Sub(p.last).Seconds()
	fmt.Fprintf(p.w, "n=%d %v seed %d: step %d/%d  loss %.5f  %.0f lists/s  %.0f s\n",
		p.cfg.N, p.cfg.Variant, p.cfg.Seed, p.step, p.cfg.Steps, p.sum/float64(p.count), rate, now.Sub(p.start).Seconds())
	p.last, p.lastLogged, p.sum, p.count = now, p.step, 0, 0
}

// done prints the last line if the run stopped between two lines.
func (p *progress) done() {
	if p.count > 0 {
		p.print(time.Now())
	}
}
