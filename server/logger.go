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
	zc, err := loggerConfig(c)
	if err != nil {
		return nil, err
	}
	return zc.Build()
}

func loggerConfig(c conf.Log) (zap.Config, error) {
	level, err := zapcore.ParseLevel(c.Level)
	if err != nil {
		return zap.Config{}, err
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
	// Times a person and a log shipper both read (2026-12-01T10:00:00.000Z),
	// not zap's production default of epoch seconds as a float.
	zc.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	return zc, nil
}
