package mcpserver

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/mcp"
)

const (
	emailForm = `{"type":"object","properties":{"to":{"type":"string","format":"email"}},"required":["to"]}`
	badTo     = `{"action":"accept","content":{"to":"not-an-address"}}`
	badTo2    = `{"action":"accept","content":{"to":"still@@wrong"}}`
	goodTo    = `{"action":"accept","content":{"to":"bob@example.com"}}`
	yes       = `{"action":"accept","content":{"confirm":true}}`
)

// mailServer has "mail": a task that asks who gets the mail ("to", an
// e-mail address) and sends it once it has a valid one; after a refused
// address it asks again (a correction). Called with {"cc":true}, it then
// also asks whether to copy the sender ("cc"), so a round holds a
// corrected question and a new one. sent counts the sends.
func mailServer(t *testing.T, st TaskStore) (*Server, *atomic.Int32) {
	t.Helper()
	s := New(mcp.Implementation{Name: "mail", Version: "1"}, nil)
	s.EnableTasks(&TaskOptions{Store: st})
	sent := &atomic.Int32{}
	s.AddToolWith(&mcp.Tool{Name: "mail"}, func(ctx context.Context, r *Request) (Reply, error) {
		if r.TaskAllowed() {
			return RunAsTask(), nil
		}
		to := r.Elicitation("to")
		switch to.Outcome {
		case elicit.Accepted:
			sent.Add(1)
			return Text("sent to " + to.Content["to"].(string)), nil
		case elicit.Declined, elicit.Cancelled:
			return ToolError("not sent"), nil
		}
		a := Ask().ElicitForm("to", "Who gets the mail?", json.RawMessage(emailForm))
		var args struct{ CC bool }
		_ = json.Unmarshal(r.Arguments, &args)
		if to.Outcome == elicit.Invalid && args.CC {
			a = a.ElicitForm("cc", "Copy yourself?", json.RawMessage(confirmForm))
		}
		return a, nil
	}, &HandlerOptions{Tasks: TaskRequired})
	return s, sent
}

// pendingKeys are the keys of the task's inputRequests, sorted.
func pendingKeys(t *testing.T, g map[string]any) []string {
	t.Helper()
	reqs, _ := g["inputRequests"].(map[string]any)
	keys := make([]string, 0, len(reqs))
	for k := range reqs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// corrections is how many corrections of the handler's key the task has
// used (the re-ask count the store keeps), and its round.
func corrections(t *testing.T, st TaskStore, id, key string) (n, round int) {
	t.Helper()
	rec, err := st.GetTask(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	iss, _, ok := decodePayload(rec.Asked)
	if !ok {
		t.Fatalf("the task's payload is unreadable: %v", rec.Asked)
	}
	return int(iss[key].reasks), rec.Round
}

// TestTaskRefusedAnswerReplayed: a client that sends the same tasks/update
// again (its acknowledgement was lost) after the server refused the
// answer and asked again gets an acknowledgement and changes nothing: no
// correction is used up, the round stays, the task still waits. The
// corrected question goes out under a key of its own (the extension: a
// key names one request for the task's whole life), so the replay answers
// a question that is no longer pending. The corrections left still work,
// and a valid answer, replayed too, sends once.
func TestTaskRefusedAnswerReplayed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := NewMemoryTaskStore()
		s, sent := mailServer(t, st)
		c := rpc{s, "alice"}
		id := startTask(t, c, "mail", `{}`)
		synctest.Wait()
		if g := getTask(t, c, id); !slices.Equal(pendingKeys(t, g), []string{"to"}) {
			t.Fatalf("the first question: %v", g)
		}
		update := mustUpdate(t, c, id)
		update(`{"to":` + badTo + `}`)
		synctest.Wait()
		n0, round0 := corrections(t, st, id, "to")
		if n0 != 1 {
			t.Fatalf("after the refused answer: %d corrections used, want 1", n0)
		}

		const replays = 5
		for range replays {
			update(`{"to":` + badTo + `}`)
			synctest.Wait()
		}
		g := getTask(t, c, id)
		n, round := corrections(t, st, id, "to")
		t.Logf("%d replays of the refused answer: corrections used %d, round %d → %d", replays, n, round0, round)
		if g["status"] != "input_required" || n != 1 || round != round0 {
			t.Fatalf("after %d replays of the refused answer: status %v, %d corrections used (want 1), round %d (want %d): %v",
				replays, g["status"], n, round, round0, g)
		}
		if keys := pendingKeys(t, g); !slices.Equal(keys, []string{"to#2"}) {
			t.Fatalf("the corrected question: keys %v, want [to#2]", keys)
		}
		msg := g["inputRequests"].(map[string]any)["to#2"].(map[string]any)["params"].(map[string]any)["message"].(string)
		if !strings.Contains(msg, "Your previous answer was not accepted") {
			t.Fatalf("the corrected question does not say why: %q", msg)
		}

		// The second correction is still there, and its replays are
		// ignored the same way.
		for range 3 {
			update(`{"to#2":` + badTo2 + `}`)
			synctest.Wait()
		}
		g = getTask(t, c, id)
		if n, _ := corrections(t, st, id, "to"); g["status"] != "input_required" || !slices.Equal(pendingKeys(t, g), []string{"to#3"}) || n != 2 {
			t.Fatalf("after the second refused answer and its replays: %d corrections, %v", n, g)
		}
		for range 3 {
			update(`{"to#3":` + goodTo + `}`)
			synctest.Wait()
		}
		g = getTask(t, c, id)
		if g["status"] != "completed" || text(g["result"].(map[string]any)) != "sent to bob@example.com" || sent.Load() != 1 {
			t.Fatalf("after a valid answer: sent %d, %v", sent.Load(), g)
		}
		s.WaitTasks()
	})
}

