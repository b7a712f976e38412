package harness

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/ad"
)

func TestF64RoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.f64")
	data := []float64{0, -1.5, 3e300, 1e-310}
	require.NoError(t, WriteF64(path, data))
	got, err := ReadF64(path, -1)
	require.NoError(t, err)
	assert.Equal(t, data, got)
	got, err = ReadF64(path, len(data))
	require.NoError(t, err)
	assert.Equal(t, data, got)

	_, err = ReadF64(path, len(data)+1)
	assert.ErrorContains(t, err, "32 bytes, want 5 float64")
	require.NoError(t, os.WriteFile(path, make([]byte, 12), 0o644))
	_, err = ReadF64(path, -1)
	assert.ErrorContains(t, err, "size 12 is not a multiple of 8")
	_, err = ReadF64(filepath.Join(t.TempDir(), "missing"), -1)
	assert.Error(t, err)
}

func TestMedian(t *testing.T) {
	x := []float64{3, 1, 2}
	assert.Equal(t, 2.0, Median(x))
	assert.Equal(t, []float64{3, 1, 2}, x, "Median must not reorder its argument")
	assert.Equal(t, 2.5, Median([]float64{4, 1, 3, 2}))
}

// counter is a Step returning wall = its call number and cpu = id.
func counter(id float64, calls *[]float64) Step {
	n := 0.0
	return func() (float64, float64, error) {
		n++
		*calls = append(*calls, id)
		return n, id, nil
	}
}

func TestMeasure(t *testing.T) {
	var calls []float64
	tm, err := Measure(counter(1, &calls), 2, 3)
	require.NoError(t, err)
	assert.Equal(t, []float64{3, 4, 5}, tm.Wall)
	assert.Equal(t, []float64{1, 1, 1}, tm.CPU)

	boom := errors.New("boom")
	_, err = Measure(func() (float64, float64, error) { return 0, 0, boom }, 0, 1)
	assert.ErrorIs(t, err, boom)
}

func TestInterleave(t *testing.T) {
	var calls []float64
	ta, tb, err := Interleave(counter(1, &calls), counter(2, &calls), 1, 3, 0)
	require.NoError(t, err)
	assert.Equal(t, []float64{1, 2, 2, 1, 1, 2, 2, 1}, calls, "a first in even rounds, b first in odd ones")
	assert.Equal(t, []float64{2, 3, 4}, ta.Wall)
	assert.Equal(t, []float64{1, 1, 1}, ta.CPU)
	assert.Equal(t, []float64{2, 3, 4}, tb.Wall)
	assert.Equal(t, []float64{2, 2, 2}, tb.CPU)
}

func TestInterleaveBlocks(t *testing.T) {
	var calls []float64
	ta, tb, err := InterleaveBlocks(counter(1, &calls), counter(2, &calls), 1, 2, 3, 0)
	require.NoError(t, err)
	assert.Equal(t, []float64{1, 1, 1, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 2, 2, 2}, calls,
		"blocks of 3, a first in even rounds")
	assert.Equal(t, []float64{5, 6, 8, 9}, ta.Wall, "first step of each block and the warm-up round untimed")
	assert.Equal(t, []float64{5, 6, 8, 9}, tb.Wall)

	var c1, c2 []float64
	a1, b1, err1 := InterleaveBlocks(counter(1, &c1), counter(2, &c1), 1, 3, 1, 0)
	a2, b2, err2 := Interleave(counter(1, &c2), counter(2, &c2), 1, 3, 0)
	require.NoError(t, err1)
	require.NoError(t, err2)
	assert.Equal(t, c2, c1, "block 1 is Interleave")
	assert.Equal(t, a2, a1)
	assert.Equal(t, b2, b1)

	boom := errors.New("boom")
	_, _, err = InterleaveBlocks(counter(1, &calls), func() (float64, float64, error) { return 0, 0, boom }, 0, 1, 2, 0)
	assert.ErrorIs(t, err, boom)
}

func TestTimed(t *testing.T) {
	wall, cpu, err := Timed(func() error {
		time.Sleep(5 * time.Millisecond)
		return nil
	})()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, wall, 5.0)
	assert.GreaterOrEqual(t, cpu, 0.0)

	boom := errors.New("boom")
	_, _, err = Timed(func() error { return boom })()
	assert.ErrorIs(t, err, boom)
}

func TestLoadAvg(t *testing.T) {
	if _, err := os.Stat("/proc/loadavg"); err != nil {
		assert.Equal(t, "unknown", LoadAvg(1))
		return
	}
	assert.Len(t, strings.Fields(LoadAvg(1)), 1)
	assert.Len(t, strings.Fields(LoadAvg(3)), 3)
	assert.Equal(t, "unknown", LoadAvg(4))
}

// fakeReference is a shell script speaking the serve protocol, run by
// /bin/sh in place of a Python interpreter.
const fakeReference = `[ "$2" = --serve ] || exit 2
echo '{"ready": true, "torch": "0.0-fake", "threads": 3, "blas": ["/usr/lib/x86_64-linux-gnu/blas/libblas.so.3"]}'
while read -r cmd; do
	case "$cmd" in
	step) echo '{"wall": 0.25, "cpu": 0.5}' ;;
	env) echo "{\"dir\": \"$1\", \"omp\": \"$OMP_NUM_THREADS\", \"blas\": \"$OPENBLAS_NUM_THREADS\"}" ;;
	quit) exit 0 ;;
	*) echo "{\"error\": \"unknown command $cmd\"}" ;;
	esac
done
`

