package fakemodel

import "net/http"

// openaiChat is not written yet.
func (s *Server) openaiChat(w http.ResponseWriter, r *http.Request) {
	http.Error(w, "not implemented", http.StatusNotImplemented)
}
