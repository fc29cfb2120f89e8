package readwrite

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// lateCtx is a context past its deadline whose own timer has not fired
// yet: what a driver that times calls out by ctx.Deadline() can meet.
type lateCtx struct {
	context.Context
	deadline time.Time
}

func (c lateCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// TestRunOver: a timeout at the run's deadline ends the run, even before
// ctx says it is done; any other error, or a timeout before the deadline,
// is the stack's.
func TestRunOver(t *testing.T) {
	timeout := fmt.Errorf("write: %w", context.DeadlineExceeded)
	past := lateCtx{context.Background(), time.Now().Add(-time.Millisecond)}
	future := lateCtx{context.Background(), time.Now().Add(time.Hour)}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want bool
	}{
		{"timeout past the deadline", past, timeout, true},
		{"other error past the deadline", past, errors.New("connection refused"), false},
		{"timeout before the deadline", future, timeout, false},
		{"ctx done", done, errors.New("anything"), true},
		{"no deadline", context.Background(), timeout, false},
	} {
		if got := runOver(tc.ctx, tc.err); got != tc.want {
			t.Errorf("%s: runOver = %v, want %v", tc.name, got, tc.want)
		}
	}
}
