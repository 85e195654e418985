package store

import "context"

// FlowNotifier is implemented by a store that several processes share
// (store/postgres): it carries "this flow changed" notices between them,
// so that a request waiting in one process for a flow to be completed on
// a page served by another wakes at once (connect.Service.WaitFlow).
// A store used by one process only (store/sqlite) needs none: the
// process sees its own changes.
//
// Notices are hints, never the truth: a waiter re-reads the flow when
// woken, and a lost notice only makes it wait until its own deadline.
type FlowNotifier interface {
	// NotifyFlow tells every process sharing the store, this one
	// included, that flow id changed (was completed or closed). Call it
	// after the change is committed.
	NotifyFlow(ctx context.Context, id string) error
	// WatchFlow returns a channel that receives a value after each
	// NotifyFlow for id made, by any process, after WatchFlow returned,
	// and a stop function that must be called once the watch is no longer
	// needed (it frees the channel; it may be called more than once).
	// Notices for one id may be merged: the channel holds at most one.
	WatchFlow(ctx context.Context, id string) (notices <-chan struct{}, stop func(), err error)
}
