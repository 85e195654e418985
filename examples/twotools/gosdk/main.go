// Command gosdk is the two-tool server of examples/twotools written with
// github.com/modelcontextprotocol/go-sdk v1.8.0 instead of this module's
// packages, for docs/go-sdk-comparison.md: refund asks in a form how much
// to refund, connect_billing sends the user to this server's own page to
// type their billing API key. It does by hand what elicit's packages do:
// it seals requestState, refuses an undeclared mode with -32021, checks
// the form answer and asks again, tells decline from cancel, and runs the
// URL step with sign-in and the same-user check. Flows and keys live in
// memory (a restart forgets them); twotools keeps them encrypted in SQLite.
//
// It is a comparison, not a recommended program: go run ./examples/twotools.
package main

import (
	"cmp"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"html/template"
	"log"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type RefundArgs struct {
	Charge string `json:"charge" jsonschema:"The charge to refund."`
}

type RefundForm struct {
	Amount float64 `json:"amount"`
	Reason string  `json:"reason"`
}

type Refunded struct {
	Charge string  `json:"charge"`
	Amount float64 `json:"amount"`
	Reason string  `json:"reason"`
}

const (
	TextNotConnected = "Billing is not connected: call connect_billing first."
	TextDeclined     = "No refund was made: you declined."
	TextCancelled    = "The refund form was dismissed before it was sent, so no refund was made. Call refund again to start over."
	TextLinkDeclined = "You declined to connect your billing account. Nothing was stored."
	TextLinkCancel   = "The step to connect your billing account was dismissed. Nothing was stored; call connect_billing again to restart it."
	TextConnected    = "Your billing account is connected."
)

var chargeID = regexp.MustCompile(`^ch_[A-Za-z0-9]{4,40}$`)

// refundForm is the form schema; go-sdk infers types, the rest is by hand.
var refundForm = &jsonschema.Schema{Type: "object", Required: []string{"amount", "reason"}, Properties: map[string]*jsonschema.Schema{
	"amount": {Type: "number", Title: "Amount to refund (EUR)", Minimum: ptr(0.01), Maximum: ptr(10000.0)},
	"reason": {Type: "string", Title: "Reason", OneOf: []*jsonschema.Schema{
		{Const: ptr[any]("duplicate"), Title: "Charged twice"},
		{Const: ptr[any]("fraudulent"), Title: "Fraud"},
		{Const: ptr[any]("requested_by_customer"), Title: "The customer asked"}}},
}}

// state is what a round carries to the next; sealed, so the client can
// neither read nor change it.
type state struct {
	User, Tool, Args string
	Expires          time.Time
	Flow             string // connect_billing's flow
	Reasks           int    // refund's re-asks so far
}

type server struct {
	aead  cipher.AEAD
	key   []byte // signs page cookies
	base  string
	mu    sync.Mutex
	flows map[string]*flow  // flow id → flow
	keys  map[string]string // user → billing key (a real server encrypts and stores it)
	pages *template.Template
}

type flow struct {
	User        string
	Done, Close bool
	Expires     time.Time
}

func (s *server) seal(st state) string {
	b, _ := json.Marshal(st)
	nonce := make([]byte, s.aead.NonceSize())
	rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, b, nil))
}

// open returns the state sealed for this user, tool and arguments, unexpired.
func (s *server) open(raw, user, tool, args string) (*state, error) {
	b, err := base64.RawURLEncoding.DecodeString(raw)
	n := s.aead.NonceSize()
	if err == nil && len(b) > n {
		if b, err = s.aead.Open(nil, b[:n], b[n:], nil); err == nil {
			var st state
			if json.Unmarshal(b, &st) == nil && st.User == user && st.Tool == tool && st.Args == args && time.Now().Before(st.Expires) {
				return &st, nil
			}
		}
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid or expired requestState"}
}

func user(req *mcp.CallToolRequest) string { return req.Extra.TokenInfo.UserID }

// argsOf is the decoded arguments in one spelling, for the state to bind.
func argsOf(in any) string { b, _ := json.Marshal(in); return string(b) }

// missing is the -32021 error for a mode the client did not declare.
func missing(mode string) error {
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"elicitation": map[string]any{mode: map[string]any{}}}})
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "Missing required client capability", Data: data}
}

