package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/mcp-elicit/elicit/internal/ctxtime"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
)

// catalog is the gateway's merged view of its upstreams: what the list
// methods answer and where each name goes. It is rebuilt whole on every
// refresh and never changed after.
type catalog struct {
	lists     map[string]json.RawMessage // list method → the items array
	tools     map[string]target          // front name → upstream and its name
	prompts   map[string]target
	resources map[string]*upstream // URI → upstream
	templates []templateRoute
	caps      mcp.ServerCapabilities
	instr     string
	ttl       time.Duration
	private   bool
	// last holds each upstream's last good listing, so one that fails
	// to answer a refresh keeps its entries.
	last map[string]*listing
}

// target is where a name goes.
type target struct {
	up      *upstream
	name    string            // the upstream's own name (or URI)
	headers []mcp.HeaderParam // a tool's x-mcp-header parameters
}

type templateRoute struct {
	up  *upstream
	tmp string
	re  *regexp.Regexp
}

func emptyCatalog() *catalog {
	return &catalog{lists: map[string]json.RawMessage{}, tools: map[string]target{}, prompts: map[string]target{},
		resources: map[string]*upstream{}, last: map[string]*listing{}}
}

func (g *Gateway) current() *catalog {
	g.catMu.RLock()
	defer g.catMu.RUnlock()
	return g.cat
}

// refresh reads every upstream's catalog again and rebuilds the merged
// one. An upstream that fails keeps its previous entries (logged); with
// strict, the refresh fails when no upstream's catalog could be read.
func (g *Gateway) refresh(ctx context.Context, strict bool) error {
	g.refreshMu.Lock()
	defer g.refreshMu.Unlock()
	prev := g.current()
	last := map[string]*listing{}
	answered := 0
	var errs []error
	for _, up := range g.upstreams {
		l, err := up.listing(ctx)
		if err != nil {
			g.log.Warn("gateway: upstream catalog not read", "upstream", up.cfg.Name, "at", up.where(), "err", err)
			errs = append(errs, fmt.Errorf("upstream %q: %w", up.cfg.Name, err))
			if old := prev.last[up.cfg.Name]; old != nil {
				last[up.cfg.Name] = old
			}
			continue
		}
		answered++
		last[up.cfg.Name] = l
	}
	if strict && answered == 0 {
		return fmt.Errorf("gateway: no upstream catalog could be read: %w", errors.Join(errs...))
	}
	cat := g.build(last)
	g.catMu.Lock()
	g.cat, g.lastRefresh = cat, g.now()
	g.catMu.Unlock()
	return nil
}

func (g *Gateway) refreshLoop(ctx context.Context) {
	ctxtime.Every(ctx, g.opts.CatalogRefresh, func(ctx context.Context) {
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		_ = g.refresh(rctx, false)
		cancel()
	})
}

// refreshSoon refreshes when the catalog is older than 10 seconds: a
// call named something unknown, which an upstream may have added.
func (g *Gateway) refreshSoon(ctx context.Context) {
	g.catMu.RLock()
	stale := g.now().Sub(g.lastRefresh) > 10*time.Second
	g.catMu.RUnlock()
	if stale {
		_ = g.refresh(ctx, false)
	}
}

// listing reads one upstream's catalog at its revision.
func (up *upstream) listing(ctx context.Context) (*listing, error) {
	rev, err := up.find(ctx)
	if err != nil {
		return nil, err
	}
	if rev == Revision2025 {
		return up.pool.list(ctx)
	}
	return up.listModern(ctx)
}

