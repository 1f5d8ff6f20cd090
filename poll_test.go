package retry_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrykit/retry"
)

// pollStep is what a scripted polled function returns on one call.
type pollStep struct {
	status retry.PollStatus
	err    error
}

// scripted returns a polled function that plays steps in order (repeating
// the last one) and returns the call number as its value, and a function
// that reports when, relative to start, each call happened.
func scripted(start time.Time, steps ...pollStep) (func(context.Context) (int, retry.PollStatus, error), func() []time.Duration) {
	var at []time.Duration
	fn := func(context.Context) (int, retry.PollStatus, error) {
		at = append(at, time.Since(start))
		s := steps[min(len(at), len(steps))-1]
		return len(at), s.status, s.err
	}
	return fn, func() []time.Duration { return at }
}

func ms(ns ...int) []time.Duration {
	out := make([]time.Duration, len(ns))
	for i, n := range ns {
		out[i] = time.Duration(n) * time.Millisecond
	}
	return out
}

var (
	notReady  = pollStep{status: retry.PollNotReady}
	throttled = pollStep{status: retry.PollThrottled}
	done      = pollStep{status: retry.PollDone}
)

func TestPollSchedule(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		opts  []retry.PollOption
		steps []pollStep
		calls []time.Duration // when each call happened
	}{
		{
			name:  "done at once",
			steps: []pollStep{done},
			calls: ms(0),
		},
		{
			name:  "defaults double from 100ms",
			steps: []pollStep{notReady, notReady, notReady, notReady, done},
			calls: ms(0, 100, 300, 700, 1500),
		},
		{
			name:  "max delay caps each wait",
			opts:  []retry.PollOption{retry.WithPollMinDelay(time.Second), retry.WithPollMaxDelay(3 * time.Second)},
			steps: []pollStep{notReady, notReady, notReady, notReady, done},
			calls: ms(0, 1000, 3000, 6000, 9000),
		},
		{
			name:  "growth 1 polls at a fixed interval",
			opts:  []retry.PollOption{retry.WithPollMinDelay(time.Second), retry.WithPollGrowth(1)},
			steps: []pollStep{notReady, notReady, notReady, done},
			calls: ms(0, 1000, 2000, 3000),
		},
		{
			name:  "fractional growth",
			opts:  []retry.PollOption{retry.WithPollMinDelay(time.Second), retry.WithPollGrowth(1.5)},
			steps: []pollStep{notReady, notReady, notReady, done},
			calls: ms(0, 1000, 2500, 4750),
		},
		{
			name:  "throttled waits twice as long and growth continues from there",
			steps: []pollStep{notReady, notReady, throttled, notReady, done},
			// waits 100, 200, 2×400=800, 1600
			calls: ms(0, 100, 300, 1100, 2700),
		},
		{
			name:  "throttled doubles even at growth 1",
			opts:  []retry.PollOption{retry.WithPollMinDelay(time.Second), retry.WithPollGrowth(1)},
			steps: []pollStep{throttled, notReady, done},
			calls: ms(0, 2000, 4000),
		},
		{
			name:  "throttled is capped by max delay",
			opts:  []retry.PollOption{retry.WithPollMinDelay(time.Second), retry.WithPollMaxDelay(time.Second)},
			steps: []pollStep{throttled, throttled, done},
			calls: ms(0, 1000, 2000),
		},
		{
			name:  "max wait is not reached",
			opts:  []retry.PollOption{retry.WithPollMinDelay(time.Second), retry.WithPollMaxWait(8 * time.Second)},
			steps: []pollStep{notReady, notReady, notReady, done},
			calls: ms(0, 1000, 3000, 7000),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				fn, calls := scripted(start, tt.steps...)
				got, err := retry.Poll(t.Context(), fn, tt.opts...)
				if err != nil {
					t.Fatalf("Poll: %v", err)
				}
				if want := len(tt.calls); got != want {
					t.Errorf("Poll = %d, want the value of call %d", got, want)
				}
				if !slices.Equal(calls(), tt.calls) {
					t.Errorf("calls at %v, want %v", calls(), tt.calls)
				}
				if el := time.Since(start); el != tt.calls[len(tt.calls)-1] {
					t.Errorf("Poll returned after %v, want right after the last call", el)
				}
			})
		})
	}
}

