package jigsaw

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// trainExtra is Train's own part of its checkpoint (package train's Loop
// keeps the weights, Adam's state, the step and the losses): the state of
// the one random stream that draws minibatches, permutations and noise, so
// that a run resumed after any step goes on exactly as if it had never
// stopped, and the training seconds of every call so far.
type trainExtra struct {
	src      *rand.PCG
	prior    float64   // seconds of the calls before this one
	begun    time.Time // when this call began
	savedAt  int       // the step of the last checkpoint this call wrote (0: none)
	savedSec float64   // the seconds it recorded
}

// trainExtraState is the encoded form of trainExtra.
type trainExtraState struct {
	RNG     []byte
	Seconds float64
}

func (e *trainExtra) seconds() float64 { return e.prior + time.Since(e.begun).Seconds() }

func (e *trainExtra) SaveState(steps int) ([]byte, error) {
	rs, err := e.src.MarshalBinary()
	if err != nil {
		return nil, err
	}
	e.savedAt, e.savedSec = steps, e.seconds()
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(trainExtraState{RNG: rs, Seconds: e.savedSec}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (e *trainExtra) RestoreState(b []byte, steps int, _ []float64, stopped bool) error {
	var st trainExtraState
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&st); err != nil {
		return fmt.Errorf("its training state is unreadable: %w", err)
	}
	switch {
	case stopped:
		return fmt.Errorf("it records a stop, which Train never makes")
	case !(st.Seconds >= 0) || math.IsInf(st.Seconds, 0):
		return fmt.Errorf("%v seconds of training", st.Seconds)
	}
	if err := e.src.UnmarshalBinary(st.RNG); err != nil {
		return fmt.Errorf("random state: %w", err)
	}
	e.prior = st.Seconds
	// The file holds this state: a call that trains nothing more reports
	// the seconds it recorded.
	e.savedAt, e.savedSec = steps, st.Seconds
	return nil
}
