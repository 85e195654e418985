package legacy

import (
	"context"
	"errors"
	"io"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-elicit/elicit/internal/transport"
	"github.com/mcp-elicit/elicit/mcpserver"
)

// errStreamEnded is why a stream's session ended when its input did.
var errStreamEnded = errors.New("the client closed its input")

// ServeStream serves one 2025-era client over a stream of
// newline-delimited JSON-RPC messages, the 2025-11-25 stdio binding
// (basic/transports.mdx §stdio), from srv's registered handlers, as
// Handler does over HTTP: the same bridge (input requests sent to the
// client as elicitation/create, sampling/createMessage and roots/list
// requests, the sealed requestState kept on the server), the same
// capability gate and errors.
//
// in carries the client's messages, starting with its initialize request;
// out takes the server's, each written whole, "\n" included, in one Write
// call (so a caller that frames other messages on the same stream can
// keep them apart). Every request is served for principal: state, URL
// flows and the vault are bound to it as on HTTP.
//
// ServeStream returns when in ends (io.EOF: nil), when ctx is done
// (ctx.Err()) or when the session fails. Calls in progress are cancelled
// first, so a prompt the client will never answer ends too; their answers
// are "-32603 Session closed: …". Options' session caps and idle timeout
// do not apply: the stream is the session.
func ServeStream(ctx context.Context, srv *mcpserver.Server, in io.Reader, out io.Writer, principal string, opts *Options) error {
	o := opts.withDefaults()
	b := &bridge{srv: srv, core: transport.Of(srv), opts: o, log: o.Logger}
	s := &session{principal: principal}
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	defer s.cancel(context.Canceled)
	ended := make(chan struct{})
	t := &sdk.IOTransport{
		Reader:        &endReader{r: in, ended: ended},
		Writer:        lineWriter{out},
		MaxLineLength: -1, // the caller frames and bounds the lines
	}
	ss, err := b.newSDKServer().Connect(context.WithValue(ctx, sessionKey{}, s), t, nil)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	var result error
	select {
	case <-ended:
		s.cancel(errStreamEnded)
	case <-ctx.Done():
		s.cancel(context.Cause(ctx))
		result = ctx.Err()
	case err := <-done:
		s.cancel(errStreamEnded)
		return err
	}
	_ = ss.Close()
	<-done
	return result
}

// endReader closes ended when its reader is done (EOF or an error).
type endReader struct {
	r     io.Reader
	ended chan struct{}
	once  bool
}

func (e *endReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && !e.once {
		e.once = true
		close(e.ended)
	}
	return n, err
}

func (e *endReader) Close() error { return nil }

// lineWriter hands go-sdk's writes, one whole message each, to w; closing
// it leaves w open (the caller owns it).
type lineWriter struct{ w io.Writer }

func (l lineWriter) Write(p []byte) (int, error) {
	if _, err := l.w.Write(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (lineWriter) Close() error { return nil }
