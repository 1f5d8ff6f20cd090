// Package awsretry makes any retry.RetryStrategy the retryer of the AWS SDK
// for Go v2 (github.com/aws/aws-sdk-go-v2) clients, in one line of
// configuration:
//
//	cfg, err := config.LoadDefaultConfig(ctx, awsretry.WithStrategy(s))
//
// Every client made from cfg then retries as s decides: s classifies each
// failed attempt, waits its backoff, paces sending (a retry.Adaptive), and
// pays for retries from its retry quota, which a successful retry refunds.
// The SDK's retry middleware keeps doing what it does around the retryer:
// it numbers the attempts, sends the amz-sdk-request header
// ("attempt=N; max=M", M being the strategy's attempt limit), rewinds
// request bodies, and records attempt metadata.
//
// The SDK keeps one retryer per client and shares it between concurrent
// calls, while a strategy keeps each call's state in its token. WithStrategy
// therefore installs, beside the Retryer, a middleware that gives every
// operation call its own state (AddMiddleware); the Retryer finds it in
// the context the SDK passes it.
//
// To wrap SDK calls in retry.Do instead, switch the SDK's own retries off,
// or every attempt of retry.Do makes up to three attempts of its own:
//
//	cfg, err := config.LoadDefaultConfig(ctx, config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }))
//
// and classify with Classify, which knows the SDK's errors.
package awsretry

import (
	"context"
	"fmt"
	"reflect"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/retrykit/retry"
)

// WithStrategy returns the option of config.LoadDefaultConfig that makes s
// the retryer of every client made from the loaded aws.Config: it sets the
// config's Retryer to a Retryer for s (see New) and adds AddMiddleware to
// its APIOptions.
//
// The strategy is then the one place for retry settings: given a retryer,
// LoadDefaultConfig reads neither AWS_RETRY_MODE nor AWS_MAX_ATTEMPTS (nor
// their shared config file settings). Build s with retry.FromEnvironment
// to honour them.
//
// A nil s, or a bad option, makes LoadDefaultConfig fail with an error
// wrapping retry.ErrInvalidConfig.
func WithStrategy(s retry.RetryStrategy, opts ...Option) config.LoadOptionsFunc {
	r, err := New(s, opts...)
	return func(o *config.LoadOptions) error {
		if err != nil {
			return err
		}
		o.Retryer = func() aws.Retryer { return r }
		o.APIOptions = append(o.APIOptions, AddMiddleware)
		return nil
	}
}

// Retryer is an aws.RetryerV2 that retries with a retry.RetryStrategy. The
// SDK's retry middleware calls its methods; they are not meant to be called
// otherwise. It needs the per-call state that AddMiddleware installs:
// without it, GetAttemptToken fails every call with an error wrapping
// retry.ErrInvalidConfig. WithStrategy installs both.
//
// How the middleware's steps map onto the strategy, for each call:
//
//   - GetAttemptToken, before the first attempt: AcquireInitialToken,
//     which waits for a send slot when the strategy paces sending;
//   - the release funcs, after each attempt: on success RecordSuccess,
//     once per call however many release funcs the SDK calls;
//   - IsErrorRetryable: the classifier (default Classify) says whether an
//     error is safe to retry, as the SDK's default retryer would;
//   - GetRetryToken, after a retryable failure: RefreshRetryToken, which
//     waits the backoff and any send slot, or refuses (the SDK then returns
//     the attempt's error joined with the reason, such as
//     retry.ErrRetryQuotaExceeded);
//   - RetryDelay: 0, since the strategy has already waited;
//   - MaxAttempts: the strategy's attempt limit, when it reports one
//     through a MaxAttempts() int method, else 0 (no limit of the SDK's).
//
// When the SDK ends a call without asking for a retry token (the error is
// not retryable, or the attempts ran out), the per-call middleware tells
// the strategy, with RefreshRetryToken, that the last attempt failed, so
// that it refunds what it refunds for such failures and its rate limiter
// learns of a last throttle; if the caller's context has ended it does
// not, as retry.Do does not. A token the strategy granted for an attempt
// that is then never made (the context ended between the two) is given
// back with ReleaseToken, when the strategy has that method.
//
// A Retryer is safe for concurrent use by any number of clients and
// calls; its configuration is immutable. Create one with New; the zero value and nil are not
// usable: their methods fail as when the per-call state is missing.
type Retryer struct {
	strategy    retry.RetryStrategy
	classify    retry.Classifier
	scope       func(context.Context) string
	maxAttempts int                                               // 0: the strategy reports none
	releaser    interface{ ReleaseToken(retry.RetryToken) error } // nil: the strategy has no ReleaseToken

	// last is the classifier's latest answer, kept so that the SDK's two
	// questions about one failed attempt (IsErrorRetryable, then
	// GetRetryToken) classify its error once.
	last atomic.Pointer[classification]

	names serviceNames // the scopes' names, with the default scope
}

