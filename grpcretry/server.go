package grpcretry

import (
	"context"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/retrykit/retry"
)

// The server half: interceptors that keep the retries of the calls a
// handler makes from multiplying across the layers of a call chain, as
// retry.NewHandler does for HTTP. With the default policy
// (retry.RetryNearestFailure), a call made with the handler's context
// through these client interceptors, or retry.Do, or retry.Transport, that
// gives up (attempts, retry quota or send slots out, or the server below
// pushed back) makes the handler's error carry the trailer
// grpc-retry-pushback-ms: -1, gRFC A6's "don't retry", which the client
// interceptors honour.

// A ServerOption configures UnaryServerInterceptor and
// StreamServerInterceptor.
type ServerOption func(*serverConfig)

type serverConfig struct {
	policy retry.LayerPolicy
	err    error
}

// WithLayerPolicy sets the interceptors' retry.LayerPolicy (default
// retry.RetryNearestFailure). Valid: retry.RetryNearestFailure,
// retry.RetryEveryLayer.
func WithLayerPolicy(p retry.LayerPolicy) ServerOption {
	return func(c *serverConfig) { c.policy = p }
}

func newServerConfig(opts []ServerOption) serverConfig {
	var c serverConfig
	for _, o := range opts {
		if o == nil {
			c.err = configError("ServerOption", "nil", "an option made by a grpcretry function")
			return c
		}
		o(&c)
	}
	if _, err := retry.NewLayer(c.policy, retry.Inbound{}); err != nil {
		c.err = err
	}
	return c
}

// layer returns the Layer of a call served with ctx, from what its
// metadata says of the client's retries.
func (c *serverConfig) layer(ctx context.Context) (*retry.Layer, error) {
	if c.err != nil {
		return nil, status.Error(codes.Internal, "grpcretry: "+c.err.Error())
	}
	l, err := retry.NewLayer(c.policy, inbound(ctx))
	if err != nil { // a malformed inbound: serve as if none came
		l, err = retry.NewLayer(c.policy, retry.Inbound{})
	}
	return l, err
}

// pushbackStop is the trailer of gRFC A6's "don't retry".
var pushbackStop = metadata.Pairs(pushbackKey, "-1")

// UnaryServerInterceptor returns a server interceptor that serves each
// call with a retry.Layer in its context (see retry.NewLayer): the code
// serving it reads what the client said of its retries with
// retry.InboundFromContext (grpc-previous-rpc-attempts, which grpc-go's
// own retries send, or an amz-sdk-request entry), and when a call made
// for it gave up, the handler's error carries the trailer
// grpc-retry-pushback-ms: -1, so that the client does not retry. A bad
// option fails every call with INTERNAL.
func UnaryServerInterceptor(opts ...ServerOption) grpc.UnaryServerInterceptor {
	cfg := newServerConfig(opts)
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		l, err := cfg.layer(ctx)
		if err != nil {
			return nil, err
		}
		resp, err := handler(l.Context(ctx), req)
		if err != nil && l.GaveUp() {
			_ = grpc.SetTrailer(ctx, pushbackStop)
		}
		return resp, err
	}
}

// StreamServerInterceptor is UnaryServerInterceptor for streams.
func StreamServerInterceptor(opts ...ServerOption) grpc.StreamServerInterceptor {
	cfg := newServerConfig(opts)
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		l, err := cfg.layer(ss.Context())
		if err != nil {
			return err
		}
		err = handler(srv, &layerStream{ServerStream: ss, ctx: l.Context(ss.Context())})
		if err != nil && l.GaveUp() {
			ss.SetTrailer(pushbackStop)
		}
		return err
	}
}

// layerStream is a server stream served with a Layer in its context.
type layerStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *layerStream) Context() context.Context { return s.ctx }

// inbound returns what the metadata of the call served with ctx says of
// its client's retries: grpc-previous-rpc-attempts (attempt = that + 1,
// the limit unknown) or amz-sdk-request ("attempt=N; max=M"); the zero
// Inbound if neither, or a malformed one.
func inbound(ctx context.Context) retry.Inbound {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get("grpc-previous-rpc-attempts"); len(v) == 1 {
		if n, err := strconv.Atoi(strings.TrimSpace(v[0])); err == nil && n >= 0 && n < 1<<16 {
			return retry.Inbound{Attempt: n + 1}
		}
		return retry.Inbound{}
	}
	if v := md.Get("amz-sdk-request"); len(v) == 1 {
		if in, ok := retry.ParseAttemptHeader(v[0]); ok {
			return in
		}
	}
	return retry.Inbound{}
}
