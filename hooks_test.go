package retry_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrykit/retry"
)

// eventRecorder is a Hook that keeps every event.
type eventRecorder struct {
	mu     sync.Mutex
	events []retry.Event
}

func (r *eventRecorder) hook(ev retry.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

func (r *eventRecorder) kinds() []retry.EventKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []retry.EventKind
	for _, ev := range r.events {
		out = append(out, ev.Kind)
	}
	return out
}

func TestHookEvents(t *testing.T) {
	permanent := retry.Permanent(errors.New("bad request"))
	tests := []struct {
		name  string
		errs  []error
		kinds []retry.EventKind
	}{
		{"success at once", nil, []retry.EventKind{retry.EventAttempt, retry.EventSuccess}},
		{"success after retries", []error{errTransient, errThrottled},
			[]retry.EventKind{retry.EventAttempt, retry.EventRetry, retry.EventRetry, retry.EventSuccess}},
		{"max attempts", []error{errTransient, errTransient, errTransient},
			[]retry.EventKind{retry.EventAttempt, retry.EventRetry, retry.EventRetry, retry.EventGiveUp}},
		{"not retryable", []error{permanent}, []retry.EventKind{retry.EventAttempt, retry.EventGiveUp}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var r eventRecorder
				s, err := retry.NewStandard(retry.WithHook(r.hook), retry.WithBackoff(retry.ConstantBackoff(time.Second)))
				require.NoError(t, err)
				fn, _ := failing(tt.errs...)
				_, _ = retry.Do(t.Context(), fn, retry.WithStrategy(s), retry.WithScope("orders"))
				require.Equal(t, tt.kinds, r.kinds())
				for i, ev := range r.events {
					assert.Equal(t, "orders", ev.Scope)
					switch ev.Kind {
					case retry.EventAttempt:
						assert.Equal(t, 1, ev.Attempt)
					case retry.EventRetry:
						assert.Equal(t, i+1, ev.Attempt, "the attempt about to be made")
						assert.Equal(t, time.Second, ev.Delay)
						assert.Same(t, tt.errs[i-1], ev.Err)
						assert.True(t, ev.Classification.Retryable())
					case retry.EventSuccess:
						assert.Equal(t, len(tt.errs)+1, ev.Attempt)
					case retry.EventGiveUp:
						assert.Equal(t, len(tt.errs), ev.Attempt, "the last attempt made")
						assert.Same(t, tt.errs[len(tt.errs)-1], ev.Err)
						assert.Error(t, ev.Reason)
					}
				}
			})
		})
	}
}

func TestHookThrottleClassification(t *testing.T) {
	var r eventRecorder
	s, err := retry.NewStandard(retry.WithHook(r.hook))
	require.NoError(t, err)
	tok, _ := s.PlanInitialToken("")
	_, err = plan(s, tok, retry.WithRetryAfter(errThrottled, 2*time.Second))
	require.NoError(t, err)
	ev := r.events[1]
	assert.True(t, ev.Classification.Throttle)
	assert.Equal(t, 2*time.Second, ev.Classification.RetryAfter)
	assert.GreaterOrEqual(t, ev.Delay, 2*time.Second)
}

func TestHookRetryTooLateForDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var r eventRecorder
		s, err := retry.NewStandard(retry.WithHook(r.hook), retry.WithBackoff(retry.ConstantBackoff(time.Minute)))
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err = retry.Do(ctx, func(context.Context) (int, error) { return 0, errTransient }, retry.WithStrategy(s))
		require.ErrorIs(t, err, retry.ErrDeadlineTooSoon)
		// No EventRetry: the deadline left no time for the retry, so the
		// strategy gave up at once, with one event that says why.
		require.Equal(t, []retry.EventKind{retry.EventAttempt, retry.EventGiveUp}, r.kinds())
		last := r.events[1]
		assert.ErrorIs(t, last.Reason, retry.ErrDeadlineTooSoon)
		assert.ErrorIs(t, last.Err, errTransient)
		assert.Equal(t, 1, last.Attempt)
		assert.Zero(t, last.Delay, "no wait happened")
		assert.Equal(t, float64(retry.DefaultMaxCapacity), s.RetryQuota().Stats().Available)
	})
}

func TestHookSeveralInOrder(t *testing.T) {
	var order []string
	s, err := retry.NewStandard(
		retry.WithHook(func(retry.Event) { order = append(order, "a") }),
		retry.WithHook(func(retry.Event) { order = append(order, "b") }),
	)
	require.NoError(t, err)
	tok, _ := s.PlanInitialToken("")
	require.NoError(t, s.RecordSuccess(tok))
	assert.Equal(t, []string{"a", "b", "a", "b"}, order)
}

func TestHookNil(t *testing.T) {
	_, err := retry.NewStandard(retry.WithHook(nil))
	require.ErrorIs(t, err, retry.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "WithHook")
	_, err = retry.NewAdaptive(retry.WithHook(nil))
	require.ErrorIs(t, err, retry.ErrInvalidConfig)
}

func TestSlogHook(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo, ReplaceAttr: dropTime}))
	s, err := retry.NewStandard(retry.WithHook(retry.SlogHook(logger)), retry.WithBackoff(retry.NoBackoff))
	require.NoError(t, err)
	tok, _ := s.PlanInitialToken("db")
	tok, err = plan(s, tok, retry.WithRetryAfter(errThrottled, 1500*time.Millisecond))
	require.NoError(t, err)
	_, err = plan(s, tok, retry.Permanent(errors.New("denied")))
	require.Error(t, err)
	assert.Equal(t,
		`level=INFO msg="retrying after failure" scope=db attempt=2 delay=1.5s error="slow down" throttle=true retry_after=1.5s`+"\n"+
			`level=WARN msg="giving up" scope=db attempt=2 error=denied reason="retry: error is not retryable"`+"\n",
		buf.String(), "debug events are filtered by the handler's level")
}