func TestPollJitter(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		fn, calls := scripted(start, notReady, notReady, notReady, done)
		us := []float64{0.5, 0, 0.999}
		_, err := retry.Poll(t.Context(), fn,
			retry.WithPollMinDelay(time.Second),
			retry.WithPollJitter(1),
			retry.WithPollRand(func() float64 { u := us[0]; us = us[1:]; return u }),
		)
		if err != nil {
			t.Fatalf("Poll: %v", err)
		}
		// Unjittered waits 1s, 2s, 4s; a wait d becomes d - U×(d - 1s).
		// 1s stays 1s; 2s stays 2s with U=0; 4s - 0.999×3s = 1.003s.
		want := ms(0, 1000, 3000, 4003)
		if !slices.Equal(calls(), want) {
			t.Errorf("calls at %v, want %v", calls(), want)
		}
	})
}

func TestPollJitterFraction(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		fn, calls := scripted(start, notReady, notReady, done)
		_, err := retry.Poll(t.Context(), fn,
			retry.WithPollMinDelay(time.Second),
			retry.WithPollGrowth(3),
			retry.WithPollJitter(0.5),
			retry.WithPollRand(func() float64 { return 0.5 }),
		)
		if err != nil {
			t.Fatalf("Poll: %v", err)
		}
		// Waits 1s and 3s - 0.5×0.5×2s = 2.5s.
		if want := ms(0, 1000, 3500); !slices.Equal(calls(), want) {
			t.Errorf("calls at %v, want %v", calls(), want)
		}
	})
}

func TestPollBadRandom(t *testing.T) {
	t.Parallel()
	for _, u := range []float64{-0.1, 1, 2} {
		t.Run(fmt.Sprint(u), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				fn, calls := scripted(time.Now(), notReady)
				_, err := retry.Poll(t.Context(), fn, retry.WithPollJitter(1), retry.WithPollRand(func() float64 { return u }))
				if !errors.Is(err, retry.ErrInvalidConfig) || !strings.Contains(err.Error(), "WithPollRand") {
					t.Errorf("Poll error = %v, want ErrInvalidConfig naming WithPollRand", err)
				}
				if n := len(calls()); n != 1 {
					t.Errorf("fn called %d times, want 1", n)
				}
			})
		})
	}
}

func TestPollOutcomes(t *testing.T) {
	t.Parallel()
	errBoom := errors.New("boom")
	errFlaky := errors.New("status endpoint flaky")
	tests := []struct {
		name      string
		steps     []pollStep
		wantValue int
		wantIs    []error // the error must match each of these
		wantSame  bool    // the error is fn's error itself
		wantMsg   string
	}{
		{
			name:      "failed returns fn's error unchanged",
			steps:     []pollStep{notReady, {retry.PollFailed, errBoom}},
			wantValue: 2,
			wantIs:    []error{errBoom},
			wantSame:  true,
		},
		{
			name:      "failed without an error",
			steps:     []pollStep{{retry.PollFailed, nil}},
			wantValue: 1,
			wantIs:    []error{retry.ErrInvalidPollStatus},
			wantMsg:   "PollFailed with a nil error",
		},
		{
			name:      "done with an error",
			steps:     []pollStep{{retry.PollDone, errBoom}},
			wantValue: 1,
			wantIs:    []error{retry.ErrInvalidPollStatus, errBoom},
			wantMsg:   "PollDone with error",
		},
		{
			name:      "unknown status",
			steps:     []pollStep{notReady, {retry.PollStatus(7), nil}},
			wantValue: 2,
			wantIs:    []error{retry.ErrInvalidPollStatus},
			wantMsg:   "PollStatus(7)",
		},
		{
			name:      "negative status with an error",
			steps:     []pollStep{{retry.PollStatus(-1), errBoom}},
			wantValue: 1,
			wantIs:    []error{retry.ErrInvalidPollStatus, errBoom},
			wantMsg:   "PollStatus(-1)",
		},
		{
			name:      "not ready with an error keeps polling",
			steps:     []pollStep{{retry.PollNotReady, errFlaky}, {retry.PollThrottled, errFlaky}, done},
			wantValue: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				fn, _ := scripted(time.Now(), tt.steps...)
				got, err := retry.Poll(t.Context(), fn)
				if got != tt.wantValue {
					t.Errorf("Poll value = %d, want %d", got, tt.wantValue)
				}
				if len(tt.wantIs) == 0 && err != nil {
					t.Fatalf("Poll error = %v, want nil", err)
				}
				for _, target := range tt.wantIs {
					if !errors.Is(err, target) {
						t.Errorf("Poll error = %v, want one matching %v", err, target)
					}
				}
				if tt.wantSame && err != tt.wantIs[0] {
					t.Errorf("Poll error = %#v, want fn's error itself", err)
				}
				if err != nil && !strings.Contains(err.Error(), tt.wantMsg) {
					t.Errorf("Poll error = %q, want it to mention %q", err, tt.wantMsg)
				}
			})
		})
	}
}