// mustUpdate returns a function that sends tasks/update with responses
// for task id and wants the empty acknowledgement.
func mustUpdate(t *testing.T, c rpc, id string) func(responses string) {
	return func(responses string) {
		t.Helper()
		if r, err := (taskUpdates{c, id}).update(t, responses); err != nil || r["resultType"] != "complete" || len(r) != 2 {
			t.Fatalf("tasks/update %s: %v %v", responses, r, err)
		}
	}
}

// TestTaskRefusedAnswerReplayMixed: a round asks a corrected question and
// a new one; an update with the replayed refused answer and an answer to
// the new question takes the answer and ignores the replay; the
// corrected question stays pending, under its own key, with no further
// correction used.
func TestTaskRefusedAnswerReplayMixed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := NewMemoryTaskStore()
		s, sent := mailServer(t, st)
		c := rpc{s, "alice"}
		id := startTask(t, c, "mail", `{"cc":true}`)
		synctest.Wait()
		update := mustUpdate(t, c, id)
		update(`{"to":` + badTo + `}`)
		synctest.Wait()
		g := getTask(t, c, id)
		if keys := pendingKeys(t, g); !slices.Equal(keys, []string{"cc", "to#2"}) {
			t.Fatalf("the corrected question and the new one: keys %v, want [cc to#2]", keys)
		}
		update(`{"to":` + badTo + `,"cc":` + yes + `}`)
		synctest.Wait()
		g = getTask(t, c, id)
		if n, _ := corrections(t, st, id, "to"); g["status"] != "input_required" || !slices.Equal(pendingKeys(t, g), []string{"to#2"}) || n != 1 {
			t.Fatalf("after the mixed update: %d corrections, %v", n, g)
		}
		update(`{"to#2":` + goodTo + `}`)
		synctest.Wait()
		if g := getTask(t, c, id); g["status"] != "completed" || sent.Load() != 1 {
			t.Fatalf("after a valid answer: sent %d, %v", sent.Load(), g)
		}
		s.WaitTasks()
	})
}

// TestTaskRefusedAnswerConcurrentReplays: the same refused answer sent 30
// times at once uses one correction: one update is taken, the others
// find the task working or the question answered.
func TestTaskRefusedAnswerConcurrentReplays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := NewMemoryTaskStore()
		s, _ := mailServer(t, st)
		c := rpc{s, "alice"}
		id := startTask(t, c, "mail", `{}`)
		synctest.Wait()
		_, round0 := corrections(t, st, id, "to")
		const replays = 30
		var wg sync.WaitGroup
		for range replays {
			wg.Go(func() {
				if _, err := (taskUpdates{c, id}).update(t, `{"to":`+badTo+`}`); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		synctest.Wait()
		n, round := corrections(t, st, id, "to")
		t.Logf("%d concurrent replays of a refused answer: corrections used %d", replays, n)
		if g := getTask(t, c, id); g["status"] != "input_required" || n != 1 || round != round0+1 {
			t.Fatalf("status %v, %d corrections used (want 1), round %d (want %d)", g["status"], n, round, round0+1)
		}
		s.WaitTasks()
	})
}
