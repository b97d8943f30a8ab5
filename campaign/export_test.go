package campaign

// QueuedAdmissions returns how many AddMessage calls of s are queued
// behind the write in progress.
func QueuedAdmissions(s *Service) int {
	s.admissions.mu.Lock()
	defer s.admissions.mu.Unlock()
	return len(s.admissions.queue)
}
