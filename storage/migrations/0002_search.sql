-- 0002: full-text search over the text of every entry (messages, tool titles,
-- inputs and outputs, checkpoint summaries, handoffs). One row per entry
-- that has text, written in the same transaction as the entry; entry_id is
-- the entry it belongs to. Existing entries are indexed by the Go step that
-- runs with this migration (storage.backfillSearch).
CREATE VIRTUAL TABLE entry_search USING fts5(
    text,
    entry_id UNINDEXED,
    tokenize = 'unicode61 remove_diacritics 2'
);
