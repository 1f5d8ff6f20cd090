package retry

// admitNow takes a send slot if one is free now, for Do's fast path, and
// reports whether it did. Before the first throttle every attempt has one.
func (l *RateLimiter) admitNow() bool {
	_, err := l.acquire(true)
	return err == nil
}