func script(t *testing.T, text string) string {
	t.Helper()
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	path := filepath.Join(t.TempDir(), "ref.sh")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

func TestCheckPython(t *testing.T) {
	s := script(t, fakeReference)
	assert.NoError(t, CheckPython("/bin/sh", s))
	assert.ErrorContains(t, CheckPython("/nonexistent/python3", s), "no Python interpreter at /nonexistent/python3")
	assert.ErrorContains(t, CheckPython("/bin/sh", s+".missing"), "not found (run from the repository root or set -script)")
}

func TestPython(t *testing.T) {
	s := script(t, fakeReference)
	t.Setenv("OMP_NUM_THREADS", "7")
	py, err := StartPython("/bin/sh", s, "/data/dir", []string{"OMP_NUM_THREADS=1", "OPENBLAS_NUM_THREADS=2"})
	require.NoError(t, err)
	defer py.Close()
	assert.Equal(t, "0.0-fake", py.Torch)
	assert.Equal(t, 3, py.Threads)
	assert.Equal(t, []string{"/usr/lib/x86_64-linux-gnu/blas/libblas.so.3"}, py.BLAS)
	assert.Contains(t, py.BLASNote(), "WARNING: PyTorch runs on the reference BLAS")
	assert.Contains(t, py.BLASNote(), "update-alternatives", "the warning should say how to select an installed OpenBLAS")
	assert.Equal(t, []string{"OMP_NUM_THREADS=7", "OPENBLAS_NUM_THREADS=2"}, py.Env)

	var env struct{ Dir, OMP, BLAS string }
	require.NoError(t, py.Call("env", &env))
	assert.Equal(t, "/data/dir", env.Dir)
	assert.Equal(t, "7", env.OMP, "the caller's setting wins")
	assert.Equal(t, "2", env.BLAS)

	wall, cpu, err := py.Step()
	require.NoError(t, err)
	assert.Equal(t, 250.0, wall)
	assert.Equal(t, 500.0, cpu)

	var r struct{ Error string }
	require.NoError(t, py.Call("bogus", &r))
	assert.Equal(t, "unknown command bogus", r.Error)
}

func TestPythonStepError(t *testing.T) {
	s := script(t, `echo '{"ready": true}'
while read -r cmd; do
	[ "$cmd" = quit ] && exit 0
	echo '{"error": "out of memory"}'
done
`)
	py, err := StartPython("/bin/sh", s, t.TempDir(), nil)
	require.NoError(t, err)
	defer py.Close()
	_, _, err = py.Step()
	assert.EqualError(t, err, "reference: out of memory")
}

func TestPythonNotReady(t *testing.T) {
	s := script(t, `echo '{"error": "cannot import torch"}'; exit 3`)
	_, err := StartPython("/bin/sh", s, t.TempDir(), nil)
	assert.EqualError(t, err, "cannot import torch")

	s = script(t, `exit 1`)
	_, err = StartPython("/bin/sh", s, t.TempDir(), nil)
	assert.EqualError(t, err, "the reference exited")
}

func TestPythonExits(t *testing.T) {
	s := script(t, `echo '{"ready": true}'; read -r cmd; exit 0`)
	py, err := StartPython("/bin/sh", s, t.TempDir(), nil)
	require.NoError(t, err)
	defer py.Close()
	_, _, err = py.Step()
	assert.EqualError(t, err, "reference: step: the reference exited")
}

func TestReferenceBLAS(t *testing.T) {
	assert.True(t, ReferenceBLAS([]string{"/usr/lib/x86_64-linux-gnu/blas/libblas.so.3"}))
	assert.False(t, ReferenceBLAS([]string{"/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3", "/usr/lib/x86_64-linux-gnu/libopenblas.so.0"}))
	assert.False(t, ReferenceBLAS([]string{"/opt/intel/lib/libmkl_rt.so.2"}))
	// Measured: with libblas.so.3 on the reference BLAS, NumPy still maps
	// OpenBLAS, but torch's products run on the reference library.
	assert.True(t, ReferenceBLAS([]string{"/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0", "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblasp-r0.3.21.so"}))
	assert.False(t, ReferenceBLAS(nil), "nothing reported is not a warning")
	assert.Equal(t, "BLAS: not reported", (&Python{}).BLASNote())
	assert.NotContains(t, (&Python{BLAS: []string{"/usr/lib/libopenblas.so.0"}}).BLASNote(), "WARNING")
}

func TestMaxRelDiff(t *testing.T) {
	params := []*ad.Param{ad.NewParam("a", ad.Zeros(2)), ad.NewParam("b", ad.Zeros(1)), ad.NewParam("c", ad.Zeros(1))}
	// Relative to each parameter's largest |b|: 0.1/4 for a, 0 for b, and
	// 0.5 undivided for c, whose b is zero.
	assert.InDelta(t, 0.025, MaxRelDiff(params, []float64{1, -4.1, 3, 0}, []float64{1, -4, 3, 0}), 1e-15)
	assert.InDelta(t, 0.5, MaxRelDiff(params, []float64{1, -4, 3, 0.5}, []float64{1, -4, 3, 0}), 1e-15)
	assert.True(t, math.IsInf(MaxRelDiff(params, []float64{math.NaN(), 0, 0, 0}, []float64{1, 1, 1, 0}), 1))
}