// build merges the upstreams' listings, in configuration order.
func (g *Gateway) build(last map[string]*listing) *catalog {
	c := emptyCatalog()
	c.last = last
	var ls []*listing
	var ups []*upstream
	for _, up := range g.upstreams {
		if l := last[up.cfg.Name]; l != nil {
			ls, ups = append(ls, l), append(ups, up)
		}
	}
	var instr []string
	for i, l := range ls {
		c.caps.Tools = orList(c.caps.Tools, l.caps.Tools != nil)
		c.caps.Prompts = orList(c.caps.Prompts, l.caps.Prompts != nil)
		if l.caps.Resources != nil && c.caps.Resources == nil {
			c.caps.Resources = &mcp.ResourcesCapability{}
		}
		if l.caps.Completions != nil {
			c.caps.Completions = &mcp.Empty{}
		}
		if l.ttl > 0 && (c.ttl == 0 || l.ttl < c.ttl) {
			c.ttl = l.ttl
		}
		c.private = c.private || l.private
		if l.instructions != "" {
			if len(g.upstreams) == 1 {
				instr = append(instr, l.instructions)
			} else {
				instr = append(instr, ups[i].cfg.Name+": "+l.instructions)
			}
		}
	}
	c.instr = strings.Join(instr, "\n\n")
	if c.ttl == 0 || c.ttl > g.opts.CatalogRefresh {
		c.ttl = g.opts.CatalogRefresh
	}
	c.lists[mcp.MethodToolsList] = g.named(ups, ls, func(l *listing) []item { return l.tools }, c.tools)
	c.lists[mcp.MethodPromptsList] = g.named(ups, ls, func(l *listing) []item { return l.prompts }, c.prompts)
	var res, tmps []json.RawMessage
	for i, l := range ls {
		for _, it := range l.resources {
			if prev, dup := c.resources[it.name]; dup {
				g.log.Warn("gateway: resource URI listed by two upstreams; the first one serves it", "uri", clip(it.name, 200), "serves", prev.cfg.Name, "hidden", ups[i].cfg.Name)
				continue
			}
			c.resources[it.name] = ups[i]
			res = append(res, it.obj.encode())
		}
		for _, it := range l.templates {
			c.templates = append(c.templates, templateRoute{up: ups[i], tmp: it.name, re: templateRegexp(it.name)})
			tmps = append(tmps, it.obj.encode())
		}
	}
	c.lists[mcp.MethodResourcesList] = rawArray(res)
	c.lists[mcp.MethodResourceTemplatesList] = rawArray(tmps)
	return c
}

func orList(c *mcp.ListChangedCapability, on bool) *mcp.ListChangedCapability {
	if c == nil && on {
		return &mcp.ListChangedCapability{}
	}
	return c
}

func rawArray(elems []json.RawMessage) json.RawMessage {
	if len(elems) == 0 {
		return json.RawMessage("[]")
	}
	n := 1
	for _, e := range elems {
		n += len(e) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, e := range elems {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, e...)
	}
	return append(b, ']')
}

// Prefix joins an upstream's name and one of its tool or prompt names
// where the gateway prefixes it.
const Prefix = "_"

// named gives the tools (or prompts) of every upstream their front
// names: unchanged with one upstream; with several, prefixed
// (upstream + "_" + name) where two upstreams share a name, or every
// name under PrefixAll, and also where a prefixed name would meet
// another upstream's unprefixed one. It fills routes and returns the
// merged array, each element with its name member set to the front name.
func (g *Gateway) named(ups []*upstream, ls []*listing, items func(*listing) []item, routes map[string]target) json.RawMessage {
	front := g.frontNames(ups, ls, items)
	var out []json.RawMessage
	for i, l := range ls {
		for _, it := range items(l) {
			name := front(i, it.name)
			if _, dup := routes[name]; dup {
				g.log.Warn("gateway: a name repeats after prefixing; the first one is served", "name", clip(name, 200), "hidden", ups[i].cfg.Name)
				continue
			}
			routes[name] = target{up: ups[i], name: it.name, headers: it.headers}
			o := &object{names: slices.Clone(it.obj.names), values: slices.Clone(it.obj.values)}
			o.set("name", quote(name))
			out = append(out, o.encode())
		}
	}
	return rawArray(out)
}

