package retry

// ClassifyAll is a Classifier for code that expects every failure to be
// retried, as most general-purpose retry libraries do: it retries every
// error except those that Classify knows must not be retried. Give it to a
// strategy with WithClassifier(ClassifyAll).
//
// It returns what Classify returns, throttle, timeout, retry-after hint and
// fault included, except that an error Classify cannot tell about
// (SafetyMaybe), such as one made by errors.New or fmt.Errorf, is SafetyYes.
// So these are still not retried:
//
//   - errors marked Permanent, and any error whose RetryInfo reports
//     SafetyNo or whose RetryableError method reports false;
//   - context.Canceled and context.DeadlineExceeded: the caller gave up
//     (to retry a timeout of your own, mark it with TimedOut, or bound
//     each attempt with WithAttemptTimeout);
//   - the errors Classify finds that no retry can mend: an ErrorInfo with
//     FaultClient, an HTTP 4xx status other than 408 and 429, a TLS
//     certificate error, a DNS name that does not exist.
//
// Mark with Transient whatever of these should be retried all the same.
// A nil err gets the zero Classification, as with Classify. Retried
// errors still pay the retry quota, so a broad outage still stops the
// retries.
func ClassifyAll(err error) Classification {
	c := Classify(err)
	if err != nil && c.Safety == SafetyMaybe {
		c.Safety = SafetyYes
	}
	return c
}
