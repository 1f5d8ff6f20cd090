package retry_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/retrykit/retry"
	"github.com/stretchr/testify/require"
)

// manualClock is a Clock that moves only when told to.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func newManualClock() *manualClock {
	return &manualClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// loadVectors decodes testdata/vectors/name into v.
func loadVectors(t *testing.T, name string, v any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "vectors", name))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, v), name)
}

// statusError is an error from an HTTP response, as API clients return.
type statusError struct {
	status int
	code   string
}

func (e *statusError) Error() string       { return fmt.Sprintf("HTTP %d %s", e.status, e.code) }
func (e *statusError) HTTPStatusCode() int { return e.status }
func (e *statusError) ErrorCode() string   { return e.code }
func seconds(s float64) time.Duration      { return time.Duration(s * float64(time.Second)) }

// planner is the non-blocking path that Standard and Adaptive share: the
// tests of decisions drive it, so that virtual time needs no waits.
type planner interface {
	PlanInitialToken(scope string) (retry.RetryToken, error)
	PlanRetryToken(token retry.RetryToken, err error) (retry.RetryToken, time.Duration, error)
	Admit(token retry.RetryToken) (time.Duration, error)
	ReleaseToken(token retry.RetryToken) error
	RecordSuccess(token retry.RetryToken) error
}

var (
	_ planner = (*retry.Standard)(nil)
	_ planner = (*retry.Adaptive)(nil)
)

// plan asks s for the next token after a failure, without waiting.
func plan(s planner, token retry.RetryToken, err error) (retry.RetryToken, error) {
	next, _, rerr := s.PlanRetryToken(token, err)
	return next, rerr
}