// classification is what the classifier said of err.
type classification struct {
	err error
	c   retry.Classification
}

// classifyOnce returns r.classify(err), from r.last if that holds the
// answer for err. Only errors held by pointer, as the SDK's are, are
// compared (comparing others may panic); the classifier being a function
// of its error, an answer for the same pointer is the same answer.
func (r *Retryer) classifyOnce(err error) retry.Classification {
	if err == nil || reflect.TypeOf(err).Kind() != reflect.Pointer {
		return r.classify(err)
	}
	if last := r.last.Load(); last != nil && last.err == err {
		return last.c
	}
	c := r.classify(err)
	r.last.Store(&classification{err: err, c: c})
	return c
}

var _ aws.RetryerV2 = (*Retryer)(nil)

// An Option configures a Retryer, for New and WithStrategy. A nil Option
// is an error.
type Option func(*options)

type options struct {
	classify     retry.Classifier
	scope        func(context.Context) string
	defaultScope bool // scope is ServiceScope, not given by WithScopeFunc
	nilOption    bool
}

// WithClassifier sets how the Retryer classifies the errors of failed
// attempts (default Classify): whether IsErrorRetryable lets the SDK ask
// for a retry, and what the strategy is told about the error, as the
// retry.RetryInfo of a wrapper around it (the strategy's own classifier
// reads that first when it is retry.Classify). Valid: non-nil.
func WithClassifier(c retry.Classifier) Option {
	return func(o *options) { o.classify = c }
}

// WithScopeFunc sets how a call's scope is named: the strategy keeps a
// retry quota and rate limiter per scope. f is called once per operation
// call, before its first attempt, with the call's context, from which
// github.com/aws/aws-sdk-go-v2/aws/middleware's GetServiceID, GetRegion
// and GetOperationName read the call's service, region and operation. The
// default, ServiceScope, gives each service and region a scope of its
// own, as each SDK client has a retryer of its own; a function that
// returns "" shares the strategy's default scope between all calls.
// Valid: non-nil.
func WithScopeFunc(f func(ctx context.Context) string) Option {
	return func(o *options) { o.scope, o.defaultScope = f, false }
}

// ServiceScope is the default scope of a call: its service ID and region,
// as "DynamoDB/us-east-1", or the service ID alone when no region is set.
func ServiceScope(ctx context.Context) string {
	return serviceScope(awsmiddleware.GetServiceID(ctx), awsmiddleware.GetRegion(ctx))
}

func serviceScope(id, region string) string {
	if region == "" {
		return id
	}
	return id + "/" + region
}

// serviceNames names the scopes of a Retryer with the default scope, as
// ServiceScope does, keeping the names of the last few services and
// regions it saw: a service and region are named by the same string for
// every call, which costs no allocation and which the strategy finds at
// once (its scope cache keeps the last scope of each name it is given by
// the name's address).
type serviceNames struct {
	slots [8]atomic.Pointer[serviceName]
	next  atomic.Uint32
}

type serviceName struct{ id, region, name string }

func (n *serviceNames) scope(ctx context.Context) string {
	id, region := awsmiddleware.GetServiceID(ctx), awsmiddleware.GetRegion(ctx)
	for i := range n.slots {
		s := n.slots[i].Load()
		if s == nil {
			break // slots fill in order
		}
		if s.id == id && s.region == region {
			return s.name
		}
	}
	name := serviceScope(id, region)
	n.slots[(n.next.Add(1)-1)%uint32(len(n.slots))].Store(&serviceName{id, region, name})
	return name
}

// New returns a Retryer that retries with s. Install it with WithStrategy,
// or by hand on a client, with AddMiddleware:
//
//	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
//		o.Retryer = r
//		o.APIOptions = append(o.APIOptions, awsretry.AddMiddleware)
//	})
//
// A nil s (or a nil pointer, or a zero retry.Standard or retry.Adaptive),
// or a bad option, is an error wrapping retry.ErrInvalidConfig.
func New(s retry.RetryStrategy, opts ...Option) (*Retryer, error) {
	o := options{classify: Classify, scope: ServiceScope, defaultScope: true}
	for _, opt := range opts {
		if opt == nil {
			o.nilOption = true
			continue
		}
		opt(&o)
	}
	if s == nil {
		return nil, configError("New", "a nil strategy", "a non-nil retry.RetryStrategy")
	}
	if v := reflect.ValueOf(s); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil, configError("New", fmt.Sprintf("a nil %T", s), "a non-nil retry.RetryStrategy")
	}
	r := &Retryer{strategy: s, classify: o.classify, scope: o.scope}
	if m, ok := s.(interface{ MaxAttempts() int }); ok {
		r.maxAttempts = m.MaxAttempts()
	}
	switch s.(type) {
	case *retry.Standard, *retry.Adaptive:
		if r.maxAttempts < 1 { // what a zero one reports
			return nil, configError("New", fmt.Sprintf("a zero %T", s), "a strategy made by retry.NewStandard or retry.NewAdaptive")
		}
	}
	switch {
	case o.nilOption:
		return nil, configError("Option", "nil", "an option made by a With function")
	case o.classify == nil:
		return nil, configError("WithClassifier", "nil", "a non-nil retry.Classifier")
	case o.scope == nil:
		return nil, configError("WithScopeFunc", "nil", "a non-nil func(context.Context) string")
	}
	r.releaser, _ = s.(interface{ ReleaseToken(retry.RetryToken) error })
	if o.defaultScope {
		r.scope = r.names.scope
	}
	return r, nil
}

