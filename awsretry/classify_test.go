package awsretry_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	sdkretry "github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/retrykit/retry"
	"github.com/retrykit/retry/awsretry"
	"github.com/stretchr/testify/assert"
)

// responseError is the error the SDK returns for an error response: the
// API error, inside the HTTP response error that carries the status.
func responseError(status int, api error) error {
	return &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status, Header: http.Header{}}},
			Err:      api,
		},
		RequestID: "req",
	}
}

func apiError(status int, code string, fault smithy.ErrorFault) error {
	return responseError(status, &smithy.GenericAPIError{Code: code, Message: "m", Fault: fault})
}

// retryable is an error with the SDK's RetryableError() bool marker.
type retryable bool

func (r retryable) Error() string        { return "marked" }
func (r retryable) RetryableError() bool { return bool(r) }

type timeout struct{}

func (timeout) Error() string { return "i/o timeout" }
func (timeout) Timeout() bool { return true }

func TestClassify(t *testing.T) {
	yes, no := retry.SafetyYes, retry.SafetyNo
	tests := []struct {
		name     string
		err      error
		safety   retry.Safety
		throttle bool
		timeout  bool
		fault    retry.Fault
	}{
		{name: "nil"},
		{"ProvisionedThroughputExceededException", responseError(400, &types.ProvisionedThroughputExceededException{Message: aws.String("m")}), yes, true, false, retry.FaultClient},
		{"ThrottlingException", apiError(400, "ThrottlingException", smithy.FaultClient), yes, true, false, retry.FaultClient},
		{"SlowDown 503", apiError(503, "SlowDown", smithy.FaultServer), yes, true, false, retry.FaultServer},
		{"RequestTimeout", apiError(400, "RequestTimeout", smithy.FaultClient), yes, false, false, retry.FaultClient},
		{"InternalServerError 500", responseError(500, &types.InternalServerError{Message: aws.String("m")}), yes, false, false, retry.FaultServer},
		{"503", apiError(503, "ServiceUnavailable", smithy.FaultServer), yes, false, false, retry.FaultServer},
		{"ValidationException 400", apiError(400, "ValidationException", smithy.FaultClient), no, false, false, retry.FaultClient},
		{"501", apiError(501, "NotImplemented", smithy.FaultServer), no, false, false, retry.FaultServer},
		// The SDK leaves a 429 without a throttling code alone;
		// retry.Classify retries it as a throttle.
		{"429 without a code", apiError(429, "", smithy.FaultUnknown), yes, true, false, retry.FaultServer},
		{"RetryableError true", retryable(true), yes, false, false, retry.FaultUnknown},
		{"RetryableError false wins over a status", errors.Join(retryable(false), apiError(503, "", smithy.FaultServer)), no, false, false, retry.FaultServer},
		{"request canceled", &aws.RequestCanceledError{Err: context.Canceled}, no, false, false, retry.FaultUnknown},
		{"connection reset", errors.New("read tcp 127.0.0.1:1: read: connection reset by peer"), yes, false, false, retry.FaultUnknown},
		{"no such host", &net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}, no, false, false, retry.FaultOther},
		{"timeout", &net.OpError{Op: "read", Net: "tcp", Err: timeout{}}, yes, false, true, retry.FaultOther},
		{"retry.Permanent wins", retry.Permanent(apiError(500, "InternalServerError", smithy.FaultServer)), no, false, false, retry.FaultServer},
		{"retry.Transient wins", retry.Transient(apiError(400, "ValidationException", smithy.FaultClient)), yes, false, false, retry.FaultClient},
		{"unknown", errors.New("?"), retry.SafetyMaybe, false, false, retry.FaultUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := awsretry.Classify(tt.err)
			assert.Equal(t, tt.safety, c.Safety, "safety")
			assert.Equal(t, tt.throttle, c.Throttle, "throttle")
			assert.Equal(t, tt.timeout, c.Timeout, "timeout")
			assert.Equal(t, tt.fault, c.Fault, "fault")
		})
	}
}

