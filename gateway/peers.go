package gateway

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
)

// A held 2025 call lives on the instance that made it. Its sealed state
// names that instance and, when the instance has a PeerURL, where the
// others reach it: an instance that gets the retry sends it on there,
// as the same MCP request (the client's arguments, answers and the
// gateway's state, untouched), with a peer token in place of the client's
// (the client's token stays with the instance it was sent to). The peer
// token names the user, expires within a minute, and is a MAC under
// PeerSecret, which only the instances hold.

// peerTokenPrefix starts a peer token in "Authorization: Bearer".
const peerTokenPrefix = "egp1."

// peerTokenTTL is how long a peer token is good for.
const peerTokenTTL = 30 * time.Second

type peers struct {
	g      *Gateway
	secret []byte
	mu     sync.Mutex
	conns  map[string]*mcpclient.Client
}

func newPeers(g *Gateway, secret []byte) *peers {
	return &peers{g: g, secret: secret, conns: map[string]*mcpclient.Client{}}
}

// token returns a peer token for principal, valid until exp.
func (p *peers) token(principal string, exp time.Time) string {
	body := base64.RawURLEncoding.EncodeToString([]byte(principal)) + "." + strconv.FormatInt(exp.Unix(), 10)
	return peerTokenPrefix + body + "." + base64.RawURLEncoding.EncodeToString(p.mac(body))
}

func (p *peers) mac(body string) []byte {
	m := hmac.New(sha256.New, p.secret)
	m.Write([]byte("elicit gateway peer v1\x00" + body))
	return m.Sum(nil)
}

// verify returns the principal of a valid, unexpired peer token.
func (p *peers) verify(tok string, now time.Time) (string, bool) {
	if len(p.secret) == 0 || !strings.HasPrefix(tok, peerTokenPrefix) {
		return "", false
	}
	rest := tok[len(peerTokenPrefix):]
	i := strings.LastIndexByte(rest, '.')
	if i < 0 {
		return "", false
	}
	body, sig := rest[:i], rest[i+1:]
	mac, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(mac, p.mac(body)) {
		return "", false
	}
	who, expText, ok := strings.Cut(body, ".")
	exp, err := strconv.ParseInt(expText, 10, 64)
	if !ok || err != nil || now.Unix() > exp || exp > now.Add(2*peerTokenTTL).Unix() {
		return "", false
	}
	principal, err := base64.RawURLEncoding.DecodeString(who)
	if err != nil {
		return "", false
	}
	return string(principal), true
}

// peerAuth authenticates the retries other instances forward (a peer
// token in "Authorization: Bearer"), and everything else with next.
type peerAuth struct {
	p    *peers
	next auth.Authenticator
}

func (a peerAuth) Authenticate(r *http.Request) (auth.Principal, error) {
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && strings.HasPrefix(tok, peerTokenPrefix) {
		id, ok := a.p.verify(tok, a.p.g.now())
		if !ok {
			return auth.Principal{}, &auth.Error{Status: http.StatusUnauthorized, Reason: "invalid or expired gateway peer token"}
		}
		if id == "" {
			return auth.Principal{}, nil
		}
		return auth.ParseID(id)
	}
	return a.next.Authenticate(r)
}

func (a peerAuth) Challenge() string { return a.next.Challenge() }

// peerAuthorizer gives a forwarded retry its peer token.
type peerAuthorizer struct{ p *peers }

func (a peerAuthorizer) Token(ctx context.Context) (string, error) {
	return a.p.token(principalOf(ctx), a.p.g.now().Add(peerTokenTTL)), nil
}

func (a peerAuthorizer) Authorize(context.Context, *mcpclient.Challenge) error {
	return errors.New("gateway: a peer instance refused the peer token (is PeerSecret the same on every instance?)")
}

func (p *peers) client(url string) *mcpclient.Client {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.conns[url]
	if c == nil {
		c = mcpclient.New(url, &mcpclient.Options{Authorizer: peerAuthorizer{p}, ClientInfo: p.g.info, Logger: p.g.log, MaxRounds: 1})
		p.conns[url] = c
	}
	return c
}

// forward sends the retry of a call held on another instance to it, and
// returns its answer as it came. Without the other instance's address the
// retry is refused, naming the instance, so an operator can tell that
// retries of one call must reach one instance.
func (p *peers) forward(ctx context.Context, r *request, t target, st *payload) (json.RawMessage, *jsonrpc.Error) {
	if st.peerURL == "" || len(p.secret) == 0 {
		p.g.log.Warn("gateway: a retry for a call held by another instance, which takes no forwarded retries", "held_by", hexID(st.instance))
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: "This call waits on another gateway instance, which this one cannot reach: send the retries of one call to the same instance (sticky routing), or make the request again",
			Data:    map[string]string{"heldBy": hexID(st.instance)}}
	}
	rr := &mcpclient.RawRequest{Method: r.method, Arguments: r.args, InputResponses: r.responses, RequestState: r.state,
		Capabilities: &r.meta.ClientCapabilities, Meta: map[string]json.RawMessage{}, OnMessage: r.relay, HeaderParams: t.headers}
	if r.method == mcp.MethodResourcesRead {
		rr.URI = r.name
	} else {
		rr.Name = r.name
	}
	if rr.HeaderParams == nil && r.method == mcp.MethodToolsCall {
		rr.HeaderParams = []mcp.HeaderParam{}
	}
	if r.meta.ProgressToken != nil {
		rr.Meta[mcp.MetaProgressToken] = r.meta.ProgressToken
	}
	if r.meta.LogLevel != "" {
		rr.Meta[mcp.MetaLogLevel] = quote(r.meta.LogLevel)
	}
	raw, err := p.client(st.peerURL).SendRaw(withPrincipal(ctx, r.principal), rr)
	if err != nil {
		var rpc *mcpclient.RPCError
		if errors.As(err, &rpc) {
			e := &jsonrpc.Error{Code: rpc.Code, Message: rpc.Message}
			if rpc.Data != nil {
				e.Data = retryData(rpc.Data)
			}
			return nil, e
		}
		p.g.log.Warn("gateway: forwarding a retry to the instance that holds the call failed", "held_by", hexID(st.instance), "peer", st.peerURL, "err", err)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "The gateway instance that holds this call is unreachable; make the request again",
			Data: map[string]string{"heldBy": hexID(st.instance)}}
	}
	return raw, nil
}
