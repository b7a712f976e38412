package jigsaw

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// weights returns a copy of every parameter value of n.
func weights(n *Net) [][]float64 {
	var w [][]float64
	for _, p := range n.Params() {
		w = append(w, append([]float64(nil), p.Value.Data...))
	}
	return w
}

func resumeFixture(t *testing.T) (Config, Data, TrainConfig) {
	cfg := tinyConfig()
	cfg.Hidden, cfg.Context, cfg.Refine = 6, true, 1
	data := Data{Pixels: blobs(rand.New(rand.NewPCG(1, 2)), 60)}
	tc := TrainConfig{Steps: 30, Batch: 4, LR: 0.01, Seed: 3, CheckpointEvery: 7,
		Checkpoint: filepath.Join(t.TempDir(), "train.ckpt")}
	return cfg, data, tc
}

// TestTrainResume stops training in the middle (as a cancelled context, a
// finished shorter run, or a crash after the last checkpoint) and resumes it
// in a fresh network: weights and loss trace must equal, bit for bit, those of
// a run that never stopped.
func TestTrainResume(t *testing.T) {
	cfg, data, tc := resumeFixture(t)
	whole := tc
	whole.Checkpoint = ""
	ref, err := New(cfg, 1)
	require.NoError(t, err)
	refRes, err := ref.Train(context.Background(), data, whole)
	require.NoError(t, err)
	refTrace := refRes.Losses
	require.Len(t, refTrace, 30)

	t.Run("cancelled", func(t *testing.T) {
		_, data, tc := resumeFixture(t)
		net, err := New(cfg, 1)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		stopped := tc
		stopped.ReportEvery = 1
		stopped.Progress = func(step int, _, _ float64) {
			if step == 12 {
				cancel()
			}
		}
		part, err := net.Train(ctx, data, stopped)
		require.ErrorIs(t, err, context.Canceled)
		require.Len(t, part.Losses, 12)
		// A fresh network with other initial weights: all comes from the file.
		again, err := New(cfg, 99)
		require.NoError(t, err)
		var from int
		tc.Resumed = func(step int, seconds float64) {
			from = step
			assert.Positive(t, seconds)
		}
		res, err := again.Train(context.Background(), data, tc)
		require.NoError(t, err)
		assert.Equal(t, 12, from, "resumed from the step it stopped at, not the last periodic checkpoint")
		assert.Equal(t, 12, res.ResumedFrom)
		assert.Greater(t, res.Seconds, part.Seconds, "the seconds of the stopped call count")
		assert.Equal(t, refTrace, res.Losses)
		assert.Equal(t, weights(ref), weights(again))
	})

	t.Run("crash after a checkpoint", func(t *testing.T) {
		_, data, tc := resumeFixture(t)
		net, err := New(cfg, 1)
		require.NoError(t, err)
		// Keep the file as it was at step 14, then let the run finish: as
		// if it had been killed between steps 14 and 21.
		var at14 []byte
		first := tc
		first.ReportEvery = 1
		first.Progress = func(step int, _, _ float64) {
			if step == 14 {
				at14, err = os.ReadFile(tc.Checkpoint)
				require.NoError(t, err)
			}
		}
		_, err = net.Train(context.Background(), data, first)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(tc.Checkpoint, at14, 0o644))
		again, err := New(cfg, 1)
		require.NoError(t, err)
		res, err := again.Train(context.Background(), data, tc)
		require.NoError(t, err)
		assert.Equal(t, 14, res.ResumedFrom)
		assert.Equal(t, refTrace, res.Losses)
		assert.Equal(t, weights(ref), weights(again))
	})

	t.Run("more steps", func(t *testing.T) {
		_, data, tc := resumeFixture(t)
		short := tc
		short.Steps = 10
		net, err := New(cfg, 1)
		require.NoError(t, err)
		_, err = net.Train(context.Background(), data, short)
		require.NoError(t, err)
		res, err := net.Train(context.Background(), data, tc)
		require.NoError(t, err)
		assert.Equal(t, 10, res.ResumedFrom)
		assert.Equal(t, refTrace, res.Losses)
		assert.Equal(t, weights(ref), weights(net))
		// Finished: running it again trains nothing and changes nothing.
		res, err = net.Train(context.Background(), data, tc)
		require.NoError(t, err)
		assert.Equal(t, 30, res.ResumedFrom)
		assert.Equal(t, refTrace, res.Losses)
		assert.Equal(t, weights(ref), weights(net))
	})
}

