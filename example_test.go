package retry_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/retrykit/retry"
)

// apiError is how an API client might report a failed HTTP call. Classify
// reads its status code and error code without knowing the type.
type apiError struct {
	Status int
	Code   string
}

func (e *apiError) Error() string       { return fmt.Sprintf("api: %d %s", e.Status, e.Code) }
func (e *apiError) HTTPStatusCode() int { return e.Status }
func (e *apiError) ErrorCode() string   { return e.Code }

// Retry a call that fails twice with a transient error, then succeeds.
func Example() {
	attempts := 0
	getItem := func(ctx context.Context) (string, error) {
		attempts++
		if attempts < 3 {
			return "", &apiError{Status: 503, Code: "ServiceUnavailable"}
		}
		return "item-42", nil
	}

	item, err := retry.Do(context.Background(), getItem)
	fmt.Println(item, err, "after", attempts, "attempts")
	// Output: item-42 <nil> after 3 attempts
}

// Run is Do for functions that return only an error.
func ExampleRun() {
	calls := 0
	err := retry.Run(context.Background(), func(ctx context.Context) error {
		calls++
		if calls == 1 {
			return retry.Transient(errors.New("connection dropped"))
		}
		return nil
	})
	fmt.Println(err, calls)
	// Output: <nil> 2
}

// When Do gives up, its error says why and still reaches the last
// attempt's error.
func ExampleError() {
	notFound := &apiError{Status: 404, Code: "NoSuchKey"}
	_, err := retry.Do(context.Background(), func(ctx context.Context) (int, error) {
		return 0, notFound
	})

	var e *retry.Error
	if errors.As(err, &e) {
		fmt.Println("attempts:", e.Attempts)
	}
	fmt.Println("not retryable:", errors.Is(err, retry.ErrNotRetryable))
	fmt.Println("reaches the cause:", errors.Is(err, notFound))
	fmt.Println(err)
	// Output:
	// attempts: 1
	// not retryable: true
	// reaches the cause: true
	// retry: error is not retryable (after 1 attempt): api: 404 NoSuchKey
}

// A strategy is built once and shared: all per-call state lives in the
// tokens it issues.
func ExampleNewStandard() {
	backoff, err := retry.NewExponentialBackoff(
		retry.WithInitialDelay(100*time.Millisecond),
		retry.WithMaxBackoff(5*time.Second),
	)
	if err != nil {
		panic(err)
	}
	strategy, err := retry.NewStandard(
		retry.WithMaxAttempts(5),
		retry.WithBackoff(backoff),
		retry.WithMaxCapacity(100), // each scope's retry quota
	)
	if err != nil {
		panic(err)
	}
	fmt.Println(strategy.MaxAttempts(), strategy.RetryQuota().Stats().Capacity)

	_, err = retry.NewStandard(retry.WithMaxAttempts(0))
	fmt.Println(err)
	// Output:
	// 5 100
	// retry: invalid configuration: WithMaxAttempts = 0, want 1 or more (1 means no retries)
}

// Several strategies, or clients, can pay from one retry quota, so that
// together they stop retrying when a shared dependency fails.
func ExampleWithRetryQuota() {
	quota, err := retry.NewTokenBucket(retry.WithMaxCapacity(10))
	if err != nil {
		panic(err)
	}
	orders, _ := retry.NewStandard(retry.WithRetryQuota(quota), retry.WithBackoff(retry.NoBackoff))
	billing, _ := retry.NewStandard(retry.WithRetryQuota(quota), retry.WithBackoff(retry.NoBackoff))

	down := func(ctx context.Context) error { return &apiError{Status: 503} }
	for _, s := range []*retry.Standard{orders, billing, orders} {
		err := retry.Run(context.Background(), down, retry.WithStrategy(s))
		var e *retry.Error
		errors.As(err, &e)
		fmt.Printf("%d attempts, quota left %v, quota exceeded: %v\n",
			e.Attempts, quota.Stats().Available, errors.Is(err, retry.ErrRetryQuotaExceeded))
	}
	// Output:
	// 3 attempts, quota left 0, quota exceeded: false
	// 1 attempts, quota left 0, quota exceeded: true
	// 1 attempts, quota left 0, quota exceeded: true
}

