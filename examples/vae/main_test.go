package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFlags(t *testing.T) {
	var buf strings.Builder
	if _, err := parseFlags([]string{"-h"}, &buf); !errors.Is(err, flag.ErrHelp) || !strings.Contains(buf.String(), "-estimator") {
		t.Errorf("-h: err %v, usage %q", err, buf.String())
	}
	if _, err := parseFlags(nil, io.Discard); err == nil || !strings.Contains(err.Error(), "-mnist") || !strings.Contains(err.Error(), "IDX") {
		t.Errorf("no -mnist: err %v, want one saying how to get MNIST", err)
	}
	if _, err := parseFlags([]string{"-mnist", "x", "-epochs", "0"}, io.Discard); err == nil {
		t.Error("-epochs 0: no error")
	}
	o, err := parseFlags([]string{"-mnist", "x", "-estimator", "rebar"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), o, io.Discard); err == nil || !strings.Contains(err.Error(), "rebar") {
		t.Errorf("-estimator rebar: err %v", err)
	}
	o.estimator = "concrete"
	o.mnist = filepath.Join(t.TempDir(), "missing")
	if err := run(context.Background(), o, io.Discard); err == nil || !strings.Contains(err.Error(), "MNIST") {
		t.Errorf("missing MNIST folder: err %v, want one saying how to get MNIST", err)
	}
}

const mnistDir = "/work/shared/data/mnist"

// TestRunMNIST trains for one epoch on 500 images and checks the outputs.
func TestRunMNIST(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on MNIST for several seconds")
	}
	if _, err := os.Stat(mnistDir); err != nil {
		t.Skipf("MNIST not found at %s: %v", mnistDir, err)
	}
	out := t.TempDir()
	o, err := parseFlags([]string{"-mnist", mnistDir, "-estimator", "gumbel-space", "-epochs", "1",
		"-train-n", "500", "-val-n", "50", "-test-n", "20", "-iw-k", "5", "-out", out}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), o, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"summary.json", "model.plnn", "curves.png", "recon.png", "samples.png", "checkpoint"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.Test == nil || s.Test.Images != 20 || s.Test.K != 5 || !(s.Test.NegLogPx > 0) || s.Steps != 5 {
		t.Errorf("summary: %+v", s)
	}
}
