package otelretry

import (
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/retrykit/retry"
)

// An Option configures New.
type Option interface {
	apply(*config)
}

type config struct {
	provider metric.MeterProvider
	attrs    []attribute.KeyValue
	err      error // the first bad option
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithMeterProvider sets the MeterProvider that makes the instruments
// (default: the global one, otel.GetMeterProvider(), as it is when New is
// called). Valid: non-nil.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) {
		if mp == nil && c.err == nil {
			c.err = configError("WithMeterProvider", "nil", "a non-nil metric.MeterProvider")
		}
		c.provider = mp
	})
}

// WithAttributes adds attributes to every measurement, such as the name
// of the strategy or of the service it calls. Later options add to what
// earlier ones gave. Valid: attributes with a non-empty key and a value.
func WithAttributes(kvs ...attribute.KeyValue) Option {
	return optionFunc(func(c *config) {
		for _, kv := range kvs {
			if !kv.Valid() && c.err == nil {
				c.err = configError("WithAttributes", fmt.Sprintf("%q=%v", kv.Key, kv.Value.String()), "attributes with a non-empty key and a value")
			}
		}
		c.attrs = append(c.attrs, kvs...)
	})
}

// configError reports a bad value for the named option, as package retry
// does.
func configError(option string, got any, valid string) error {
	return fmt.Errorf("%w: otelretry.%s = %v, want %s", retry.ErrInvalidConfig, option, got, valid)
}
