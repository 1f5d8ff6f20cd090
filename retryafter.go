package retry

import (
	"net/http"
	"strings"
	"time"
)

// retryAfterLimit is the longest retry hint ParseRetryAfter accepts. A
// longer one is ignored rather than shortened: a server asking for more
// than a day is not describing a retry, and no caller should wait on it.
const retryAfterLimit = 24 * time.Hour

// ParseRetryAfter reads the retry hint a server sent in the response
// header h: how long the client should wait before it retries. It reports
// false if h holds no usable hint, and never returns a negative duration.
//
// It honours two fields, in this order:
//
//   - x-amz-retry-after: a non-negative integer number of milliseconds,
//     as AWS services send it.
//   - Retry-After (RFC 9110, section 10.2.3): either a non-negative
//     integer number of seconds, or an HTTP-date (any of the three formats
//     [http.ParseTime] accepts), measured from now, the time the response
//     was received. A date at or before now yields 0 and true: the server
//     allows a retry at once.
//
// The first field with a valid value wins; an invalid x-amz-retry-after
// does not hide a valid Retry-After. A value is invalid, and ignored, if
// it is empty, negative, signed, fractional or otherwise malformed, or
// asks for a wait longer than 24 hours (rather than being shortened to
// that, or overflowing [time.Duration]). Surrounding spaces and tabs are
// ignored; if a field occurs more than once, only its first value counts.
func ParseRetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	return parseRetryAfter(h, func() time.Time { return now })
}

// parseRetryAfter is ParseRetryAfter, reading the time from now only for
// an HTTP-date, the one form measured from it.
func parseRetryAfter(h http.Header, now func() time.Time) (time.Duration, bool) {
	if v := headerField(h, amzRetryAfterKey); v != "" {
		if n, ok := parseRetryAfterInt(v, int64(retryAfterLimit/time.Millisecond)); ok {
			return time.Duration(n) * time.Millisecond, true
		}
	}
	v := strings.Trim(headerField(h, retryAfterKey), " \t")
	if v == "" {
		return 0, false
	}
	if n, ok := parseRetryAfterInt(v, int64(retryAfterLimit/time.Second)); ok {
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	switch d := t.Sub(now()); { // Sub saturates instead of overflowing
	case d <= 0:
		return 0, true
	case d > retryAfterLimit:
		return 0, false
	default:
		return d, true
	}
}

// The fields ParseRetryAfter reads, as canonical header keys.
const (
	amzRetryAfterKey = "X-Amz-Retry-After"
	retryAfterKey    = "Retry-After"
)

// headerField returns the first value of the field whose canonical key is
// key, as h.Get does, without canonicalising a key that already is.
func headerField(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// parseRetryAfterInt parses s, less surrounding spaces and tabs, as a
// string of ASCII digits whose value is at most limit.
func parseRetryAfterInt(s string, limit int64) (int64, bool) {
	s = strings.Trim(s, " \t")
	if s == "" {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
		if n > limit { // checked every digit, so n*10 cannot overflow
			return 0, false
		}
	}
	return n, true
}
