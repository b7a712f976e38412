//go:build !linux

package compare

import "errors"

func pin([]int) error { return errors.New("CPU pinning is only implemented on Linux") }
