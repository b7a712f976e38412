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
	out := filepath.Join(dir, "d.nn")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"-mnist", dir, "-out", out, "-val", "50", "-epochs", "2", "-batch", "25", "-seed", "2"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	for _, want := range []string{"100 training, 50 validation, 40 test images", "epoch 2: training loss", "test accuracy"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "d.json"))
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
		err := run(context.Background(), args, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), "train-images-idx3-ubyte.gz") || !strings.Contains(err.Error(), "-mnist DIR") {
			t.Errorf("args %q: error %v, want how to get the files", args, err)
		}
	}
	var stderr bytes.Buffer
	if err := run(context.Background(), []string{"-epochs"}, &bytes.Buffer{}, &stderr); err == nil {
		t.Error("a flag without its value: no error")
	}
}
