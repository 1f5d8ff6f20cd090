package grpcretry

import (
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/retrykit/retry"
)

// The errdetails.ErrorInfo that the status of a call refused by the
// client itself carries (see IsLocalRefusal).
const (
	// ReasonClientRateLimited is its Reason.
	ReasonClientRateLimited = "CLIENT_RATE_LIMITED"
	// ErrorDomain is its Domain.
	ErrorDomain = "retrykit.github.io"
)

// localRefusal is the status of a call that the strategy refused before
// any attempt, because its client-side rate limiter had no send slot:
// RESOURCE_EXHAUSTED, as gRPC reports the client's own limits, with a
// message and an ErrorInfo detail that say the client refused it, so that
// neither the caller nor a server that passes the status on mistakes it
// for the server's throttle.
func localRefusal(reason error) *status.Status {
	st := status.New(codes.ResourceExhausted, "grpcretry: refused by the client before sending (no attempt made): "+reason.Error())
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: ReasonClientRateLimited, Domain: ErrorDomain}); err == nil {
		st = d
	}
	return st
}

// IsLocalRefusal reports whether err is a call that the client refused
// before sending any attempt, because the strategy's client-side rate
// limiter (retry.Adaptive) had no send slot, rather than a
// RESOURCE_EXHAUSTED answer of the server: both have that code. It holds
// for the error the interceptors return, and for its status passed on by a
// server, by the errdetails.ErrorInfo with Reason ReasonClientRateLimited
// that the status carries. (The interceptors' error also wraps
// retry.ErrRateLimited, as does the error of a call whose retry, rather
// than its first attempt, the limiter refused: that call has the status
// of the server's last answer.)
func IsLocalRefusal(err error) bool {
	if err == nil || !retry.FiniteChain(err) {
		return false
	}
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.ResourceExhausted {
		return false
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetReason() == ReasonClientRateLimited && info.GetDomain() == ErrorDomain {
			return true
		}
	}
	return false
}
