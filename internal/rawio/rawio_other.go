//go:build !unix

package rawio

import "syscall"

const supported = false

// Read is not available here: Wrap returns connections unchanged.
func Read(fd uintptr, p []byte) (int, error) { return 0, syscall.EINVAL }

// Write is not available here: Wrap returns connections unchanged.
func Write(fd uintptr, p []byte) (int, error) { return 0, syscall.EINVAL }
