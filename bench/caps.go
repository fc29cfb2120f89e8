package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Servers the bench starts are capped as the published comparison capped its PostgreSQL
// and Valkey: each in a cgroup of DefaultCPUQuota and DefaultMemoryMax.
// The cgroup is a transient systemd scope that adopts the running
// processes (what `systemd-run --scope` does for a new command), made with
// busctl, so it needs systemd as PID 1; without it nothing is capped and
// the report says so.

// systemdRunning reports whether systemd manages this machine (sd_booted's test).
func systemdRunning() bool {
	fi, err := os.Stat("/run/systemd/system")
	return err == nil && fi.IsDir()
}

// Caps as systemd properties: CPUQuota=200% is 2 s of CPU per second.
const (
	capCPUQuotaPerSecUSec = 2_000_000
	capMemoryMaxBytes     = 4 << 30
	capTimeout            = 10 * time.Second
)

// capProcesses puts pids in a new scope named unit and returns what was
// applied, or why nothing was: a failure to cap is reported, not fatal.
func capProcesses(ctx context.Context, unit string, pids []int) string {
	if !systemdRunning() {
		return "none: systemd is not running here (no /run/systemd/system), so no cgroup scope"
	}
	if len(pids) == 0 {
		return "none: the server's processes were not found"
	}
	args := []string{"call", "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
		"org.freedesktop.systemd1.Manager", "StartTransientUnit", "ssa(sv)a(sa(sv))",
		unit, "fail", "3", "PIDs", "au", strconv.Itoa(len(pids))}
	for _, p := range pids {
		args = append(args, strconv.Itoa(p))
	}
	args = append(args,
		"CPUQuotaPerSecUSec", "t", strconv.Itoa(capCPUQuotaPerSecUSec),
		"MemoryMax", "t", strconv.Itoa(capMemoryMaxBytes),
		"0")
	ctx, cancel := context.WithTimeout(ctx, capTimeout)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "busctl", args...).CombinedOutput(); err != nil {
		return fmt.Sprintf("none: creating systemd scope %s failed: %v: %s", unit, err, strings.TrimSpace(string(out)))
	}
	return fmt.Sprintf("systemd scope %s: CPUQuota=%s MemoryMax=%s", unit, DefaultCPUQuota, DefaultMemoryMax)
}
