package retry

// Temporary: replaced by tokenbucket.go, strategy_standard.go and
// strategy_adaptive.go.
type bucketConfig struct{ clock Clock }
type standardConfig struct {
	clock         Clock
	bucket        bucketConfig
	bucketOptions bool
}
type adaptiveConfig struct {
	standardConfig
	limiter        limiterConfig
	limiterOptions bool
}
