package mcpserver

import (
	"fmt"
	"strings"
)

// PrincipalRequired returns what is registered with
// HandlerOptions.RequirePrincipal, as "tool NAME", "prompt NAME",
// "resource URI" or "resource template T", in registration order.
func (s *Server) PrincipalRequired() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for _, e := range s.tools {
		if e.opts.RequirePrincipal {
			out = append(out, "tool "+e.tool.Name)
		}
	}
	for _, e := range s.prompts {
		if e.opts.RequirePrincipal {
			out = append(out, "prompt "+e.prompt.Name)
		}
	}
	for _, e := range s.resources {
		if e.opts.RequirePrincipal {
			out = append(out, "resource "+e.res.URI)
		}
	}
	for _, e := range s.templates {
		if e.opts.RequirePrincipal {
			out = append(out, "resource template "+e.tmpl.URITemplate)
		}
	}
	return out
}

// ServeAnonymously tells s that its transport authenticates nobody (every
// request's principal is ""). It returns an error naming what was
// registered with HandlerOptions.RequirePrincipal, if anything: such a
// handler would run for nobody (a URL-mode step makes a flow that no
// browser can finish). From then on, registering such a handler panics.
// streamhttp.NewHandler calls it when its authentication is
// auth.Anonymous, and panics on the error.
func (s *Server) ServeAnonymously() error {
	s.mu.Lock()
	s.anonymous = true
	s.mu.Unlock()
	if need := s.PrincipalRequired(); len(need) > 0 {
		return fmt.Errorf("%s need an authenticated user (HandlerOptions.RequirePrincipal), but the server is served without authentication: set an Authenticator (auth.DemoBearer on loopback, jwtauth.JWT…)", strings.Join(need, ", "))
	}
	return nil
}

// refuseAnonymousLocked panics when a handler that needs a principal is
// registered on a server served anonymously; s.mu is held.
func (s *Server) refuseAnonymousLocked(kind, name string, o *HandlerOptions) {
	if s.anonymous && o != nil && o.RequirePrincipal {
		panic(fmt.Sprintf("mcpserver: %s %q needs an authenticated user (HandlerOptions.RequirePrincipal), but the server is served without authentication", kind, name))
	}
}
