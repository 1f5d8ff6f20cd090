package awsretry_test

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/retrykit/retry"
	"github.com/retrykit/retry/awsretry"
)

// throttleOnce starts a stand-in for DynamoDB that prints the
// amz-sdk-request header of each request and throttles the first one.
func throttleOnce() *httptest.Server {
	var requests atomic.Int32
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println("request:", r.Header.Get("Amz-Sdk-Request"))
		status, body := http.StatusOK, `{"Item":{"id":{"S":"42"}}}`
		if requests.Add(1) == 1 {
			status, body = http.StatusBadRequest, `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException"}`
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body))), 10))
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
}

// Every client made from cfg retries with the strategy s: one line of
// configuration.
func Example() {
	srv := throttleOnce()
	defer srv.Close()

	s, err := retry.NewStandard()
	if err != nil {
		log.Fatal(err)
	}
	cfg, err := config.LoadDefaultConfig(context.Background(),
		awsretry.WithStrategy(s), // the one line
		config.WithRegion("us-east-1"),
		config.WithBaseEndpoint(srv.URL),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")),
	)
	if err != nil {
		log.Fatal(err)
	}
	client := dynamodb.NewFromConfig(cfg)

	out, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String("items"),
		Key:       map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "42"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("item:", out.Item["id"].(*types.AttributeValueMemberS).Value)
	// Output:
	// request: attempt=1; max=3
	// request: attempt=2; max=3
	// item: 42
}

// To wrap SDK calls in retry.Do instead, switch the SDK's own retries off,
// so that each attempt of retry.Do is one request, and classify the SDK's
// errors with Classify.
func ExampleClassify() {
	srv := throttleOnce()
	defer srv.Close()

	s, err := retry.NewStandard(retry.WithClassifier(awsretry.Classify))
	if err != nil {
		log.Fatal(err)
	}
	cfg, err := config.LoadDefaultConfig(context.Background(),
		config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }), // the SDK's retries off
		config.WithRegion("us-east-1"),
		config.WithBaseEndpoint(srv.URL),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")),
	)
	if err != nil {
		log.Fatal(err)
	}
	client := dynamodb.NewFromConfig(cfg)

	out, err := retry.Do(context.Background(), func(ctx context.Context) (*dynamodb.GetItemOutput, error) {
		return client.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String("items"),
			Key:       map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "42"}},
		})
	}, retry.WithStrategy(s))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("item:", out.Item["id"].(*types.AttributeValueMemberS).Value)
	// Output:
	// request: attempt=1; max=1
	// request: attempt=1; max=1
	// item: 42
}
