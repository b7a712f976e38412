package vi

import (
	"fmt"

	"github.com/permlab/permlab/models"
)

// ModelOf presents a models.Model as a Model of this package, for Fit and
// ELBO with guides built by hand. The guides' sites must be the model's:
// each step moves their samples into a models.Sample by name, which checks
// names and shapes. FitModel does the same with automatic guides.
func ModelOf(m models.Model) (Model, error) {
	spec, err := models.Check(m)
	if err != nil {
		return nil, fmt.Errorf("vi: ModelOf: %w", err)
	}
	return &modelAdapter{m: m, spec: spec}, nil
}
