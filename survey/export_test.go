package survey

// QueuedAnswers returns how many answers wait for a write.
func QueuedAnswers(s *Service) int { return s.answers.Queued() }
