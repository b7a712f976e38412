package digits

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/dataset"
	"github.com/permlab/permlab/internal/longtest"
)

// bars returns n synthetic 28×28 "digits": class k is a bright horizontal
// bar on rows 2k+4 and 2k+5 plus uniform noise of amplitude 0.3, so a
// network must find the bar to tell the classes apart.
func bars(n int, seed uint64) *dataset.Images {
	src := rand.New(rand.NewPCG(seed, 7))
	im := &dataset.Images{N: n, Channels: 1, Height: Height, Width: Width,
		Pixels: make([]float64, n*Height*Width), Labels: make([]int, n)}
	for i := range n {
		k := src.IntN(Classes)
		im.Labels[i] = k
		img := im.Image(i)
		for j := range img {
			img[j] = 0.3 * src.Float64()
		}
		for y := 2*k + 4; y <= 2*k+5; y++ {
			for x := 4; x < 24; x++ {
				img[y*Width+x] = 0.7 + 0.3*src.Float64()
			}
		}
	}
	return im
}

func TestNew(t *testing.T) {
	c, err := New(1)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range c.Params() {
		n += p.Value.Size()
	}
	// conv1 32·25+32, conv2 64·800+64, hidden 1024·128+128, out 128·10+10.
	if want := 832 + 51264 + 131200 + 1290; n != want {
		t.Errorf("%d weights, want %d", n, want)
	}
	z, err := c.Logits(bars(3, 1))
	if err != nil {
		t.Fatal(err)
	}
	if len(z) != 3*Classes {
		t.Fatalf("%d logits for 3 images, want 30", len(z))
	}
	d, _ := New(2)
	if d.Params()[0].Value.Data[0] == c.Params()[0].Value.Data[0] {
		t.Error("seeds 1 and 2 give the same first weight")
	}
}

func TestTrainSynthetic(t *testing.T) {
	c, err := New(1)
	if err != nil {
		t.Fatal(err)
	}
	fit, val := bars(200, 1), bars(100, 2)
	before, err := c.Accuracy(val)
	if err != nil {
		t.Fatal(err)
	}
	var reports []EpochReport
	err = c.Train(context.Background(), fit, val, TrainOptions{Epochs: 2, BatchSize: 20, Seed: 3,
		OnEpoch: func(r EpochReport) error { reports = append(reports, r); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) != 2 || reports[1].Loss >= reports[0].Loss {
		t.Fatalf("epoch reports %+v, want two with falling loss", reports)
	}
	// Chance is 10 %; the bars are plain enough that two short epochs
	// separate them almost perfectly.
	after := reports[1].ValAccuracy
	if before > 0.3 || after < 0.95 {
		t.Fatalf("validation accuracy %.2f before training and %.2f after, want <= 0.3 and >= 0.95", before, after)
	}
	pred, err := c.Predict(val)
	if err != nil {
		t.Fatal(err)
	}
	right := 0
	for i, p := range pred {
		if p == val.Labels[i] {
			right++
		}
	}
	if got := float64(right) / float64(val.N); got != after {
		t.Errorf("Predict agrees with the labels on %.2f, Accuracy says %.2f", got, after)
	}
}

// TestGOMAXPROCS checks that training gives the same bits on one core as
// on four: the convolutions run samples in parallel, and their gradient
// sums must not depend on how many goroutines took part.
func TestGOMAXPROCS(t *testing.T) {
	data := bars(48, 5)
	var weights [2][]*ad.Param
	for k, procs := range []int{1, 4} {
		old := runtime.GOMAXPROCS(procs)
		c, err := New(9)
		if err == nil {
			err = c.Train(context.Background(), data, nil, TrainOptions{Epochs: 1, BatchSize: 16, Seed: 4})
		}
		runtime.GOMAXPROCS(old)
		if err != nil {
			t.Fatal(err)
		}
		weights[k] = c.Params()
	}
	for i, p := range weights[0] {
		for j, v := range p.Value.Data {
			if w := weights[1][i].Value.Data[j]; math.Float64bits(v) != math.Float64bits(w) {
				t.Fatalf("%s[%d] = %v with GOMAXPROCS=1, %v with 4", p.Name, j, v, w)
			}
		}
	}
}

func TestSaveLoad(t *testing.T) {
	c, err := New(4)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "d.nn")
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	d, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	im := bars(4, 3)
	zc, _ := c.Logits(im)
	zd, err := d.Logits(im)
	if err != nil {
		t.Fatal(err)
	}
	for i := range zc {
		if zc[i] != zd[i] {
			t.Fatalf("logit %d: %v saved, %v loaded", i, zc[i], zd[i])
		}
	}
	if _, err := Load(filepath.Join(t.TempDir(), "absent.nn")); err == nil {
		t.Error("Load of a missing file: no error")
	}
}

func TestErrors(t *testing.T) {
	c, err := New(1)
	if err != nil {
		t.Fatal(err)
	}
	rgb := &dataset.Images{N: 1, Channels: 3, Height: 28, Width: 28, Pixels: make([]float64, 3*784), Labels: []int{0}}
	bad := bars(2, 1)
	bad.Labels[1] = 10
	unlabelled := bars(2, 1)
	unlabelled.Labels = nil
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"logits-rgb", second(c.Logits(rgb)), "3×28×28, want 1×28×28"},
		{"logits-nil", second(c.Logits(nil)), "nil images"},
		{"accuracy-unlabelled", second(c.Accuracy(unlabelled)), "no labels"},
		{"train-label", c.Train(context.Background(), bad, nil, TrainOptions{}), "label 1 is 10"},
		{"train-val", c.Train(context.Background(), bars(2, 1), rgb, TrainOptions{}), "validation set"},
		{"train-epochs", c.Train(context.Background(), bars(2, 1), nil, TrainOptions{Epochs: -1}), "must be >= 1"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, tc.err, tc.want)
		}
	}
}

func second[T any](_ T, err error) error { return err }

// TestTrainedWeights checks the committed weights, when the real MNIST
// files are present, against the accuracy README.md reports.
func TestTrainedWeights(t *testing.T) {
	longtest.Skip(t, "classifies 10,000 images")
	const weights, mnist = "testdata/digits.nn", "../../../shared/data/mnist"
	if _, err := os.Stat(weights); err != nil {
		t.Skipf("no trained weights: %v", err)
	}
	if _, err := os.Stat(mnist); err != nil {
		t.Skipf("MNIST not found at %s: %v", mnist, err)
	}
	c, err := Load(weights)
	if err != nil {
		t.Fatal(err)
	}
	_, test, err := dataset.LoadMNIST(mnist)
	if err != nil {
		t.Fatal(err)
	}
	acc, err := c.Accuracy(test)
	if err != nil {
		t.Fatal(err)
	}
	if acc < 0.99 {
		t.Errorf("test accuracy %.4f, want >= 0.99", acc)
	}
}
