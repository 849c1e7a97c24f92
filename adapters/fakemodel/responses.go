package fakemodel

import "net/http"

// openaiResponses is not written yet.
func (s *Server) openaiResponses(w http.ResponseWriter, r *http.Request) {
	http.Error(w, "not implemented", http.StatusNotImplemented)
}
