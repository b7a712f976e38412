package nn_test

import (
	"bytes"
	"fmt"
	"log"
	"math"
	"math/rand/v2"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/ad/optim"
	"github.com/permlab/permlab/nn"
)

// A two-layer perceptron learns XOR, which no linear model can fit.
func Example() {
	rng := rand.New(rand.NewPCG(1, 2))
	hidden, err := nn.NewDense(rng, "hidden", 2, 8, nn.GlorotUniform)
	if err != nil {
		log.Fatal(err)
	}
	out, err := nn.NewDense(rng, "out", 8, 1, nn.GlorotUniform)
	if err != nil {
		log.Fatal(err)
	}
	net := nn.Sequential{hidden, nn.Tanh{}, out}

	x := &ad.Tensor{Shape: []int{4, 2}, Data: []float64{0, 0, 0, 1, 1, 0, 1, 1}}
	y := &ad.Tensor{Shape: []int{4, 1}, Data: []float64{0, 1, 1, 0}}
	opt, err := optim.NewAdam(net.Params())
	if err != nil {
		log.Fatal(err)
	}
	tape := ad.NewTape()
	for range 300 {
		tape.Reset()
		logits := net.Forward(tape, tape.Const(x))
		loss := ad.Mean(nn.BinaryCrossEntropyWithLogits(logits, tape.Const(y)))
		if err := tape.Backward(loss); err != nil {
			log.Fatal(err)
		}
		if err := opt.Step(0.05); err != nil {
			log.Fatal(err)
		}
	}
	tape.Reset()
	p := ad.Sigmoid(net.Forward(tape, tape.Const(x))).Value()
	for i, v := range p {
		fmt.Printf("%v XOR %v ≈ %.0f\n", x.Data[2*i], x.Data[2*i+1], math.Round(v))
	}
	// Output:
	// 0 XOR 0 ≈ 0
	// 0 XOR 1 ≈ 1
	// 1 XOR 0 ≈ 1
	// 1 XOR 1 ≈ 0
}

// Save writes a network's parameters; Load reads them into a network of
// the same architecture built with any seed.
func ExampleSave() {
	build := func(seed uint64) nn.Sequential {
		rng := rand.New(rand.NewPCG(seed, 0))
		conv, err := nn.NewConv2D(rng, "conv", 1, 2, 3, 1, 1, nn.HeNormal)
		if err != nil {
			log.Fatal(err)
		}
		fc, err := nn.NewDense(rng, "fc", 2*2*2, 3, nn.GlorotUniform)
		if err != nil {
			log.Fatal(err)
		}
		return nn.Sequential{conv, nn.ReLU{}, nn.MaxPool2D{Size: 2}, nn.Flatten{}, fc}
	}
	trained, fresh := build(1), build(2)

	var file bytes.Buffer
	if err := nn.Save(&file, trained.Params()); err != nil {
		log.Fatal(err)
	}
	if err := nn.Load(&file, fresh.Params()); err != nil {
		log.Fatal(err)
	}
	for _, p := range fresh.Params() {
		fmt.Println(p.Name, p.Value.Shape)
	}
	fmt.Println("same weights:", fmt.Sprint(trained.Params()[0].Value.Data) == fmt.Sprint(fresh.Params()[0].Value.Data))
	// Output:
	// conv.W [2 9]
	// conv.b [2]
	// fc.W [8 3]
	// fc.b [3]
	// same weights: true
}

// A convolution with "same" padding keeps the image size; a 2×2 max-pool
// halves it.
func ExampleConv2D() {
	rng := rand.New(rand.NewPCG(1, 0))
	conv, err := nn.NewConv2D(rng, "conv1", 1, 32, 5, 1, 2, nn.HeUniform)
	if err != nil {
		log.Fatal(err)
	}
	tape := ad.NewTape()
	images := tape.Const(ad.Zeros(100, 1, 28, 28))
	h := conv.Forward(tape, images)
	fmt.Println(h.Shape())
	fmt.Println(nn.MaxPool2D{Size: 2}.Forward(tape, h).Shape())
	for _, p := range conv.Params() {
		fmt.Println(p.Name, p.Value.Shape)
	}

	// A shape error is recorded on the tape, not panicked.
	conv.Forward(tape, tape.Const(ad.Zeros(100, 3, 28, 28)))
	fmt.Println(tape.Err())
	// Output:
	// [100 32 28 28]
	// [100 32 14 14]
	// conv1.W [32 25]
	// conv1.b [32]
	// nn: Conv2D: want input shape (N, 1, H, W), got [100 3 28 28]
}

// CrossEntropy is the mean negative log-probability of the labels under
// softmax(logits): here (−log(e²/(e²+2)) + log 3)/2. The second row ties,
// and Accuracy takes the first maximum, class 0, so it counts as wrong.
func ExampleCrossEntropy() {
	tape := ad.NewTape()
	logits := tape.Const(&ad.Tensor{Shape: []int{2, 3}, Data: []float64{
		2, 0, 0,
		0, 0, 0,
	}})
	loss := nn.CrossEntropy(logits, []int{0, 2})
	fmt.Printf("loss %.4f\n", loss.Item())
	fmt.Printf("accuracy %.2f\n", nn.Accuracy(logits.Value(), 2, 3, []int{0, 2}))
	// Output:
	// loss 0.6691
	// accuracy 0.50
}

// A dense layer whose product runs in float32 gives the float64 layer's
// output up to float32 rounding; its parameters are the same float64
// values.
func ExampleWithPrecision() {
	layer := func(p nn.Precision) *nn.Dense {
		d, err := nn.NewDense(rand.New(rand.NewPCG(1, 1)), "fc", 256, 64, nn.HeUniform, nn.WithPrecision(p))
		if err != nil {
			log.Fatal(err)
		}
		return d
	}
	d64, d32 := layer(nn.Float64), layer(nn.Float32)
	x := ad.Zeros(32, 256)
	for i := range x.Data {
		x.Data[i] = math.Sin(float64(i))
	}
	tape := ad.NewTape()
	y64 := d64.Forward(tape, tape.Const(x)).Value()
	y32 := d32.Forward(tape, tape.Const(x)).Value()
	worst := 0.0
	for i := range y64 {
		worst = math.Max(worst, math.Abs(y32[i]-y64[i]))
	}
	fmt.Println(d32.Precision, "layer within 1e-5 of float64:", worst < 1e-5, "- same bits:", worst == 0)
	// Output: float32 layer within 1e-5 of float64: true - same bits: false
}
