package reqstate_test

import (
	"fmt"

	"github.com/mcp-elicit/elicit/reqstate"
)

// Rotating the keys of a live Sealer: add the new key first (it seals,
// the old one still opens), then drop the old one once its states have
// expired.
func ExampleSealer_SetKeys() {
	old, next := reqstate.NewKey("2026-07"), reqstate.NewKey("2026-08")
	s, _ := reqstate.New([]reqstate.Key{old}, nil)
	b := reqstate.Binding{Principal: "alice", Method: "tools/call", Name: "export_report"}
	before, _ := s.Seal(&reqstate.Claims{Binding: b})

	_ = s.SetKeys([]reqstate.Key{next, old})
	_, err := s.Open(before, b)
	fmt.Println(s.KeyIDs(), err)

	_ = s.SetKeys([]reqstate.Key{next})
	_, err = s.Open(before, b)
	fmt.Println(s.KeyIDs(), err)
	// Output:
	// [2026-08 2026-07] <nil>
	// [2026-08] invalid or expired requestState
}
