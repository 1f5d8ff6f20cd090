package awsretry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/retrykit/retry"
	"github.com/stretchr/testify/require"
)

// reply is one answer of the fake DynamoDB: a status and, for an error,
// the error code DynamoDB's JSON protocol puts in __type.
type reply struct {
	status int
	code   string
}

var (
	ok          = reply{http.StatusOK, ""}
	provisioned = reply{http.StatusBadRequest, "ProvisionedThroughputExceededException"}
	throttling  = reply{http.StatusBadRequest, "ThrottlingException"}
	internal    = reply{http.StatusInternalServerError, "InternalServerError"}
	unavailable = reply{http.StatusServiceUnavailable, "ServiceUnavailable"}
	validation  = reply{http.StatusBadRequest, "ValidationException"}
)

// fakeDynamo is a stand-in for DynamoDB that answers GetItem requests. The
// n-th request for an item key (counted per key, from 1) gets
// script(key)[n-1]; requests past the end of the script succeed. It
// records the amz-sdk-request header of every request, per key.
type fakeDynamo struct {
	script func(key string) []reply

	mu      sync.Mutex
	headers map[string][]string
}

func newFake(script func(key string) []reply) *fakeDynamo {
	return &fakeDynamo{script: script, headers: make(map[string][]string)}
}

// seen returns the amz-sdk-request headers of the requests for key.
func (f *fakeDynamo) seen(key string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.headers[key]...)
}

func (f *fakeDynamo) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Key map[string]struct{ S string }
	}
	if r.Header.Get("X-Amz-Target") != "DynamoDB_20120810.GetItem" || json.NewDecoder(r.Body).Decode(&in) != nil {
		http.Error(w, "not a GetItem request", http.StatusNotImplemented)
		return
	}
	key := in.Key["id"].S
	f.mu.Lock()
	f.headers[key] = append(f.headers[key], r.Header.Get("Amz-Sdk-Request"))
	n := len(f.headers[key])
	f.mu.Unlock()

	rep := ok
	if s := f.script(key); n <= len(s) {
		rep = s[n-1]
	}
	body := fmt.Sprintf(`{"Item":{"id":{"S":%q}}}`, key)
	if rep.code != "" {
		body = fmt.Sprintf(`{"__type":"com.amazonaws.dynamodb.v20120810#%s","message":"scripted %s"}`, rep.code, rep.code)
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-Requestid", fmt.Sprintf("%s-%d", key, n))
	w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body))), 10))
	w.WriteHeader(rep.status)
	io.WriteString(w, body)
}

// handlerClient sends requests to an http.Handler in memory, so that
// tests in a testing/synctest bubble use no network.
type handlerClient struct{ h http.Handler }

func (c handlerClient) Do(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, req)
	resp := rec.Result()
	resp.Request = req
	return resp, nil
}

// scope is the scope of the calls of the test clients.
const scope = "DynamoDB/us-east-1"

// newClient returns a DynamoDB client configured with opts, whose requests
// go to h: in memory when url is "", else to url.
func newClient(t testing.TB, h http.Handler, url string, opts ...func(*config.LoadOptions) error) *dynamodb.Client {
	t.Helper()
	base := []func(*config.LoadOptions) error{
		config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")),
		config.WithSharedConfigFiles([]string{}),
		config.WithSharedCredentialsFiles([]string{}),
	}
	if url == "" {
		url = "http://dynamodb.test"
	}
	cfg, err := config.LoadDefaultConfig(context.Background(), append(append(base, config.WithBaseEndpoint(url)), opts...)...)
	require.NoError(t, err)
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if url == "http://dynamodb.test" {
			o.HTTPClient = handlerClient{h}
		}
	})
}

// get reads the item with the given key.
func get(ctx context.Context, c *dynamodb.Client, key string, opts ...func(*dynamodb.Options)) error {
	out, err := c.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String("items"),
		Key:       map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: key}},
	}, opts...)
	if err != nil {
		return err
	}
	if v, _ := out.Item["id"].(*types.AttributeValueMemberS); v == nil || v.Value != key {
		return fmt.Errorf("GetItem %q returned %v", key, out.Item)
	}
	return nil
}

// available returns the tokens in the retry quota of the test clients'
// scope.
func available(t testing.TB, s interface {
	Stats(string) (retry.ScopeStats, bool)
}) float64 {
	t.Helper()
	st, found := s.Stats(scope)
	require.True(t, found, "no state for scope %q", scope)
	require.NotNil(t, st.RetryQuota)
	return st.RetryQuota.Available
}

// events counts a strategy's events by kind. It is safe for concurrent
// use.
type events struct {
	mu sync.Mutex
	n  map[retry.EventKind]int
}

func (e *events) hook() retry.StandardOption {
	e.n = make(map[retry.EventKind]int)
	return retry.WithHook(func(ev retry.Event) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.n[ev.Kind]++
	})
}

func (e *events) count(k retry.EventKind) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n[k]
}