// frontNames decides named's prefixing and returns the front name of the
// i-th upstream's name.
func (g *Gateway) frontNames(ups []*upstream, ls []*listing, items func(*listing) []item) func(i int, name string) string {
	count := map[string]int{} // how many upstreams list each name
	for _, l := range ls {
		seen := map[string]bool{}
		for _, it := range items(l) {
			if !seen[it.name] {
				seen[it.name] = true
				count[it.name]++
			}
		}
	}
	// extra holds the plain names prefixed because a prefixed name equals
	// them, keyed upstream NUL name.
	extra := map[string]bool{}
	prefixed := func(i int, name string) bool {
		return g.opts.PrefixAll || count[name] > 1 || extra[ups[i].cfg.Name+"\x00"+name]
	}
	// Prefixing one may make a prefixed name meet another plain one: a
	// few passes settle it.
	for range 4 {
		pre := map[string]bool{}
		for i, l := range ls {
			for _, it := range items(l) {
				if prefixed(i, it.name) {
					pre[ups[i].cfg.Name+Prefix+it.name] = true
				}
			}
		}
		changed := false
		for i, l := range ls {
			for _, it := range items(l) {
				if !prefixed(i, it.name) && pre[it.name] {
					extra[ups[i].cfg.Name+"\x00"+it.name], changed = true, true
				}
			}
		}
		if !changed {
			break
		}
	}
	return func(i int, name string) string {
		if prefixed(i, name) {
			return ups[i].cfg.Name + Prefix + name
		}
		return name
	}
}

