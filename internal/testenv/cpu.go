package testenv

import (
	"syscall"
	"testing"
	"time"
)

// CPUPerOp starts counting the CPU time (user and system) this process
// spends, and the returned stop reports it per b.N as cpu-ns/op. On a
// machine shared with other work, time spent waiting for a core shows in
// ns/op and not here, so two variants of a path compare more steadily by
// it. The process's other goroutines (the client of a loopback benchmark,
// the collector) count too: compare variants measured the same way.
func CPUPerOp(b *testing.B) (stop func()) {
	start := cpuTime()
	return func() {
		b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
