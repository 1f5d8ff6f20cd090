package bench_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/hashicorp/go-retryablehttp"
	"github.com/retrykit/retry"
)

// server is an in-process http.RoundTripper that answers fail times 503
// and then 200, over and over, with an empty body: the network is left out,
// so the rows show what each library adds to net/http. It is not safe for
// concurrent use.
type server struct {
	fail, n int
}

var emptyHeader = http.Header{}

func (s *server) RoundTrip(req *http.Request) (*http.Response, error) {
	resp := &http.Response{
		Status: "200 OK", StatusCode: http.StatusOK,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: emptyHeader, Body: http.NoBody, Request: req,
	}
	if s.n++; s.n <= s.fail {
		resp.Status, resp.StatusCode = "503 Service Unavailable", http.StatusServiceUnavailable
		return resp, nil
	}
	s.n = 0
	return resp, nil
}

const url = "http://api.example.com/item"

// An httpCaller sends one GET request, made per call, through one library.
type httpCaller struct {
	name string
	do   func(ctx context.Context) (*http.Response, error)
}

// transportCallers returns the callers for the HTTP cases: a server that
// fails fail times and then succeeds, reached through a plain http.Client
// (direct, which sends one request fail+1 times), retrykit's Transport, and
// go-retryablehttp and failsafe-go's RoundTripper, each in its fastest
// configuration: no delays, no logger.
func transportCallers(tb testing.TB, fail int) []httpCaller {
	plain := &http.Client{Transport: &server{fail: fail}}

	rk := &http.Client{Transport: &retry.Transport{
		Base:     &server{fail: fail},
		Strategy: must(retry.NewStandard(retry.WithBackoff(retry.NoBackoff), retry.WithoutRetryQuota())),
	}}

	rh := retryablehttp.NewClient()
	rh.HTTPClient = &http.Client{Transport: &server{fail: fail}}
	rh.Logger = nil
	rh.RetryMax = 2
	rh.RetryWaitMin, rh.RetryWaitMax = 0, 0
	rh.Backoff = func(time.Duration, time.Duration, int, *http.Response) time.Duration { return 0 }

	// failsafe-go's RoundTripper with its HTTP retry policy: 2 retries of
	// 5xx and connection errors, with no delay.
	fs := &http.Client{Transport: failsafehttp.NewRoundTripper(&server{fail: fail},
		failsafehttp.NewRetryPolicyBuilder().WithDelay(0).Build())}

	return []httpCaller{
		{"direct", func(ctx context.Context) (*http.Response, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return nil, err
			}
			for i := 0; ; i++ {
				resp, err := plain.Do(req) // a request without a body may be sent again
				if err != nil || resp.StatusCode < 500 || i == fail {
					return resp, err
				}
				resp.Body.Close()
			}
		}},
		{"retrykit", func(ctx context.Context) (*http.Response, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return nil, err
			}
			return rk.Do(req)
		}},
		{"failsafe", func(ctx context.Context) (*http.Response, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return nil, err
			}
			return fs.Do(req)
		}},
		{"retryablehttp", func(ctx context.Context) (*http.Response, error) {
			req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return nil, err
			}
			return rh.Do(req)
		}},
	}
}

// TestHTTPCallers checks that every HTTP caller gets a 200, twice in a row.
func TestHTTPCallers(t *testing.T) {
	ctx := context.Background()
	for _, fail := range []int{0, 2} {
		for _, c := range transportCallers(t, fail) {
			for range 2 {
				resp, err := c.do(ctx)
				if err != nil {
					t.Fatalf("%s, fail %d: %v", c.name, fail, err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("%s, fail %d: status %d", c.name, fail, resp.StatusCode)
				}
			}
		}
	}
}

func runHTTP(b *testing.B, callers []httpCaller) {
	ctx := context.Background()
	for _, c := range callers {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				resp, err := c.do(ctx)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
			}
		})
	}
}

// BenchmarkTransport: one GET that succeeds at once.
func BenchmarkTransport(b *testing.B) { runHTTP(b, transportCallers(b, 0)) }

// BenchmarkTransportFailFailOK: one GET answered 503, 503, then 200,
// retried at once.
func BenchmarkTransportFailFailOK(b *testing.B) { runHTTP(b, transportCallers(b, 2)) }
