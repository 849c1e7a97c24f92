-- 0009: each session row keeps the status of its newest session.status
-- entry ("stopped" when its harness process ended, "suspended" when Bridge
-- stopped it to save resources, or a harness's own), set by the append or
-- restore that records the entry, so that the session list can tell how a
-- session was left without reading its entries. Existing sessions take it
-- from their newest such entry here.
ALTER TABLE sessions ADD COLUMN last_status TEXT NOT NULL DEFAULT '';

UPDATE sessions SET last_status = coalesce((
    SELECT CAST(json_extract(e.payload, '$.status') AS TEXT) FROM entries e
    WHERE e.session_id = sessions.id AND e.kind = 'session.status' AND json_valid(e.payload)
    ORDER BY e.seq DESC LIMIT 1), '');
