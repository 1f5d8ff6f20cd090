package otelretry

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/retrykit/retry"
)

// The attribute keys of package retry's metrics; error.type is the
// semantic conventions' own.
const (
	scopeKey  = attribute.Key("retry.scope")
	reasonKey = attribute.Key("retry.reason")

	// gRPC's own (gRFC A66), for its per-call retry metrics.
	grpcMethodKey = attribute.Key("grpc.method")
	grpcTargetKey = attribute.Key("grpc.target")
)

// retryReason says what a strategy made of the error it retries.
func retryReason(c retry.Classification) string {
	switch {
	case c.Throttle:
		return "throttle"
	case c.Timeout:
		return "timeout"
	}
	return "transient"
}

// giveUpReason says why a strategy gave up, from the reason of its
// EventGiveUp.
func giveUpReason(reason error) string {
	switch {
	case !retry.FiniteChain(reason): // errors.Is would never return
	case errors.Is(reason, retry.ErrRetryAfterTooLong):
		return "retry_after_too_long"
	case errors.Is(reason, retry.ErrCallerWillRetry):
		return "caller_will_retry"
	case errors.Is(reason, retry.ErrNotRetryable):
		return "not_retryable"
	case errors.Is(reason, retry.ErrMaxAttemptsExceeded):
		return "max_attempts"
	case errors.Is(reason, retry.ErrRetryQuotaExceeded):
		return "quota"
	case errors.Is(reason, retry.ErrRateLimited):
		return "rate_limited"
	case errors.Is(reason, retry.ErrDeadlineTooSoon), errors.Is(reason, context.DeadlineExceeded):
		return "deadline"
	case errors.Is(reason, context.Canceled):
		return "canceled"
	case errors.Is(reason, retry.ErrInvalidConfig):
		return "invalid_config"
	}
	return semconv.ErrorTypeOther.Value.AsString()
}

// wrapperTypes are the types of errors that only wrap another: what they
// wrap names the error better.
var wrapperTypes = map[reflect.Type]bool{
	reflect.TypeOf(fmt.Errorf("%w", errors.New(""))): true,
	reflect.TypeOf(retry.Transient(errors.New(""))):  true, // the marks of package retry
}

// errorType returns the value of the error.type attribute of err, a
// failed attempt's error, as the package documentation describes.
func errorType(err error) string {
	if !retry.FiniteChain(err) {
		return fmt.Sprintf("%T", err) // errors.As would never return
	}
	var typed interface{ ErrorType() string }
	if errors.As(err, &typed) {
		if t := typed.ErrorType(); t != "" {
			return t
		}
	}
	var coded interface{ ErrorCode() string }
	if errors.As(err, &coded) {
		if code := coded.ErrorCode(); code != "" {
			return code
		}
	}
	var status interface{ HTTPStatusCode() int }
	if errors.As(err, &status) {
		if code := status.HTTPStatusCode(); code >= 400 {
			return strconv.Itoa(code)
		}
	}
	for wrapperTypes[reflect.TypeOf(err)] {
		inner := errors.Unwrap(err)
		if inner == nil {
			break
		}
		err = inner
	}
	return semconv.ErrorType(err).Value.AsString()
}
