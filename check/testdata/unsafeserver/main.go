// Command unsafeserver is a deliberately unsafe MCP 2026-07-28 server, for
// testing elicit check: it must fail exactly the cases its defects
// deserve. Written by hand on net/http, sharing no code with elicit.
//
// Its defects, on purpose:
//   - requestState is plaintext: standard base64 of JSON holding the user,
//     the tool and the arguments, with no integrity protection (it does
//     compare them with the request, so tampering makes it fail, but an
//     edited state is taken at its word);
//   - decline is treated as accept (the defaults are used);
//   - no capability check: it asks in form mode whatever the client
//     declared;
//   - the form asks for an API key;
//   - link_account's URL-mode link signs the browser in without a login:
//     opening it, with no cookies, links the account and says "Welcome
//     <user>, your deploy account is now linked" (with a "Not you?" link
//     to /login, which must not pass for a sign-in page).
//
// What it does right: cancel ends the call, answers are validated and
// asked again when wrong, missing answers are asked again, the state must
// match the user, tool and arguments, and a replay gives the same result.
//
//	unsafeserver [--addr 127.0.0.1:0]
//
// It prints "listening on http://ADDR/mcp" once it listens.
package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"html"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
)

type request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  struct {
		Name           string                     `json:"name"`
		Arguments      json.RawMessage            `json:"arguments"`
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
		RequestState   *string                    `json:"requestState"`
	} `json:"params"`
}

// state is what the plaintext requestState holds.
type state struct {
	U string          `json:"u"`
	T string          `json:"t"`
	A json.RawMessage `json:"a"`
	F string          `json:"f,omitempty"` // link_account's flow, checked to be the user's
}

// flows are link_account's pending links: flow id → user, and whether the
// link was opened.
var (
	mu    sync.Mutex
	flows = map[string]*flow{}
)

type flow struct {
	user string
	done bool
}

const schema = `{"type":"object","properties":{` +
	`"plan":{"type":"string","enum":["basic","pro"]},` +
	`"seats":{"type":"integer","minimum":1,"maximum":10},` +
	`"owner_email":{"type":"string","format":"email"},` +
	`"api_key":{"type":"string","title":"API key"}},` +
	`"required":["plan","seats","owner_email","api_key"]}`

var tools = `[` +
	`{"name":"setup_project","description":"Configure a project (asks for settings in a form)","inputSchema":{"type":"object","properties":{"project":{"type":"string"}},"required":["project"]}},` +
	`{"name":"link_account","description":"Link your deploy account to a project (asks you to open a page)","inputSchema":{"type":"object","properties":{"project":{"type":"string"}},"required":["project"]}},` +
	`{"name":"project_status","description":"Show a project's status","annotations":{"readOnlyHint":true},"inputSchema":{"type":"object","properties":{"project":{"type":"string"}},"required":["project"]}}]`

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening on http://%s/mcp\n", ln.Addr())
	http.HandleFunc("POST /mcp", serve)
	http.HandleFunc("GET /link", link)
	log.Fatal(http.Serve(ln, nil))
}

func serve(w http.ResponseWriter, r *http.Request) {
	user, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || user == "" {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	var req request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		reply(w, nil, nil, -32700, "parse error")
		return
	}
	switch req.Method {
	case "server/discover":
		reply(w, req.ID, map[string]any{"resultType": "complete", "supportedVersions": []string{"2026-07-28"},
			"capabilities": map[string]any{"tools": map[string]any{}}, "ttlMs": 0, "cacheScope": "private",
			"_meta": map[string]any{"io.modelcontextprotocol/serverInfo": map[string]string{"name": "unsafeserver", "version": "0"}}}, 0, "")
	case "tools/list":
		reply(w, req.ID, map[string]any{"resultType": "complete", "tools": json.RawMessage(tools), "ttlMs": 0, "cacheScope": "private"}, 0, "")
	case "tools/call":
		call(w, r, &req, user)
	default:
		reply(w, req.ID, nil, -32601, "method not found")
	}
}

func call(w http.ResponseWriter, r *http.Request, req *request, user string) {
	p := &req.Params
	var args struct {
		Project string `json:"project"`
	}
	if json.Unmarshal(p.Arguments, &args) != nil || args.Project == "" {
		reply(w, req.ID, nil, -32602, "project is required")
		return
	}
	if p.RequestState != nil {
		if !stateMatches(*p.RequestState, user, p.Name, p.Arguments) {
			reply(w, req.ID, nil, -32602, "invalid requestState")
			return
		}
	}
	switch p.Name {
	case "project_status":
		reply(w, req.ID, text("Project "+args.Project+" is active.", false), 0, "")
		return
	case "link_account":
		linkAccount(w, r, req, user, args.Project)
		return
	case "setup_project":
	default:
		reply(w, req.ID, nil, -32602, "unknown tool")
		return
	}
	raw, answered := p.InputResponses["settings"]
	if p.RequestState == nil || !answered {
		ask(w, req, user)
		return
	}
	var ans struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	if json.Unmarshal(raw, &ans) != nil {
		ask(w, req, user)
		return
	}
	switch ans.Action {
	case "cancel":
		reply(w, req.ID, text("Setup was cancelled; nothing changed.", true), 0, "")
		return
	case "decline": // the defect: taken as accept, with the defaults
		ans.Content = map[string]any{"plan": "basic", "seats": 1.0, "owner_email": user + "@example.com", "api_key": "none"}
	case "accept":
	default:
		ask(w, req, user)
		return
	}
	if !valid(ans.Content) {
		ask(w, req, user)
		return
	}
	reply(w, req.ID, text(fmt.Sprintf("Project %s configured for %s: plan %v, %v seats.", args.Project, user, ans.Content["plan"], ans.Content["seats"]), false), 0, "")
}