func TestPollMaxWait(t *testing.T) {
	t.Parallel()
	errFlaky := errors.New("status endpoint flaky")
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		fn, calls := scripted(start, pollStep{retry.PollNotReady, errFlaky}, notReady)
		got, err := retry.Poll(t.Context(), fn, retry.WithPollMinDelay(time.Second), retry.WithPollMaxWait(10*time.Second))
		// Calls at 0, 1s, 3s, 7s; the next wait (8s) would end past 10s,
		// so Poll gives up at once rather than sleep into the limit.
		if want := ms(0, 1000, 3000, 7000); !slices.Equal(calls(), want) {
			t.Errorf("calls at %v, want %v", calls(), want)
		}
		if el := time.Since(start); el != 7*time.Second {
			t.Errorf("Poll returned after %v, want 7s", el)
		}
		if got != 4 {
			t.Errorf("Poll value = %d, want the last call's (4)", got)
		}
		if !errors.Is(err, retry.ErrPollTimeout) || !errors.Is(err, errFlaky) {
			t.Errorf("Poll error = %v, want ErrPollTimeout wrapping the last error", err)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Poll error = %v, must not claim the caller's context ended", err)
		}
		if want := "after 4 calls"; !strings.Contains(err.Error(), want) {
			t.Errorf("Poll error = %q, want it to say %q", err, want)
		}
	})
}

func TestPollMaxWaitExactBoundary(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		fn, calls := scripted(start, notReady)
		_, err := retry.Poll(t.Context(), fn, retry.WithPollMinDelay(time.Second), retry.WithPollGrowth(1), retry.WithPollMaxWait(3*time.Second))
		// A call at exactly 3s would get an expired context: the last call is at 2s.
		if want := ms(0, 1000, 2000); !slices.Equal(calls(), want) {
			t.Errorf("calls at %v, want %v", calls(), want)
		}
		if !errors.Is(err, retry.ErrPollTimeout) {
			t.Errorf("Poll error = %v, want ErrPollTimeout", err)
		}
		if want := "retry: poll: maximum wait exceeded after 3 calls"; err == nil || err.Error() != want {
			t.Errorf("Poll error = %v, want %q", err, want)
		}
	})
}

func TestPollMaxWaitEndsSlowCall(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		calls := 0
		fn := func(ctx context.Context) (int, retry.PollStatus, error) {
			calls++
			if calls == 1 {
				return 0, retry.PollNotReady, nil
			}
			<-ctx.Done() // a call that hangs until its context ends
			return 0, retry.PollNotReady, ctx.Err()
		}
		_, err := retry.Poll(t.Context(), fn, retry.WithPollMaxWait(5*time.Second))
		if el := time.Since(start); el != 5*time.Second {
			t.Errorf("Poll returned after %v, want 5s", el)
		}
		if !errors.Is(err, retry.ErrPollTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Poll error = %v, want ErrPollTimeout wrapping fn's context error", err)
		}
		if calls != 2 {
			t.Errorf("fn called %d times, want 2", calls)
		}
	})
}

func TestPollMaxWaitDoneWins(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		fn := func(ctx context.Context) (string, retry.PollStatus, error) {
			<-ctx.Done() // finishes just as the limit passes
			return "ok", retry.PollDone, nil
		}
		got, err := retry.Poll(t.Context(), fn, retry.WithPollMaxWait(time.Second))
		if got != "ok" || err != nil {
			t.Errorf("Poll = %q, %v; want ok, nil", got, err)
		}
	})
}