// asTimeout is an error that is none of the interfaces itself, and says
// through its As method that it can be a Timeout() bool that reports to.
type asTimeout struct{ to bool }

func (e asTimeout) Error() string { return "as timeout" }
func (e asTimeout) As(target any) bool {
	if p, ok := target.(*interface{ Timeout() bool }); ok {
		*p = timeoutIs(e.to)
		return true
	}
	return false
}

type timeoutIs bool

func (t timeoutIs) Error() string { return "timeout is" }
func (t timeoutIs) Timeout() bool { return bool(t) }

// asCode makes itself an ErrorCode() string of its code through As.
type asCode string

func (e asCode) Error() string { return "as code" }
func (e asCode) As(target any) bool {
	if p, ok := target.(*interface{ ErrorCode() string }); ok {
		*p = &smithy.GenericAPIError{Code: string(e)}
		return true
	}
	return false
}

// Classify's throttle and timeout flags and its fault are what the SDK's
// default throttle and timeout checks (DefaultThrottles, DefaultTimeouts,
// each an errors.As) and errors.As for the status and the API error say,
// with retry.Classify's flags added, as Classify was first written: its one
// walk of the chain finds what the four errors.As find, As methods, joins
// and first-found-wins included.
func TestClassifyMatchesTheSDKChecks(t *testing.T) {
	throttles := sdkretry.IsErrorThrottles(sdkretry.DefaultThrottles)
	timeouts := sdkretry.IsErrorTimeouts(sdkretry.DefaultTimeouts)
	errs := []error{
		apiError(400, "ThrottlingException", smithy.FaultClient),
		apiError(503, "SlowDown", smithy.FaultServer),
		apiError(429, "", smithy.FaultUnknown),
		apiError(400, "ValidationException", smithy.FaultClient),
		responseError(400, &types.ProvisionedThroughputExceededException{Message: aws.String("m")}),
		&net.OpError{Op: "read", Net: "tcp", Err: timeout{}},
		fmt.Errorf("wrapped: %w", &net.OpError{Op: "read", Net: "tcp", Err: timeout{}}),
		asTimeout{true},
		asTimeout{false},
		errors.Join(asTimeout{false}, timeout{}), // the first found says no
		errors.Join(errors.New("x"), asCode("SlowDown")),
		errors.Join(asCode("Nope"), asCode("SlowDown")), // the first found wins
		fmt.Errorf("%w and %w", apiError(500, "InternalError", smithy.FaultServer), asCode("Throttling")),
		errors.New("plain"),
		&smithy.GenericAPIError{Code: "Throttling", Fault: smithy.FaultServer},
	}
	for i, err := range errs {
		c, core := awsretry.Classify(err), retry.Classify(err)
		wantThrottle := core.Throttle || throttles.IsErrorThrottle(err) == aws.TrueTernary
		wantTimeout := core.Timeout || timeouts.IsErrorTimeout(err) == aws.TrueTernary
		wantFault := core.Fault
		var st interface{ HTTPStatusCode() int }
		var api smithy.APIError
		if wantFault == retry.FaultUnknown && errors.As(err, &st) {
			wantFault = retry.ClassifyStatus(st.HTTPStatusCode()).Fault
		}
		if wantFault == retry.FaultUnknown && errors.As(err, &api) {
			switch api.ErrorFault() {
			case smithy.FaultClient:
				wantFault = retry.FaultClient
			case smithy.FaultServer:
				wantFault = retry.FaultServer
			}
		}
		if c.Throttle != wantThrottle || c.Timeout != wantTimeout || c.Fault != wantFault {
			t.Errorf("%d %v: throttle %v timeout %v fault %v; the SDK's checks say %v %v %v",
				i, err, c.Throttle, c.Timeout, c.Fault, wantThrottle, wantTimeout, wantFault)
		}
	}
}