// Every handler prints durations readably: JSON too, which would print a
// slog.Duration as integer nanoseconds.
func TestSlogHookJSON(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: dropTime}))
	hook := retry.SlogHook(logger)
	hook(retry.Event{Kind: retry.EventAttempt, Attempt: 1})
	hook(retry.Event{Kind: retry.EventRetry, Scope: "orders", Attempt: 2, Delay: 2404930 * time.Nanosecond,
		Err: errTransient, Classification: retry.Classification{Safety: retry.SafetyYes, Timeout: true}})
	hook(retry.Event{Kind: retry.EventSuccess, Scope: "orders", Attempt: 2})
	hook(retry.Event{Kind: retry.EventGiveUp, Attempt: 3, Err: errTransient,
		Reason: fmt.Errorf("%w: 3 allowed", retry.ErrMaxAttemptsExceeded)})
	assert.Equal(t,
		`{"level":"DEBUG","msg":"first attempt","attempt":1}`+"\n"+
			`{"level":"INFO","msg":"retrying after failure","scope":"orders","attempt":2,"delay":"2.405ms","error":"transient failure","timeout":true}`+"\n"+
			`{"level":"DEBUG","msg":"attempt succeeded","scope":"orders","attempt":2}`+"\n"+
			`{"level":"WARN","msg":"giving up","attempt":3,"error":"transient failure","reason":"retry: max attempts exceeded: 3 allowed"}`+"\n",
		buf.String())
}

func TestSlogHookDurations(t *testing.T) {
	tests := []struct {
		delay time.Duration
		want  string
	}{
		{0, "0s"},
		{1, "1ns"},
		{999 * time.Microsecond, "999µs"},
		{2404930 * time.Nanosecond, "2.405ms"},
		{1234567891 * time.Nanosecond, "1.235s"},
		{90*time.Second + 400*time.Microsecond, "1m30s"},
		{-1500 * time.Microsecond, "-1.5ms"},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: dropTime}))
		retry.SlogHook(logger)(retry.Event{Kind: retry.EventRetry, Attempt: 2, Delay: tt.delay})
		assert.Equal(t, `level=INFO msg="retrying after failure" attempt=2 delay=`+tt.want+"\n", buf.String(), tt.delay.Nanoseconds())
	}
}

// A nil logger logs to slog.Default() as it is when the event happens.
func TestSlogHookNilLogger(t *testing.T) {
	hook := retry.SlogHook(nil)
	var buf bytes.Buffer
	prev := slog.Default()
	t.Cleanup(func() { slog.SetDefault(prev) })
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: dropTime})))
	hook(retry.Event{Kind: retry.EventGiveUp, Attempt: 1, Reason: retry.ErrRetryQuotaExceeded})
	assert.Equal(t, `level=WARN msg="giving up" attempt=1 reason="retry: retry quota exceeded"`+"\n", buf.String())
}

func TestEventKindString(t *testing.T) {
	assert.Equal(t, "give-up", retry.EventGiveUp.String())
	assert.Equal(t, "EventKind(0)", retry.EventKind(0).String())
}

// Without hooks, a call that succeeds at once allocates nothing.
func TestDoSuccessAllocatesNothing(t *testing.T) {
	s, err := retry.NewStandard()
	require.NoError(t, err)
	a, err := retry.NewAdaptive()
	require.NoError(t, err)
	ctx := context.Background()
	for name, opt := range map[string]retry.DoOption{"standard": retry.WithStrategy(s), "adaptive": retry.WithStrategy(a)} {
		allocs := testing.AllocsPerRun(1000, func() {
			_, _ = retry.Do(ctx, work, opt)
		})
		assert.Zero(t, allocs, name)
	}
}

func dropTime(groups []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey && len(groups) == 0 {
		return slog.Attr{}
	}
	return a
}

// Log retries and give-ups with log/slog.
func ExampleSlogHook() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: dropTime}))
	strategy, err := retry.NewStandard(
		retry.WithHook(retry.SlogHook(logger)),
		retry.WithBackoff(retry.NoBackoff),
	)
	if err != nil {
		panic(err)
	}
	calls := 0
	_, _ = retry.Do(context.Background(), func(ctx context.Context) (string, error) {
		calls++
		if calls == 1 {
			return "", retry.Transient(errors.New("connection reset"))
		}
		return "ok", nil
	}, retry.WithStrategy(strategy))
	// Output:
	// level=INFO msg="retrying after failure" attempt=2 delay=0s error="connection reset"
}

// A retry abandoned during its wait (the caller cancels) is announced, and
// then given up, with its quota given back.
func TestHookAbandonedRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var r eventRecorder
		s, err := retry.NewStandard(retry.WithHook(r.hook), retry.WithBackoff(retry.ConstantBackoff(time.Minute)))
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		_, err = retry.Do(ctx, func(context.Context) (int, error) { return 0, errTransient }, retry.WithStrategy(s))
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, []retry.EventKind{retry.EventAttempt, retry.EventRetry, retry.EventGiveUp}, r.kinds())
		assert.ErrorIs(t, r.events[2].Reason, context.Canceled)
		assert.Equal(t, float64(retry.DefaultMaxCapacity), s.RetryQuota().Stats().Available)
	})
}
