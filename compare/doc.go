// Package compare runs a comparison grid: several inference methods on
// several problems and seeds, every run under the same wall-clock budget,
// with results appended to JSON-lines files so that an interrupted grid
// resumes where it stopped, and a collector that turns the files into
// tables.
//
// # The grid
//
// A Grid names its problems (cells of a table), seeds and methods. The unit
// of work is a group: one problem with one seed. Setup builds the group's
// instance once (a simulated data set, say), and every method then solves
// that same instance, each under its own context with the Budget as its
// deadline, so that methods are compared on identical data and identical
// time. A method's configuration is fingerprinted (Grid.Config); records
// made under another configuration are ignored, not reused.
//
// # Running on a cluster
//
// Grids outgrow one machine quickly (16 cells × 5 seeds × 4 methods × 30 s
// is over 2.5 hours on 2 cores), so Run splits the grid into shards for the
// batch schedulers clusters already have, with no service of its own:
//
//   - group g of the full grid (problems outer, seeds inner, counted from 0)
//     belongs to shard g mod n, whatever has already been done, so a shard's
//     work never depends on the others;
//   - the shard index comes from a flag (ParseShard, "i/n") or from the
//     scheduler's environment (ShardFromEnv: JOB_COMPLETION_INDEX for
//     Kubernetes Indexed Jobs, SLURM_ARRAY_TASK_ID for Slurm job arrays),
//     with the count given explicitly;
//   - every process writes its own results file, created exclusively
//     (O_CREATE|O_EXCL: no shared appends, which are not atomic on NFS),
//     named after the shard, the worker and an attempt number;
//   - a run without a shard is the collector: it reads every results file
//     in the directory, finds everything done, runs what is missing and
//     writes the report.
//
// A scheduler may start the same index twice; both processes then write
// their own files and the duplicates are resolved by a fixed rule when the
// files are read: of the successful records of a task the one that
// finished first is kept (ties broken by file name, then line), and the
// rest are counted in Summary.Duplicates. A failed run is recorded and run
// again by the next process that owns its group.
//
// Budgets only mean something with exclusive cores. On Kubernetes request
// and limit the same whole number of CPUs (Guaranteed QoS) on nodes with the
// static CPU manager, and set GOMAXPROCS to that number; on Slurm use
// --cpus-per-task with --exclusive or core binding. Records carry the
// worker, attempt, GOMAXPROCS and CPU model so that a table can be checked
// for runs on mismatched machines.
package compare
