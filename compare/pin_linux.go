//go:build linux

package compare

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// pin sets the CPU affinity of every thread of the process. Threads are
// listed from /proc/self/task; the list is read until a pass finds no new
// thread, since a thread created during a pass inherits the mask of its
// creator, which may not have been pinned yet.
func pin(cpus []int) error {
	var set unix.CPUSet
	set.Zero()
	for _, c := range cpus {
		set.Set(c)
	}
	done := map[int]bool{}
	for range 10 {
		entries, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		fresh := false
		for _, e := range entries {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || done[tid] {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &set); err != nil {
				return err
			}
			done[tid] = true
			fresh = true
		}
		if !fresh {
			return nil
		}
	}
	return nil
}
