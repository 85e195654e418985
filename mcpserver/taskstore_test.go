package mcpserver

import (
	"testing"

	"github.com/mcp-elicit/elicit/store/storetest"
)

func TestMemoryTaskStoreContract(t *testing.T) {
	storetest.RunTasks(t, func(t *testing.T) storetest.TaskStore { return NewMemoryTaskStore() })
}
