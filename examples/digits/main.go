// Command digits trains the MNIST classifier of package networks/digits, the
// judge of the jigsaw experiments, and reports its validation and test
// accuracy.
//
// It fits on the first 50,000 training images, reports the accuracy on the
// last 10,000 after every epoch, evaluates on the 10,000 test images once at
// the end, and writes the weights (-out) and a JSON summary (-json):
//
//	go run ./examples/digits -mnist ../shared/data/mnist -out digits.nn -epochs 3 -seed 1
//
// Training checkpoints to -out with ".ckpt" appended; interrupting it
// (Ctrl-C) and running the same command again resumes where it stopped and
// ends with the same weights. The checkpoint is removed once the weights are
// written.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/permlab/permlab/dataset"
	"github.com/permlab/permlab/internal/cli"
	"github.com/permlab/permlab/networks/digits"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Summary is the JSON record of a run.
type Summary struct {
	Command      string    `json:"command"`
	Seed         uint64    `json:"seed"`
	Epochs       int       `json:"epochs"`
	BatchSize    int       `json:"batch_size"`
	TrainImages  int       `json:"train_images"`
	ValImages    int       `json:"val_images"`
	TestImages   int       `json:"test_images"`
	EpochLoss    []float64 `json:"epoch_train_loss"`
	ValAccuracy  []float64 `json:"epoch_val_accuracy"`
	TestAccuracy float64   `json:"test_accuracy"`
	TestErrors   int       `json:"test_errors"`
	TrainSeconds float64   `json:"train_seconds"` // wall time of training in this process (a resumed run counts only its part)
	Resumed      bool      `json:"resumed"`
	Params       int       `json:"params"`
	WeightsFile  string    `json:"weights_file"`
	WeightsBytes int64     `json:"weights_bytes"`
	GoVersion    string    `json:"go_version"`
	GOMAXPROCS   int       `json:"gomaxprocs"`
	Date         string    `json:"date"`
}

type config struct {
	mnist, out, json string
	epochs, batch    int
	val              int
	seed             uint64
}

// parse reads and checks the flags, and checks that -mnist is a folder and
// that -out and -json can be written, before any data is read; its errors
// are usage errors (exit status 2) that name the flag.
func parse(args []string, stderr io.Writer) (*config, error) {
	c := new(config)
	fs := flag.NewFlagSet("digits", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.mnist, "mnist", "", "folder with the four MNIST IDX files (required)")
	fs.StringVar(&c.out, "out", filepath.Join("out", "digits", "digits.nn"), "where to write the trained weights (the default is under out/, which git ignores)")
	fs.StringVar(&c.json, "json", "", "where to write the JSON summary (default: -out with .json)")
	fs.IntVar(&c.epochs, "epochs", 3, "passes over the training images")
	fs.IntVar(&c.batch, "batch", 64, "images per step")
	fs.IntVar(&c.val, "val", 10000, "hold out the last -val training images for validation")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the initial weights and of the order of the examples")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: go run ./examples/digits -mnist DIR [-out digits.nn] [-epochs 3] [-seed 1]")
		fs.PrintDefaults()
	}
	if err := cli.Parse(fs, args); err != nil {
		return nil, err
	}
	if c.json == "" {
		c.json = strings.TrimSuffix(c.out, ".nn") + ".json"
	}
	var ck cli.Check
	ck.AtLeast("-epochs", c.epochs, 1)
	ck.AtLeast("-batch", c.batch, 1)
	ck.AtLeast("-val", c.val, 1)
	if ck.Err() != nil {
		return nil, ck.Err()
	}
	if c.mnist == "" {
		return nil, cli.Usagef("no -mnist flag: %s", dataset.MNISTHelp)
	}
	if err := cli.InputDir("-mnist", c.mnist); err != nil {
		return nil, cli.Usagef("%v: %s", err, dataset.MNISTHelp)
	}
	ck.That(c.json != c.out, "-json %s is the weights file of -out", c.json)
	ck.OutputFile("-out", c.out)
	ck.OutputFile("-out", c.out+".ckpt") // the checkpoint beside it
	ck.OutputFile("-json", c.json)
	return c, ck.Err()
}

// run is the command; it returns the exit status: 2 for a bad command line
// (nothing done), 1 for a failure, 130 when interrupted.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := train(ctx, args, stdout, stderr)
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "digits: interrupted; run the same command again to resume from the checkpoint")
		return 130
	}
	return cli.Exit(stderr, "digits", err)
}

func train(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parse(args, stderr)
	if err != nil {
		return err
	}
	for _, p := range []string{c.out, c.json} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
	}
	all, test, err := dataset.LoadMNIST(c.mnist)
	if err != nil {
		return err
	}
	if c.val >= all.N {
		return cli.Usagef("-val %d must be in [1, %d): %s holds %d training images", c.val, all.N, c.mnist, all.N)
	}
	fit, val, err := all.Split(all.N - c.val)
	if err != nil {
		return err
	}
	model, err := digits.New(c.seed)
	if err != nil {
		return err
	}
	s := &Summary{Command: "go run ./examples/digits " + strings.Join(args, " "), Seed: c.seed, Epochs: c.epochs,
		BatchSize: c.batch, TrainImages: fit.N, ValImages: val.N, TestImages: test.N,
		GoVersion: runtime.Version(), GOMAXPROCS: runtime.GOMAXPROCS(0)}
	for _, p := range model.Params() {
		s.Params += p.Value.Size()
	}
	fmt.Fprintf(stdout, "MNIST: %d training, %d validation, %d test images; %d weights\n", fit.N, val.N, test.N, s.Params)
	ck := c.out + ".ckpt"
	_, statErr := os.Stat(ck)
	s.Resumed = statErr == nil
	began := time.Now()
	err = model.Train(ctx, fit, val, digits.TrainOptions{
		Epochs: c.epochs, BatchSize: c.batch, Seed: c.seed, Checkpoint: ck, Progress: stderr,
		OnEpoch: func(r digits.EpochReport) error {
			s.EpochLoss = append(s.EpochLoss, r.Loss)
			s.ValAccuracy = append(s.ValAccuracy, r.ValAccuracy)
			fmt.Fprintf(stdout, "epoch %d: training loss %.4f, validation accuracy %.2f%%\n", r.Epoch+1, r.Loss, 100*r.ValAccuracy)
			return nil
		},
	})
	if err != nil {
		return err
	}
	s.TrainSeconds = time.Since(began).Seconds()
	acc, err := model.Accuracy(test)
	if err != nil {
		return err
	}
	s.TestAccuracy = acc
	s.TestErrors = test.N - int(acc*float64(test.N)+0.5)
	fmt.Fprintf(stdout, "test accuracy %.2f%% (%d errors in %d); training took %s\n",
		100*acc, s.TestErrors, test.N, time.Duration(s.TrainSeconds*float64(time.Second)).Round(time.Second))
	if err := model.Save(c.out); err != nil {
		return err
	}
	st, err := os.Stat(c.out)
	if err != nil {
		return err
	}
	s.WeightsFile, s.WeightsBytes = c.out, st.Size()
	s.Date = time.Now().UTC().Format(time.RFC3339)
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.json, append(data, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (%d bytes) and %s\n", c.out, st.Size(), c.json)
	return os.Remove(ck)
}
