package service

import (
	"context"

	"github.com/bridge-dev/bridge/core"
)

// Search finds entries of every session by their text (session/search).
// The query is user input: one the index cannot parse is CodeInvalid.
func (s *Service) Search(ctx context.Context, q core.SearchQuery) (core.SearchPage, error) {
	se, ok := s.opts.Store.(core.Searcher)
	if !ok {
		return core.SearchPage{}, core.Errorf(core.CodeUnsupported, "this record cannot be searched")
	}
	if q.Limit < 0 {
		return core.SearchPage{}, core.Errorf(core.CodeInvalid, "search: limit must not be negative")
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Until.After(q.Since) {
		return core.SearchPage{}, core.Errorf(core.CodeInvalid, "search: until must be after since")
	}
	return se.Search(ctx, q)
}