// A scope whose request gave up fails, and while it fails its retries
// come from the retry budget: a fifth of a retry for each request whose
// first attempt fails. The quota holds plenty; the budget says no until
// five requests have paid for a retry. A success ends the failure.
func ExampleWithRetryBudget() {
	s, _ := retry.NewStandard(retry.WithBackoff(retry.NoBackoff)) // the default budget, 20%
	ctx := context.Background()
	down := func(ctx context.Context) error { return &apiError{Status: 503} }
	for range 6 {
		err := retry.Run(ctx, down, retry.WithStrategy(s))
		var e *retry.Error
		errors.As(err, &e)
		fmt.Printf("%d attempts, refused by the budget: %v\n", e.Attempts, errors.Is(err, retry.ErrRetryQuotaExceeded))
	}
	_ = retry.Run(ctx, func(ctx context.Context) error { return nil }, retry.WithStrategy(s))
	err := retry.Run(ctx, down, retry.WithStrategy(s))
	var e *retry.Error
	errors.As(err, &e)
	fmt.Printf("after a success: %d attempts\n", e.Attempts)
	// Output:
	// 3 attempts, refused by the budget: false
	// 1 attempts, refused by the budget: true
	// 1 attempts, refused by the budget: true
	// 1 attempts, refused by the budget: true
	// 1 attempts, refused by the budget: true
	// 2 attempts, refused by the budget: true
	// after a success: 3 attempts
}

// Classify reads status codes, AWS error codes, network errors and the
// marks that the helpers put on errors.
func ExampleClassify() {
	for _, err := range []error{
		&apiError{Status: 503},
		&apiError{Status: 400, Code: "ThrottlingException"},
		&apiError{Status: 404},
		retry.TimedOut(errors.New("read timeout")),
		retry.WithRetryAfter(retry.Throttled(errors.New("slow down")), 2*time.Second),
		context.Canceled,
	} {
		c := retry.Classify(err)
		fmt.Printf("%-28v retry=%-5v throttle=%-5v timeout=%-5v after=%v\n",
			err, c.Retryable(), c.Throttle, c.Timeout, c.RetryAfter)
	}
	// Output:
	// api: 503                     retry=true  throttle=false timeout=false after=0s
	// api: 400 ThrottlingException retry=true  throttle=true  timeout=false after=0s
	// api: 404                     retry=false throttle=false timeout=false after=0s
	// read timeout                 retry=true  throttle=false timeout=true  after=0s
	// slow down                    retry=true  throttle=true  timeout=false after=2s
	// context canceled             retry=false throttle=false timeout=false after=0s
}

// The delay before each retry is capped, then jittered. Cap shows the caps.
func ExampleExponentialBackoff() {
	b, err := retry.NewExponentialBackoff() // 10ms, x1.5, at most 20s, full jitter
	if err != nil {
		panic(err)
	}
	for n := 1; n <= 4; n++ {
		fmt.Printf("retry %d: up to %v\n", n, b.Cap(n))
	}
	fmt.Println("retry 30: up to", b.Cap(30))
	// Output:
	// retry 1: up to 10ms
	// retry 2: up to 15ms
	// retry 3: up to 22.5ms
	// retry 4: up to 33.75ms
	// retry 30: up to 20s
}

// Each attempt can get its own deadline; an attempt that runs out of time
// is retried as a timeout, while the caller's context bounds the whole
// call.
func ExampleWithAttemptTimeout() {
	calls := 0
	v, err := retry.Do(context.Background(), func(ctx context.Context) (string, error) {
		calls++
		if calls == 1 {
			<-ctx.Done() // the first attempt hangs
			return "", ctx.Err()
		}
		return "done", nil
	}, retry.WithAttemptTimeout(10*time.Millisecond))
	fmt.Println(v, err, calls)
	// Output: done <nil> 2
}