// configError reports a bad value for the named option, as the retry
// package does.
func configError(option string, got any, valid string) error {
	return fmt.Errorf("%w: awsretry.%s = %v, want %s", retry.ErrInvalidConfig, option, got, valid)
}

// errNoCallState is returned when a Retryer is used without the per-call
// state that AddMiddleware installs.
var errNoCallState = fmt.Errorf("%w: awsretry: the call has no per-call retry state: add awsretry.AddMiddleware to the client's APIOptions (awsretry.WithStrategy does)", retry.ErrInvalidConfig)

// errOutOfOrder is returned when the Retryer is called in an order the
// SDK's retry middleware never calls it in.
var errOutOfOrder = fmt.Errorf("%w: awsretry: retryer called out of order", retry.ErrInvalidToken)

// IsErrorRetryable reports whether the classifier (default Classify) says
// that err is safe to retry. It does not count attempts.
func (r *Retryer) IsErrorRetryable(err error) bool {
	if r == nil || r.classify == nil {
		return false
	}
	return r.classifyOnce(err).Retryable()
}

// MaxAttempts returns the strategy's attempt limit, the first attempt
// included, when the strategy reports one through a MaxAttempts() int
// method, and otherwise 0, which tells the SDK to leave the limit to the
// strategy. The SDK sends it as the max of the amz-sdk-request header.
func (r *Retryer) MaxAttempts() int {
	if r == nil {
		return 0
	}
	return r.maxAttempts
}

// RetryDelay returns 0: the strategy waits the backoff in GetRetryToken.
func (r *Retryer) RetryDelay(int, error) (time.Duration, error) { return 0, nil }

// GetInitialToken returns a release func that does nothing. The SDK calls
// GetAttemptToken instead, which does the work; this method only completes
// the aws.Retryer interface.
func (r *Retryer) GetInitialToken() func(error) error { return nopRelease }

// GetAttemptToken is called before each attempt of a call. Before the
// first it asks the strategy for the call's initial token, waiting for a
// send slot when the strategy paces sending; before the others, the
// strategy has already admitted the attempt in GetRetryToken. Its release
// func records the attempt's outcome; a success is recorded with the
// strategy.
//
// When the strategy refuses the initial token with an error wrapping
// retry.ErrRateLimited, retry.ErrDeadlineTooSoon or ctx's error, no
// attempt is made and the call fails with that error; any other refusal
// allows one attempt, without retries.
func (r *Retryer) GetAttemptToken(ctx context.Context) (func(error) error, error) {
	c, err := r.call(ctx)
	if err != nil {
		return nil, err
	}
	return c.beginAttempt(ctx)
}

// GetRetryToken is called after a failed attempt that IsErrorRetryable
// accepted, while attempts remain. It asks the strategy for the next
// attempt's token, which waits the backoff and any send slot, and returns
// its release func; or it returns the strategy's refusal, which the SDK
// returns joined with opErr. The strategy is told the classifier's view of
// opErr, marked as retryable: the SDK has decided that it is, perhaps
// through a wrapper of the Retryer that retries more errors (the SDK's
// aws/retry.AddWithErrorCodes).
func (r *Retryer) GetRetryToken(ctx context.Context, opErr error) (func(error) error, error) {
	c, err := r.call(ctx)
	if err != nil {
		return nil, err
	}
	return c.refresh(ctx, opErr)
}

// call returns the state of the call that ctx belongs to, made ready for
// r.
func (r *Retryer) call(ctx context.Context) (*call, error) {
	c := callFrom(ctx)
	if r == nil || r.strategy == nil || c == nil {
		return nil, errNoCallState
	}
	switch c.r {
	case nil:
		c.r = r
	case r:
	default:
		return nil, fmt.Errorf("%w: one call used two awsretry Retryers", errOutOfOrder)
	}
	return c, nil
}

func nopRelease(error) error { return nil }