// templateRegexp matches URIs against an RFC 6570 template: literal
// text as is; {var} one or more characters other than / ? #; {+var} and
// {#var} anything; {/var}, {?var}, {&var} and {.var} their optional
// expansions. A template it cannot read matches nothing.
func templateRegexp(t string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for len(t) > 0 {
		i := strings.IndexByte(t, '{')
		if i < 0 {
			b.WriteString(regexp.QuoteMeta(t))
			break
		}
		b.WriteString(regexp.QuoteMeta(t[:i]))
		j := strings.IndexByte(t[i:], '}')
		if j < 0 {
			return regexp.MustCompile(`^\z.`) // matches nothing
		}
		expr := t[i+1 : i+j]
		t = t[i+j+1:]
		op := byte(0)
		if expr != "" {
			op = expr[0]
		}
		switch op {
		case '+', '#':
			b.WriteString(`.*`)
		case '/':
			b.WriteString(`(?:/[^?#]*)?`)
		case '?', '&':
			b.WriteString(`(?:[?&][^#]*)?`)
		case '.':
			b.WriteString(`(?:\.[^/?#]*)?`)
		case ';':
			b.WriteString(`(?:;[^/?#]*)?`)
		default:
			b.WriteString(`[^/?#]+`)
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return regexp.MustCompile(`^\z.`)
	}
	return re
}

// route finds where a call's target goes: a tool or prompt by its front
// name, a resource by its URI (listed, else the first template that
// matches, else the only upstream). An unknown name refreshes the catalog
// once, as an upstream may have added it.
func (g *Gateway) route(ctx context.Context, r *request) (target, *jsonrpc.Error) {
	t, ok := g.lookup(r.method, r.name)
	if !ok {
		g.refreshSoon(ctx)
		t, ok = g.lookup(r.method, r.name)
	}
	if ok {
		return t, nil
	}
	switch r.method {
	case mcp.MethodToolsCall:
		return t, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Unknown tool: %s", clip(r.name, 128))
	case mcp.MethodPromptsGet:
		return t, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Unknown prompt: %s", clip(r.name, 128))
	}
	return t, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Resource not found", Data: map[string]string{"uri": clip(r.name, 128)}}
}

func (g *Gateway) lookup(method, name string) (target, bool) {
	c := g.current()
	switch method {
	case mcp.MethodToolsCall:
		t, ok := c.tools[name]
		return t, ok
	case mcp.MethodPromptsGet:
		t, ok := c.prompts[name]
		return t, ok
	case mcp.MethodResourcesRead:
		if up, ok := c.resources[name]; ok {
			return target{up: up, name: name}, true
		}
		for _, tr := range c.templates {
			if tr.re.MatchString(name) {
				return target{up: tr.up, name: name}, true
			}
		}
		if len(g.upstreams) == 1 {
			// One upstream serves every URI, listed or not: it answers
			// "not found" itself (sep-2164).
			return target{up: g.upstreams[0], name: name}, true
		}
	}
	return target{}, false
}

// discover answers server/discover from the merged catalog: every version
// the endpoint serves, the union of the upstreams' capabilities, their
// instructions (each after its upstream's name when there are several).
func (g *Gateway) discover() json.RawMessage {
	c := g.current()
	versions := append([]string{mcp.ProtocolVersion}, g.legacyVersions...)
	return mustJSON(&mcp.DiscoverResult{ResultType: mcp.ResultTypeComplete, SupportedVersions: versions,
		Capabilities: c.caps, Instructions: c.instr, TTLMs: c.ttl.Milliseconds(), CacheScope: c.scope(),
		Meta: mcp.ResultMeta{mcp.MetaServerInfo: g.info}})
}

func (c *catalog) scope() string {
	if c.private {
		return mcp.CacheScopePrivate
	}
	return mcp.CacheScopePublic
}

var listMembers = map[string]string{
	mcp.MethodToolsList: "tools", mcp.MethodPromptsList: "prompts",
	mcp.MethodResourcesList: "resources", mcp.MethodResourceTemplatesList: "resourceTemplates",
}

// list answers a list method with every upstream's items in one page,
// cacheable for the shortest time an upstream allowed (and at most
// until the next refresh), private when any upstream said so.
func (g *Gateway) list(method string) json.RawMessage {
	c := g.current()
	o := &object{}
	o.set("resultType", quote(mcp.ResultTypeComplete))
	items := c.lists[method]
	if items == nil {
		items = json.RawMessage("[]")
	}
	o.set(listMembers[method], items)
	o.set("ttlMs", mustJSON(c.ttl.Milliseconds()))
	o.set("cacheScope", quote(c.scope()))
	o.set("_meta", mustJSON(mcp.ResultMeta{mcp.MetaServerInfo: g.info}))
	return o.encode()
}

// known reports whether method is served: server/discover always; the
// others when some upstream offers them.
func (g *Gateway) known(method string) bool {
	c := g.current().caps
	return c.Serves(method)
}

// toolHeaders returns a tool's x-mcp-header parameters by its front name.
func (g *Gateway) toolHeaders(name string) ([]mcp.HeaderParam, bool) {
	t, ok := g.current().tools[name]
	return t.headers, ok
}

// complete forwards completion/complete to the upstream of the prompt
// or resource its ref names, with the upstream's own name in the ref.
func (g *Gateway) complete(ctx context.Context, r *request) (json.RawMessage, *jsonrpc.Error) {
	var ref struct {
		Type string `json:"type"`
		Name string `json:"name"`
		URI  string `json:"uri"`
	}
	if len(r.ref) == 0 || json.Unmarshal(r.ref, &ref) != nil {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: ref and argument are required")
	}
	var t target
	var ok bool
	switch ref.Type {
	case "ref/prompt":
		t, ok = g.lookup(mcp.MethodPromptsGet, ref.Name)
	case "ref/resource":
		t, ok = g.lookup(mcp.MethodResourcesRead, ref.URI)
	}
	if !ok {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: ref names no known prompt or resource")
	}
	fr := *r
	if ref.Type == "ref/prompt" && t.name != ref.Name {
		o, err := parseObject(r.ref)
		if err != nil {
			return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: ref must be an object")
		}
		o.set("name", quote(t.name))
		fr.ref = o.encode()
	}
	a, jerr := t.up.completeAt(ctx, &fr)
	if jerr != nil {
		return nil, jerr
	}
	return g.withGatewayMeta(a, t.up), nil
}

// completeAt forwards completion/complete at the upstream's revision.
func (up *upstream) completeAt(ctx context.Context, r *request) (*object, *jsonrpc.Error) {
	if up.revision() == Revision2025 {
		return up.pool.complete(ctx, r)
	}
	a, err := up.forwardModern(ctx, r, "", nil, nil, "")
	if err != nil {
		return nil, asRPC(err)
	}
	if a.result == nil {
		return nil, upstreamBroke("completion/complete answered input_required")
	}
	return a.result, nil
}
