package redisretry

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// quietLogger drops go-redis's log lines: the fault tests make it log
// every failed dial.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	redis.SetLogger(quietLogger{})
	goleak.VerifyTestMain(m)
}
