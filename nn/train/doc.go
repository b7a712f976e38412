// Package train runs minibatch stochastic optimisation with exact,
// crash-proof resumption.
//
// A Task computes the mean loss of one minibatch, given the indices of its
// examples in a training set of N; Run does the rest: it visits the set in
// epochs, each a fresh random order cut into ⌈N/BatchSize⌉ minibatches,
// back-propagates, clips, takes an optimizer step with the learning rate of
// the step's schedule, and checkpoints.
//
// # Reproducibility
//
// Every random number is a function of (Seed, epoch) or (Seed, step) alone:
// the order of epoch e is a permutation drawn from EpochRand(Seed, e), and
// step s hands the task StepRand(Seed, s), its only source (for dropout, noise
// or sampling). Run itself adds nothing that depends on the wall clock, on
// GOMAXPROCS, or on where a previous run stopped (a task built from
// deterministic ops keeps it so; the layers of package nn are). A checkpoint holds the parameters, the
// optimizer's state (moments and step count), the step and the loss history,
// so a run killed at any point (even with SIGKILL in the middle of an epoch)
// and started again with the same options ends with parameters bit for bit
// equal to those of a run that was never interrupted.
//
// Checkpoints are written atomically (a temporary file in the same folder,
// synced, then renamed over the old one): a crash leaves the old checkpoint
// or the new one, never a torn file. They record a fingerprint of the
// settings that fix the sequence of minibatches (N, BatchSize, Seed) and of
// the parameters (names and shapes); resuming with others is an error rather
// than a silently different run. Epochs may grow between runs, to train a
// finished model further.
//
// # One loop
//
// Run is built on Loop, the step loop that every trainer of the module
// shares (vi.Fit, the jigsaw network's Train): the loss of a step on a
// fresh tape, back-propagation, clipping, the optimizer step, checkpoints
// in one format (the parameters, the optimizer's state, the losses, the
// trainer's settings and its own state, see Extra) and bit-exact resumption.
// A trainer supplies the loss of a step and what it adds around it.
package train
