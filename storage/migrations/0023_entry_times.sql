-- 0023: imports record each entry at the time the harness wrote it (before,
-- at the moment of import). Forgetting which transcripts discovery has
-- read makes the next discovery read each once more: the entries it finds
-- already recorded get their own times, and their sessions are dated by
-- them. Nothing is added twice (imports are keyed by native ids).
DELETE FROM discovered_files;
