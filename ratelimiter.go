package retry

// limiterConfig is the RateLimiter's configuration (stub: replaced by the
// rate limiter implementation).
type limiterConfig struct {
	clock Clock
}
