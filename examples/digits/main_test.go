package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permlab/permlab/dataset"
)

// writeMNIST writes uncompressed MNIST-format files of synthetic digits
// (class k is a bright bar on rows 2k+4 and 2k+5) to dir.
func writeMNIST(t *testing.T, dir string, nTrain, nTest int) {
	t.Helper()
	src := rand.New(rand.NewPCG(1, 2))
	for i, n := range []int{nTrain, nTest} {
		var img, lab bytes.Buffer
		binary.Write(&img, binary.BigEndian, []uint32{0x803, uint32(n), 28, 28})
		binary.Write(&lab, binary.BigEndian, []uint32{0x801, uint32(n)})
		for range n {
			k := src.IntN(10)
			lab.WriteByte(byte(k))
			for y := range 28 {
				for x := range 28 {
					v := byte(src.IntN(80))
					if (y == 2*k+4 || y == 2*k+5) && x >= 4 && x < 24 {
						v = 255
					}
					img.WriteByte(v)
				}
			}
		}
		for j, b := range []*bytes.Buffer{&img, &lab} {
			name := strings.TrimSuffix(dataset.MNISTFiles[2*i+j], ".gz")
			if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	writeMNIST(t, dir, 150, 40)
	out := filepath.Join(dir, "sub", "d.nn")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"-mnist", dir, "-out", out, "-val", "50", "-epochs", "2", "-batch", "25", "-seed", "2"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit status %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{"100 training, 50 validation, 40 test images", "epoch 2: training loss", "test accuracy"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "sub", "d.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s Summary
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	if s.TrainImages != 100 || s.TestImages != 40 || len(s.ValAccuracy) != 2 || s.WeightsBytes == 0 || s.Params != 184586 {
		t.Errorf("summary %+v", s)
	}
	if _, err := os.Stat(out + ".ckpt"); !os.IsNotExist(err) {
		t.Errorf("checkpoint left behind: %v", err)
	}
}

func TestRunWithoutMNIST(t *testing.T) {
	for _, args := range [][]string{nil, {"-mnist", filepath.Join(t.TempDir(), "nowhere")}} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, &stdout, &stderr)
		msg := stderr.String()
		if code != 2 || !strings.Contains(msg, "train-images-idx3-ubyte.gz") || !strings.Contains(msg, "-mnist") {
			t.Errorf("args %q: status %d, message %q, want 2 and how to get the files", args, code, msg)
		}
	}
}

// Bad command lines exit with status 2 and a message naming the flag,
// before any data is read (the MNIST folder here is empty, so reading it
// would fail with another message) and without writing anything.
func TestBadFlags(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-epochs", "0"}, "-epochs must be >= 1, got 0"},
		{[]string{"-epochs", "-2"}, "-epochs must be >= 1, got -2"},
		{[]string{"-batch", "0"}, "-batch must be >= 1, got 0"},
		{[]string{"-val", "0"}, "-val must be >= 1"},
		{[]string{"-val", "-5"}, "-val must be >= 1"},
		{[]string{"-epochs"}, "flag needs an argument: -epochs"},
		{[]string{"-seed", "-1"}, "-seed"},
		{[]string{"-mnist", file}, "-mnist " + file + ": not a directory"},
		{[]string{"-out", filepath.Join(file, "d.nn")}, "-out " + filepath.Join(file, "d.nn")},
		{[]string{"-out", dir}, "-out " + dir + ": is a directory"},
		{[]string{"-json", filepath.Join(file, "d.json")}, "-json " + filepath.Join(file, "d.json")},
		{[]string{"-out", "w.nn", "-json", "w.nn"}, "-json w.nn is the weights file of -out"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"-epochs", "1", "extra", "-batch", "2"}, `unexpected argument "extra"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			mnist := filepath.Join(t.TempDir(), "mnist")
			if err := os.Mkdir(mnist, 0o755); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "new", "d.nn")
			args := append([]string{"-mnist", mnist, "-out", out}, tc.args...)
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), args, &stdout, &stderr); code != 2 {
				t.Errorf("status %d, want 2", code)
			}
			if msg := stderr.String(); !strings.Contains(msg, tc.want) || strings.Contains(msg, "digits: digits:") {
				t.Errorf("message %q, want one with %q", msg, tc.want)
			}
			if _, err := os.Stat(filepath.Dir(out)); !os.IsNotExist(err) {
				t.Errorf("the output folder was made: %v", err)
			}
		})
	}
}

// A bad data folder is a failure (status 1), reported once.
func TestBadData(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-mnist", t.TempDir(), "-out", filepath.Join(t.TempDir(), "d.nn")}, &stdout, &stderr)
	if code != 1 || strings.Count(stderr.String(), "digits:") != 1 {
		t.Errorf("status %d, message %q", code, stderr.String())
	}
}
