package awsretry

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"unsafe"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
)

func serviceCtx(id, region string) context.Context {
	return awsmiddleware.SetRegion(awsmiddleware.SetServiceID(context.Background(), id), region)
}

// The default scope names calls as ServiceScope does, with one string per
// service and region while at most 8 are in use, and right names for any
// number, from any number of goroutines.
func TestServiceNames(t *testing.T) {
	var n serviceNames
	first := n.scope(serviceCtx("DynamoDB", "us-east-1"))
	again := n.scope(serviceCtx("DynamoDB", "us-east-1"))
	if first != "DynamoDB/us-east-1" || unsafe.StringData(first) != unsafe.StringData(again) {
		t.Fatalf("names %q and %q: want DynamoDB/us-east-1, the same string", first, again)
	}
	if got := n.scope(serviceCtx("S3", "")); got != "S3" {
		t.Fatalf("no region: %q, want S3", got)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				id, region := fmt.Sprintf("Svc%d", (g+i)%20), fmt.Sprintf("r-%d", i%3)
				ctx := serviceCtx(id, region)
				if got, want := n.scope(ctx), ServiceScope(ctx); got != want {
					t.Errorf("%s in %s: named %q, want %q", id, region, got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}
