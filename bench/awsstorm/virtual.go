package awsstorm

import (
	"context"
	"fmt"
	"sync"
	"time"
	_ "unsafe" // for go:linkname

	awsretry "github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/retrykit/retry"
	"github.com/retrykit/retry/internal/storm"
)

// The SDK's adaptive retryer cannot run on a virtual clock through its
// API. Its client-side rate limiter (aws/retry/adaptive_ratelimit.go)
// reads the time from the package variable sdk.NowTime of the SDK's
// internal package internal/sdk (lines 35, 92, 97, 124 and 137 in
// v1.47.7), which is time.Now, and its GetAttemptToken
// (aws/retry/adaptive.go:143) waits for a send slot in
// sdk.SleepWithContext, a real timer. Neither is an option of
// NewAdaptiveMode, and internal/sdk cannot be imported from outside the
// SDK's module. Both are variables, which the SDK's own tests swap
// (sdk.TestingUseReferenceTime, sdk.TestingUseNopSleep); RunAdaptive swaps
// them through go:linkname for the length of a run. That reaches into the
// SDK's internals: it holds for the SDK version in go.mod, and a version
// that renamed them would fail to link, not run wrong.

//go:linkname sdkNowTime github.com/aws/aws-sdk-go-v2/internal/sdk.NowTime
var sdkNowTime func() time.Time

//go:linkname sdkSleepWithContext github.com/aws/aws-sdk-go-v2/internal/sdk.SleepWithContext
var sdkSleepWithContext func(context.Context, time.Duration) error

// sdkClock is held while the SDK's clock and sleep are redirected, and
// while a real-time run uses them: the variables are process-wide.
var sdkClock sync.Mutex

// sleepRequest is what the redirected sdk.SleepWithContext returns instead
// of sleeping: GetAttemptToken gives up with it (wrapped), and Admit hands
// its duration to the simulation, which calls again after that long.
type sleepRequest struct{ d time.Duration }

func (r *sleepRequest) Error() string {
	return fmt.Sprintf("awsstorm: sleep %v on the virtual clock", r.d)
}

// RunAdaptive simulates the SDK's adaptive retryer, NewAdaptiveMode with
// its defaults but JitterBackoff on the simulation's seeded random source,
// in sc, on the simulation's virtual clock, and names the Result's mode
// "aws-adaptive". The same arguments give the same Result.
//
// For the length of the run it points the SDK's sdk.NowTime at the virtual
// clock and has sdk.SleepWithContext return at once with the duration it
// was asked to sleep, so nothing else in the process may use the SDK's
// clock or sleeps meanwhile (the SDK's standard retryer uses neither).
// Runs of RunAdaptive, and RunRealtime, exclude each other.
func RunAdaptive(sc storm.Scenario, seed uint64) (storm.Result, error) {
	if err := checkMode(); err != nil {
		return storm.Result{}, err
	}
	sdkClock.Lock()
	defer sdkClock.Unlock()
	now, sleep := sdkNowTime, sdkSleepWithContext
	defer func() { sdkNowTime, sdkSleepWithContext = now, sleep }()
	return storm.RunStrategy(sc, AWSAdaptive, func(clock retry.Clock, random func() float64) (storm.Stepper, error) {
		// Before NewAdaptiveMode, which reads the clock.
		sdkNowTime = clock.Now
		sdkSleepWithContext = func(_ context.Context, d time.Duration) error { return &sleepRequest{d} }
		r := awsretry.NewAdaptiveMode(func(o *awsretry.AdaptiveModeOptions) {
			o.StandardOptions = append(o.StandardOptions, seeded(random))
		})
		return NewStrategy(r, SDKError), nil
	}, seed)
}