func valid(c map[string]any) bool {
	plan, _ := c["plan"].(string)
	seats, ok := c["seats"].(float64)
	email, _ := c["owner_email"].(string)
	key, _ := c["api_key"].(string)
	at := strings.LastIndexByte(email, '@')
	return (plan == "basic" || plan == "pro") && ok && seats == float64(int(seats)) && seats >= 1 && seats <= 10 &&
		at > 0 && strings.Contains(email[at:], ".") && key != ""
}

func ask(w http.ResponseWriter, req *request, user string) {
	st, _ := json.Marshal(state{U: user, T: req.Params.Name, A: compact(req.Params.Arguments)})
	reply(w, req.ID, map[string]any{
		"resultType": "input_required",
		"inputRequests": map[string]any{"settings": map[string]any{"method": "elicitation/create", "params": map[string]any{
			"mode": "form", "message": "Project settings, and your API key for the deploy service", "requestedSchema": json.RawMessage(schema)}}},
		"requestState": base64.StdEncoding.EncodeToString(st),
	}, 0, "")
}

func stateMatches(s, user, tool string, args json.RawMessage) bool {
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var st state
	if dec.Decode(&st) != nil {
		return false
	}
	return st.U == user && st.T == tool && bytes.Equal(compact(st.A), compact(args))
}

func compact(b json.RawMessage) json.RawMessage {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return b
	}
	return out.Bytes()
}

func text(s string, isError bool) map[string]any {
	return map[string]any{"resultType": "complete", "content": []map[string]string{{"type": "text", "text": s}}, "isError": isError}
}

func reply(w http.ResponseWriter, id json.RawMessage, result any, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	if id == nil {
		id = json.RawMessage("null")
	}
	m := map[string]any{"jsonrpc": "2.0", "id": id}
	if code != 0 {
		status := http.StatusBadRequest
		if code == -32601 {
			status = http.StatusNotFound
		}
		w.WriteHeader(status)
		m["error"] = map[string]any{"code": code, "message": msg}
	} else {
		m["result"] = result
	}
	_ = json.NewEncoder(w).Encode(m)
}

// linkAccount asks the user to open a link, and completes once the link
// was opened.
func linkAccount(w http.ResponseWriter, r *http.Request, req *request, user, project string) {
	p := &req.Params
	var st state
	if p.RequestState != nil {
		b, _ := base64.StdEncoding.DecodeString(*p.RequestState)
		_ = json.Unmarshal(b, &st)
		mu.Lock()
		f := flows[st.F]
		mu.Unlock()
		if f == nil || f.user != user { // the flow must be the user's own
			reply(w, req.ID, nil, -32602, "invalid requestState")
			return
		}
	}
	var ans struct {
		Action string `json:"action"`
	}
	raw, answered := p.InputResponses["deploy"]
	if p.RequestState != nil && answered && json.Unmarshal(raw, &ans) == nil {
		switch ans.Action {
		case "cancel":
			reply(w, req.ID, text("Linking was cancelled; nothing changed.", true), 0, "")
			return
		case "accept", "decline": // the decline defect again: taken as accept
			mu.Lock()
			f := flows[st.F]
			done := f != nil && f.done && f.user == user
			mu.Unlock()
			if done {
				reply(w, req.ID, text("Deploy account linked to project "+project+".", false), 0, "")
				return
			}
		}
	}
	id := st.F
	if id == "" {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		// "l" + 16 hex digits: the state's JSON is then never a multiple
		// of 3 bytes long, so its base64 always has padding (a fixed
		// spelling, whatever the id).
		id = "l" + hex.EncodeToString(b)
		mu.Lock()
		flows[id] = &flow{user: user}
		mu.Unlock()
	}
	sb, _ := json.Marshal(state{U: user, T: p.Name, A: compact(p.Arguments), F: id})
	reply(w, req.ID, map[string]any{
		"resultType": "input_required",
		"inputRequests": map[string]any{"deploy": map[string]any{"method": "elicitation/create", "params": map[string]any{
			"mode": "url", "message": "Link your deploy account", "url": "http://" + r.Host + "/link?flow=" + id}}},
		"requestState": base64.StdEncoding.EncodeToString(sb),
	}, 0, "")
}

// link is the defect: whoever opens the link, with no cookies and no
// login, links the flow's user's account and is greeted as that user.
func link(w http.ResponseWriter, r *http.Request) {
	mu.Lock()
	f := flows[r.URL.Query().Get("flow")]
	if f != nil {
		f.done = true
	}
	mu.Unlock()
	if f == nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, `<!doctype html><title>Linked</title><p>Welcome %s, your deploy account is now linked. <a href="/login">Not you? Switch account</a></p>`, html.EscapeString(f.user))
}