func TestPollContext(t *testing.T) {
	t.Parallel()
	errFlaky := errors.New("status endpoint flaky")

	t.Run("already canceled", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		fn, calls := scripted(time.Now(), done)
		_, err := retry.Poll(ctx, fn)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Poll error = %v, want context.Canceled", err)
		}
		if n := len(calls()); n != 0 {
			t.Errorf("fn called %d times, want 0", n)
		}
	})

	t.Run("canceled during a wait", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			cause := errors.New("shutting down")
			ctx, cancel := context.WithCancelCause(t.Context())
			time.AfterFunc(1500*time.Millisecond, func() { cancel(cause) })
			fn, calls := scripted(start, pollStep{retry.PollNotReady, errFlaky})
			_, err := retry.Poll(ctx, fn, retry.WithPollMinDelay(time.Second))
			if el := time.Since(start); el != 1500*time.Millisecond {
				t.Errorf("Poll returned after %v, want 1.5s", el)
			}
			for _, target := range []error{context.Canceled, cause, errFlaky} {
				if !errors.Is(err, target) {
					t.Errorf("Poll error = %v, want one matching %v", err, target)
				}
			}
			if errors.Is(err, retry.ErrPollTimeout) {
				t.Errorf("Poll error = %v, must not claim a poll timeout", err)
			}
			if n := len(calls()); n != 2 {
				t.Errorf("fn called %d times, want 2", n)
			}
		})
	})

	t.Run("deadline too soon for the next call", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			defer cancel()
			fn, calls := scripted(start, pollStep{retry.PollNotReady, errFlaky})
			_, err := retry.Poll(ctx, fn, retry.WithPollMinDelay(time.Second), retry.WithPollMaxWait(time.Hour))
			// Calls at 0 and 1s; the next wait (2s) would end past the deadline.
			if el := time.Since(start); el != time.Second {
				t.Errorf("Poll returned after %v, want 1s", el)
			}
			if !errors.Is(err, retry.ErrDeadlineTooSoon) || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, errFlaky) {
				t.Errorf("Poll error = %v, want ErrDeadlineTooSoon wrapping the last error", err)
			}
			if errors.Is(err, retry.ErrPollTimeout) {
				t.Errorf("Poll error = %v, want no ErrPollTimeout: the caller's deadline came first", err)
			}
			if n := len(calls()); n != 2 {
				t.Errorf("fn called %d times, want 2", n)
			}
		})
	})

	t.Run("max wait before the caller's deadline", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			defer cancel()
			fn, _ := scripted(time.Now(), notReady)
			_, err := retry.Poll(ctx, fn, retry.WithPollMinDelay(time.Second), retry.WithPollMaxWait(1500*time.Millisecond))
			if !errors.Is(err, retry.ErrPollTimeout) || errors.Is(err, retry.ErrDeadlineTooSoon) {
				t.Errorf("Poll error = %v, want ErrPollTimeout alone", err)
			}
		})
	})

	t.Run("fn sees the caller's values", func(t *testing.T) {
		t.Parallel()
		type key struct{}
		ctx := context.WithValue(t.Context(), key{}, "v")
		got, err := retry.Poll(ctx, func(ctx context.Context) (any, retry.PollStatus, error) {
			return ctx.Value(key{}), retry.PollDone, nil
		}, retry.WithPollMaxWait(time.Minute))
		if got != "v" || err != nil {
			t.Errorf("Poll = %v, %v; want v, nil", got, err)
		}
	})
}

func TestPollInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		opts   []retry.PollOption
		option string // named in the message
	}{
		{"zero min delay", []retry.PollOption{retry.WithPollMinDelay(0)}, "WithPollMinDelay"},
		{"negative min delay", []retry.PollOption{retry.WithPollMinDelay(-time.Second)}, "WithPollMinDelay"},
		{"max below min", []retry.PollOption{retry.WithPollMinDelay(2 * time.Second), retry.WithPollMaxDelay(time.Second)}, "WithPollMaxDelay"},
		{"default max below min", []retry.PollOption{retry.WithPollMinDelay(time.Minute)}, "WithPollMaxDelay = 20s (the default)"},
		{"growth below 1", []retry.PollOption{retry.WithPollGrowth(0.5)}, "WithPollGrowth"},
		{"growth NaN", []retry.PollOption{retry.WithPollGrowth(nan())}, "WithPollGrowth"},
		{"growth infinite", []retry.PollOption{retry.WithPollGrowth(inf())}, "WithPollGrowth"},
		{"jitter negative", []retry.PollOption{retry.WithPollJitter(-0.1)}, "WithPollJitter"},
		{"jitter above 1", []retry.PollOption{retry.WithPollJitter(1.1)}, "WithPollJitter"},
		{"jitter NaN", []retry.PollOption{retry.WithPollJitter(nan())}, "WithPollJitter"},
		{"nil rand", []retry.PollOption{retry.WithPollRand(nil)}, "WithPollRand"},
		{"zero max wait", []retry.PollOption{retry.WithPollMaxWait(0)}, "WithPollMaxWait"},
		{"negative max wait", []retry.PollOption{retry.WithPollMaxWait(-1)}, "WithPollMaxWait"},
		{"nil option", []retry.PollOption{nil}, "PollOption"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fn, calls := scripted(time.Now(), done)
			_, err := retry.Poll(t.Context(), fn, tt.opts...)
			if !errors.Is(err, retry.ErrInvalidConfig) {
				t.Errorf("Poll error = %v, want ErrInvalidConfig", err)
			}
			if err != nil && !strings.Contains(err.Error(), tt.option) {
				t.Errorf("Poll error = %q, want it to name %q", err, tt.option)
			}
			if n := len(calls()); n != 0 {
				t.Errorf("fn called %d times, want 0", n)
			}
		})
	}

	t.Run("nil function", func(t *testing.T) {
		t.Parallel()
		_, err := retry.Poll[int](t.Context(), nil)
		if !errors.Is(err, retry.ErrInvalidConfig) {
			t.Errorf("Poll error = %v, want ErrInvalidConfig", err)
		}
	})
	t.Run("nil context", func(t *testing.T) {
		t.Parallel()
		fn, calls := scripted(time.Now(), done)
		//lint:ignore SA1012 testing that a nil context is refused
		_, err := retry.Poll(nil, fn)
		if !errors.Is(err, retry.ErrInvalidConfig) {
			t.Errorf("Poll error = %v, want ErrInvalidConfig", err)
		}
		if n := len(calls()); n != 0 {
			t.Errorf("fn called %d times, want 0", n)
		}
	})
}

