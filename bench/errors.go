package bench

import "errors"

// Errors a run returns, wrapped with the details.
var (
	// ErrUnknownEngine: --engines names an engine the bench does not have.
	ErrUnknownEngine = errors.New("unknown engine")
	// ErrUnavailable: this pgcache cannot run an engine yet (its route
	// config is refused); the engine is reported, and the run goes on.
	ErrUnavailable = errors.New("not available yet")
	// ErrInterrupted: the run was stopped (Ctrl-C) before its end; what
	// ran was written.
	ErrInterrupted = errors.New("interrupted")
	// ErrEnginesFailed: at least one engine failed; the others ran.
	ErrEnginesFailed = errors.New("some engines failed")
)
