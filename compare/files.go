package compare

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Shard is the part of a grid one process runs: the groups g with g mod
// Count = Index. The zero Shard (Count 0) is the whole grid.
type Shard struct {
	Index, Count int
}

func (s Shard) String() string {
	if s.Count <= 1 {
		return "all"
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

func (s Shard) validate() error {
	if s.Count < 0 || (s.Count > 0 && (s.Index < 0 || s.Index >= s.Count)) {
		return fmt.Errorf("compare: shard %d/%d: need 0 <= index < count", s.Index, s.Count)
	}
	return nil
}

func (s Shard) owns(group int) bool { return s.Count <= 1 || group%s.Count == s.Index }

// ParseShard parses "i/n" (0 <= i < n). The empty string is the whole grid.
func ParseShard(text string) (Shard, error) {
	if strings.TrimSpace(text) == "" {
		return Shard{}, nil
	}
	a, b, ok := strings.Cut(text, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("compare: shard %q: want i/n with 0 <= i < n", text)
	}
	return Shard{Index: i, Count: n}, nil
}

// Environment variables that carry a worker's index on the schedulers
// clusters run: Kubernetes Indexed Jobs and Slurm job arrays.
const (
	EnvKubernetesIndex = "JOB_COMPLETION_INDEX"
	EnvSlurmIndex      = "SLURM_ARRAY_TASK_ID"
)

// ShardFromEnv returns shard i/count with i read from JOB_COMPLETION_INDEX
// or, failing that, SLURM_ARRAY_TASK_ID. ok is false when neither is set.
// The count is not taken from the environment (Slurm arrays may start at 1
// or skip indices): pass the number of workers the job was submitted with.
func ShardFromEnv(count int) (s Shard, ok bool, err error) {
	for _, name := range []string{EnvKubernetesIndex, EnvSlurmIndex} {
		v, set := os.LookupEnv(name)
		if !set {
			continue
		}
		i, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return Shard{}, true, fmt.Errorf("compare: %s = %q is not an index", name, v)
		}
		if count < 1 {
			return Shard{}, true, fmt.Errorf("compare: %s is set; give the number of shards too", name)
		}
		s := Shard{Index: i, Count: count}
		if err := s.validate(); err != nil {
			return Shard{}, true, fmt.Errorf("%w (from %s)", err, name)
		}
		return s, true, nil
	}
	return Shard{}, false, nil
}

// ResultsPattern matches the results files in a directory.
const ResultsPattern = "results-*.jsonl"

// resultsFile is this process's own results file.
type resultsFile struct {
	f       *os.File
	attempt int
}

// createResultsFile creates results-<shard>-<worker>-<attempt>.jsonl
// exclusively, with the smallest attempt number not taken, so that two
// processes never share a file, even on NFS.
func createResultsFile(dir string, sh Shard, worker string) (*resultsFile, error) {
	tag := "all"
	if sh.Count > 1 {
		tag = fmt.Sprintf("%dof%d", sh.Index, sh.Count)
	}
	for attempt := 1; attempt < 10000; attempt++ {
		name := filepath.Join(dir, fmt.Sprintf("results-%s-%s-%d.jsonl", tag, worker, attempt))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("compare: %w", err)
		}
		return &resultsFile{f: f, attempt: attempt}, nil
	}
	return nil, fmt.Errorf("compare: no free results file name in %s", dir)
}

// append writes one record as one line and syncs it, so that a process
// killed at any time leaves at most a cut-off last line, which readDir
// skips.
func (rf *resultsFile) append(r *Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	if _, err := rf.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	if err := rf.f.Sync(); err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	return nil
}

func (rf *resultsFile) close() { _ = rf.f.Close() }

// readDir reads every results file in dir, in name order. Lines that do not
// parse (a line cut off by a killed process) are skipped.
func readDir(dir string) ([]*Record, error) {
	names, err := filepath.Glob(filepath.Join(dir, ResultsPattern))
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	sort.Strings(names)
	var out []*Record
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("compare: %w", err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 0, 64*1024), 64<<20)
		line := 0
		for sc.Scan() {
			line++
			var r Record
			if json.Unmarshal(sc.Bytes(), &r) != nil || r.Problem == "" || r.Method == "" {
				continue
			}
			r.file, r.line = filepath.Base(name), line
			out = append(out, &r)
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("compare: %s: %w", name, err)
		}
	}
	return out, nil
}

// ReadRecords returns every record of the results files in dir, in file
// and line order, for reports made outside Run.
func ReadRecords(dir string) ([]*Record, error) { return readDir(dir) }

// Collect returns the summary of everything dir's results files hold for
// the grid, by the same rules as Run (records whose configuration differs
// are stale, the successful record that finished first wins), without
// running anything: the report of a finished experiment, recomputed from
// its files. The grid needs Problems, Seeds, Methods and Config only.
func Collect(g *Grid, dir string) (*Summary, error) {
	check := *g
	check.Setup = func(context.Context, string, int) (any, error) { return nil, nil }
	check.Solve = func(context.Context, any, Task) (Result, error) { return Result{}, nil }
	if err := check.validate(); err != nil {
		return nil, err
	}
	recs, err := readDir(dir)
	if err != nil {
		return nil, err
	}
	return newState(g, recs).summary(), nil
}