func TestPollStatusString(t *testing.T) {
	t.Parallel()
	for s, want := range map[retry.PollStatus]string{
		retry.PollDone:        "PollDone",
		retry.PollNotReady:    "PollNotReady",
		retry.PollThrottled:   "PollThrottled",
		retry.PollFailed:      "PollFailed",
		retry.PollStatus(4):   "PollStatus(4)",
		retry.PollStatus(-1):  "PollStatus(-1)",
		retry.PollStatus(100): "PollStatus(100)",
	} {
		if got := s.String(); got != want {
			t.Errorf("PollStatus(%d).String() = %q, want %q", int(s), got, want)
		}
	}
}

func nan() float64 { z := 0.0; return z / z }
func inf() float64 { z := 0.0; return 1 / z }

// ExamplePoll waits for an asynchronous job to finish. The job reports
// "pending" twice, is throttled once, and then succeeds.
func ExamplePoll() {
	states := []string{"pending", "pending", "throttled", "succeeded"}
	calls := 0
	checkJob := func(ctx context.Context) (string, retry.PollStatus, error) {
		state := states[calls]
		calls++
		switch state {
		case "succeeded":
			return "job-42 output", retry.PollDone, nil
		case "failed":
			return "", retry.PollFailed, errors.New("job-42 failed")
		case "throttled":
			return "", retry.PollThrottled, nil
		default:
			return "", retry.PollNotReady, nil
		}
	}

	out, err := retry.Poll(context.Background(), checkJob,
		retry.WithPollMinDelay(time.Millisecond), // short, to keep the example fast
		retry.WithPollMaxWait(time.Minute),
	)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Printf("%s after %d checks\n", out, calls)
	// Output: job-42 output after 4 checks
}

// A maximum delay as long as a Duration holds: the waits grow to it and
// stay there, where float64 rounding is coarsest (1024 ns). Jitter still
// never takes a wait below the minimum delay, and a wait that long is
// refused under a deadline rather than wrapped to a short one.
func TestPollHugeMaxDelay(t *testing.T) {
	t.Parallel()
	opts := func(u float64) []retry.PollOption {
		return []retry.PollOption{retry.WithPollMinDelay(time.Second), retry.WithPollMaxDelay(math.MaxInt64),
			retry.WithPollGrowth(1e300), retry.WithPollJitter(1), retry.WithPollRand(fixed(u))}
	}
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		fn, calls := scripted(start, notReady, notReady, notReady, done)
		_, err := retry.Poll(t.Context(), fn, opts(almostOne)...)
		require.NoError(t, err)
		at := calls()
		require.Len(t, at, 4)
		for i := 1; i < len(at); i++ {
			assert.GreaterOrEqual(t, at[i]-at[i-1], time.Second, "wait %d below the minimum delay", i)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		fn, calls := scripted(start, notReady)
		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		_, err := retry.Poll(ctx, fn, opts(0)...)
		require.ErrorIs(t, err, retry.ErrDeadlineTooSoon)
		assert.Equal(t, ms(0, 1000), calls(), "the second wait, the whole maximum, is refused")
	})
}