func TestTrainResumeMismatch(t *testing.T) {
	cfg, data, tc := resumeFixture(t)
	tc.Steps = 8
	net, err := New(cfg, 1)
	require.NoError(t, err)
	_, err = net.Train(context.Background(), data, tc)
	require.NoError(t, err)
	other := func(mod func(c *Config, d *Data, tc *TrainConfig)) error {
		c, d, o := cfg, data, tc
		mod(&c, &d, &o)
		n, err := New(c, 1)
		require.NoError(t, err)
		_, err = n.Train(context.Background(), d, o)
		return err
	}
	for want, mod := range map[string]func(c *Config, d *Data, tc *TrainConfig){
		"seed = 3, this run has 4":                     func(_ *Config, _ *Data, tc *TrainConfig) { tc.Seed = 4 },
		"batch = 4, this run has 5":                    func(_ *Config, _ *Data, tc *TrainConfig) { tc.Batch = 5 },
		"learning rate":                                func(_ *Config, _ *Data, tc *TrainConfig) { tc.LR = 0.02 },
		"images = 60 of 64 values, this run has 50 of": func(_ *Config, d *Data, _ *TrainConfig) { d.Pixels = d.Pixels[:64*50] },
		"network":                             func(c *Config, _ *Data, _ *TrainConfig) { c.Hidden = 7 },
		"at step 8, beyond the run's 5 steps": func(_ *Config, _ *Data, tc *TrainConfig) { tc.Steps = 5 },
		"delete it to start afresh":           func(c *Config, _ *Data, _ *TrainConfig) { c.Noise = 1 },
	} {
		assert.ErrorContains(t, other(mod), want)
	}
	require.NoError(t, os.WriteFile(tc.Checkpoint, []byte("not a checkpoint"), 0o644))
	assert.ErrorContains(t, other(func(*Config, *Data, *TrainConfig) {}), "unreadable")
}

// TestTrainSecondsAgreeWithCheckpoint: a call that ends on a checkpoint
// reports the training time that checkpoint recorded, even when the caller's
// progress callback after the last step is slow, so that a run resumed from
// it always reports more seconds than the call it resumed (a slow callback
// once made a resumed run report fewer).
func TestTrainSecondsAgreeWithCheckpoint(t *testing.T) {
	cfg, data, tc := resumeFixture(t)
	net, err := New(cfg, 1)
	require.NoError(t, err)
	slow := tc
	slow.Steps, slow.ReportEvery = 10, 1
	slow.Progress = func(step int, _, _ float64) {
		if step == slow.Steps {
			time.Sleep(50 * time.Millisecond)
		}
	}
	first, err := net.Train(context.Background(), data, slow)
	require.NoError(t, err)

	var recorded float64
	again := tc
	again.Steps = slow.Steps
	again.Resumed = func(_ int, seconds float64) { recorded = seconds }
	res, err := net.Train(context.Background(), data, again)
	require.NoError(t, err)
	assert.Equal(t, first.Seconds, recorded, "reported and checkpointed seconds")
	assert.Equal(t, first.Seconds, res.Seconds, "nothing left to train adds nothing")

	again.Steps = 12
	res, err = net.Train(context.Background(), data, again)
	require.NoError(t, err)
	assert.Greater(t, res.Seconds, first.Seconds)
}
