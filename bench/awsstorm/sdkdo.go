package awsstorm

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsretry "github.com/aws/aws-sdk-go-v2/aws/retry"
)

// SDKDo drives an aws-sdk-go-v2 retryer on the real clock around fn as the
// SDK's retry middleware does in its default mode (aws/retry/middleware.go,
// HandleFinalize and handleAttempt): check the context, GetAttemptToken
// (which may sleep), the attempt, the two release funcs, IsErrorRetryable,
// MaxAttempts, GetRetryToken, RetryDelay, and a sleep that the context can
// cut short, which the SDK makes even for a zero delay. It leaves out the
// tracing, metrics, logging, request cloning and clock-skew handling around
// that loop, which would cost the SDK more. The peer benchmarks and the
// real-time run both use it.
func SDKDo[T any](ctx context.Context, r aws.RetryerV2, fn func(context.Context) (T, error)) (T, error) {
	var zero T
	maxAttempts := r.MaxAttempts()
	releaseRetryToken := nopRelease
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return zero, err
		}
		releaseAttemptToken, err := r.GetAttemptToken(ctx)
		if err != nil {
			return zero, fmt.Errorf("failed to get retry Send token, %w", err)
		}
		v, err := fn(ctx)
		_ = releaseRetryToken(err)
		_ = releaseAttemptToken(err)
		if err == nil {
			return v, nil
		}
		if !r.IsErrorRetryable(err) {
			return zero, err
		}
		if maxAttempts > 0 && attempt >= maxAttempts {
			return zero, &awsretry.MaxAttemptsError{Attempt: attempt, Err: err}
		}
		release, tokenErr := r.GetRetryToken(ctx, err)
		if tokenErr != nil {
			return zero, errors.Join(err, tokenErr)
		}
		releaseRetryToken = release
		d, delayErr := r.RetryDelay(attempt, err)
		if delayErr != nil {
			return zero, delayErr
		}
		if err := sleep(ctx, d); err != nil {
			return zero, &aws.RequestCanceledError{Err: err}
		}
	}
}
