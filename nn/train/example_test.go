package train_test

import (
	"context"
	"fmt"
	"log"
	"math/rand/v2"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/ad/optim"
	"github.com/permlab/permlab/nn/train"
)

// line fits y = a·x + b to noiseless points by least squares.
type line struct {
	x, y []float64
	a, b *ad.Param
}

func (l *line) Loss(t *ad.Tape, batch []int, _ *rand.Rand) (*ad.Var, error) {
	x, y := ad.Zeros(len(batch)), ad.Zeros(len(batch))
	for k, i := range batch {
		x.Data[k], y.Data[k] = l.x[i], l.y[i]
	}
	pred := ad.Add(ad.Mul(t.Const(x), t.Param(l.a)), t.Param(l.b))
	return ad.Mean(ad.Square(ad.Sub(pred, t.Const(y)))), nil
}

func ExampleRun() {
	l := &line{a: ad.NewParam("a", ad.Zeros(1)), b: ad.NewParam("b", ad.Zeros(1))}
	for i := range 100 {
		x := float64(i) / 50
		l.x, l.y = append(l.x, x), append(l.y, 3*x-1)
	}
	res, err := train.Run(context.Background(), []*ad.Param{l.a, l.b}, l, train.Options{
		N: 100, BatchSize: 10, Epochs: 100, Seed: 1,
		LR: optim.Cosine{Start: 0.1, End: 1e-4, Steps: 1000},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d steps: a = %.3f, b = %.3f\n", res.Steps, l.a.Value.Data[0], l.b.Value.Data[0])
	// Output: 1000 steps: a = 3.000, b = -1.000
}
