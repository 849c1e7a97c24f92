package fakemodel

import "net/http"

// anthropicMessages is not written yet.
func (s *Server) anthropicMessages(w http.ResponseWriter, r *http.Request) {
	http.Error(w, "not implemented", http.StatusNotImplemented)
}

// anthropicCountTokens is not written yet.
func (s *Server) anthropicCountTokens(w http.ResponseWriter, r *http.Request) {
	http.Error(w, "not implemented", http.StatusNotImplemented)
}
