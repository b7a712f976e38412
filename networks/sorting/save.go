package sorting

import (
	"fmt"

	"github.com/permlab/permlab/nn"
)

// Save writes the weights of the network to the file path in the format of
// package nn (nn.SaveFile). The parameter names carry the variant, and the
// shapes carry N and Hidden, so Load refuses a file written by a network of
// another shape or variant.
func (net *Network) Save(path string) error {
	if err := nn.SaveFile(path, net.params); err != nil {
		return fmt.Errorf("sorting: Save: %w", err)
	}
	return nil
}

// Load replaces the weights of the network by those in the file path,
// written by Save from a network with the same N, Hidden and Variant. The
// optimizer state and the training position are not part of the file: Load
// is meant for trained networks, for Sort and Evaluate. On error the weights
// are unchanged.
func (net *Network) Load(path string) error {
	if err := nn.LoadFile(path, net.params); err != nil {
		return fmt.Errorf("sorting: Load: %w", err)
	}
	return nil
}
