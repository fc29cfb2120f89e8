package backends

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
)

// Optional capabilities, found by type assertion on a Backend or a Driver.

// Sizer is a Backend that can count its keys cheaply (DBSIZE).
type Sizer interface {
	Len(ctx context.Context) (int64, error)
}

// Checker is a Driver or Backend that can tell whether it can serve now
// (/readyz). A nil error means ready.
type Checker interface {
	Check(ctx context.Context) error
}

// InfoSection is a Driver that adds lines to INFO: pairs of field and value,
// written as "field:value".
type InfoSection interface {
	Info(ctx context.Context) [][2]string
}

// Collector is a Driver with Prometheus metrics of its own (pool stats,
// table health). Its metrics carry a "backend" label with the driver name.
type Collector interface {
	Collectors() []prometheus.Collector
}