func toolError(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

func (s *server) refund(ctx context.Context, req *mcp.CallToolRequest, in RefundArgs) (*mcp.CallToolResult, *Refunded, error) {
	if !chargeID.MatchString(in.Charge) {
		return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "charge: does not match ^ch_[A-Za-z0-9]{4,40}$"}
	}
	s.mu.Lock()
	_, connected := s.keys[user(req)]
	s.mu.Unlock()
	if !connected {
		return toolError(TextNotConnected), nil, nil
	}
	if c := req.ClientCapabilities(); c == nil || c.Elicitation == nil || c.Elicitation.URL != nil && c.Elicitation.Form == nil {
		return nil, nil, missing("form")
	}
	st := state{User: user(req), Tool: "refund", Args: argsOf(in), Expires: time.Now().Add(10 * time.Minute)}
	problem := ""
	if req.Params.RequestState != "" {
		prev, err := s.open(req.Params.RequestState, user(req), "refund", argsOf(in))
		if err != nil {
			return nil, nil, err
		}
		st.Reasks = prev.Reasks
		if a, ok := req.Params.InputResponses["refund"].(*mcp.ElicitResult); ok {
			switch a.Action {
			case "decline":
				return toolError(TextDeclined), nil, nil
			case "cancel":
				return toolError(TextCancelled), nil, nil
			case "accept":
				var form RefundForm
				if problem = validate(a.Content, &form); problem == "" {
					// A real server would read the key and refund here.
					return nil, &Refunded{Charge: in.Charge, Amount: form.Amount, Reason: form.Reason}, nil
				}
				if st.Reasks++; st.Reasks > 2 {
					return toolError("The refund form was answered wrongly three times: " + problem), nil, nil
				}
			}
		}
	}
	msg := "Refund charge " + in.Charge + ": how much, and why?"
	if problem != "" {
		msg += " (" + problem + ")"
	}
	return &mcp.CallToolResult{RequestState: s.seal(st), InputRequests: mcp.InputRequestMap{
		"refund": &mcp.ElicitParams{Mode: "form", Message: msg, RequestedSchema: refundForm}}}, nil, nil
}

var resolvedForm, _ = refundForm.Resolve(nil)

// validate checks content against the form and decodes it into out; it
// returns what is wrong, for the re-ask.
func validate(content map[string]any, out *RefundForm) string {
	if err := resolvedForm.Validate(content); err != nil {
		return err.Error()
	}
	b, _ := json.Marshal(content)
	if err := json.Unmarshal(b, out); err != nil {
		return err.Error()
	}
	return ""
}

func (s *server) connectBilling(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
	u := user(req)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.keys[u]; ok && req.Params.RequestState == "" {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Your billing account is already connected."}}}, nil, nil
	}
	if c := req.ClientCapabilities(); c == nil || c.Elicitation == nil || c.Elicitation.URL == nil {
		return nil, nil, missing("url")
	}
	st := state{User: u, Tool: "connect_billing", Args: argsOf(in), Expires: time.Now().Add(10 * time.Minute)}
	if req.Params.RequestState != "" {
		prev, err := s.open(req.Params.RequestState, u, "connect_billing", argsOf(in))
		if err != nil {
			return nil, nil, err
		}
		st.Flow = prev.Flow
		f := s.flows[st.Flow]
		a, _ := req.Params.InputResponses["billing"].(*mcp.ElicitResult)
		switch {
		case a == nil:
		case a.Action == "decline" || a.Action == "cancel":
			f.Close = true
			if a.Action == "decline" {
				return toolError(TextLinkDeclined), nil, nil
			}
			return toolError(TextLinkCancel), nil, nil
		case a.Action == "accept" && f.Done:
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: TextConnected}}}, nil, nil
		}
		// Accepted but the page is not finished: ask again with the same link.
	} else {
		st.Flow = rand.Text()
		s.flows[st.Flow] = &flow{User: u, Expires: st.Expires}
	}
	return &mcp.CallToolResult{RequestState: s.seal(st), InputRequests: mcp.InputRequestMap{"billing": &mcp.ElicitParams{
		Mode: "url", ElicitationID: st.Flow, URL: s.base + "/ui/key?flow=" + st.Flow,
		Message: "Connect your billing account: open this page on the server, sign in, and type your API key there."}}}, nil, nil
}

// The pages: a demo sign-in (a user name, loopback only), then the key
// form, refused (403) to anyone but the user the flow was started for.

