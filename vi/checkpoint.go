package vi

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/ad/optim"
)

const checkpointVersion = 1

var errNoCheckpoint = errors.New("vi: no checkpoint")

// checkpoint is the on-disk state of a fit after Step steps.
type checkpoint struct {
	Version int
	Step    int
	Names   []string
	Values  [][]float64
	Optim   optim.State
	ELBO    []float64
}

func newCheckpoint(step int, params []*ad.Param, opt optim.Optimizer, elbo []float64) *checkpoint {
	ck := &checkpoint{Version: checkpointVersion, Step: step, Optim: opt.State(), ELBO: elbo}
	for _, p := range params {
		ck.Names = append(ck.Names, p.Name)
		ck.Values = append(ck.Values, p.Value.Data)
	}
	return ck
}

func (ck *checkpoint) restore(params []*ad.Param, opt optim.Optimizer) error {
	if ck.Version != checkpointVersion {
		return fmt.Errorf("unsupported checkpoint version %d", ck.Version)
	}
	if len(ck.Values) != len(params) {
		return fmt.Errorf("checkpoint has %d parameters, model has %d", len(ck.Values), len(params))
	}
	for i, p := range params {
		if ck.Names[i] != p.Name || len(ck.Values[i]) != len(p.Value.Data) {
			return fmt.Errorf("checkpoint parameter %d is %q with %d values, model has %q with %d", i, ck.Names[i], len(ck.Values[i]), p.Name, len(p.Value.Data))
		}
	}
	if err := opt.SetState(ck.Optim); err != nil {
		return err
	}
	for i, p := range params {
		copy(p.Value.Data, ck.Values[i])
	}
	return nil
}

// writeCheckpoint writes ck to path atomically: the data goes to a
// temporary file in the same directory, which is synced and renamed over
// path, so a crash leaves either the old or the new checkpoint, never a
// partial one.
func writeCheckpoint(path string, ck *checkpoint) error {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(ck); err != nil {
		return fmt.Errorf("vi: encoding checkpoint: %w", err)
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("vi: writing checkpoint: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(buf.Bytes())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("vi: writing checkpoint: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // make the rename durable; best effort
		d.Close()
	}
	return nil
}

func readCheckpoint(path string) (*checkpoint, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNoCheckpoint
	}
	if err != nil {
		return nil, fmt.Errorf("vi: reading checkpoint: %w", err)
	}
	ck := new(checkpoint)
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(ck); err != nil {
		return nil, fmt.Errorf("vi: reading checkpoint %s: %w", path, err)
	}
	return ck, nil
}
