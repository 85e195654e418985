package mcpserver

import "github.com/mcp-elicit/elicit/internal/delegate"

func init() {
	delegate.Register(func(srv any, c delegate.Core) {
		s := srv.(*Server)
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.tools)+len(s.prompts)+len(s.resources)+len(s.templates) > 0 || s.complete != nil {
			panic("mcpserver: a delegate needs a Server with nothing registered")
		}
		s.core, s.encoded, s.caps = c, nil, nil
		s.gen++
	})
}