const pageHTML = `<!doctype html><title>Billing</title>{{if .Error}}<p role="alert">{{.Error}}</p>{{end}}
{{if .SignIn}}<form method="post" action="/ui/login"><input name="username" required><input type="hidden" name="flow" value="{{.Flow}}"><button>Sign in</button></form>
{{else if .Flow}}<form method="post" action="/ui/key"><input type="password" name="api_key" required><input type="hidden" name="flow" value="{{.Flow}}"><input type="hidden" name="csrf" value="{{.CSRF}}"><button>Save key</button></form>{{end}}`

type page struct {
	Error, Flow, CSRF string
	SignIn            bool
}

func (s *server) mac(parts ...string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(strings.Join(parts, "\x00")))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// signedIn returns the user of the request's session cookie ("" if none).
func (s *server) signedIn(r *http.Request) string {
	c, err := r.Cookie("session")
	if err != nil {
		return ""
	}
	u, sig, ok := strings.Cut(c.Value, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(s.mac("session", u))) {
		return ""
	}
	return u
}

func (s *server) render(w http.ResponseWriter, status int, p page) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; form-action 'self'")
	w.WriteHeader(status)
	s.pages.Execute(w, p)
}

func (s *server) keyPage(w http.ResponseWriter, r *http.Request) {
	id := r.FormValue("flow")
	u := s.signedIn(r)
	if u == "" {
		s.render(w, http.StatusOK, page{SignIn: true, Flow: id})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.flows[id]
	switch {
	case f == nil || f.Close || time.Now().After(f.Expires):
		s.render(w, http.StatusNotFound, page{Error: "This link is invalid or has expired."})
		return
	case f.User != u: // the forwarded-link attack: another user's link
		s.render(w, http.StatusForbidden, page{Error: "This link was made for another account. Nothing was stored."})
		return
	case r.Method == http.MethodGet:
		s.render(w, http.StatusOK, page{Flow: id, CSRF: s.mac("csrf", u, id)})
		return
	case !hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(s.mac("csrf", u, id))):
		s.render(w, http.StatusForbidden, page{Error: "This form does not match your sign-in. Nothing was stored."})
		return
	}
	s.keys[u] = strings.TrimSpace(r.PostFormValue("api_key"))
	f.Done = true
	s.render(w, http.StatusOK, page{Error: "Done. Return to your MCP client and choose Accept."})
}

func (s *server) login(w http.ResponseWriter, r *http.Request) {
	u := r.PostFormValue("username")
	if r.Method != http.MethodPost || u == "" || strings.ContainsAny(u, ".;, \x00") {
		s.render(w, http.StatusBadRequest, page{SignIn: true, Error: "Enter a user name."})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: "session", Value: u + "." + s.mac("session", u), Path: "/ui/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/ui/key?flow="+template.URLQueryEscaper(r.PostFormValue("flow")), http.StatusSeeOther)
}

func main() {
	ln, err := net.Listen("tcp", cmp.Or(os.Getenv("ADDR"), "127.0.0.1:8080"))
	if err != nil {
		log.Fatal(err)
	}
	if !net.ParseIP(strings.Split(ln.Addr().String(), ":")[0]).IsLoopback() {
		log.Fatal("demo sign-in: loopback only")
	}
	secret := make([]byte, 64)
	rand.Read(secret)
	block, _ := aes.NewCipher(secret[:32])
	aead, _ := cipher.NewGCM(block)
	s := &server{aead: aead, key: secret[32:], base: "http://" + ln.Addr().String(), flows: map[string]*flow{}, keys: map[string]string{},
		pages: template.Must(template.New("page").Parse(pageHTML))}

	srv := mcp.NewServer(&mcp.Implementation{Name: "twotools", Version: "1.0.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "refund", Description: "Refunds a charge. Asks the user how much and why."}, s.refund)
	mcp.AddTool(srv, &mcp.Tool{Name: "connect_billing", Description: "Connects the user's billing account: the user types the API key on this server's page, never in the client."}, s.connectBilling)
	demo := func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		if token == "" {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: token, Expiration: time.Now().Add(time.Hour)}, nil
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/ui/key", s.keyPage)
	mux.HandleFunc("/ui/login", s.login)
	mux.Handle("/mcp", auth.RequireBearerToken(demo, nil)(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})))
	log.Printf("MCP endpoint: %s/mcp", s.base)
	log.Fatal(http.Serve(ln, mux))
}

func ptr[T any](v T) *T { return &v }
