package server

import (
	"os"

	"github.com/mattn/go-isatty"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/pgcache/pgcache/conf"
)

// NewLogger builds the process logger from the log config: JSON lines on
// stderr, or zap's console encoder for a person reading debug output.
func NewLogger(c conf.Log) (*zap.Logger, error) {
	level, err := zapcore.ParseLevel(c.Level)
	if err != nil {
		return nil, err
	}
	format := c.Format
	if format == "auto" {
		format = "json"
		if level == zapcore.DebugLevel && isatty.IsTerminal(os.Stderr.Fd()) {
			format = "console"
		}
	}
	zc := zap.NewProductionConfig()
	if format == "console" {
		zc = zap.NewDevelopmentConfig()
	}
	zc.Level = zap.NewAtomicLevelAt(level)
	zc.Encoding = format
	zc.Sampling = nil // pgcache logs no line per request; keep every line it does log
	zc.DisableStacktrace = level != zapcore.DebugLevel
	return zc.Build()
}
