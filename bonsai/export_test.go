package bonsai

// ModelOf returns the model of a session, for the external tests' helpers.
func ModelOf(s *Session) *Model { return s.m }
