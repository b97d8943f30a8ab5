package delivery

// QueuedEvents returns how many callback status updates wait for a write.
func QueuedEvents(e *ChatEvents) int {
	e.updates.mu.Lock()
	defer e.updates.mu.Unlock()
	return len(e.updates.queue)
}
