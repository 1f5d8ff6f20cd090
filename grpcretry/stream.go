package grpcretry

import (
	"context"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// StreamClientInterceptor returns an interceptor that retries streaming
// calls as its strategy decides, as long as no response message has been
// received: after the first message, a failure is the caller's to handle,
// as it would be without the interceptor.
//
//   - Opening any stream is retried when it fails (an UNAVAILABLE
//     connection, say): nothing has been sent yet.
//   - A server-streaming call (one request, a stream of responses) is also
//     retried when the stream fails before its first response message: the
//     interceptor opens a new stream and sends the request again, and
//     RecvMsg returns the new stream's first message. The request message
//     is kept, and sent again, until then. Header, Trailer and Context
//     report the current attempt's stream.
//   - A client-streaming or bidirectional stream is not retried once it is
//     open: its requests are not kept for sending again.
//
// A stream that ends without a message (RecvMsg returns io.EOF) counts as
// a success. Failures are classified, pushback is read from the failed
// stream's trailer, and the error returned on giving up is built, as
// UnaryClientInterceptor documents; an error after the first message is
// the stream's own. The interceptor, and the streams it returns, are safe
// for concurrent use as grpc.ClientStream documents.
func StreamClientInterceptor(opts ...Option) grpc.StreamClientInterceptor {
	base := newConfig(opts)
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string,
		streamer grpc.Streamer, callOpts ...grpc.CallOption) (grpc.ClientStream, error) {
		cfg, callOpts := base.forCall(callOpts)
		var tr *tracker // nil unless WithCallStats
		if cfg.callStats != nil && ctx != nil {
			tr = newTracker(cfg.callStats, method, cc)
			ctx = context.WithValue(ctx, trackerKey{}, tr)
		}
		c, err := cfg.start(ctx, method, cc)
		switch {
		case err != nil:
			tr.report(ctx)
			return nil, err
		case c == nil: // retries disabled
			tr.begin()
			defer tr.report(ctx)
			return streamer(ctx, desc, cc, method, callOpts...)
		}
		open := func() (grpc.ClientStream, error) {
			tr.begin()
			cs, err := streamer(c.attemptContext(ctx), desc, cc, method, callOpts...)
			if err != nil {
				tr.end()
			}
			return cs, err
		}
		cs, err := openStream(c, open)
		if err != nil || desc == nil || desc.ClientStreams || !desc.ServerStreams {
			// Open is as far as such a stream is retried.
			tr.report(ctx)
			if err != nil {
				return nil, err
			}
			c.succeeded()
			return cs, nil
		}
		return &serverStream{c: c, open: open, cur: cs, tr: tr}, nil
	}
}

// openStream opens a stream, retrying as c allows.
func openStream(c *call, open func() (grpc.ClientStream, error)) (grpc.ClientStream, error) {
	for {
		cs, err := open()
		if err == nil {
			return cs, nil
		}
		if err = c.failed(err, nil); err != nil {
			return nil, err
		}
	}
}

// serverStream is a server-streaming call that is retried until its first
// response message arrives. The request, sent by SendMsg before the
// first RecvMsg (as generated code does), is kept to be sent again on
// each new stream.
type serverStream struct {
	c    *call // used by RecvMsg only, until done
	open func() (grpc.ClientStream, error)
	tr   *tracker // the call's, if WithCallStats

	mu     sync.Mutex
	cur    grpc.ClientStream // the current attempt's stream
	req    any               // the request, once sent
	sent   bool
	closed bool  // CloseSend was called
	done   bool  // no more retries: a message arrived, the stream ended, or the call gave up
	err    error // the error the call gave up with
}

func (s *serverStream) current() grpc.ClientStream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// Header returns the current attempt's header metadata.
func (s *serverStream) Header() (metadata.MD, error) { return s.current().Header() }

// Trailer returns the current attempt's trailer metadata.
func (s *serverStream) Trailer() metadata.MD { return s.current().Trailer() }

// Context returns the current attempt's stream context.
func (s *serverStream) Context() context.Context { return s.current().Context() }

// CloseSend closes the sending side of the stream, and of every later
// attempt's.
func (s *serverStream) CloseSend() error {
	s.mu.Lock()
	s.closed = true
	cs := s.cur
	s.mu.Unlock()
	return cs.CloseSend()
}

// SendMsg sends the request, and keeps it to send again on a retry.
func (s *serverStream) SendMsg(m any) error {
	s.mu.Lock()
	if !s.sent {
		s.req, s.sent = m, true
	}
	cs := s.cur
	s.mu.Unlock()
	return cs.SendMsg(m)
}

// RecvMsg receives the next response message. Until the first one arrives,
// a failed stream is replaced by a new one as the strategy allows.
func (s *serverStream) RecvMsg(m any) error {
	s.mu.Lock()
	cs, done, gaveUp := s.cur, s.done, s.err
	s.mu.Unlock()
	switch {
	case gaveUp != nil:
		return gaveUp
	case done:
		return cs.RecvMsg(m)
	}
	for {
		err := cs.RecvMsg(m)
		if err == nil || err == io.EOF {
			s.finish(nil)
			s.c.succeeded()
			return err
		}
		s.tr.end()
		if err = s.c.failed(err, cs.Trailer()); err != nil {
			s.finish(err)
			return err
		}
		if cs, err = s.reopen(); err != nil {
			s.finish(err)
			return err
		}
	}
}

// finish ends the retries, with the error the call gave up with, if any.
func (s *serverStream) finish(err error) {
	s.mu.Lock()
	s.done, s.err = true, err
	s.mu.Unlock()
	s.tr.report(s.c.ctx)
}

// reopen opens the next attempt's stream, as the strategy allows, makes it
// the current one, and sends it what was sent on the first.
func (s *serverStream) reopen() (grpc.ClientStream, error) {
	for {
		cs, err := openStream(s.c, s.open)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.cur = cs
		req, sent, closed := s.req, s.sent, s.closed
		s.mu.Unlock()
		if sent {
			err = cs.SendMsg(req)
		}
		if err == nil && closed {
			err = cs.CloseSend()
		}
		if err == nil {
			return cs, nil
		}
		// Sending failed before the server could answer (a request it cannot
		// marshal, say): that is the attempt's failure.
		s.tr.end()
		if err = s.c.failed(err, nil); err != nil {
			return nil, err
		}
	}
}
