package grpcretry

import (
	"strconv"
	"time"

	"github.com/retrykit/retry"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Classify is the interceptors' default classifier. It reads the gRPC
// status code of err (found anywhere in its chain, as status.FromError
// does):
//
//   - UNAVAILABLE is transient: retried.
//   - RESOURCE_EXHAUSTED is a throttle: retried, and counted as throttling
//     (an adaptive strategy slows its sending; the retry may cost a
//     different amount of retry quota).
//   - DEADLINE_EXCEEDED is a timeout: retried. The interceptors never
//     retry once the caller's own context is done, so what they retry is
//     a deadline of the server's or of a proxy's, which ended while the
//     caller still had time.
//   - Every other code is not retried: CANCELLED, INVALID_ARGUMENT,
//     NOT_FOUND, ALREADY_EXISTS, PERMISSION_DENIED, FAILED_PRECONDITION,
//     OUT_OF_RANGE, UNIMPLEMENTED and UNAUTHENTICATED as the client's
//     fault, UNKNOWN, ABORTED, INTERNAL and DATA_LOSS as the server's.
//     ABORTED is left to the caller, who can retry the whole transaction.
//
// An error with no gRPC status (an interceptor's own error, say) is
// classified by retry.Classify, and so is one whose chain does not end
// within 100 errors (see retry.FiniteChain), on which status.FromError
// would never return; a nil error, or one whose status is OK, gets the
// zero Classification.
//
// grpc-go also reports messages larger than its configured limits as
// RESOURCE_EXHAUSTED; such calls are retried too, up to the strategy's
// attempt limit, unless a classifier of your own says otherwise.
func Classify(err error) retry.Classification {
	if err == nil {
		return retry.Classification{}
	}
	if !retry.FiniteChain(err) {
		return retry.Classify(err) // status.FromError would never return
	}
	st, ok := status.FromError(err)
	if !ok {
		return retry.Classify(err)
	}
	return classifyCode(st.Code())
}

func classifyCode(code codes.Code) retry.Classification {
	var c retry.Classification
	switch code {
	case codes.OK:
	case codes.Unavailable:
		c.Safety, c.Fault = retry.SafetyYes, retry.FaultServer
	case codes.ResourceExhausted:
		c.Safety, c.Throttle, c.Fault = retry.SafetyYes, true, retry.FaultServer
	case codes.DeadlineExceeded:
		c.Safety, c.Timeout, c.Fault = retry.SafetyYes, true, retry.FaultOther
	case codes.Canceled, codes.InvalidArgument, codes.NotFound, codes.AlreadyExists,
		codes.PermissionDenied, codes.FailedPrecondition, codes.OutOfRange,
		codes.Unimplemented, codes.Unauthenticated:
		c.Safety, c.Fault = retry.SafetyNo, retry.FaultClient
	default: // Unknown, Aborted, Internal, DataLoss, and codes not yet defined
		c.Safety, c.Fault = retry.SafetyNo, retry.FaultServer
	}
	return c
}

// pushbackKey is the trailer in which a server asks the client to wait
// before retrying, or not to retry (gRFC A6).
const pushbackKey = "grpc-retry-pushback-ms"

// pushbackLimit is the longest pushback honoured as a wait. A server that
// asks for more is not describing a retry, so the call is not retried.
const pushbackLimit = 24 * time.Hour

// pushback reads the server's retry pushback from the trailer md: the
// minimum wait before a retry, and whether the server forbade a retry. As
// gRFC A6 says, a retry is forbidden by a value that is negative or not an
// integer, and by more than one value; this package also forbids it when
// the value is over 24 hours. No value means no wait and no verdict.
func pushback(md metadata.MD) (wait time.Duration, stop bool) {
	vs := md.Get(pushbackKey)
	switch len(vs) {
	case 0:
		return 0, false
	case 1:
	default:
		return 0, true
	}
	ms, err := strconv.ParseInt(vs[0], 10, 64)
	if err != nil || ms < 0 || ms > pushbackLimit.Milliseconds() {
		return 0, true
	}
	return time.Duration(ms) * time.Millisecond, false
}

// withPushback returns c as the trailer md amends it: a forbidden retry
// makes it unsafe to retry, and a wait raises its RetryAfter to at least
// that wait.
func withPushback(c retry.Classification, md metadata.MD) retry.Classification {
	wait, stop := pushback(md)
	if stop {
		c.Safety = retry.SafetyNo
	}
	c.RetryAfter = max(c.RetryAfter, wait)
	return c
}

// classified is a failed attempt's error as the interceptor classified it.
// The strategy's classifier reads the classification through RetryInfo
// and ErrorInfo; errors.Is and errors.As reach the original error.
type classified struct {
	err error
	c   retry.Classification
}

func (e *classified) Error() string              { return e.err.Error() }
func (e *classified) Unwrap() error              { return e.err }
func (e *classified) RetrySafety() retry.Safety  { return e.c.Safety }
func (e *classified) IsThrottle() bool           { return e.c.Throttle }
func (e *classified) IsTimeout() bool            { return e.c.Timeout }
func (e *classified) RetryAfter() time.Duration  { return e.c.RetryAfter }
func (e *classified) Fault() retry.Fault         { return e.c.Fault }
func (e *classified) GRPCStatus() *status.Status { return status.Convert(e.err) }

var _ interface {
	retry.RetryInfo
	retry.ErrorInfo
} = (*classified)(nil)
